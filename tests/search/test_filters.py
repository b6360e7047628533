"""The same exclusions on every path: literal and semantic, thread and global.

A second search path that forgets the owner or isolation filter is the
classic leak in memory systems; each path here is checked against the one
rule, ``Message.searchable`` plus the scope's thread rules.
"""

from __future__ import annotations

import itertools

import pytest
from django.db import connection
from django.db.models import Q

from tests.support.factories import append, make_thread, open_generation
from tests.support.semantic import lane_replaced
from threadmem.domain import services
from threadmem.features.search import search_memory
from threadmem.features.search.shared_sql import searchable_sql
from threadmem.models import Message

# The tests that search run once with each match statement (tests/conftest.py, thread_match); the two that hold
# the rule itself search nothing, so they run once.
each_match_path = pytest.mark.usefixtures("thread_match")

TERM = "sentinel-77"


def every_flag_combination(thread, admin) -> list[Message]:
    """One message per (kind, model_visible, isolated, superseded), each mentioning TERM."""
    stored = []
    for kind, visible, isolated, superseded in itertools.product(
        ("message", "machine_event"), (True, False), (False, True), (False, True)
    ):
        (message,) = append(
            thread,
            {
                "role": "assistant" if kind == "message" else "system",
                "kind": kind,
                "model_visible": visible,
                "content": f"{TERM} {kind} visible={visible} isolated={isolated} superseded={superseded}",
            },
        )
        if isolated:
            services.message_set_isolated(message=message, isolated=True, actor=admin)
        if superseded:
            append(thread, {"role": "user", "content": "a correction", "supersedes": message.id})
        message.refresh_from_db()
        stored.append(message)
    stored.append(open_generation(thread, f"{TERM} in a summary"))
    (call,) = append(
        thread, {"role": "assistant", "tool_calls": [{"id": "k", "name": "shell", "arguments": {"cmd": TERM}}]}
    )
    stored.append(call)
    (hidden_call,) = append(
        thread, {"role": "assistant", "tool_calls": [{"id": "h", "name": "shell", "arguments": {"cmd": TERM}}]}
    )
    services.message_set_isolated(message=hidden_call, isolated=True, actor=admin)
    hidden_call.refresh_from_db()
    stored.append(hidden_call)
    return stored


def listing_provider(*, scope, query, terms):
    """A semantic part that lists every message its scope lets it rank that mentions the term."""
    mentions = Q(content__contains=terms[0]) | Q(tool_arguments__value__contains=terms[0])
    messages = scope.messages().filter(mentions).distinct().order_by("id")
    return "\n".join(f"semantic:{message.id}" for message in messages)


def semantic_ids(text: str) -> set[int]:
    return {int(line.split(":")[1]) for line in text.splitlines() if line.startswith("semantic:")}


@pytest.fixture
def world(owner, other, admin):
    mine = make_thread(owner, "mine")
    stored = every_flag_combination(mine, admin)
    isolated_thread = make_thread(owner, "mine-isolated")
    (in_isolated,) = append(isolated_thread, {"role": "user", "content": f"{TERM} in an isolated thread"})
    services.thread_set_isolated(thread=isolated_thread, isolated=True, actor=admin)
    theirs = make_thread(other, "theirs")
    (their_message,) = append(theirs, {"role": "user", "content": f"{TERM} in another owner's thread"})
    return {
        "searchable": {m.id for m in stored if m.searchable},
        "stored": stored,
        "in_isolated": in_isolated.id,
        "theirs": their_message.id,
    }


@pytest.mark.django_db(transaction=True)
def test_the_flag_rule_is_the_models_searchable_rule(world):
    # Sanity of the fixture: every combination exists and exactly the plain ones are searchable.
    assert len(world["stored"]) == 19
    assert len(world["searchable"]) == 2  # the plain message and the plain tool call


@pytest.mark.django_db(transaction=True)
def test_the_raw_sql_searchable_filter_selects_what_the_queryset_selects(world):
    condition, params = searchable_sql("m")
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT m.id FROM threadmem_message m WHERE {condition}", params)
        raw = {message_id for (message_id,) in cursor.fetchall()}
    orm = set(Message.objects.searchable().values_list("id", flat=True))
    assert raw == orm
    # Over every flag combination the queryset keeps exactly the searchable ones.
    assert orm & {m.id for m in world["stored"]} == world["searchable"]


@each_match_path
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("channel", ["mine", None])
def test_the_literal_and_semantic_paths_apply_the_same_filters(owner, world, channel):
    with lane_replaced(listing_provider):
        result = search_memory(user=owner, query=TERM, channel=channel)
    literal = {hit.message_id for hit in result.hits}
    semantic = semantic_ids(result.text)
    assert literal == world["searchable"]
    assert semantic == world["searchable"]
    # Global: never another owner's thread, never an isolated thread.
    for leaked in (world["theirs"], world["in_isolated"]):
        assert leaked not in literal
        assert leaked not in semantic


@each_match_path
@pytest.mark.django_db(transaction=True)
def test_operators_global_scope_takes_every_thread_but_isolated_ones(operator, world):
    with lane_replaced(listing_provider):
        result = search_memory(user=operator, query=TERM)
    literal = {hit.message_id for hit in result.hits}
    assert literal == world["searchable"] | {world["theirs"]}
    assert semantic_ids(result.text) == literal
    assert world["in_isolated"] not in literal


@each_match_path
@pytest.mark.django_db(transaction=True)
def test_an_isolated_threads_own_channel_still_searches_it_on_both_paths(owner, world):
    with lane_replaced(listing_provider):
        result = search_memory(user=owner, query=TERM, channel="mine-isolated")
    assert {hit.message_id for hit in result.hits} == {world["in_isolated"]}
    assert semantic_ids(result.text) == {world["in_isolated"]}


@each_match_path
@pytest.mark.django_db(transaction=True)
def test_the_semantic_part_runs_concurrently_in_its_own_thread(owner, world):
    import threading

    seen = {}

    def provider(*, scope, query, terms):
        seen["thread"] = threading.get_ident()
        seen["terms"] = terms
        return "found by meaning"

    with lane_replaced(provider):
        result = search_memory(user=owner, query=f"{TERM} anything", channel="mine")
    assert seen["thread"] != threading.get_ident()
    assert seen["terms"] == [f"{TERM} anything", TERM, "anything"]
    assert result.text.endswith("\n## Other memory results\nfound by meaning")


@each_match_path
@pytest.mark.django_db(transaction=True)
def test_a_failing_semantic_part_costs_one_line_not_the_literal_hits(owner, world):
    def provider(*, scope, query, terms):
        raise RuntimeError("embedding server down")

    with lane_replaced(provider):
        result = search_memory(user=owner, query=TERM, channel="mine")
    assert {hit.message_id for hit in result.hits} == world["searchable"]
    assert result.text.endswith("\nSemantic search failed for this query; the literal hits above are complete.")
