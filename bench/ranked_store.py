"""The ranked lane ("Other memory results") on the 1M-message bench store: described questions.

    .venv/bin/python bench/search.py --ranked [--ranked-threads 300] [--runs 30]

Called from bench/search.py once the store is built (never rebuilt here).
The lane ranks the pieces (``threadmem_chunk``) of the static model; the store
is built without them, and embedding its million messages with
``embeddings.service.embed_thread`` (what ``manage.py embeddings`` runs) takes
longer than a bench may on two shared cores: ``prepare`` embeds a subset and
prints its rate, so the time for the whole store can be read off it:

* the stress thread, the ordinary threads of median, p90 and p99 size;
* every thread of ``bench-owner-1`` (their global scope, 100 threads);
* ``--ranked-threads`` more threads drawn from the seed (the operator's
  global scope sees every embedded thread, so its figures are for that many
  pieces, not a million messages' worth: printed beside them).

A described question is made from a thread's own text: 6-10 words of one of
its messages, between stop words, asked as a question ("what did we say
about ... ?"): no literal hit for the whole query, one for many of its words.
Per scope it prints p50/p95/p99 of the whole tool (``search_memory``), of the
literal part (the same call with no ranked lane), and of the lane alone
(``ranked_results`` on the resolved scope, no budget), and how many answers
said the lane ran out of time (a global one: threadmem/features/search/semantic.py, RANKED_GLOBAL_BUDGET_MS).
"""

from __future__ import annotations

import os
import random
import re
import statistics
import time
from unittest import mock

from bench import store
from bench.database import lane_memory

QUESTION_SEED = 20261203
MIN_WORDS, MAX_WORDS = 6, 10
STOP_WORDS = ("the", "and", "when", "with", "for", "that", "was", "of")
OUT_OF_TIME = "did not answer within"
_WORD = re.compile(r"[A-Za-z]{4,}")


def load() -> str:
    return "load average (1, 5, 15 min): {:.2f} {:.2f} {:.2f}".format(*os.getloadavg())


def sized_threads() -> dict[str, int]:
    """The ordinary threads of median, p90 and p99 size (as bench/search.py's ordinary_threads picks them)."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT g.thread_id FROM threadmem_generation g JOIN threadmem_thread t ON t.id = g.thread_id "
            "WHERE NOT t.isolated AND t.channel <> %s ORDER BY g.visible_chars, g.thread_id",
            [store.STRESS_CHANNEL],
        )
        ordered = [thread_id for (thread_id,) in cursor.fetchall()]
    return {label: ordered[int(f * (len(ordered) - 1))] for label, f in (("median", 0.5), ("p90", 0.9), ("p99", 0.99))}


def prepare(extra_threads: int) -> None:
    """Embed the subset above with the static model (threads already embedded are skipped)."""
    from django.db import connection

    from threadmem.features.embeddings import static
    from threadmem.features.embeddings import thread_embedding as service
    from threadmem.models import Thread

    model = static.STATIC_MODEL
    wanted = [Thread.objects.get(channel=store.STRESS_CHANNEL).id, *sized_threads().values()]
    wanted += list(Thread.objects.filter(owner__username="bench-owner-1").order_by("id").values_list("id", flat=True))
    others = list(Thread.objects.filter(isolated=False).order_by("id").values_list("id", flat=True))
    wanted += random.Random(QUESTION_SEED).sample(others, extra_threads)
    behind = set(service.threads_behind(model))
    todo = [thread_id for thread_id in dict.fromkeys(wanted) if thread_id in behind]
    store.log(f"embedding {len(todo)} threads with {model} ({len(wanted) - len(todo)} already done); {load()}")
    started = time.perf_counter()
    messages = chunks = 0
    for done, thread_id in enumerate(todo, 1):
        outcome = service.embed_thread(thread_id=thread_id, model=model)
        messages, chunks = messages + outcome.messages, chunks + outcome.chunks
        if done % 50 == 0:
            store.log(f"  {done} threads, {messages:,} messages, {chunks:,} chunks")
    seconds = time.perf_counter() - started
    if todo:
        rate = messages / max(seconds, 1e-9)
        store.log(
            f"embedded {messages:,} messages into {chunks:,} chunks in {seconds:.0f} s ({rate:,.0f} messages/s: "
            f"the whole store would take ~{store.STORE_MESSAGES / rate / 60:.0f} min); {load()}"
        )
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE threadmem_chunk")
        cursor.execute(
            "SELECT count(*), count(DISTINCT m.thread_id), count(DISTINCT c.message_id) FROM threadmem_chunk c "
            "JOIN threadmem_message m ON m.id = c.message_id WHERE c.model = %s",
            [model],
        )
        pieces, threads, embedded = cursor.fetchone()
    print(f"\nranked lane: {pieces:,} pieces of {embedded:,} messages in {threads} threads embedded ({model})")


def questions(thread_ids: list[int], count: int, rng: random.Random) -> list[str]:
    """``count`` described questions, each from a random message of one of the threads."""
    from threadmem.models import Message

    texts = list(
        Message.objects.searchable()
        .filter(thread_id__in=thread_ids, role__in=("user", "assistant", "tool"))
        .exclude(content="")
        .order_by("id")
        .values_list("content", flat=True)[:5000]
    )
    asked = []
    while len(asked) < count:
        words = list(dict.fromkeys(w.lower() for w in _WORD.findall(rng.choice(texts)[:2000])))
        if len(words) < MIN_WORDS:
            continue
        chosen = rng.sample(words, rng.randint(MIN_WORDS, min(MAX_WORDS, len(words))))
        middle = []
        for word in chosen:
            middle.append(word)
            if rng.random() < 0.4:
                middle.append(rng.choice(STOP_WORDS))
        asked.append(f"what did we say about the {' '.join(middle)}?")
    return asked


def figures(label: str, samples: list[float]) -> str:
    p = store.percentile
    return f"{label} p50 {statistics.median(samples):6.1f} p95 {p(samples, 0.95):6.1f} p99 {p(samples, 0.99):6.1f}"


def measure_scope(label: str, *, user, channel: str | None, asked: list[str]) -> list[float]:
    from threadmem.domain.scope import resolve_scope
    from threadmem.features.search import search_memory, semantic
    from threadmem.features.search.ranked.lane import ranked_results

    scope = resolve_scope(user=user, channel=channel)
    whole, literal, lane, out_of_time, listed = [], [], [], 0, []
    # The scope read once, untimed, as a process's first search of it does (a cold global scope's keyword index
    # and vectors take seconds to read: the answers meanwhile run out of time).
    started = time.perf_counter()
    ranked_results(scope=scope, query=asked[0], terms=[])
    print(f" {label}: scope read in {(time.perf_counter() - started) * 1000:,.0f} ms (untimed)", flush=True)
    for _ in range(2):  # warm: the model, the workers' connections (a cold global lane runs out of time)
        warm = search_memory(user=user, query=asked[0], channel=channel)
    assert semantic.ranked_in_force() and ("Ranked by keyword" in warm.text or OUT_OF_TIME in warm.text), warm.text
    for question in asked:
        started = time.perf_counter()
        result = search_memory(user=user, query=question, channel=channel)
        whole.append((time.perf_counter() - started) * 1000)
        out_of_time += OUT_OF_TIME in result.text
        listed.append(result.literal_hits_total)
        with mock.patch.object(semantic, "ranked_in_force", lambda: False):  # the literal part alone
            started = time.perf_counter()
            search_memory(user=user, query=question, channel=channel)
            literal.append((time.perf_counter() - started) * 1000)
        started = time.perf_counter()
        ranked_results(scope=scope, query=question, terms=[])
        lane.append((time.perf_counter() - started) * 1000)
    print(f" {label} ({len(asked)} questions; literal hits p50 {statistics.median(listed):.0f})", flush=True)
    print(f"   {figures('whole tool  ', whole)}  ms;  lane out of time: {out_of_time} of {len(asked)}", flush=True)
    print(f"   {figures('literal part', literal)}  ms", flush=True)
    print(f"   {figures('lane alone  ', lane)}  ms", flush=True)
    return whole


def measure(runs: int) -> None:
    import gc

    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.db.models import Count

    from threadmem.models import Thread

    # bench/store.py turns the lane off for the literal figures; here it is the subject.
    settings.THREADMEM_STATIC_EMBEDDINGS = True
    User = get_user_model()
    rng = random.Random(QUESTION_SEED)
    gc.collect()
    gc.freeze()
    print(f"described questions, {runs} per scope; {load()}")
    print("whole tool = search_memory as the model calls it; literal part = the same call without the lane;")
    print("lane alone = ranked_results on the resolved scope (keyword + meaning + neighbours).")
    stress = Thread.objects.select_related("owner").get(channel=store.STRESS_CHANNEL)
    measure_scope("thread: stress", user=stress.owner, channel=stress.channel, asked=questions([stress.id], runs, rng))
    for label, thread_id in sized_threads().items():
        thread = Thread.objects.select_related("owner").get(id=thread_id)
        n = thread.messages.count()
        asked = questions([thread.id], runs, rng)
        measure_scope(f"thread: {label} ({n} messages)", user=thread.owner, channel=thread.channel, asked=asked)
    embedded = list(
        Thread.objects.filter(embedding_progress__embedded_seq__gt=0, isolated=False)
        .exclude(channel=store.STRESS_CHANNEL)
        .values_list("id", flat=True)
    )
    operator = User.objects.get(username="bench-operator")
    asked_operator = questions(embedded, runs, rng)
    measure_scope("global: operator", user=operator, channel=None, asked=asked_operator)
    owner = User.objects.get(username="bench-owner-1")
    owned = list(Thread.objects.filter(owner=owner).values_list("id", flat=True))
    count = Thread.objects.filter(owner=owner).aggregate(n=Count("messages"))["n"]
    asked_owner = questions(owned, runs, rng)
    measure_scope(
        f"global: owner ({len(owned)} threads, {count:,} messages)", user=owner, channel=None, asked=asked_owner
    )
    print(lane_memory())
    print(load())
