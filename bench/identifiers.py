"""What Claude Code's own summary kept of the identifiers in old tool outputs, and what search still finds.

    .venv/bin/python bench/identifiers.py [--examples 5]

DATABASE_URL (default postgres://postgres@127.0.0.1:5432/threadmem_bench_import)
must point at PostgreSQL. The two long shared sessions (each compacted once
by Claude Code) are imported into threads of their own (channels
``bench:identifiers:…``, deleted at the end). For each, the identifiers
(IDENTIFIER below: paths, hosts and IP addresses, uuids, hex ids, version
strings, issue ids) that occur in exactly one tool output of the old
generation (the one Claude Code compacted) are collected; the bench prints
which share of them Claude Code's summary still contains, and which share
``threadmem.search.search_memory`` (channel = the imported thread) finds in
that very tool output, with examples the summary dropped but search finds.
"""

from __future__ import annotations

import argparse
import re
from collections import Counter
from pathlib import Path

from database import django_environment, migrated_database, require_postgres
from sessions import DATA, LONG_SESSIONS

django_environment("postgres://postgres@127.0.0.1:5432/threadmem_bench_import", compaction=False, embedding=False)

CHANNEL_PREFIX = "bench:identifiers:"

# What counts as an identifier: the things an agent needs verbatim later and a summary tends to drop.
IDENTIFIER = re.compile(
    r"""
      (?P<uuid>\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b)
    | (?P<path>(?:~|\.{1,2})?/(?:[\w.@+-]+/)+[\w.@+-]+|\b[\w.-]+/(?:[\w.-]+/)*[\w-]+\.[a-z]{1,5}\b)
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


def measure(path: Path, user, *, examples: int) -> dict:
    from threadmem.imports.service import import_paths
    from threadmem.models import Generation, Message, Thread
    from threadmem.search import search_memory

    channel = f"{CHANNEL_PREFIX}{path.stem}"
    import_paths(paths=[path], fmt="claude-code", owner=user, channel=channel)
    thread = Thread.objects.get(channel=channel)
    old = Generation.objects.get(thread=thread, number=1)
    summary = old.summary_message.content
    outputs = Message.objects.filter(thread=thread, generation=1, role="tool").values_list("pk", "content")
    where: dict[tuple[str, str], list[int]] = {}
    for pk, content in outputs:
        for identifier in identifiers_in(content):
            where.setdefault(identifier, []).append(pk)
    once = {identifier: pks[0] for identifier, pks in where.items() if len(pks) == 1}
    kept = {identifier for identifier in once if identifier[1] in summary}
    found, dropped_found = set(), []
    for identifier, pk in sorted(once.items()):
        hits = search_memory(user=user, query=identifier[1], channel=channel).hits
        if any(hit.message_id == pk for hit in hits):
            found.add(identifier)
            if identifier not in kept:
                dropped_found.append(identifier)
    return {
        "session": path.stem,
        "outputs": len(outputs),
        "once": len(once),
        "kinds": Counter(kind for kind, _ in once),
        "kept": len(kept),
        "found": len(found),
        "dropped": len(once) - len(kept),
        "dropped_found": len(dropped_found),
        "examples": _spread(dropped_found, examples),
    }


def _spread(identifiers: list[tuple[str, str]], count: int) -> list[tuple[str, str]]:
    """Examples of different kinds first."""
    picked, kinds = [], set()
    for identifier in identifiers:
        if identifier[0] not in kinds:
            picked.append(identifier)
            kinds.add(identifier[0])
    picked += [i for i in identifiers if i not in picked]
    return picked[:count]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--examples", type=int, default=5)
    args = parser.parse_args()
    migrated_database(require_postgres("bench/identifiers.py", verb="runs on"))
    from django.contrib.auth import get_user_model

    from threadmem.models import Thread

    user, _ = get_user_model().objects.get_or_create(username="bench-identifiers")
    print("identifiers seen in exactly one tool output of the old generation (before Claude Code's compaction):")
    totals = Counter()
    try:
        for name in LONG_SESSIONS:
            result = measure(DATA / f"{name}.jsonl", user, examples=args.examples)
            for key in ("once", "kept", "found", "dropped", "dropped_found"):
                totals[key] += result[key]
            kinds = ", ".join(f"{kind} {n}" for kind, n in result["kinds"].most_common())
            print(
                f"  {result['session'][:8]}: {result['once']} identifiers ({kinds})"
                f" in {result['outputs']} tool outputs;"
                f" Claude Code's summary kept {result['kept']} ({result['kept'] / result['once']:.0%}),"
                f" search_memory finds {result['found']} ({result['found'] / result['once']:.0%}) in their output,"
                f" {result['dropped_found']} of the {result['dropped']} the summary dropped"
            )
            for kind, value in result["examples"]:
                print(f"    dropped by the summary, found by search: {value}  ({kind})")
    finally:
        for thread in Thread.objects.filter(channel__startswith=CHANNEL_PREFIX):
            thread.delete()
    print(
        f"both: the summary kept {totals['kept']}/{totals['once']} ({totals['kept'] / totals['once']:.0%});"
        f" search finds {totals['found']}/{totals['once']} ({totals['found'] / totals['once']:.0%}),"
        f" {totals['dropped_found']}/{totals['dropped']} of those the summary dropped"
        f" ({totals['dropped_found'] / totals['dropped']:.0%})"
    )


if __name__ == "__main__":
    main()
