"""search_memory's project: two projects with the same words, each search finds only its own, on every path.

The literal part in a thread and without a channel, the ranked lane, an
operator's global search; hits name the project; another owner's threads stay
out; without a project, the answer is the one a search gave before projects.
"""

from __future__ import annotations

import io

import pytest
from django.core.management import CommandError, call_command

from tests.support.factories import append, make_thread
from tests.support.semantic import embedded, semantic_part
from threadmem.domain.scope import resolve_scope
from threadmem.errors import InvalidInput, NotFound
from threadmem.features.search import search_memory
from threadmem.features.search.ranked import thread_legend
from threadmem.lib.projects import project_normal, project_root
from threadmem.models import Thread

APP = "/home/dev/src/app"
SHOP = "/home/dev/src/shop"
WORDS = "the zebrafish migration failed on the orders table"
QUESTION = "why did the zebrafish migration fail?"


@pytest.fixture
def projects(owner, other):
    """The owner's two projects with the same words, a session below the first's root, a neighbour whose name
    starts like it, and another owner's thread in the first project."""
    app = make_thread(owner, "claude-code:app", title="app week", project=APP)
    app_sub = make_thread(owner, "claude-code:app-web", project=f"{APP}/web")
    neighbour = make_thread(owner, "claude-code:app-2", project=f"{APP}-2")
    shop = make_thread(owner, "claude-code:shop", title="shop week", project=SHOP)
    foreign = make_thread(other, "claude-code:foreign", project=APP)
    found = {}
    for thread in (app, app_sub, neighbour, shop, foreign):
        (found[thread.channel],) = append(thread, {"role": "assistant", "content": f"{WORDS} ({thread.channel})"})
    return {"threads": (app, app_sub, neighbour, shop, foreign), "messages": found}


def hit_ids(result) -> set[int]:
    return {hit.message_id for hit in result.hits}


@pytest.mark.django_db
def test_a_global_search_finds_only_its_projects_threads(owner, projects):
    app, app_sub, neighbour, shop, _ = projects["threads"]
    found = projects["messages"]

    in_app = search_memory(user=owner, query="zebrafish migration", project=APP)
    in_shop = search_memory(user=owner, query="zebrafish migration", project=SHOP)
    everywhere = search_memory(user=owner, query="zebrafish migration")

    # The project and a directory below it; not a sibling whose name starts the same, not another owner's.
    assert hit_ids(in_app) == {found[app.channel].id, found[app_sub.channel].id}
    assert hit_ids(in_shop) == {found[shop.channel].id}
    assert hit_ids(everywhere) == {found[t.channel].id for t in (app, app_sub, neighbour, shop)}
    assert f'channel: * · project: "{APP}" · query: "zebrafish migration"' in in_app.text
    assert "project" not in everywhere.text.splitlines()[1]


@pytest.mark.django_db
def test_a_thread_search_within_its_project_finds_its_hits_and_outside_it_is_refused(owner, projects):
    app, _, _, shop, foreign = projects["threads"]

    own = search_memory(user=owner, query="zebrafish", channel=app.channel, project=APP)
    assert hit_ids(own) == {projects["messages"][app.channel].id}
    assert f'channel: {app.channel} · project: "{APP}"' in own.text
    with pytest.raises(InvalidInput) as refused:
        search_memory(user=owner, query="zebrafish", channel=shop.channel, project=APP)
    assert refused.value.field == "project"
    assert f"in project {SHOP!r}" in refused.value.message
    # Another owner's thread in the same project is still one that does not exist.
    with pytest.raises(NotFound):
        search_memory(user=owner, query="zebrafish", channel=foreign.channel, project=APP)


@pytest.mark.django_db
def test_an_operator_searches_every_owners_threads_of_the_project(operator, projects, django_assert_num_queries):
    app, app_sub, _, _, foreign = projects["threads"]
    found = projects["messages"]
    # scope (the project's threads), match, log row: as many as a non-operator's global search.
    with django_assert_num_queries(3):
        result = search_memory(user=operator, query="zebrafish", project=APP)
    assert hit_ids(result) == {found[t.channel].id for t in (app, app_sub, foreign)}


@pytest.mark.django_db
def test_a_project_costs_a_thread_search_one_query_and_a_global_one_none(owner, projects, django_assert_num_queries):
    app = projects["threads"][0]
    # scope, the thread's project, match (small fields: with their windows), log row.
    with django_assert_num_queries(4):
        search_memory(user=owner, query="zebrafish", channel=app.channel, project=APP)
    # scope (the owner's threads of the project), match, log row.
    with django_assert_num_queries(3):
        search_memory(user=owner, query="zebrafish", project=APP)


@pytest.mark.django_db
def test_a_project_is_a_path_its_trailing_separators_dropped_and_blank_is_every_project(owner, projects):
    with_slash = search_memory(user=owner, query="zebrafish", project=f"{APP}/")
    assert hit_ids(with_slash) == hit_ids(search_memory(user=owner, query="zebrafish", project=APP))
    blank = search_memory(user=owner, query="zebrafish", project="  ")
    assert blank.text == search_memory(user=owner, query="zebrafish").text
    assert search_memory(user=owner, query="zebrafish", project="/home/dev/elsewhere").literal_hits_total == 0
    with pytest.raises(InvalidInput) as refused:
        search_memory(user=owner, query="zebrafish", project="x" * 1001)
    assert refused.value.field == "project"


@pytest.mark.django_db
def test_a_cursor_is_bound_to_its_project(owner):
    app = make_thread(owner, "claude-code:app", project=APP)
    shop = make_thread(owner, "claude-code:shop", project=SHOP)
    for index in range(40):  # windows of more than 12,000 characters: a page leaves hits out
        content = "a" * 2000 + f" zebrafish run {index} " + "b" * 2000
        append(app, {"role": "user", "content": content})
        append(shop, {"role": "user", "content": content})
    first = search_memory(user=owner, query="zebrafish", project=APP)
    assert first.next_cursor
    with pytest.raises(InvalidInput):
        search_memory(user=owner, query="zebrafish", project=SHOP, cursor=first.next_cursor)
    page = search_memory(user=owner, query="zebrafish", project=APP, cursor=first.next_cursor)
    assert {hit.message_id for hit in page.hits} <= set(app.messages.values_list("id", flat=True))


@pytest.mark.django_db
def test_the_scope_of_a_project_holds_only_its_threads(owner, operator, projects):
    app, app_sub, _, _, foreign = projects["threads"]
    assert set(resolve_scope(user=owner, channel=None, project=APP).readable_thread_ids) == {app.id, app_sub.id}
    assert set(resolve_scope(user=operator, channel=None, project=APP).readable_thread_ids) == {
        app.id,
        app_sub.id,
        foreign.id,
    }
    # Without a project an operator's scope is resolved by the statement itself, as before.
    assert resolve_scope(user=operator, channel=None).readable_thread_ids is None


def test_a_project_is_the_git_root_above_the_working_directory(tmp_path):
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    (root / "src" / "deep").mkdir(parents=True)
    plain = tmp_path / "plain"
    plain.mkdir()
    assert project_root(str(root / "src" / "deep")) == str(root)
    assert project_root(f"{root}/") == str(root)
    assert project_root(str(plain)) == str(plain)  # no repository above: the directory itself
    assert project_root("/no/such/dir/here/") == "/no/such/dir/here"  # not on this machine: as the client sent it
    assert project_root("relative/dir") == "relative/dir"
    assert project_normal("C:\\Users\\me\\repo\\") == "C:\\Users\\me\\repo"
    assert project_normal("/") == "/"


@pytest.mark.django_db(transaction=True)
def test_the_ranked_lane_ranks_only_its_projects_threads_and_names_each_ones_project(owner, other, static_model):
    app = make_thread(owner, "claude-code:app", title="app week", project=APP)
    app_sub = make_thread(owner, "claude-code:app-web", project=f"{APP}/web")
    shop = make_thread(owner, "claude-code:shop", title="shop week", project=SHOP)
    foreign = make_thread(other, "claude-code:foreign", project=APP)
    answers = {}
    for thread in (app, app_sub, shop, foreign):
        _, answers[thread.channel] = append(
            thread,
            {"role": "user", "content": "the zebrafish migration keeps failing"},
            {"role": "assistant", "content": f"Fixed the zebrafish migration in {thread.channel}: a stale lock."},
        )
    embedded(app, app_sub, shop, foreign)

    def ranked(project: str | None) -> str:
        return semantic_part(search_memory(user=owner, query=QUESTION, project=project).text)

    in_app, in_shop, everywhere = ranked(APP), ranked(SHOP), ranked(None)

    ids = {channel: message.id for channel, message in answers.items()}
    assert f"messageId={ids[app.channel]} " in in_app and f"messageId={ids[app_sub.channel]} " in in_app
    assert f"messageId={ids[shop.channel]} " not in in_app and f"messageId={ids[foreign.channel]} " not in in_app
    assert f"messageId={ids[shop.channel]} " in in_shop
    assert all(f"messageId={ids[t.channel]} " not in in_shop for t in (app, app_sub, foreign))
    # Each thread's line names its own project (a directory below the one asked for shows which).
    legend = in_app[in_app.index(thread_legend.HEAD) :]
    assert f'- channel="{app.channel}" project="{APP}" "app week"' in legend
    assert f'- channel="{app_sub.channel}" project="{APP}/web"' in legend
    # Without a project: every project of the owner, and the lines as they always were.
    assert f"messageId={ids[shop.channel]} " in everywhere and f"messageId={ids[app.channel]} " in everywhere
    assert "project=" not in everywhere
    # The lane keeps a project's pieces apart from the owner's whole store: the first answer again.
    assert ranked(APP) == in_app


@pytest.mark.django_db
def test_the_search_memory_command_takes_a_project(owner, projects):
    app, _, _, shop, _ = projects["threads"]
    found = projects["messages"]
    out = io.StringIO()
    call_command("search_memory", "zebrafish", "--project", SHOP, "--user", "owner", stdout=out)
    assert f"messageId={found[shop.channel].id} " in out.getvalue()
    assert f"messageId={found[app.channel].id} " not in out.getvalue()
    assert f'project: "{SHOP}"' in out.getvalue()
    with pytest.raises(CommandError, match="is in project"):
        call_command("search_memory", "zebrafish", "--channel", app.channel, "--project", SHOP, "--user", "owner")


@pytest.mark.django_db
def test_without_a_project_the_answer_is_the_one_a_store_without_projects_gives(owner, operator, projects):
    searches = [(user, channel) for user in (owner, operator) for channel in (None, "claude-code:app")]
    with_projects = [search_memory(user=user, query="zebrafish", channel=channel).text for user, channel in searches]
    Thread.objects.update(project="")
    without = [search_memory(user=user, query="zebrafish", channel=channel).text for user, channel in searches]
    assert with_projects == without
    assert all("project" not in text for text in without)
