"""The ranked lane: keyword and meaning rankings of the scope's pieces, fused, listed best first.

``ranked_results`` is what ``search/semantic.py`` runs. It ranks
the pieces (``threadmem_chunk``) of the embedding model in force
(``embeddings/choice.py``: a configured one, else the static one) two ways:

- keyword relevance (``keyword.py``: the database's full-text engine);
- meaning: cosine similarity of the piece's vector to the whole query's
  (``embeddings/retrieve.py``), at least a threshold;

then collapses each ranking to messages (a message's best piece; with a
sentence model or a configured one, each message beside its neighbours:
``context.py``) and fuses them by weighted reciprocal rank: a message's score is the sum over the
rankings of ``weight / (RRF_K + rank)``. The static model's meaning ranking
weighs less than keywords (on LoCoMo it finds less: docs/search.md); a
configured model's weighs the same. The answer is a ``RankedText``: the
entries, so that ``share.fit`` can leave out messages the literal part
already lists and stop at an entry's end when the room runs out.
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import cached_property, partial

from django.conf import settings

from threadmem.domain.db import reading as connection  # where reads go now (the primary outside a model-facing read)
from threadmem.domain.scope import SearchScope
from threadmem.features.embeddings import choice, retrieve, sentence, static
from threadmem.features.search.answer_caps import HEAD_MARK, TAIL_MARK, THREAD_SEARCH_MAX_CHARS
from threadmem.features.search.hit_entries import one_line
from threadmem.features.search.ranked import (
    backlog,
    context,
    keyword,
    loading,
    neighbours,
    packing,
    spread,
    thread_legend,
    vectors,
)
from threadmem.features.search.shared_sql import ids_table
from threadmem.infrastructure import llm
from threadmem.lib.windows import Window

logger = logging.getLogger(__name__)

# Messages each ranking contributes, and listed at most (the room cuts sooner):
# meaning still finds evidence deep in its ranking (docs/search.md, "Ranked memory results").
RANKED_TOP_K = 150
# Keyword pieces read per message listed (a long tool result's pieces collapse
# into its best one; a conversation's turns are one piece each).
KEYWORD_PIECES_PER_RESULT = 2
SCORE_DIGITS = 2
# Whether the best messages' neighbours are listed with them where they are (lists_neighbours); off only to
# measure what they add.
NEIGHBOURS_ON = True
# Occurrences of one query word looked at in a piece (a window is placed at one of them).
MAX_POSITIONS = 20
# Reciprocal rank fusion's constant, tuned on LoCoMo (docs/search.md, "How the 12,000 characters are shared").
RRF_K = 10
# Meaning's weight in the fusion and its similarity threshold, for the static
# model, the sentence model and a configured one (the sentence model's cosine is
# read without the scope's common direction, common.py: near 0 for what is unrelated).
STATIC_MEANING_WEIGHT = 0.5
STATIC_MIN_SIMILARITY = 0.3
SENTENCE_MIN_SIMILARITY = 0.05
CONFIGURED_MEANING_WEIGHT = 1.0
CONFIGURED_MIN_SIMILARITY = 0.3
# A model server's call may outlive the search's deadline by this much.
CALL_GRACE_SECONDS = 1.0
# A model error quoted in a note stops here (the lane's and the memory answer's, semantic.py).
NOTE_ERROR_CHARS = 300
# The field an entry names only when its piece is elsewhere (a tool argument's leaf).
CONTENT_FIELD = "content"
NO_MATCH = "No messages match the query by keyword or by meaning."
NO_MODEL = "Semantic search is not configured (set THREADMEM_EMBEDDING_MODEL to rank messages by meaning)."
_HEAD_END = (
    "(messages the literal part lists are not repeated; an entry without sessionId has none, without generation is "
    f"in its thread's current one, without field is the message's {CONTENT_FIELD}):"
)
HEAD = (
    f"Ranked by keyword relevance and meaning, best first, each of the best {neighbours.NEIGHBOURS_OF} followed by "
    f"its thread's messages just before and after it {_HEAD_END}"
)
# When the sentence model's meaning ranking read each message beside its neighbours (context.py): none is listed
# after another.
CONTEXT_HEAD = (
    "Ranked by keyword relevance and meaning, best first, each message scored beside its thread's messages just "
    f"before and after it {_HEAD_END}"
)
# While this process loads the sentence model (on a background thread): the keyword ranking alone, or in a thread
# with the static model's meaning computed for it (loading.py).
LOADING_NOTE = "The meaning model is still loading in this process: these are ranked by keyword relevance only."
STATIC_LOADING_NOTE = (
    "The meaning model is still loading in this process: meaning here is the static model's until it has loaded."
)
FAILED_NOTE = (
    "The meaning model did not load in this process (its log says why): these are ranked by keyword relevance only."
)
# While the model in force has not embedded all of the scope (a new model's backlog, or appends a moment ago).
BACKLOG_NOTE = (
    "Up to {messages} messages of this scope are not embedded yet by the model in force: this ranking leaves them "
    "out until they are (the literal part above searches them)."
)
KEYWORD_HEAD = HEAD.replace("by keyword relevance and meaning", "by keyword relevance")
_WORD = re.compile(r"\w{3,}")
# A query word is looked for in a piece by its first characters (a stem: "support" finds "supported").
STEM_CHARS = 5


class Entry:
    """One ranked message's entry, its text written when first read: most of a lane's entries are never shown."""

    def __init__(self, message_id: int, render: Callable[[], str]) -> None:
        self.message_id, self._render = message_id, render

    @cached_property
    def text(self) -> str:
        return self._render()


class RankedText(str):
    """The lane's head and its first entries as text; all its entries for ``share.fit``, which leaves out the
    messages the literal part lists. In the global scope each entry's thread line too (``threads.py``), listed
    once for the entries shown."""

    head: str
    entries: list[Entry]
    note: str  # the head's note alone (shown when no entry is left to show)
    thread_lines: dict[int, str]  # message id -> its thread's line (global scope)

    @classmethod
    def of(
        cls, head: str, entries: list[Entry], *, note: str = "", thread_lines: dict[int, str] | None = None
    ) -> RankedText:
        lines = thread_lines or {}
        shown, used = [], len(head)
        for entry in entries:  # as much as a whole answer could ever show
            if used > THREAD_SEARCH_MAX_CHARS:
                break
            shown.append(entry)
            used += 1 + len(entry.text)
        legend = list(dict.fromkeys(lines[entry.message_id] for entry in shown if entry.message_id in lines))
        text = cls(
            "\n".join([head, *(entry.text for entry in shown), *([thread_legend.HEAD, *legend] if legend else [])])
        )
        text.head, text.entries, text.note, text.thread_lines = head, entries, note, lines
        return text


@dataclass(frozen=True)
class Ranked:
    match: retrieve.Match
    score: float


@dataclass(frozen=True)
class Hit:
    """A message one ranking lists: its best piece, and that piece's details when the ranking read them."""

    message_id: int
    chunk_id: int | None
    score: float
    match: retrieve.Match | None = None


def _by_message(pieces: list[tuple[int, int, float]]) -> list[Hit]:
    """The best piece of each message, keeping the ranking's order."""
    seen: set[int] = set()
    kept = []
    for chunk_id, message_id, score in pieces:
        if message_id not in seen:
            seen.add(message_id)
            kept.append(Hit(message_id, chunk_id, score))
    return kept


def keyword_hits(
    *,
    scope: SearchScope,
    query: str,
    model: str,
    k: int,
    held: vectors.ScopePieces | None = None,
    beside: context.Ranking | None = None,
) -> list[Hit]:
    """``beside``: the meaning ranking in context of the same search, when it ran (it breaks this one's ties)."""
    width = context_width(model, beside)
    if held is None or width is None or not vectors.fits(len(held.ids), width):
        ranked = keyword.rank_pieces(
            scope=scope, query=query, model=model, limit=k * KEYWORD_PIECES_PER_RESULT, held=held
        )
        return _by_message(ranked)[:k]
    # Every matched piece: a message's neighbours count whatever their own rank.
    ranked = keyword.rank_pieces(scope=scope, query=query, model=model, limit=len(held.ids), held=held)
    found = context.keyword(pieces=held, ranked=ranked, width=width, second_weight=second_weight(model))
    return [Hit(*hit) for hit in context.listed(found, k=k, min_score=0.0, ties=beside)]


def meaning_ranking(
    *, scope: SearchScope, query: str, model: str, k: int, held: vectors.ScopePieces | None = None, read: bool = False
) -> tuple[list[Hit], context.Ranking | None]:
    """The meaning ranking's messages, and the scope's messages ranked in context when this process ranked them so.

    ``held``: the scope's pieces, when ``read`` already (None then: too many to hold)."""
    timeout = settings.THREADMEM_SEMANTIC_DEADLINE + CALL_GRACE_SECONDS
    (vector,) = choice.embed([query], model=model, timeout=timeout)
    threshold = min_similarity(model)
    if not read and not scope.is_global:
        held = vectors.scope_pieces(scope=scope, model=model)
    if held is not None and vectors.fits(len(held.ids), len(vector)):
        if model == static.STATIC_MODEL:
            found = vectors.nearest(pieces=held, vector=vector, k=k, min_score=threshold)
            return [Hit(*hit) for hit in found], None
        # A sentence model or a configured one: each message beside its neighbours (context.py).
        ranking = context.meaning(
            pieces=held, vector=vector, second_weight=second_weight(model), parts=common_parts(model)
        )
        found = context.listed(ranking, k=k, min_score=threshold)
        return [Hit(*hit) for hit in found], ranking
    matches = retrieve.nearest(scope=scope, vector=vector, model=model, k=k, min_score=threshold)
    return [Hit(m.message_id, None, m.score, m) for m in matches], None


def lists_neighbours(model: str, in_context: context.Ranking | None) -> bool:
    """Whether the best messages are followed by their neighbours (``neighbours.py``): not after the sentence
    model's meaning ranking in context, which lists a hit's neighbours near it by their own scores (each counts a
    share of the hit's; its threshold lets in any message near the question). A keyword ranking alone lists only
    messages holding a query word, so the turn that answers without one comes as a neighbour; the static model's
    and a configured model's lanes are as they were tuned (docs/benchmarks.md, "Neighbours, once ranked in context")."""
    return NEIGHBOURS_ON and (in_context is None or model != sentence.SENTENCE_MODEL)


def second_weight(model: str) -> float:
    """The share of the messages two before and two after in a ranking in context (the sentence model's only)."""
    return context.SECOND_CONTEXT_WEIGHT if model == sentence.SENTENCE_MODEL else 0.0


def common_parts(model: str) -> tuple[tuple[int, float], ...] | None:
    """The parts of ``model``'s vector read without the scope's common direction (``common.py``): the sentence
    model's, where it was measured; None: the plain cosine."""
    return sentence.PARTS if model == sentence.SENTENCE_MODEL else None


def context_width(model: str, beside: context.Ranking | None) -> int | None:
    """The dimensions of the vectors a keyword ranking in context places its pieces among: those the meaning
    ranking read, the sentence model's when it did not run (loading, or keyword only); None: no context (the
    static model's lane is as it was tuned; a configured model's, once a query vector names its width)."""
    if beside is not None:
        return beside.held.matrix.shape[1]
    return sentence.SENTENCE_DIMENSIONS if model == sentence.SENTENCE_MODEL else None


def min_similarity(model: str) -> float:
    """The least cosine a piece needs to be in ``model``'s meaning ranking."""
    if model == static.STATIC_MODEL:
        return STATIC_MIN_SIMILARITY
    return SENTENCE_MIN_SIMILARITY if model == sentence.SENTENCE_MODEL else CONFIGURED_MIN_SIMILARITY


def fuse(keyword_hits: list[Hit], meaning_hits: list[Hit], *, meaning_weight: float = 1.0) -> list[Hit]:
    """Weighted reciprocal rank fusion of two message rankings, best first; a message shows its keyword piece."""
    found: dict[int, list] = {}
    for rank, hit in enumerate(keyword_hits, 1):
        found[hit.message_id] = [hit, 1 / (RRF_K + rank)]
    for rank, hit in enumerate(meaning_hits, 1):
        found.setdefault(hit.message_id, [hit, 0.0])[1] += meaning_weight / (RRF_K + rank)
    fused = [replace(hit, score=score) for hit, score in found.values()]
    return sorted(fused, key=lambda hit: (-hit.score, -hit.message_id))


def with_details(hits: list[Hit]) -> list[Ranked]:
    """The hits with their pieces' details (one statement for those the rankings did not read), in order."""
    wanted = [hit.chunk_id for hit in hits if hit.match is None]
    rows = retrieve.detail_rows_of(*ids_table(connection.vendor, wanted)) if wanted else []
    read = {row[0]: row[1:] for row in rows}
    ranked = []
    for hit in hits:
        if hit.match is not None:
            ranked.append(Ranked(replace(hit.match, score=hit.score), hit.score))
        elif hit.chunk_id in read:  # a piece gone since it was ranked is left out
            ranked.append(Ranked(retrieve.Match(*read[hit.chunk_id], score=hit.score), hit.score))
    return ranked


def word_weights(texts: list[str], words: list[str]) -> dict[str, float]:
    """Each query word's stem, weighted by its rarity among the listed pieces (a word every piece holds: ~0)."""
    stems = list(dict.fromkeys(word[:STEM_CHARS] for word in words))
    lowered = [text.lower() for text in texts]
    total = len(lowered)
    return {stem: math.log(1 + total / (1 + sum(stem in text for text in lowered))) for stem in stems}


def window_of(match: retrieve.Match, weights: dict[str, float], *, width: int, lead: int) -> Window:
    """``width`` characters of the piece where its query words weigh most, from ``lead`` characters before the
    first of them (``packing.py`` sets both)."""
    if len(match.text) <= width:  # the whole piece fits: wherever its words are, the window starts at 0
        return Window(
            start=match.start + 1, text=match.text, cut_before=match.start > 0, cut_after=not match.end_of_field
        )
    lowered = match.text.lower()
    hits = sorted((at, stem) for stem in weights for at in _positions(lowered, stem))  # every occurrence, in order
    offset, best = 0, -1.0
    for at, _ in hits:
        start = max(0, at - lead)
        held = {stem for position, stem in hits if start <= position and position + len(stem) <= start + width}
        weight = math.fsum(weights[stem] for stem in held)  # exact: the same whatever the set's order
        if weight > best:
            offset, best = start, weight
    if len(match.text) - offset < width:
        offset = max(0, len(match.text) - width)
    text = match.text[offset : offset + width]
    return Window(
        start=match.start + offset + 1,
        text=text,
        cut_before=match.start + offset > 0,
        cut_after=offset + len(text) < len(match.text) or not match.end_of_field,
    )


def _positions(text: str, stem: str) -> list[int]:
    found, at = [], text.find(stem)
    while at >= 0 and len(found) < MAX_POSITIONS:
        found.append(at)
        at = text.find(stem, at + 1)
    return found


def entry_text(ranked: Ranked, *, weights: dict[str, float], with_channel: bool, width: int, lead: int) -> str:
    match = ranked.match
    channel = f" channel={one_line(match.channel)}" if with_channel else ""
    window = window_of(match, weights, width=width, lead=lead)
    # What most entries would repeat is left out (the head says so): the room goes to more messages.
    session = f" sessionId={one_line(match.session_id)}" if match.session_id else ""
    # A generation is named once compacted: what the agent's context no longer holds.
    generation = f" generation={match.generation}" if match.generation != match.thread_generation else ""
    field = f" field={one_line(match.field)}" if match.field != CONTENT_FIELD else ""
    return (
        f"--- messageId={match.message_id}{session}{generation} role={match.role}{field}{channel} "
        f"score={ranked.score * 100:.{SCORE_DIGITS}f}\n{window.render(head_mark=HEAD_MARK, tail_mark=TAIL_MARK)}"
    )


def ranked_results(
    *, scope: SearchScope, query: str, terms: list[str], keyword_on: bool = True, meaning_on: bool = True
) -> str:
    """The default "Other memory results" (contract §12): the scope's messages ranked for the whole query.

    ``keyword_on``/``meaning_on``: one ranking alone (bench/described.py measures each).
    """
    model = choice.active_model()
    if not model:
        return NO_MODEL
    text = query.strip()
    # The scope's pieces are read once, for both rankings: a thread's by one statement (vectors.py), a global
    # scope's kept per thread (spread.py); None when there are too many to hold: the database ranks them.
    held = (spread.global_pieces if scope.is_global else vectors.scope_pieces)(scope=scope, model=model)
    note = ""
    by_meaning: list[Hit] = []
    if meaning_on and not choice.meaning_ready(model):
        meaning_on, note = False, FAILED_NOTE if choice.meaning_failed(model) else LOADING_NOTE
        found = loading_hits(held, text) if note == LOADING_NOTE and loading.possible(scope, held) else None
        if found is not None:
            by_meaning, note = found, STATIC_LOADING_NOTE
    in_context = None
    try:
        if meaning_on:
            by_meaning, in_context = meaning_ranking(
                scope=scope, query=text, model=model, k=RANKED_TOP_K, held=held, read=True
            )
    except llm.LLMError as error:  # the model server: the keyword ranking still stands
        note = unavailable_note(error)
    by_keyword = (
        keyword_hits(scope=scope, query=text, model=model, k=RANKED_TOP_K, held=held, beside=in_context)
        if keyword_on
        else []
    )
    static_meaning = model == static.STATIC_MODEL or note == STATIC_LOADING_NOTE
    weight = STATIC_MEANING_WEIGHT if static_meaning else CONFIGURED_MEANING_WEIGHT
    fused = with_details(fuse(by_keyword, by_meaning, meaning_weight=weight)[:RANKED_TOP_K])
    listed_beside = lists_neighbours(model, in_context)
    if listed_beside:
        fused = neighbours.with_neighbours(fused, scope=scope, model=model, held=held)
    notes = "\n".join(line for line in (note, backlog_note(scope, model)) if line)
    if not fused:
        return notes or NO_MATCH
    words = [word.lower() for word in _WORD.findall(text)]
    weights = word_weights([r.match.text for r in fused], words)
    windows = packing.for_model(model)
    entries = [
        Entry(
            r.match.message_id,
            partial(
                entry_text,
                r,
                weights=weights,
                with_channel=scope.is_global,
                width=windows.width(rank),
                lead=windows.lead(windows.width(rank)),
            ),
        )
        for rank, r in enumerate(fused)
    ]
    lines = {}
    if scope.is_global:
        by_thread = thread_legend.thread_lines(
            [r.match.thread_id for r in fused], with_project=scope.project is not None
        )
        lines = {r.match.message_id: by_thread[r.match.thread_id] for r in fused if r.match.thread_id in by_thread}
    head = KEYWORD_HEAD if note in (LOADING_NOTE, FAILED_NOTE) else HEAD if listed_beside else CONTEXT_HEAD
    return RankedText.of(f"{notes}\n{head}" if notes else head, entries, note=notes, thread_lines=lines)


def loading_hits(held: vectors.ScopePieces | None, query: str) -> list[Hit] | None:
    """The static model's meaning ranking of a thread while the sentence model loads (``loading.py``); None when
    it failed (logged: the keyword ranking stands alone)."""
    if held is None:
        return None
    try:
        found = loading.meaning(held=held, query=query, k=RANKED_TOP_K, min_score=STATIC_MIN_SIMILARITY)
    except Exception:  # a broken static install must not cost the keyword ranking
        logger.exception("the static model's meaning ranking failed while the sentence model loads")
        return None
    return [Hit(*hit) for hit in found]


def backlog_note(scope: SearchScope, model: str) -> str:
    """BACKLOG_NOTE while ``model`` has messages of the scope to embed ("" for an operator's whole store: counting
    every thread's would cost the lane more than its ranking)."""
    thread_ids = (scope.thread_id,) if not scope.is_global else scope.readable_thread_ids
    behind = backlog.messages_behind(model, thread_ids or ())
    return BACKLOG_NOTE.format(messages=behind) if behind else ""


def error_reason(error: llm.LLMError) -> str:
    """A model error as a note quotes it: one line, cut at NOTE_ERROR_CHARS."""
    reason = one_line(str(error))
    return reason[:NOTE_ERROR_CHARS] + "…" if len(reason) > NOTE_ERROR_CHARS else reason


def unavailable_note(error: llm.LLMError) -> str:
    reason = error_reason(error)
    return f"Semantic search is unavailable for this query ({reason}); the literal hits above are complete."
