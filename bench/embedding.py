"""The sentence model's cost on one core: a real session embedded, long tool output, a query, the memory.

    .venv/bin/python bench/embedding.py [--session PATH] [--messages 1000]

Pinned to one core (as a worker embeds). Imports a real Claude Code session
(default: ../shared/data/claude-code's largest) into a throwaway SQLite
database with embedding off, cuts it to its first ``--messages`` messages,
then embeds that thread with the model in force as a worker's run does
(``thread_embedding.embed_thread``: the pieces, the model, the rows). It
prints:

* the session: messages, pieces, seconds, messages/s and pieces/s;
* the worst case: 1,000 pieces of 1,000 characters (the longest piece,
  ``CHUNK_CHARS``; the session's longest tool output, cut), pieces/s;
* a query: p50 and p99 of embedding the first 300 characters of 200 of the session's messages, one by one,
  and the same 200 as one call (a chat's turns: messages/s);
* the memory: this process's resident size before the model, once loaded,
  and after the embedding (what a web process adds is the loaded figure; a
  worker's is the last).

``THREADMEM_STATIC_EMBEDDINGS=static`` measures the static model instead.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from database import django_environment

SESSIONS = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "claude-code"
_database = Path(tempfile.mkdtemp(prefix="threadmem-embedding-")) / "db.sqlite3"
django_environment(f"sqlite:///{_database}", compaction=False)

import django  # noqa: E402


def resident_mb() -> float:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    largest = max(SESSIONS.glob("*.jsonl"), key=lambda p: p.stat().st_size, default=None)
    parser.add_argument("--session", type=Path, default=largest, help="a Claude Code session (.jsonl)")
    parser.add_argument("--messages", type=int, default=1000, help="the session cut to its first N messages")
    args = parser.parse_args()
    if args.session is None or not args.session.is_file():
        raise SystemExit(f"no session to embed: pass --session PATH (looked in {SESSIONS})")
    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    django.setup()
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.core.management import call_command

    from threadmem.features.embeddings import choice, chunks
    from threadmem.features.embeddings import thread_embedding as embedding_service
    from threadmem.features.imports.import_once import import_paths
    from threadmem.models import Message, Thread

    call_command("migrate", verbosity=0)
    model = choice.active_model()
    owner = get_user_model().objects.create(username="bench-embedding")
    in_force = settings.THREADMEM_STATIC_EMBEDDINGS, settings.THREADMEM_SENTENCE_EMBEDDINGS
    settings.THREADMEM_STATIC_EMBEDDINGS = settings.THREADMEM_SENTENCE_EMBEDDINGS = False  # imported, not embedded
    import_paths(paths=[args.session], fmt="claude-code", owner=owner)
    settings.THREADMEM_STATIC_EMBEDDINGS, settings.THREADMEM_SENTENCE_EMBEDDINGS = in_force
    thread = Thread.objects.get(owner=owner)
    messages = Message.objects.filter(thread=thread, kind=Message.Kind.MESSAGE, model_visible=True).order_by("seq")
    last = messages.values_list("seq", flat=True)[: args.messages][args.messages - 1 : args.messages]
    if last:  # the first N messages a run embeds; fewer if the session holds fewer
        Message.objects.filter(thread=thread, seq__gt=last[0]).delete()
    print(f"model: {model}; one core (cpu {min(os.sched_getaffinity(0))}); session {args.session.name}")

    before = resident_mb()
    started = time.perf_counter()
    choice.embed(["load"], model=model)
    loaded = resident_mb()
    took = time.perf_counter() - started
    print(f"load: {took:.2f} s, resident {before:.0f} -> {loaded:.0f} MB (+{loaded - before:.0f})")

    started = time.perf_counter()
    run = embedding_service.embed_thread(thread_id=thread.pk, model=model)
    took = time.perf_counter() - started
    print(
        f"session: {run.messages} messages, {run.chunks} pieces in {took:.1f} s: "
        f"{run.messages / took:.0f} messages/s, {run.chunks / took:.0f} pieces/s "
        f"({1000 * took / max(run.messages, 1):.1f} s per 1,000 messages)"
    )

    longest = max((m.content for m in messages), key=len)
    piece = next(iter(chunks.spans(longest)), (0, 0))
    text = longest[piece[0] : piece[1]].ljust(chunks.CHUNK_CHARS, " ")[: chunks.CHUNK_CHARS]
    long_pieces = [f"{n} {text}"[: chunks.CHUNK_CHARS] for n in range(1000)]
    started = time.perf_counter()
    choice.embed(long_pieces, model=model)
    took = time.perf_counter() - started
    print(f"long tool output: 1,000 pieces of {chunks.CHUNK_CHARS:,} characters in {took:.1f} s ({1000 / took:.0f}/s)")

    prompts = [m.content[:300] for m in messages.exclude(content="")[:200]]  # query-sized texts of the session
    timings = []
    for prompt in prompts:
        started = time.perf_counter()
        choice.embed([prompt], model=model)
        timings.append((time.perf_counter() - started) * 1000)
    started = time.perf_counter()
    choice.embed(prompts, model=model)
    took = time.perf_counter() - started
    print(f"chat-sized texts (up to 300 characters): {len(prompts)} in {took:.1f} s ({len(prompts) / took:.0f}/s)")
    timings.sort()
    p99 = timings[min(len(timings) - 1, int(len(timings) * 0.99))]
    print(f"query: {len(timings)} prompts, p50 {statistics.median(timings):.1f} ms, p99 {p99:.1f} ms")
    print(f"resident after embedding: {resident_mb():.0f} MB (+{resident_mb() - before:.0f} over the start)")


if __name__ == "__main__":
    sys.exit(main())
