"""What a search finds, before it is laid out: candidates, the listing and the windows cut for it, hits, the
literal part, and how it was found.

A hit's other half (contract §9) comes back from the statements as three
columns (``literal/filter_sql.py``, ``link_sql``); ``hit_link`` reads them into
the ``HitLink`` its header and JSON show.

The answer's caps and markers are ``answer_caps.py``'s, its layout (which hits are listed, the text)
``answer_layout.py``'s; the statements that find candidates are ``literal/``'s.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from enum import StrEnum
from typing import Any, NamedTuple

from threadmem.features.search.page_cursor import CursorPosition, listing_key
from threadmem.lib.windows import Window
from threadmem.models import Message


class Coverage(StrEnum):
    """How much of the scope the literal part searched."""

    ALL = "all"
    RECENT = "recent"  # global scope: the newest messages only, the index could not narrow the terms in time
    NONE = "none"  # global scope: nothing, the newest messages took too long as well


class MatchedBy(StrEnum):
    """Which statement found the literal part's matches (literal/plan.py)."""

    INDEX = "index"
    SPELLED = "spelled"  # the index, with the thread's spelling of the terms tried first
    SCAN = "scan"
    RECENT = "recent"
    NONE = "none"  # no statement ran


@dataclass(frozen=True)
class Candidate:
    """One (term, field) match as the database reports it, without any text."""

    term: int  # index into the query's terms
    message_id: int
    arg_id: int  # 0: the message content; else the ToolArgument id
    path: str  # the tool-argument path ("" for content)
    min_chars: int  # a lower bound of the field's length in characters
    session_id: str
    generation: int
    role: str
    # Derived once, not properties: the listing reads them for every candidate several times over.
    field_key: tuple[int, int] = field(init=False, repr=False, compare=False)
    field_name: str = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "field_key", (self.message_id, self.arg_id))
        object.__setattr__(self, "field_name", "content" if self.arg_id == 0 else f"tool_args.{self.path}")

    @property
    def listing_key(self) -> tuple[int, int, int]:
        return listing_key(self.term, self.message_id, self.arg_id)


def candidates_of(rows: Iterable[Sequence[Any]]) -> list[Candidate]:
    """The candidates of a match statement's rows, whose first columns are ``candidate_columns``'."""
    return [
        Candidate(term, message_id, arg_id, path, int(min_chars or 0), session_id, generation, role)
        for term, message_id, arg_id, path, min_chars, session_id, generation, role, *_ in rows
    ]


def candidate_columns(alias: str, *, term: bool = True) -> str:
    """A match branch's columns, ``Candidate``'s fields in order, on ``alias`` (without ``term`` when asked)."""
    names = [f.name for f in fields(Candidate) if f.init and (term or f.name != "term")]
    return ", ".join(f"{alias}.{name}" for name in names)


@dataclass(frozen=True)
class Hit:
    message_id: int
    session_id: str
    generation: int
    role: str
    field: str
    window: str  # as the model reads it, markers included
    tool: str | None = None  # the tool of a tool-argument hit or of a tool result's call (literal/filter_sql.py)
    result_message_ids: tuple[int, ...] = ()  # a tool-argument hit: its call's results
    call_message_id: int | None = None  # a hit in a tool result: the message holding its call
    result_chars: tuple[int, ...] = ()  # a tool-argument hit: each result's length in characters
    arguments: str = ""  # a tool-argument hit: the call's other arguments in brief (hit_entries.args_brief)
    identical_message_ids: tuple[int, ...] = ()  # later hits with the same window, listed in this one


@dataclass
class LiteralPart:
    text: str  # everything after the two header lines, up to and including the more-hits line
    hits: list[Hit] = field(default_factory=list)
    total: int = 0
    bounded: bool = False  # total is a lower bound (global scope, SEARCH_COUNT_LIMIT reached)
    coverage: Coverage = Coverage.ALL
    matched_by: MatchedBy = MatchedBy.NONE
    plan: str = ""  # the plan that ran (literal/plan.py MatchPlan); "" when none did (no terms)
    executed: dict[str, Any] | None = None  # the plan that ran, per term, as the tool-call log keeps it
    next_position: CursorPosition | None = None  # where the next page starts (page_cursor.py); None: nothing left
    next_cursor: str | None = None  # the signed next_position, as the more-hits line shows it

    @property
    def stopped_early(self) -> bool:
        return self.coverage != Coverage.ALL

    @property
    def shown(self) -> int:
        return len(self.hits)


# A window the database cut for one (field, term): the term's first position
# and the window; None when the field no longer matches (changed meanwhile).
WindowKey = tuple[tuple[int, int], int]
Windows = Mapping[WindowKey, tuple[int, Window] | None]


class HitLink(NamedTuple):
    tool: str | None  # None: no call stored (a tool result) / not a tool hit
    result_message_ids: tuple[int, ...] = ()
    call_message_id: int | None = None
    result_chars: tuple[int, ...] = ()  # a tool-argument hit: each result's length, as result_message_ids
    call_index: int | None = None  # a tool-argument hit: its call's place in the message's tool_calls
    arguments: tuple[tuple[str, str], ...] = ()  # a tool-argument hit: its call's arguments, each cut short


class Link(NamedTuple):
    """A hit's other half as the statement returns it, before ``hit_link``."""

    tool: str | None
    ids: str | None  # comma-separated message ids; a call's results as ``<id>:<chars>``
    arguments: str | None = None  # a call's index and arguments in brief, JSON (``call_arguments_sql``)


def link_of(tool: str | list[str | None] | None, ids: str | None, arguments: str | None = None) -> Link:
    """The link columns of a statement's row as a ``Link``.

    ``threadmem_hit_link`` answers all three in its first column, as an
    array (one call a row); the inline SQL answers one in each.
    """
    if isinstance(tool, list):
        return Link(*(tool + [None] * 3)[:3])
    return Link(tool, ids, arguments)


def links_of(columns: Iterable[tuple[Any, str | None, str | None]]) -> list[Link]:
    """``link_of`` of each row's three link columns."""
    return [link_of(*link) for link in columns]


def _ids(text: str | None) -> dict[int, int | None]:
    """``<id>[:<chars>],…`` as {id: chars}, sorted by id."""
    found: dict[int, int | None] = {}
    for part in (text or "").split(","):
        if part:
            message_id, _, chars = part.partition(":")
            found[int(message_id)] = int(chars) if chars else None
    return dict(sorted(found.items()))


def _arguments(text: str | None) -> tuple[int | None, tuple[tuple[str, str], ...]]:
    """``[call_index, [key, value], …]`` (``call_arguments_sql``) as (call_index, ((key, value), …))."""
    if not text:
        return None, ()
    try:
        index, *pairs = json.loads(text)
    except (ValueError, TypeError):  # pragma: no cover - built by our own SQL
        return None, ()
    brief = tuple((str(pair[0]), "" if pair[1] is None else str(pair[1])) for pair in pairs if len(pair) == 2)
    return index, brief


def hit_link(link: Link | None, *, arg_id: int, role: str) -> HitLink | None:
    """What a hit's header and JSON say of its other half; None for a hit that is no tool's."""
    if arg_id:
        results = _ids(link.ids if link else None)
        call_index, arguments = _arguments(link.arguments if link else None)
        return HitLink(
            tool=(link.tool if link else None) or "",
            result_message_ids=tuple(results),
            result_chars=tuple(chars or 0 for chars in results.values()),
            call_index=call_index,
            arguments=arguments,
        )
    if role != Message.Role.TOOL:
        return None
    if link is None or link.tool is None or not link.ids:
        return HitLink(tool=None)
    return HitLink(tool=link.tool, call_message_id=next(iter(_ids(link.ids))))


def hit_links(
    candidates: Iterable[Candidate], links: Mapping[tuple[int, int], Link]
) -> dict[tuple[int, int], HitLink | None]:
    """Each listed field's tool and other half as its header and JSON show them (``hit_link``)."""
    return {
        key: hit_link(links.get(key), arg_id=candidate.arg_id, role=candidate.role)
        for candidate in candidates
        if (key := candidate.field_key) in links or candidate.arg_id or candidate.role == Message.Role.TOOL
    }


class Cut(NamedTuple):
    """What the windows statement (or the match statement before it) cut."""

    windows: dict[WindowKey, tuple[int, Window] | None]  # (field, term) -> (position, Window); None: no match
    links: dict[tuple[int, int], Link]  # field -> its tool and other half, for the fields with a window


class Listing(NamedTuple):
    """The candidates the listing may show, in listing order, and what the layout needs to list them."""

    candidates: list[Candidate]
    seeds: list[Candidate]  # a later page's earlier candidates on the fields it may list (answer_layout.literal_part)
    cut: Cut  # the windows the match statement cut already
    bounded: bool  # a global term passed SEARCH_COUNT_LIMIT
    coverage: Coverage
    max_chars: int  # the literal part's cap
    listed_before: int  # hits the earlier pages listed
