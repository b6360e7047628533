"""The messages next to the best ranked ones: a hit's question or answer, the call before a result.

A ranked message rarely stands alone: in a conversation the turn before a
hit asks what it answers, the turn after answers what it asks; in an agent's
thread a tool result follows its call. Unless the sentence model's meaning
ranking read the messages in context (``lane.lists_neighbours``), the best
``NEIGHBOURS_OF`` ranked messages are each followed by the scope's messages
just before and just after them in their thread (seq ± 1, when the scope may
show them and they are not listed earlier), each with the score of the
message it neighbours (docs/search.md, "Ranked memory results").
"""

from __future__ import annotations

from dataclasses import replace

from threadmem.domain.db import reading as connection  # where reads go now (the primary outside a model-facing read)
from threadmem.domain.scope import SearchScope
from threadmem.features.embeddings import retrieve
from threadmem.features.search.ranked.vectors import ScopePieces
from threadmem.features.search.shared_sql import in_ids
from threadmem.models import Chunk

NEIGHBOURS_OF = 10


def with_neighbours(ranked: list, *, scope: SearchScope, model: str, held: ScopePieces | None = None) -> list:
    """``ranked`` (``lane.Ranked``, best first), its first ``NEIGHBOURS_OF`` each followed by its neighbours.

    ``held``: the scope's pieces, read by this search (``vectors.scope_pieces``), which stand for its filter.
    """
    best = ranked[:NEIGHBOURS_OF]
    if not best:
        return ranked
    wanted = {(r.match.thread_id, r.match.seq + step) for r in best for step in (-1, 1)}
    found = _first_pieces(wanted, scope=scope, model=model, held=held)
    listed: set[int] = set()
    placed = []
    for r in best:
        before = found.get((r.match.thread_id, r.match.seq - 1))
        after = found.get((r.match.thread_id, r.match.seq + 1))
        for match, score in ((r.match, r.score), (before, r.score), (after, r.score)):
            if match is not None and match.message_id not in listed:
                listed.add(match.message_id)
                placed.append(r if match is r.match else replace(r, match=replace(match, score=score)))
    return placed + [r for r in ranked[NEIGHBOURS_OF:] if r.match.message_id not in listed]


def _first_pieces(
    wanted: set[tuple[int, int]], *, scope: SearchScope, model: str, held: ScopePieces | None
) -> dict[tuple[int, int], retrieve.Match]:
    """The first piece of each wanted (thread, seq) message the scope may show, content before arguments."""
    # Threads and seqs apart, the exact pairs kept below: an OR of pairs costs more to plan than the extra rows.
    threads = sorted({thread_id for thread_id, _ in wanted})
    seqs = sorted({seq for _, seq in wanted})
    order = ("message_id", "field", "start")  # "content" sorts before "tool_args.…"
    if held is not None:
        in_threads, threads_params = in_ids(connection.vendor, "m.thread_id", threads)
        in_seqs, seqs_params = in_ids(connection.vendor, "m.seq", seqs)
        rows = retrieve.detail_rows(
            f"c.model = %s AND {in_threads} AND {in_seqs}",
            [model, *threads_params, *seqs_params],
            order=", ".join(f"c.{column}" for column in order),
        )
        details = [row[1:] for row in rows if row[0] in held.shown]
    else:
        details = list(
            Chunk.objects.filter(model=model, message__thread_id__in=threads, message__seq__in=seqs)
            .filter(scope.q(prefix="message__"))
            .order_by(*order)
            .values_list(*retrieve.DETAIL_FIELDS)
        )
    found: dict[tuple[int, int], retrieve.Match] = {}
    for row in details:
        match = retrieve.Match(*row, score=0.0)
        if (match.thread_id, match.seq) in wanted:
            found.setdefault((match.thread_id, match.seq), match)
    return found
