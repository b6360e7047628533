"""Described questions: does one search_memory answer hold the evidence of a question asked as a user asks it?

    make bench-described LOCOMO=/path/to/locomo10.json
    .venv/bin/python bench/described.py /path/to/locomo10.json [--modes default,keyword,...] [--half tune]

The data is LoCoMo (github.com/snap-research/LoCoMo, ``data/locomo10.json``;
licensed CC BY-NC 4.0, so it is never committed: pass its path). Each of its
10 conversations becomes a thread (channel ``locomo:<sample_id>``), one
message per dialog turn, as a transcript reads: ``<speaker>: <text>``, a
shared image's caption appended (``[shares an image: <caption>]``);
``source_id`` is the turn's ``dia_id``, the first speaker is ``user`` and the
second ``assistant``. Every question of categories
1-4 with evidence is asked through ``search_memory`` exactly as written, with
the channel of its conversation; an evidence turn counts as found when its
messageId appears anywhere in the one answer (literal or ranked part).

DATABASE_URL (default postgres://postgres@127.0.0.1:5432/threadmem_bench_described;
an ``sqlite:///…`` URL works too) is created if missing and migrated; the
conversations are loaded once (reruns reuse them) and embedded with the model
in force (``manage.py embeddings``' path).

Modes (``--modes``): ``default`` (the configuration a fresh install runs),
``keyword`` and ``meaning`` (the ranked lane with one ranking only),
``rarest3`` (the three words of the question rarest in its conversation, the
default configuration), ``literal`` and ``literal-rarest3`` (no ranked lane:
the answer before contract §12). Tune on the first five conversations (file
order); the targets are read on the held-out last five.

Scopes (``--scope``): ``thread`` asks each question with its conversation's
channel; ``global`` asks it without a channel, over every thread of the one
owner: the ten conversations and, as the other sessions a user has, the real
Claude Code sessions of ``--sessions`` (default ../shared/data/claude-code,
skipped when absent); ``operator`` asks it without a channel as a staff user
(every thread of every owner). A global answer counts an evidence turn found
the same way; ``out`` is how many answers said the ranked lane ran out of its
budget. ``--scope all`` runs the three. Before a global scope's questions
its asker's scope is read once, untimed (``warm_up``): a process reads an
owner's keyword index and vectors once, and the answers asked meanwhile run
out of time (printed beside it, not counted in the lines).

At scale (``--owner``): with DATABASE_URL naming bench/search.py's 1M store
(postgres://postgres@127.0.0.1:5432/threadmem_bench_search) and ``--owner
bench-owner-1``, the conversations are planted among that owner's 100 filler
threads (~10,000 messages) in a store of a million messages; only that
owner's threads are embedded here (``bench/search.py --ranked-prepare-only``
embeds the operator's wider subset). ``--sessions none`` leaves the agent
sessions out.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import re
import statistics
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from database import django_environment

django_environment("postgres://postgres@127.0.0.1:5432/threadmem_bench_described", compaction=False)

import django  # noqa: E402

USER = "bench-described"
HALVES = (("tune", slice(0, 5)), ("held-out", slice(5, 10)))
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
DRAGON = "DRAGON (LoCoMo paper, Table 3, top-k of its retriever): R@5 56.7 · R@10 66.2 · R@25 76.7 · R@50 82.7"
MODES = ("default", "keyword", "meaning", "rarest3", "literal", "literal-rarest3")
WORD = re.compile(r"[\w'-]+")
DIA_ID = re.compile(r"D\d+:\d+")
TARGET = 70.0
SCOPES = ("thread", "global", "operator")
OPERATOR = "bench-described-operator"
OUT_OF_TIME = "did not answer within"
SESSIONS = Path(__file__).resolve().parents[2] / "shared" / "data" / "claude-code"


@dataclass
class Stats:
    questions: int = 0
    evidence: int = 0
    found: int = 0
    messages: list[int] = field(default_factory=list)
    chars: list[int] = field(default_factory=list)
    ms: list[float] = field(default_factory=list)
    out_of_time: int = 0
    hits: set[tuple[str, int]] = field(default_factory=set)  # (question, evidence message) found

    def add(self, other: Stats) -> None:
        self.questions += other.questions
        self.evidence += other.evidence
        self.found += other.found
        self.messages += other.messages
        self.chars += other.chars
        self.ms += other.ms
        self.out_of_time += other.out_of_time
        self.hits |= other.hits

    def line(self, label: str) -> str:
        if not self.questions:
            return f"{label:<34} (no questions)"
        ms = sorted(self.ms)
        p95 = ms[min(len(ms) - 1, int(len(ms) * 0.95))]
        p99 = ms[min(len(ms) - 1, int(len(ms) * 0.99))]
        return (
            f"{label:<34} {self.questions:>4} q {self.evidence:>4} ev  "
            f"found {100 * self.found / self.evidence:5.1f} %  "
            f"{statistics.mean(self.messages):5.1f} msgs {statistics.mean(self.chars):7.0f} chars  "
            f"p50 {statistics.median(ms):6.1f} ms  p95 {p95:6.1f} ms  p99 {p99:6.1f} ms  out {self.out_of_time}"
        )


def setup(owner: str):
    import os

    from django.conf import settings

    if settings.DATABASES["default"]["ENGINE"].endswith("postgresql"):
        from database import ensure_database

        ensure_database(os.environ["DATABASE_URL"])
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    from django.contrib.auth import get_user_model

    user, _ = get_user_model().objects.get_or_create(username=owner)
    return user


def turns(sample: dict) -> list[dict]:
    conversation = sample["conversation"]
    first = conversation["speaker_a"]
    sessions = sorted(
        (key for key in conversation if re.fullmatch(r"session_\d+", key)), key=lambda k: int(k.split("_")[1])
    )
    messages = []
    for key in sessions:
        for turn in conversation[key]:
            text = f"{turn['speaker']}: {turn.get('text', '')}"
            if turn.get("blip_caption"):
                text = f"{text} [shares an image: {turn['blip_caption']}]"
            role = "user" if turn["speaker"] == first else "assistant"
            messages.append({"role": role, "content": text, "source_id": turn["dia_id"]})
    return messages


def load(user, samples: list[dict]) -> dict[str, dict[str, int]]:
    """Each conversation as a thread (once); answer {channel: {dia_id: message id}}."""
    from threadmem.domain import services
    from threadmem.features.embeddings import choice, tasks
    from threadmem.features.embeddings import thread_embedding as embedding_service
    from threadmem.models import Message, Thread

    ids: dict[str, dict[str, int]] = {}
    for sample in samples:
        channel = f"locomo:{sample['sample_id']}"
        thread = Thread.objects.filter(owner=user, channel=channel).first()
        if thread is None:
            thread = services.thread_create(owner=user, channel=channel, title=channel)
            services.messages_append(thread=thread, messages=services.messages_parse(turns(sample)))
        ids[channel] = dict(Message.objects.filter(thread=thread).values_list("source_id", "id"))
    tasks.wait_for_background(timeout=600)  # a conversation of ~700 turns, embedded by MiniLM on a busy core
    from django.db import connection

    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:  # fresh rows: the planner's statistics
            cursor.execute("ANALYZE threadmem_message, threadmem_chunk")
    model = choice.active_model()
    if model:
        choice.embed(["warm up"], model=model)  # loaded before the first question (a search would not wait)
        started = time.perf_counter()
        chunks = 0
        owned = set(Thread.objects.filter(owner=user).values_list("id", flat=True))
        # Only the owner's threads: in the 1M store the others are the operator's scope, embedded by bench/search.py.
        for thread_id in (t for t in embedding_service.threads_behind(model) if t in owned):
            chunks += embedding_service.embed_thread(thread_id=thread_id, model=model).chunks
        if chunks:
            print(f"embedded {chunks} pieces with {model} in {time.perf_counter() - started:.1f} s")
    return ids


def load_sessions(user, data: Path) -> list[str]:
    """The real agent sessions as more threads of the same owner (imported once; reruns reuse them)."""
    from threadmem.features.embeddings import tasks
    from threadmem.features.imports.import_once import import_paths

    paths = sorted(p for p in data.glob("*.jsonl") if p.is_file()) if data.is_dir() else []
    if not paths:
        return []
    report = import_paths(paths=paths, fmt="claude-code", owner=user)
    tasks.wait_for_background(timeout=600)
    return report.channels


def warm_up(asker) -> str:
    """Read the asker's global scope once, as the first search of a process does; how long it took."""
    from threadmem.domain.scope import resolve_scope
    from threadmem.features.search.ranked import ranked_results

    started = time.perf_counter()
    ranked_results(scope=resolve_scope(user=asker, channel=None), query="warm up", terms=["warm up"])
    return f"{asker.username}'s global scope read in {1000 * (time.perf_counter() - started):.0f} ms (untimed)"


def rarest(question: str, frequency: dict[str, int], count: int) -> str:
    words = list(dict.fromkeys(w.strip("'-") for w in WORD.findall(question)))
    words = [w for w in words if len(w) >= 3]
    words.sort(key=lambda w: (frequency.get(w.lower(), 0), -len(w)))
    return " ".join(words[:count]) or question


def frequencies(sample: dict) -> dict[str, int]:
    seen: dict[str, int] = defaultdict(int)
    for message in turns(sample):
        for word in {w.lower().strip("'-") for w in WORD.findall(message["content"])}:
            seen[word] += 1
    return seen


def lane_of(mode: str):
    """What "Other memory results" is in ``mode``: the lane with one ranking, no lane, or as configured."""
    from functools import partial
    from unittest import mock

    from threadmem.features.search import semantic
    from threadmem.features.search.ranked import ranked_results

    if mode == "keyword":
        return mock.patch.object(semantic, "ranked_results", partial(ranked_results, meaning_on=False))
    if mode == "meaning":
        return mock.patch.object(semantic, "ranked_results", partial(ranked_results, keyword_on=False))
    if mode.startswith("literal"):
        return mock.patch.object(semantic, "ranked_in_force", lambda: False)
    return contextlib.nullcontext()


def ask(
    user, channel: str, sample: dict, ids: dict[str, int], mode: str, frequency: dict[str, int], *, scope: str
) -> Stats:
    from threadmem.features.search import search_memory

    stats = Stats()
    for qa in sample["qa"]:
        if qa.get("category") not in CATEGORIES:
            continue
        evidence = [ids[d] for e in qa.get("evidence", []) for d in DIA_ID.findall(e) if d in ids]
        if not evidence:
            continue
        query = qa["question"]
        if mode.endswith("rarest3"):
            query = rarest(query, frequency, 3)
        started = time.perf_counter()
        text = search_memory(user=user, query=query, channel=channel if scope == "thread" else None).text
        stats.ms.append(1000 * (time.perf_counter() - started))
        listed = {int(m) for m in re.findall(r"^--- messageId=(\d+)", text, flags=re.M)}
        stats.questions += 1
        stats.evidence += len(evidence)
        stats.found += sum(1 for e in evidence if e in listed)
        stats.hits |= {(qa["question"], e) for e in evidence if e in listed}
        stats.messages.append(len(listed))
        stats.chars.append(len(text))
        stats.out_of_time += OUT_OF_TIME in text
    return stats


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("locomo", type=Path, help="LoCoMo's data/locomo10.json (github.com/snap-research/LoCoMo)")
    parser.add_argument("--modes", default=",".join(MODES), help=f"comma-separated, of {', '.join(MODES)}")
    parser.add_argument("--half", choices=("tune", "held-out", "both"), default="both")
    parser.add_argument(
        "--scope", choices=(*SCOPES, "both", "all"), default="both", help="both: thread and global; all: the three"
    )
    parser.add_argument("--sessions", type=Path, default=SESSIONS, help="agent sessions: more threads of the owner")
    parser.add_argument("--owner", default=USER, help="the owner of the threads (bench-owner-1 in the 1M store)")
    args = parser.parse_args()
    if not args.locomo.is_file():
        raise SystemExit(
            f"{args.locomo}: not a file. Get data/locomo10.json from github.com/snap-research/LoCoMo "
            "(CC BY-NC 4.0; never commit it) and pass its path: make bench-described LOCOMO=/path/to/locomo10.json"
        )
    django.setup()
    import logging

    logging.getLogger("threadmem.features.search.semantic").setLevel(
        logging.ERROR
    )  # the answers count the lane out of time
    from django.contrib.auth import get_user_model

    samples = json.loads(args.locomo.read_text())
    user = setup(args.owner)
    sessions = load_sessions(user, args.sessions)
    ids = load(user, samples)
    both = ("thread", "global")
    scopes = [scope for scope in SCOPES if args.scope in (scope, "all") or (args.scope == "both" and scope in both)]
    operator, _ = get_user_model().objects.get_or_create(username=OPERATOR, defaults={"is_staff": True})
    warmed: set[int] = set()
    print(f"one owner: {len(samples)} conversations and {len(sessions)} agent sessions, each a thread")
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    for half, part in HALVES:
        if args.half not in ("both", half):
            continue
        print(f"\n== {half} half: conversations {part.start + 1}-{part.stop} ==")
        lines: dict[tuple[str, str], Stats] = {}
        for scope, mode in ((scope, mode) for scope in scopes for mode in modes):
            asker = operator if scope == "operator" else user
            if scope != "thread" and asker.pk not in warmed:
                warmed.add(asker.pk)
                print(warm_up(asker))
            by_category: dict[int, Stats] = defaultdict(Stats)
            whole = Stats()
            for sample in samples[part]:
                channel = f"locomo:{sample['sample_id']}"
                frequency = frequencies(sample)
                for category in CATEGORIES:
                    one = {**sample, "qa": [qa for qa in sample["qa"] if qa.get("category") == category]}
                    with lane_of(mode):
                        stats = ask(asker, channel, one, ids[channel], mode, frequency, scope=scope)
                    by_category[category].add(stats)
                    whole.add(stats)
            print(whole.line(f"{scope} {mode}"))
            lines[scope, mode] = whole
            for category, name in CATEGORIES.items():
                print(by_category[category].line(f"  {category} {name}"))
        for scope in scopes:
            if (scope, "default") in lines and (scope, "keyword") in lines:
                default, keyword = lines[scope, "default"].hits, lines[scope, "keyword"].hits
                print(
                    f"{scope}: evidence turns found only with the meaning half {len(default - keyword)}, "
                    f"only without it {len(keyword - default)}"
                )
    from database import lane_memory

    print(lane_memory())
    print(f"\n{DRAGON}")
    print(f"target: held-out half, default mode, >= {TARGET:g} % of evidence turns found in one answer")


if __name__ == "__main__":
    main()
