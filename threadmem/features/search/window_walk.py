"""Which windows the listing can reach: the (field, term) pairs the windows statement cuts, and what each costs.

The layout's measure of its entries, handed to the windows statement as data
(``literal/window_sql.py`` adds up ``costs`` in SQL, knowing nothing of
headers): ``fields_to_window`` walks the candidates in listing order until the
entries fill the literal cap, ``window_pairs`` numbers the pairs and costs
each, ``walk_reach`` keeps what the walk reaches whichever statement cut the
windows. Only ``WINDOW_CHARS + 1`` characters of a field ever leave the
database.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from threadmem.features.search.answer_caps import HEAD_MARK, TAIL_MARK, WINDOW_CHARS, WINDOW_LEAD
from threadmem.features.search.hit_entries import hit_header
from threadmem.features.search.hits import Candidate, WindowKey
from threadmem.lib.windows import Window


def min_window_chars(*, field_chars_at_least: int, term_chars: int, width: int, lead: int) -> int:
    """The fewest characters a window of a hit can show, without knowing where the hit is.

    With the hit at the very end of a field of L characters the window holds
    min(L, term + lead) characters; anywhere earlier it holds more, up to the
    width. L is at least the term's length (the field contains it).
    """
    field_chars = max(field_chars_at_least, term_chars)
    return min(width, field_chars, term_chars + lead)


def fields_to_window(candidates: list[Candidate], terms: list[str], *, budget: int) -> list[WindowKey]:
    """The (field, term) pairs whose windows the database must cut.

    Walks the candidates in listing order, adding the fewest characters each
    new field's entry could take, until not even that fits: no later candidate
    can be listed. A field seen before costs nothing in the walk (its later
    terms may merge into its window). For every walked field, every term that
    matched it is included, since its position decides whether that term's
    hit merges into a listed window.
    """
    used = 0
    walked: list[tuple[int, int]] = []
    seen: set[tuple[int, int]] = set()
    for candidate in candidates:
        key = candidate.field_key
        if key in seen:
            continue
        least = min_window_chars(
            field_chars_at_least=candidate.min_chars,
            term_chars=len(terms[candidate.term]),
            width=WINDOW_CHARS,
            lead=WINDOW_LEAD,
        )
        cost = len(hit_header(candidate)) + 1 + least + (1 if walked else 0)
        if used + cost > budget:
            break
        used += cost
        seen.add(key)
        walked.append(key)
    terms_by_field: dict[tuple[int, int], list[int]] = {key: [] for key in walked}
    for candidate in candidates:
        matched = terms_by_field.get(candidate.field_key)
        if matched is not None and candidate.term not in matched:
            matched.append(candidate.term)
    return [(key, term) for key in walked for term in terms_by_field[key]]


class WindowPairs(NamedTuple):
    """The pairs to cut, numbered in listing order, and each one's cost in the walk."""

    pairs: list[tuple[int, WindowKey]]
    costs: list[int]  # the header length of the entry the pair opens; -1: it opens none


def window_pairs(
    candidates: Sequence[Candidate], terms: Sequence[str], *, budget: int, seeds: Sequence[Candidate] = ()
) -> WindowPairs:
    """The pairs the walk reaches (``fields_to_window``), after ``seeds``' pairs on those fields (a later page's
    earlier candidates, ``answer_layout.literal_part``), first and at no cost."""
    walked = fields_to_window(list(candidates), list(terms), budget=budget)
    reached = {key for key, _ in walked}
    seeded = list(dict.fromkeys((seed.field_key, seed.term) for seed in seeds if seed.field_key in reached))
    first_candidate: dict[tuple[int, int], Candidate] = {}
    for candidate in candidates:
        first_candidate.setdefault(candidate.field_key, candidate)
    opened: set[tuple[int, int]] = set()
    costs = [-1] * len(seeded)
    for key, term in walked:
        opener = first_candidate[key]
        if key not in opened and term == opener.term:
            opened.add(key)
            costs.append(len(hit_header(opener)))
        else:
            costs.append(-1)
    return WindowPairs(list(enumerate([*seeded, *walked])), costs)


def walk_reach(
    pairs: Sequence[tuple[int, WindowKey]],
    costs: Sequence[int],
    windows: dict[WindowKey, tuple[int, Window] | None],
    *,
    budget: int,
) -> dict[WindowKey, tuple[int, Window] | None]:
    """The windows the windows statement's walk would cut: the pairs up to where its running cost passes ``budget``.

    Whichever statement cut the windows (the match's small ones, SQLite's
    all), the listing then reaches the same hits: identical windows and one
    entry per call make entries cheaper than the walk counts them, so
    without this the listing would run on into windows only one path cut.
    """
    used = 0
    reached: dict[WindowKey, tuple[int, Window] | None] = {}
    for (_, pair), cost in zip(pairs, costs, strict=True):
        if used > budget:
            break
        if pair not in windows:
            continue
        computed = reached[pair] = windows[pair]
        if cost >= 0 and computed:
            used += cost + 1 + len(computed[1].render(head_mark=HEAD_MARK, tail_mark=TAIL_MARK))
    return reached
