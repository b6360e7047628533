"""What an agent's own compaction summary kept of the identifiers in old tool outputs, and what search still finds.

    .venv/bin/python bench/identifiers.py [--examples 5] [--misses] [--skip-codex] [--codex-cli [SERVICES]]

DATABASE_URL (default postgres://postgres@127.0.0.1:5432/threadmem_bench_import)
must point at PostgreSQL. Each session is imported into a thread of its own
(channels ``bench:identifiers:…``, deleted at the end). For each closed
generation (one the agent compacted), the identifiers (IDENTIFIER below:
paths, hosts and IP addresses, uuids, hex ids, version strings, issue ids)
that occur in exactly one of its tool outputs are collected; the bench
prints which share of them the agent's summary still contains, and which
share one ``threadmem.features.search.search_memory`` call (channel = the imported
thread, the identifier as the query) finds: the very tool output named by
the answer (a hit, a later identical one listed with it, or the result of a
hit in its call's arguments); the same with ``role="tool"`` for those the
first call missed; and the identifier verbatim in a hit's window.

The sessions: the two long shared Claude Code sessions (each compacted once);
the same two written as Codex rollouts (``tests/support/session_files.py``: their
``compacted`` record holds Claude Code's summary, since no public real Codex
rollout holding a compaction was found); and the committed Codex fixtures
that hold ``compacted`` records (one written for the tests, one real with
its texts trimmed by its author). ``--codex-cli``: also a session the real
Codex CLI (npm, clients/package.json) writes here against a scripted model
(tests/support/codex_cli.py): it reads the deploy.env and app.log of SERVICES
services (24 by default), one shell command a file, and compacts itself after
a third and two thirds of the commands, its summary naming none.
"""

from __future__ import annotations

import argparse
import re
import tempfile
from collections import Counter
from pathlib import Path

from database import ROOT, django_environment, migrated_database, require_postgres

django_environment("postgres://postgres@127.0.0.1:5432/threadmem_bench_import", compaction=False, embedding=False)
from tests.support.session_files import DATA, LONG_SESSIONS, write_rollouts  # noqa: E402

CHANNEL_PREFIX = "bench:identifiers:"
CODEX_FIXTURES = [
    *sorted((ROOT / "tests/fixtures/codex").glob("rollout-2026-*.jsonl")),
    ROOT / "tests/fixtures/codex/agent-sessions-small.jsonl",
]

# What counts as an identifier: the things an agent needs verbatim later and a summary tends to drop.
# A path starts where no path character precedes it: `/repo/migrations` of `priv/repo/migrations/` is no identifier.
IDENTIFIER = re.compile(
    r"""
      (?P<uuid>\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b)
    | (?P<path>(?<![\w.@+-])(?:~|\.{1,2})?/(?:[\w.@+-]+/)+[\w.@+-]+|\b[\w.-]+/(?:[\w.-]+/)*[\w-]+\.[a-z]{1,5}\b)
    | (?P<ip>\b\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?\b)
    | (?P<host>\b(?:[a-z0-9-]+\.)+(?:com|net|org|io|dev|internal|local|cloud|ai)\b)
    | (?P<version>\bv?\d+\.\d+\.\d+(?:[-+][0-9A-Za-z.]+)?\b)
    | (?P<issue>\b[a-z][a-z0-9]*-[a-z0-9]{3}(?:\.\d+)+\b)
    | (?P<hex>\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}\b)
    """,
    re.VERBOSE,
)
MIN_CHARS = 6


def identifiers_in(text: str) -> set[tuple[str, str]]:
    """(kind, identifier) pairs in the text."""
    found = set()
    for match in IDENTIFIER.finditer(text):
        value = match.group(0).rstrip(".")
        if len(value) >= MIN_CHARS:
            found.add((match.lastgroup or "?", value))
    return found


def measure(path: Path, user, *, fmt: str, examples: int, misses: bool = False) -> dict:
    """Import the file into a thread of its own; per closed generation, its outputs' identifiers beside its summary."""
    from threadmem.features.imports.import_once import import_paths
    from threadmem.features.search import search_memory
    from threadmem.models import Generation, Message, Thread

    channel = f"{CHANNEL_PREFIX}{fmt}:{path.stem}"
    import_paths(paths=[path], fmt=fmt, owner=user, channel=channel)
    thread = Thread.objects.get(channel=channel)
    once: dict[tuple[str, str], int] = {}
    kept: set[tuple[str, str]] = set()
    outputs = 0
    for old in Generation.objects.filter(thread=thread, state="closed").order_by("number"):
        summary = old.summary_message.content if old.summary_message else ""
        rows = list(
            Message.objects.filter(thread=thread, generation=old.number, role="tool").values_list("pk", "content")
        )
        outputs += len(rows)
        where: dict[tuple[str, str], list[int]] = {}
        for pk, content in rows:
            for identifier in identifiers_in(content):
                where.setdefault(identifier, []).append(pk)
        for identifier, pks in where.items():
            if len(pks) == 1 and identifier not in once:
                once[identifier] = pks[0]
                if identifier[1] in summary:
                    kept.add(identifier)
    found, dropped_found, by_role, verbatim, missed = set(), [], 0, 0, []
    for identifier, pk in sorted(once.items()):
        hits = search_memory(user=user, query=identifier[1], channel=channel).hits
        verbatim += any(identifier[1] in hit.window for hit in hits)
        if pk in _named(hits):
            found.add(identifier)
            if identifier not in kept:
                dropped_found.append(identifier)
            by_role += 1
            continue
        # The one call an agent would make knowing the identifier came from a tool's output.
        by_role += pk in _named(search_memory(user=user, query=identifier[1], channel=channel, role="tool").hits)
        if misses:
            missed.append(f"missed: {identifier[1]!r} ({identifier[0]}): {len(hits)} hits, none its output")
    return {
        "session": path.stem,
        "outputs": outputs,
        "once": len(once),
        "kinds": Counter(kind for kind, _ in once),
        "kept": len(kept),
        "found": len(found),
        "by_role": by_role,
        "verbatim": verbatim,
        "dropped": len(once) - len(kept),
        "dropped_found": len(dropped_found),
        "examples": _spread(dropped_found, examples),
        "missed": missed,
    }


def _named(hits) -> set[int]:
    """The messages one answer names: each hit, the later identical ones listed with it, and the results of a hit in
    its call's arguments (the agent reads each by that id)."""
    return {i for hit in hits for i in (hit.message_id, *hit.identical_message_ids, *hit.result_message_ids)}


def _spread(identifiers: list[tuple[str, str]], count: int) -> list[tuple[str, str]]:
    """Examples of different kinds first."""
    picked, kinds = [], set()
    for identifier in identifiers:
        if identifier[0] not in kinds:
            picked.append(identifier)
            kinds.add(identifier[0])
    picked += [i for i in identifiers if i not in picked]
    return picked[:count]


def report(label: str, agent: str, files: list[Path], user, *, fmt: str, examples: int, misses: bool) -> None:
    print(f"{label}:")
    totals: Counter = Counter()
    for path in files:
        result = measure(path, user, fmt=fmt, examples=examples, misses=misses)
        for key in ("once", "kept", "found", "dropped", "dropped_found", "by_role", "verbatim"):
            totals[key] += result[key]
        if not result["once"]:
            print(f"  {result['session'][:40]}: no identifier in {result['outputs']} tool outputs before a compaction")
            continue
        kinds = ", ".join(f"{kind} {n}" for kind, n in result["kinds"].most_common())
        print(
            f"  {result['session'][:40]}: {result['once']} identifiers ({kinds})"
            f" in {result['outputs']} tool outputs;"
            f" {agent} summary kept {result['kept']} ({result['kept'] / result['once']:.0%}),"
            f" search_memory finds {result['found']} ({result['found'] / result['once']:.1%}) in their output"
            f" in one call, {result['dropped_found']} of the {result['dropped']} the summary dropped"
        )
        for kind, value in result["examples"]:
            print(f"    dropped by the summary, found by search: {value}  ({kind})")
        for line in result["missed"]:
            print(f"    {line}")
    if totals["once"]:
        print(
            f"  all: the summary kept {totals['kept']}/{totals['once']} ({totals['kept'] / totals['once']:.0%});"
            f" search finds {totals['found']}/{totals['once']} ({totals['found'] / totals['once']:.1%}),"
            f" {totals['dropped_found']}/{totals['dropped']} of those the summary dropped"
            f" ({totals['dropped_found'] / max(totals['dropped'], 1):.1%})"
        )
        print(
            f"  in one call: the very output {totals['found'] / totals['once']:.1%};"
            f" the very output with role=tool {totals['by_role'] / totals['once']:.1%};"
            f" the identifier verbatim in a hit's window {totals['verbatim'] / totals['once']:.1%}"
        )


def report_codex_cli(services: int, user, *, examples: int, misses: bool) -> None:
    """A session the real Codex CLI writes now, with its own compactions (tests/support/codex_cli.py)."""
    from tests.support.codex_cli import Unavailable, run_session

    with tempfile.TemporaryDirectory(prefix="threadmem-bench-codex-cli-") as folder:
        try:
            commands = 2 * services  # a deploy.env and an app.log a service
            session = run_session(Path(folder), services=services, compact_after={commands // 3, 2 * commands // 3})
        except Unavailable as err:
            print(f"real Codex CLI: not run ({err})")
            return
        report(
            f"Codex, real Codex CLI {session.version.removeprefix('codex-cli ')}, scripted model: a session it wrote"
            f" here ({session.script.ran} shell commands reading the deploy.env and app.log of {services} services,"
            f" {session.script.compactions} compactions by Codex itself, its summary naming no identifier)",
            "Codex's", [session.rollout], user, fmt="codex", examples=examples, misses=misses,
        )  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--examples", type=int, default=5)
    parser.add_argument("--misses", action="store_true", help="list the identifiers search did not find")
    parser.add_argument("--skip-codex", action="store_true")
    parser.add_argument("--codex-cli", type=int, nargs="?", const=24, metavar="SERVICES", help="a real Codex CLI run")
    args = parser.parse_args()
    migrated_database(require_postgres("bench/identifiers.py", verb="runs on"))
    from django.contrib.auth import get_user_model

    from threadmem.models import Thread

    user, _ = get_user_model().objects.get_or_create(username="bench-identifiers")
    options = {"examples": args.examples, "misses": args.misses}
    long_sessions = [DATA / f"{name}.jsonl" for name in LONG_SESSIONS]
    try:
        report(
            "Claude Code: identifiers seen in exactly one tool output before Claude Code's compaction",
            "Claude Code's", long_sessions, user, fmt="claude-code", **options,
        )  # fmt: skip
        if not args.skip_codex:
            with tempfile.TemporaryDirectory(prefix="threadmem-bench-identifiers-") as folder:
                rollouts = write_rollouts(long_sessions, Path(folder))
                report(
                    "Codex, the same two sessions written as Codex rollouts (tests/support/session_files.py; their"
                    " `compacted` record holds Claude Code's summary: no public real Codex rollout with a"
                    " compaction was found)",
                    "the compacted record's", rollouts, user, fmt="codex", **options,
                )  # fmt: skip
            report(
                "Codex, the committed rollouts that hold `compacted` records (tests/fixtures/codex: one written"
                " for the tests, one real with its texts trimmed by its author)",
                "Codex's", CODEX_FIXTURES, user, fmt="codex", **options,
            )  # fmt: skip
        if args.codex_cli:
            report_codex_cli(args.codex_cli, user, **options)
    finally:
        for thread in Thread.objects.filter(channel__startswith=CHANNEL_PREFIX):
            thread.delete()


if __name__ == "__main__":
    main()
