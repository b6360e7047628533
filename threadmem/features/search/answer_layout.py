"""The layout of search_memory's answer (contract §2): which hits are listed, how they are counted, the text.

The last step of a search: it runs after every statement, on the rows they
returned, and reads no database. It decides which hits are listed, how they
are counted and what the model reads, so the output size is a property of the
constants (``answer_caps.py``), never of the history.

How hits are counted (the ``N`` in ``N more hits not shown``):

* a *candidate* is one (term, message, field) whose field contains the term;
  it stands at the term's **first** occurrence in that field (one term never
  counts twice in one field);
* candidates are walked in listing order: whole query first, then each word;
  within a term newest message first; within a message ``content`` first, then
  the tool-argument leaves in stored order;
* a candidate whose occurrence lies wholly inside a window already listed for
  the same field is merged into that window: neither listed nor counted;
* every other candidate is a hit. Hits are listed until the next one does not
  fit in ``THREAD_LITERAL_MAX_CHARS``; listing stops there (order is never
  broken to squeeze a later, smaller hit in);
* ``literal hits`` is the number of hits, ``N`` the hits not listed. In the
  global scope each term is counted up to ``SEARCH_COUNT_LIMIT``; past it the
  header and the line say ``more than``. When a global search had to fall
  back to the newest messages (see ``literal/plan.py``), the header says
  ``at least`` and a last line says what was searched;
* a tool's hit names its tool and other half in its header (``link_suffix``,
  contract §9), counted at its real length; when hits are left out the line
  offers the cursor of the next page (``page_cursor.py``), reserved at its fixed
  length.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from threadmem.domain.scope import GLOBAL_CHANNEL
from threadmem.features.search.answer_caps import (
    COVERAGE_LINES,
    GLOBAL_RECENT_BYTES,
    HEAD_MARK,
    HEADER,
    MORE_HITS,
    MORE_HITS_BOUNDED,
    MORE_HITS_BOUNDED_CURSOR,
    MORE_HITS_CURSOR,
    SEMANTIC_HEADING,
    TAIL_MARK,
    THREAD_LITERAL_MAX_CHARS,
    THREAD_SEARCH_MAX_CHARS,
    TRUNCATED_LINE,
)
from threadmem.features.search.hit_entries import Call, Entry, call_of_fields, one_line
from threadmem.features.search.hits import Candidate, Coverage, Cut, HitLink, Listing, LiteralPart, Windows, hit_links
from threadmem.features.search.page_cursor import CursorPosition, cursor_chars
from threadmem.lib.windows import Window


def more_hits_line(count: int, *, bounded: bool, cursor: str | None = None) -> str:
    if cursor is None:
        return (MORE_HITS_BOUNDED if bounded else MORE_HITS).format(count=count)
    return (MORE_HITS_BOUNDED_CURSOR if bounded else MORE_HITS_CURSOR).format(count=count, cursor=cursor)


def coverage_line(coverage: Coverage) -> str:
    """The last line of a global search that did not search everything ("" when it did)."""
    if coverage == Coverage.ALL:
        return ""
    return COVERAGE_LINES[coverage].format(recent_mb=GLOBAL_RECENT_BYTES / 1_000_000)


def entries_budget(
    candidate_count: int, *, bounded: bool, coverage: Coverage = Coverage.ALL, max_chars: int = THREAD_LITERAL_MAX_CHARS
) -> int:
    """Characters left for the listed entries: the more-hits line always fits after them.

    The line is reserved for the largest count it could show (every candidate
    unlisted) with a cursor (every cursor has the same length), so listing
    never has to be undone. ``max_chars``: the literal part's cap (smaller for a
    described question, ``search/ranked/share.py``).
    """
    reserved = 1 + len(more_hits_line(candidate_count, bounded=bounded, cursor="c" * cursor_chars()))
    if coverage != Coverage.ALL:
        reserved += 1 + len(coverage_line(coverage))
    return max_chars - reserved


def literal_part(
    candidates: Iterable[Candidate],
    terms: list[str],
    windows: Windows,
    *,
    candidate_count: int,
    bounded: bool = False,
    coverage: Coverage = Coverage.ALL,
    seeds: Iterable[Candidate] = (),
    listed_before: int = 0,
    links: Mapping[tuple[int, int], HitLink | None] | None = None,
    sign: Callable[[CursorPosition], str] | None = None,
    max_chars: int = THREAD_LITERAL_MAX_CHARS,
) -> LiteralPart:
    """List and count the hits (see the module docstring for the rule).

    A page after the first (page_cursor.py) gets the candidates from its cursor on,
    ``listed_before`` hits listed by the earlier pages, and as ``seeds`` the
    earlier candidates of the fields it may list: replayed in order, they give
    back the windows the earlier pages listed on those fields, so a hit merged
    there is neither listed again nor counted. ``links`` names each field's
    tool and other half (``literal/filter_sql.py``); ``sign`` makes the cursor of
    the next page when hits are left out.

    One entry per tool call: the hits of one call's arguments and results are
    one hit, headed by the argument hit that comes first and shown with its
    window (``call_of_fields``). A hit whose entry would be the same as one
    listed (``Entry.shape``) is listed there, its message id on the header.
    """
    candidates = list(candidates)
    budget = entries_budget(candidate_count, bounded=bounded, coverage=coverage, max_chars=max_chars)
    covered = coverage_line(coverage)  # the last line, reserved in the budget like the more-hits line
    links = links or {}
    calls, heads = call_of_fields(candidates, links, windowed={pair for pair, cut in windows.items() if cut})
    listed: dict[tuple[int, int], list[Window]] = {}
    for seed in seeds:
        computed = windows.get((seed.field_key, seed.term))
        if not computed:
            continue
        position, window = computed
        if not any(w.covers(position, len(terms[seed.term])) for w in listed.get(seed.field_key, ())):
            listed.setdefault(seed.field_key, []).append(window)
    entries: list[Entry] = []
    by_shape: dict[tuple, Entry] = {}
    counted_calls: set[Call] = set()
    used = 0
    total = 0
    represented = 0  # hits the entries stand for: each entry and its identical ones
    listing = True
    first_left_out: Candidate | None = None
    for candidate in candidates:
        key = candidate.field_key
        computed = windows.get((key, candidate.term), ...)
        if computed is None:
            continue  # the field stopped matching between the two queries
        if computed is not ...:
            position, window = computed
            if any(w.covers(position, len(terms[candidate.term])) for w in listed.get(key, ())):
                continue
        call = calls.get(key)
        if call is not None:
            if call in counted_calls:
                continue  # one entry per tool call
            counted_calls.add(call)
        total += 1
        if not listing:
            continue
        if computed is ...:
            listing = False  # past the walk of fields_to_window (window_walk.py): cannot fit
            first_left_out = candidate
            continue
        # A call's entry is headed by the call, with the window of whichever hit came first: a result's
        # content under its call's first matching argument, or the argument itself.
        source = heads[call] if call is not None and not candidate.arg_id else candidate
        shown = window.render(head_mark=HEAD_MARK, tail_mark=TAIL_MARK)
        entry = Entry(source, links.get(source.field_key), shown, from_result=source is not candidate)
        # Every hit costs its whole entry, listed apart or not: the listing then stops where the windows
        # statement's walk stops (window_walk.py), whichever statement cut the windows, and the text only
        # gets shorter (a name on a header costs less than an entry).
        cost = len(entry.text()) + (1 if represented else 0)
        same = by_shape.get(entry.shape())
        if used + cost > budget:
            listing = False
            first_left_out = candidate
            continue
        used += cost
        represented += 1
        listed.setdefault(key, []).append(window)
        if same is not None:
            same.identical.append(candidate.message_id)
        else:
            entries.append(entry)
            by_shape[entry.shape()] = entry
    hits = [entry.hit() for entry in entries]
    lines = [entry.text() for entry in entries]
    hidden = total - represented
    next_position = None
    if first_left_out is not None:
        next_position = CursorPosition(
            term=first_left_out.term,
            message_id=first_left_out.message_id,
            arg_id=first_left_out.arg_id,
            listed_before=listed_before + represented,
        )
    cursor = sign(next_position) if sign is not None and next_position is not None else None
    if hidden > 0 or (bounded and total):
        lines = [*lines, more_hits_line(hidden, bounded=bounded, cursor=cursor)]
    if coverage != Coverage.ALL:
        lines = [*lines, covered]
    return LiteralPart(
        text="\n".join(lines),
        hits=hits,
        total=listed_before + total,
        bounded=bounded,
        coverage=coverage,
        next_position=next_position,
        next_cursor=cursor,
    )


def lay_out(
    listing: Listing, cut: Cut, terms: list[str], *, sign: Callable[[CursorPosition], str] | None
) -> LiteralPart:
    """The literal part of ``listing``, with the windows ``cut`` and each hit's link (``literal_part``)."""
    if not listing.candidates:
        return literal_part(
            [],
            terms,
            {},
            candidate_count=0,
            bounded=listing.bounded,
            coverage=listing.coverage,
            listed_before=listing.listed_before,
        )
    return literal_part(
        listing.candidates,
        terms,
        cut.windows,
        candidate_count=len(listing.candidates),
        bounded=listing.bounded,
        coverage=listing.coverage,
        seeds=listing.seeds,
        listed_before=listing.listed_before,
        links=hit_links(listing.candidates, cut.links),
        sign=sign,
        max_chars=listing.max_chars,
    )


def header_lines(
    *,
    channel: str | None,
    query: str,
    total: int,
    shown: int,
    bounded: bool,
    stopped_early: bool = False,
    project: str | None = None,
) -> str:
    total_text = f"more than {total}" if bounded else f"at least {total}" if stopped_early else str(total)
    # Named only when a search asked for one: without it the line is as it always was.
    within = f' · project: "{one_line(project)}"' if project is not None else ""
    return (
        f"{HEADER}\n"
        f"channel: {one_line(channel) if channel else GLOBAL_CHANNEL}{within} · "
        f'query: "{one_line(query.strip())}" · literal hits: {total_text} ({shown} shown)'
    )


def semantic_room(*, header: str, literal: str) -> int:
    """Characters the semantic part can take before ``merge`` cuts the whole result."""
    body = f"{literal}\n" if literal else ""
    return THREAD_SEARCH_MAX_CHARS - len(f"{header}\n{body}\n{SEMANTIC_HEADING}\n")


def merge(*, header: str, literal: str, semantic: str) -> tuple[str, bool]:
    """The whole tool result, cut at exactly ``THREAD_SEARCH_MAX_CHARS`` when longer.

    Returns ``(text, truncated)``. The literal part comes first, so whatever
    the semantic part returns can only be cut, never push literal hits out.
    """
    body = f"{literal}\n" if literal else ""
    text = f"{header}\n{body}\n{SEMANTIC_HEADING}\n{semantic.rstrip()}"
    if len(text) <= THREAD_SEARCH_MAX_CHARS:
        return text, False
    tail = f"\n{TRUNCATED_LINE}"
    return text[: THREAD_SEARCH_MAX_CHARS - len(tail)] + tail, True
