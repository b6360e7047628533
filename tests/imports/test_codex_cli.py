"""A rollout the real Codex CLI wrote (npm, clients/package.json) with its own compaction, imported.

``codex exec`` runs against a scripted Responses API server on loopback
(tests/support/codex_cli.py): the model reads one service file per
command, Codex compacts after the fourth, and the summary it writes names none
of the identifiers those files held. Skipped where the CLI cannot be installed;
the rollout such a run wrote, committed (tests/fixtures/codex/NOTICE.md), is
read everywhere.
"""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command

from tests.support.codex_cli import SUMMARY, Session, Unavailable, run_session, write_workspace
from tests.support.factories import row_counts
from threadmem.features.search import search_memory
from threadmem.models import Generation, Message, Thread

pytestmark = pytest.mark.django_db
SERVICES, COMPACT_AFTER = 3, 4  # two files a service, one command a file: Codex compacts in the third service
COMMITTED = next((Path(__file__).resolve().parents[1] / "fixtures" / "codex" / "cli-0.171.0").glob("rollout-*.jsonl"))


@pytest.fixture(scope="module")
def live(tmp_path_factory) -> Session:
    try:
        return run_session(tmp_path_factory.mktemp("codex-cli"), services=SERVICES, compact_after={COMPACT_AFTER})
    except Unavailable as err:
        pytest.skip(str(err))


@pytest.fixture(params=["live", "committed"])
def session(request, tmp_path_factory) -> Session:
    """A rollout the CLI writes now, and the one it wrote with the same workspace (the files' identifiers)."""
    if request.param == "live":
        return request.getfixturevalue("live")
    files = write_workspace(tmp_path_factory.mktemp("workspace"), SERVICES, seed=33)
    return Session(rollout=COMMITTED, version="codex-cli 0.171.0", script=None, files=files)


def run(*args: str) -> str:
    out = StringIO()
    call_command("import_sessions", "--owner", "owner", *args, stdout=out)
    return out.getvalue()


def records(session: Session) -> list[dict]:
    return [json.loads(line) for line in session.rollout.read_text(encoding="utf-8").splitlines() if line.strip()]


def thread_of(session: Session) -> Thread:
    return Thread.objects.get(channel=f"codex:{records(session)[0]['payload']['id']}", source_format="codex")


def test_the_real_cli_ran_every_command_and_compacted_once(session):
    rows = records(session)
    (compacted,) = [r["payload"] for r in rows if r["type"] == "compacted"]
    outputs = [r["payload"]["output"] for r in rows if r["payload"].get("type") == "function_call_output"]
    assert rows[0]["payload"]["cli_version"] == session.version.removeprefix("codex-cli ")
    assert compacted["message"].endswith(SUMMARY) and compacted["replacement_history"]
    assert session.script is None or session.script.compactions == 1
    assert len(outputs) == len(session.files) == 2 * SERVICES
    for output, (_, identifiers) in zip(outputs, session.files, strict=True):
        assert all(identifier in output for identifier in identifiers)  # the command's real output


def test_codex_s_compaction_is_a_generation_with_its_summary(owner, session):
    run("--format", "codex", str(session.rollout))
    thread = thread_of(session)
    first, second = Generation.objects.filter(thread=thread).order_by("number")
    assert (first.state, second.state) == ("closed", "open")
    assert first.summary_message.summary_origin == "codex" and first.summary_message.content.endswith(SUMMARY)
    for n, (_, identifiers) in enumerate(session.files, 1):
        output = Message.objects.filter(thread=thread, role="tool", content__contains=identifiers[0]).get()
        assert output.generation == (1 if n <= COMPACT_AFTER else 2)


def test_one_search_finds_every_identifier_only_an_old_output_held(owner, session):
    """Identity recall: each identifier of a file read before the compaction, which the summary dropped, is named
    by one search_memory call on the thread (the output itself, or a later identical one listed with it)."""
    run(str(session.rollout))  # the format read from the first record
    thread = thread_of(session)
    summary = Generation.objects.get(thread=thread, number=1).summary_message.content
    identifiers = [i for _, held in session.files[:COMPACT_AFTER] for i in held]
    assert len(identifiers) == 2 * (5 + 24)  # two services' deploy.env and app.log
    for identifier in identifiers:
        (output,) = Message.objects.filter(thread=thread, role="tool", content__contains=identifier)
        assert output.generation == 1 and identifier not in summary

        hits = search_memory(user=owner, query=identifier, channel=thread.channel).hits

        named = {i for hit in hits for i in (hit.message_id, *hit.identical_message_ids, *hit.result_message_ids)}
        assert output.pk in named, identifier


def test_importing_the_real_rollout_again_adds_nothing(owner, session):
    run("--format", "codex", str(session.rollout))
    before = row_counts()
    out = run("--format", "codex", str(session.rollout))
    assert row_counts() == before and " 0 new messages" in out
