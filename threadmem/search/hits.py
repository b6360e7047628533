"""What a search finds, before it is laid out: candidates, hits, the literal part, and how it was found.

The layout of the answer (caps, markers, which hits are listed) is
``bounded.py``'s; the statements that find candidates are ``literal/``'s.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from enum import StrEnum
from typing import Any, NamedTuple

from threadmem.search.cursor import CursorPosition, listing_key


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

    @property
    def field_key(self) -> tuple[int, int]:
        return (self.message_id, self.arg_id)

    @property
    def field_name(self) -> str:
        return "content" if self.arg_id == 0 else f"tool_args.{self.path}"

    @property
    def listing_key(self) -> tuple[int, int, int]:
        return listing_key(self.term, self.message_id, self.arg_id)


def candidate_columns(alias: str, *, term: bool = True) -> str:
    """A match branch's columns, ``Candidate``'s fields in order, on ``alias`` (without ``term`` when asked)."""
    names = [f.name for f in fields(Candidate) if term or f.name != "term"]
    return ", ".join(f"{alias}.{name}" for name in names)


@dataclass(frozen=True)
class Hit:
    message_id: int
    session_id: str
    generation: int
    role: str
    field: str
    window: str  # as the model reads it, markers included
    tool: str | None = None  # the tool of a tool-argument hit or of a tool result's call (links.py)
    result_message_ids: tuple[int, ...] = ()  # a tool-argument hit: its call's results
    call_message_id: int | None = None  # a hit in a tool result: the message holding its call
    result_chars: tuple[int, ...] = ()  # a tool-argument hit: each result's length in characters
    arguments: str = ""  # a tool-argument hit: the call's other arguments in brief (bounded.args_brief)
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
    next_position: CursorPosition | None = None  # where the next page starts (cursor.py); None: nothing left
    next_cursor: str | None = None  # the signed next_position, as the more-hits line shows it

    @property
    def stopped_early(self) -> bool:
        return self.coverage != Coverage.ALL

    @property
    def shown(self) -> int:
        return len(self.hits)


class HitLink(NamedTuple):
    tool: str | None  # None: no call stored (a tool result) / not a tool hit
    result_message_ids: tuple[int, ...] = ()
    call_message_id: int | None = None
    result_chars: tuple[int, ...] = ()  # a tool-argument hit: each result's length, as result_message_ids
    call_index: int | None = None  # a tool-argument hit: its call's place in the message's tool_calls
    arguments: tuple[tuple[str, str], ...] = ()  # a tool-argument hit: its call's arguments, each cut short
