"""The ranked lane: keyword and meaning rankings of the scope's pieces, fused, listed best first.

``ranked_results`` is a semantic provider (``search/semantic.py``). It ranks
the pieces (``threadmem_chunk``) of the embedding model in force
(``embeddings/choice.py``: a configured one, else the static one) two ways:

- keyword relevance (``keyword.py``: the database's full-text engine);
- meaning: cosine similarity of the piece's vector to the whole query's
  (``embeddings/retrieve.py``, at least ``MIN_SIMILARITY``);

then collapses each ranking to messages (a message's best piece) and fuses
them by reciprocal rank: a message's score is the sum over the rankings of
``1 / (RRF_K + rank)``. The answer is a ``RankedText``: the entries, so that
``share.fit`` can leave out messages the literal part already lists and stop
at an entry's end when the room runs out.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings

from threadmem.embeddings import choice, retrieve, static
from threadmem.lib.windows import Window
from threadmem.models import Chunk
from threadmem.scope import SearchScope
from threadmem.search.bounded import HEAD_MARK, TAIL_MARK, WINDOW_CHARS, one_line
from threadmem.search.ranked import keyword

# Messages each ranking contributes, and listed at most (the room cuts sooner).
RANKED_TOP_K = 60
# A model server's call may outlive the search's deadline by this much (as in semantic.py).
CALL_GRACE_SECONDS = 1.0
# Reciprocal rank fusion's constant (Cormack et al. use 60; measured in docs/search.md).
RRF_K = 60
# Meaning alone lists a message only this similar to the query (cosine); the
# static model puts unrelated sentences below ~0.3.
MIN_SIMILARITY = 0.35
NO_MATCH = "No messages match the query by keyword or by meaning."
NO_MODEL = "Ranked results are off (no embedding model in force: THREADMEM_STATIC_EMBEDDINGS=false)."


class RankedText(str):
    """The lane's text, with its entries (message id, entry text) for ``share.fit``."""

    head: str
    entries: list[tuple[int, str]]

    @classmethod
    def of(cls, head: str, entries: list[tuple[int, str]]) -> RankedText:
        text = cls("\n".join([head, *(entry for _, entry in entries)]) if head else "\n".join(e for _, e in entries))
        text.head, text.entries = head, entries
        return text


@dataclass(frozen=True)
class Ranked:
    match: retrieve.Match
    score: float
    keyword_rank: int | None
    meaning_rank: int | None
    meaning_similarity: float | None


def _details(chunk_ids: list[int], scores: dict[int, float]) -> dict[int, retrieve.Match]:
    rows = Chunk.objects.filter(id__in=chunk_ids).values_list("id", *retrieve.DETAIL_FIELDS)
    return {row[0]: retrieve.Match(*row[1:], score=scores[row[0]]) for row in rows}


def _by_message(matches: list[retrieve.Match]) -> list[retrieve.Match]:
    """The best piece of each message, keeping the ranking's order."""
    seen: set[int] = set()
    kept = []
    for match in matches:
        if match.message_id not in seen:
            seen.add(match.message_id)
            kept.append(match)
    return kept


def keyword_ranking(*, scope: SearchScope, query: str, model: str, k: int) -> list[retrieve.Match]:
    ranked = keyword.rank(scope=scope, query=query, model=model, limit=k * retrieve.CANDIDATES_PER_RESULT)
    scores = dict(ranked)
    details = _details([chunk_id for chunk_id, _ in ranked], scores)
    return _by_message([details[chunk_id] for chunk_id, _ in ranked if chunk_id in details])[:k]


def meaning_ranking(*, scope: SearchScope, query: str, model: str, k: int) -> list[retrieve.Match]:
    timeout = settings.THREADMEM_SEMANTIC_DEADLINE + CALL_GRACE_SECONDS
    (vector,) = choice.embed([query], model=model, timeout=timeout)
    # A configured model has its own threshold (THREADMEM_SEMANTIC_MIN_SCORE); the static one, MIN_SIMILARITY.
    threshold = MIN_SIMILARITY if model == static.STATIC_MODEL else settings.THREADMEM_SEMANTIC_MIN_SCORE
    return retrieve.nearest(scope=scope, vector=vector, model=model, k=k, min_score=threshold)


def fuse(keyword_matches: list[retrieve.Match], meaning_matches: list[retrieve.Match]) -> list[Ranked]:
    """Reciprocal rank fusion of two message rankings, best first; a message shows its keyword piece if any."""
    found: dict[int, list] = {}
    for rank, match in enumerate(keyword_matches, 1):
        found[match.message_id] = [match, 1 / (RRF_K + rank), rank, None, None]
    for rank, match in enumerate(meaning_matches, 1):
        entry = found.setdefault(match.message_id, [match, 0.0, None, None, None])
        entry[1] += 1 / (RRF_K + rank)
        entry[3], entry[4] = rank, match.score
    fused = [Ranked(*entry) for entry in found.values()]
    return sorted(fused, key=lambda r: (-r.score, -r.match.message_id))


def entry_text(ranked: Ranked, *, with_channel: bool) -> str:
    match = ranked.match
    window = Window(
        start=match.start + 1,
        text=match.text[:WINDOW_CHARS],
        cut_before=match.start > 0,
        cut_after=len(match.text) > WINDOW_CHARS or not match.end_of_field,
    )
    channel = f" channel={one_line(match.channel)}" if with_channel else ""
    ranks = " ".join(
        f"{name}#{rank}" for name, rank in (("keyword", ranked.keyword_rank), ("meaning", ranked.meaning_rank)) if rank
    )
    if ranked.meaning_similarity is not None:
        ranks += f" similarity={ranked.meaning_similarity:.2f}"
    return (
        f"--- messageId={match.message_id} sessionId={one_line(match.session_id) or '-'} "
        f"generation={match.generation} role={match.role} field={one_line(match.field)}{channel} "
        f"score={ranked.score * 1000:.1f} ({ranks})\n{window.render(head_mark=HEAD_MARK, tail_mark=TAIL_MARK)}"
    )


HEAD = "Ranked by keyword relevance and meaning, best first (messageIds the literal part lists are not repeated):"


def ranked_results(
    *, scope: SearchScope, query: str, terms: list[str], keyword_on: bool = True, meaning_on: bool = True
) -> str:
    """The default "Other memory results" (SPEC §12): the scope's messages ranked for the whole query."""
    model = choice.active_model()
    if not model:
        return NO_MODEL
    text = query.strip()
    keyword_matches = keyword_ranking(scope=scope, query=text, model=model, k=RANKED_TOP_K) if keyword_on else []
    meaning_matches = meaning_ranking(scope=scope, query=text, model=model, k=RANKED_TOP_K) if meaning_on else []
    fused = fuse(keyword_matches, meaning_matches)[:RANKED_TOP_K]
    if not fused:
        return NO_MATCH
    return RankedText.of(HEAD, [(r.match.message_id, entry_text(r, with_channel=scope.is_global)) for r in fused])


def keyword_only(*, scope: SearchScope, query: str, terms: list[str]) -> str:
    return ranked_results(scope=scope, query=query, terms=terms, meaning_on=False)


def meaning_only(*, scope: SearchScope, query: str, terms: list[str]) -> str:
    return ranked_results(scope=scope, query=query, terms=terms, keyword_on=False)
