"""Recall on real Claude Code sessions after their compaction: can a model reach old evidence through the two tools?

    .venv/bin/python bench/recall.py [--data ../shared/data/claude-code] [--max-calls 10] [--cut-at CHARS]

DATABASE_URL (default postgres://postgres@127.0.0.1:5432/threadmem_bench_recall;
an ``sqlite:///…`` URL works too) is created if missing and migrated. The
sessions of the data folder (its ``*.jsonl``; their ``<id>/subagents/`` are
not imported) are imported with threadmem's importer as the user
``bench-recall``; importing again adds nothing, so reruns reuse them.

Measured, each kind apart (bench/recall_split.py): the sessions Claude Code
compacted, and those threadmem's own automatic compaction compacted while
they were imported, about the generations before the current one (the part
the summary replaced); with ``--cut-at``, the sessions nobody compacted but
longer than that, about the part before where threadmem's compaction would
cut them at that threshold. Other sessions are skipped. Two kinds of question
about the old part:

* identity: an identifier (letters and digits, 8+ characters) that exactly
  one message of the thread holds, an old tool output, and that no
  message after the compaction repeats. One ``search_memory`` with the
  identifier as the query; found when the identifier is in the answer.
* association: a file path Claude Code's summary names (for a cut session:
  that the messages after the cut name), and a definition line (``def``,
  ``class``, ``function`` …) that only an old ``Read`` result of that file
  holds. A scripted model (no LLM) searches the path and follows
  only what the tools return: hit lines of an earlier generation with
  ``tool=Read`` (their ``result=`` ids, or the result hit itself), each read
  with ``message_context_read`` page by page (``next offset``), then the next
  page of hits (``cursor=``), until the line is in a tool answer or it has
  made ``--max-calls`` calls. Hits after the compaction (or the cut) are
  skipped: they are in the model's context.

Beside each: the share of the identifiers and lines Claude Code's summary
kept, and a Letta-style baseline (the 5 newest whole user/assistant messages
containing the query, the way a recall tool that returns whole non-tool
messages answers).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import statistics
from dataclasses import dataclass, field
from pathlib import Path

from database import ROOT, django_environment

django_environment("postgres://postgres@127.0.0.1:5432/threadmem_bench_recall")

import django  # noqa: E402
import recall_synthetic  # noqa: E402
from recall_model import blind_search, scripted_search  # noqa: E402
from recall_split import Split, split_of  # noqa: E402

USER = "bench-recall"
IDENTIFIERS_PER_THREAD = 150
LINES_PER_PATH = 5
IDENTIFIER = re.compile(r"(?<![\w-])(?=[\w-]*\d)(?=[\w-]*[A-Za-z])[A-Za-z0-9][\w-]{6,}[A-Za-z0-9](?![\w-])")
SUMMARY_PATH = re.compile(r"(?<![\w/.-])/?(?:[\w.-]+/)+[\w-]+\.[A-Za-z]{1,5}(?![\w/])")
DEFINITION = re.compile(
    r"^\s*(?:def|defp|defmodule|defmacro|class|function|async function|"
    r"export (?:default )?(?:async )?(?:function|class|const|let|type|interface|enum)|"
    r"const|let|fn|pub fn|func|fun|data class|enum|record|interface|type|module|struct|impl|test|describe|"
    r"config|schema|attribute|defstruct|use|import|alias|plug|scope|live|get|post|"
    # Java, C#, Kotlin, TypeScript members: an access modifier, then what it declares
    r"(?:public|private|protected|internal)(?:\s+(?:static|final|abstract|sealed|override|async|readonly))*)\s+\S"
)
READ_LINE_NUMBER = re.compile(r"^\s*\d+→")
BASELINE_MESSAGES = 5
TITLES = {
    "claude-code": "compacted by Claude Code",
    "threadmem": "compacted by threadmem's automatic compaction on import (offline summarizer)",
    "cut": "compacted by nobody, cut where threadmem's compaction would at {cut_at:,} chars "
    "('summary kept': the text after the cut)",
}


@dataclass
class Stats:
    found: int = 0
    total: int = 0
    calls: list[int] = field(default_factory=list)
    max_chars: int = 0
    kept_by_summary: int = 0
    baseline_found: int = 0
    baseline_max_chars: int = 0
    partial_calls: int = 0  # association: calls that read a partial read's result
    with_partial_reads: int = 0  # association: needles whose file also has partial reads


def setup() -> tuple:
    from django.conf import settings

    if settings.DATABASES["default"]["ENGINE"].endswith("postgresql"):
        from database import ensure_database

        ensure_database(os.environ["DATABASE_URL"])
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    from django.contrib.auth import get_user_model

    user, _ = get_user_model().objects.get_or_create(username=USER)
    return (user,)


def import_sessions(user, data: Path) -> list[str]:
    from threadmem.features.imports.import_once import import_paths

    paths = sorted(p for p in data.glob("*.jsonl") if p.is_file())
    if not paths:
        raise SystemExit(f"no session files (*.jsonl) in {data}")
    report = import_paths(paths=paths, fmt="claude-code", owner=user)
    embed_now(report.channels)
    return report.channels


def embed_now(channels: list[str]) -> None:
    """Finish the sessions' embeddings before asking: the import queued them on a background thread, and a
    first run racing it would measure a ranked lane that a second run has whole."""
    from threadmem.features.embeddings import choice, tasks
    from threadmem.features.embeddings import thread_embedding as service
    from threadmem.models import Thread

    tasks.wait_for_background(timeout=600)
    if choice.active_model():
        for thread_id in Thread.objects.filter(channel__in=channels).values_list("id", flat=True):
            service.embed_thread(thread_id=thread_id)


def fingerprint(text: str) -> str:
    return hashlib.sha1(text.encode()).hexdigest()


def messages_of(thread) -> list:
    from threadmem.models import SEARCHABLE, Message

    return list(Message.objects.filter(thread=thread).filter(SEARCHABLE).order_by("seq"))


def searchable_text(message) -> str:
    import json

    calls = json.dumps([call.get("arguments", {}) for call in message.tool_calls], ensure_ascii=False)
    return f"{message.content}\n{calls}" if message.tool_calls else message.content


def summary_of(thread) -> str:
    from threadmem.models import Message

    summary = Message.objects.filter(thread=thread, kind=Message.Kind.SUMMARY).order_by("seq").first()
    return summary.content if summary else ""


def letta_baseline(messages: list, query: str) -> str:
    """The 5 newest whole user/assistant messages that contain ``query``."""
    needle = query.lower()
    chosen = [m for m in reversed(messages) if m.role in ("user", "assistant") and needle in searchable_text(m).lower()]
    return "\n\n".join(searchable_text(m) for m in chosen[:BASELINE_MESSAGES])


def identity_cases(messages: list, split: Split) -> list[str]:
    later = "\n".join(searchable_text(m).lower() for m in messages if not split.old_message(m))
    holders: dict[str, set[int]] = {}
    spelled: dict[str, str] = {}
    for message in messages:
        for token in set(IDENTIFIER.findall(searchable_text(message))):
            key = token.lower()
            holders.setdefault(key, set()).add(message.id)
            spelled.setdefault(key, token)
    by_id = {m.id: m for m in messages}
    cases = []
    for key, ids in holders.items():
        if len(ids) != 1:
            continue
        holder = by_id[next(iter(ids))]
        if holder.role == "tool" and split.old_message(holder) and key not in later:
            cases.append(spelled[key])
    return sorted(cases, key=fingerprint)[:IDENTIFIERS_PER_THREAD]


def association_cases(thread, messages: list, split: Split) -> list[tuple[str, str]]:
    """(path as the summary names it, a definition line only an old Read result of it holds).

    Up to LINES_PER_PATH lines a path (chosen by a hash of the line: any line
    of the file, not its first ones), each from an old Read result.
    """
    from threadmem.models import ToolArgument

    texts = [searchable_text(m) for m in messages]
    by_id = {m.id: m for m in messages}
    results_by_call = {m.tool_call_id: m for m in messages if m.role == "tool" and m.tool_call_id}
    cases = []
    all_reads = list(
        ToolArgument.objects.filter(thread=thread, tool_name="Read", path="file_path").order_by("message_id")
    )
    for path in sorted(set(SUMMARY_PATH.findall(split.context))):
        # A Windows session reads C:\\…\\x.py where its prose names the path with slashes.
        reads = [read for read in all_reads if read.value.replace("\\", "/").endswith(path)]
        lines: set[str] = set()
        for read in reads:
            call = by_id.get(read.message_id)
            result = results_by_call.get(read.tool_call_id)
            if call is None or result is None or not split.old_message(call):
                continue
            for raw in result.content.splitlines():
                line = READ_LINE_NUMBER.sub("", raw).strip()
                if len(line) >= 12 and DEFINITION.match(line) and sum(1 for text in texts if line in text) == 1:
                    lines.add(line)
        cases += [(path, line) for line in sorted(lines, key=fingerprint)[:LINES_PER_PATH]]
    return cases


def partially_read(messages: list, paths: list[str]) -> set[str]:
    """The paths some Read of the thread read only in part (``offset`` or ``limit``)."""
    found = set()
    for message in messages:
        for call in message.tool_calls or []:
            arguments = call.get("arguments") if isinstance(call, dict) else None
            if call.get("name") != "Read" or not isinstance(arguments, dict):
                continue
            if "offset" in arguments or "limit" in arguments:
                file_path = str(arguments.get("file_path", "")).replace("\\", "/")
                found.update(path for path in paths if file_path.endswith(path))
    return found


@dataclass
class Measures:
    identity: Stats = field(default_factory=Stats)
    association: Stats = field(default_factory=Stats)
    blind: Stats = field(default_factory=Stats)  # association, the tools without tool=/result=/cursor


def measure(
    user, thread, split: Split, identities: list[str], associations: list[tuple[str, str]], max_calls: int
) -> Measures:
    from threadmem.features.search import search_memory

    measures = Measures()
    identity, association, blind = measures.identity, measures.association, measures.blind
    messages = messages_of(thread)
    summary = split.context
    channel = thread.channel
    partial_paths = partially_read(messages, [path for path, _ in associations])
    for identifier in identities:
        identity.total += 1
        text = search_memory(user=user, query=identifier, channel=channel).text
        identity.found += identifier.lower() in text.lower()
        identity.calls.append(1)
        identity.max_chars = max(identity.max_chars, len(text))
        identity.kept_by_summary += identifier.lower() in summary.lower()
        baseline = letta_baseline(messages, identifier)
        identity.baseline_found += identifier.lower() in baseline.lower()
        identity.baseline_max_chars = max(identity.baseline_max_chars, len(baseline))
    for path, line in associations:
        for stats, policy in ((association, scripted_search), (blind, blind_search)):
            found, calls, most, partial_calls = policy(user, channel, split.is_old, path, line, max_calls)
            stats.partial_calls += partial_calls
            stats.total += 1
            stats.found += found
            stats.calls.append(calls)
            stats.max_chars = max(stats.max_chars, most)
        association.with_partial_reads += path in partial_paths
        association.kept_by_summary += line in summary
        baseline = letta_baseline(messages, path)
        association.baseline_found += line in baseline
        association.baseline_max_chars = max(association.baseline_max_chars, len(baseline))
    return measures


def merged(parts: list[Stats]) -> Stats:
    total = Stats()
    for part in parts:
        total.found += part.found
        total.total += part.total
        total.calls += part.calls
        total.max_chars = max(total.max_chars, part.max_chars)
        total.kept_by_summary += part.kept_by_summary
        total.baseline_found += part.baseline_found
        total.baseline_max_chars = max(total.baseline_max_chars, part.baseline_max_chars)
        total.partial_calls += part.partial_calls
        total.with_partial_reads += part.with_partial_reads
    return total


def report(title: str, measures: list[Measures]) -> None:
    print(title)
    identity = merged([m.identity for m in measures])
    association = merged([m.association for m in measures])
    blind = merged([m.blind for m in measures])
    for name, stats in (("identity", identity), ("association", association)):
        if not stats.total:
            print(f"  {name}: no cases")
            continue
        print(
            f"  {name}: found {stats.found}/{stats.total} ({100 * stats.found / stats.total:.1f} %) · "
            f"calls mean {statistics.mean(stats.calls):.2f} max {max(stats.calls)} · "
            f"max chars per call {stats.max_chars:,} · "
            f"summary kept {stats.kept_by_summary}/{stats.total} ({100 * stats.kept_by_summary / stats.total:.1f} %) · "
            f"Letta-style baseline found {stats.baseline_found}/{stats.total} "
            f"({100 * stats.baseline_found / stats.total:.1f} %), up to {stats.baseline_max_chars:,} chars"
        )
    if association.total:
        print(
            f"  association needles whose file also has partial reads: {association.with_partial_reads}/"
            f"{association.total} · calls that went to partial reads: {association.partial_calls} of "
            f"{sum(association.calls)}"
        )
    if blind.total:
        print(
            f"  association without tool=/result=/cursor: found {blind.found}/{blind.total} "
            f"({100 * blind.found / blind.total:.1f} %) · calls mean {statistics.mean(blind.calls):.2f} "
            f"max {max(blind.calls)} · max chars per call {blind.max_chars:,}"
        )


def run(data: Path, max_calls: int, cut_at: int | None) -> None:
    (user,) = setup()
    channels = import_sessions(user, data)
    from threadmem.models import Thread

    measured: dict[str, list[Measures]] = {kind: [] for kind in TITLES}
    for channel in channels:
        thread = Thread.objects.get(channel=channel)
        messages = messages_of(thread)
        split = split_of(thread, searchable_text, cut_at)
        if split is None:
            continue
        identities = identity_cases(messages, split)
        associations = association_cases(thread, messages, split)
        measures = measure(user, thread, split, identities, associations, max_calls)
        measured[split.kind].append(measures)
        one = measures.association
        print(
            f"  {channel} ({split.kind}{f' after seq {split.cut_seq}' if split.cut_seq else ''}): identity "
            f"{measures.identity.found}/{measures.identity.total}, association {one.found}/{one.total}"
            + (f", calls mean {statistics.mean(one.calls):.2f}" if one.calls else "")
        )
    for kind, title in TITLES.items():
        if measured[kind] or kind == "claude-code":
            heading = f"real sessions {title.format(cut_at=cut_at or 0)} ({len(measured[kind])} threads, from {data}):"
            report(heading, measured[kind])
    every = [m for kind in TITLES for m in measured[kind]]
    if len(every) > len(measured["claude-code"]):
        report(f"all real sessions above ({len(every)} threads):", every)
    channel, associations, identities = recall_synthetic.build(user)
    thread = Thread.objects.get(channel=channel)
    split = Split("claude-code", thread.current_generation, None, frozenset(), summary_of(thread))
    synthetic = measure(user, thread, split, identities, associations, max_calls)
    report(
        f"synthetic needles ({recall_synthetic.PATHS} paths, each named in "
        f"{recall_synthetic.CALLS_PER_PATH * recall_synthetic.GENERATIONS} calls over "
        f"{recall_synthetic.GENERATIONS} generations):",
        [synthetic],
    )
    print(
        "  (summary kept: the identifiers and lines found in Claude Code's own summary; Letta-style baseline: "
        f"the {BASELINE_MESSAGES} newest whole user/assistant messages containing the query)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data" / "claude-code")
    parser.add_argument("--max-calls", type=int, default=10)
    parser.add_argument(
        "--cut-at",
        type=int,
        help="also measure the sessions nobody compacted, cut where threadmem's automatic compaction would "
        "if THREADMEM_COMPACT_AT_CHARS were this many model-visible characters",
    )
    args = parser.parse_args()
    django.setup()
    run(args.data.resolve(), args.max_calls, args.cut_at)


if __name__ == "__main__":
    main()
