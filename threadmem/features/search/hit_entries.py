"""One listed entry of the literal part (contract §2, §9): its header line (where the hit is, its tool and other
half, its call's other arguments in brief, the messages whose hits had the same window) and its window.

Pure: ``answer_layout.py`` decides which entries are listed and counts their length.
"""

from __future__ import annotations

import re
from collections.abc import Container, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from threadmem.features.search.answer_caps import HIT_HEADER
from threadmem.features.search.hits import Candidate, Hit, HitLink

# Control characters -> a space (str.translate: a search formats a header per candidate).
_CONTROL_TO_SPACE = dict.fromkeys([*range(32), 127], " ")


def one_line(text: str) -> str:
    """A value shown inside a header line: control characters would break the layout."""
    return text.translate(_CONTROL_TO_SPACE)


# A header names at most this many result ids (JSON hits carry them all).
RESULT_IDS_IN_HEADER = 5
# The call's other arguments in brief: each key and value cut to this many characters, the whole brief to
# ARGUMENTS_MAX_CHARS, so a call with many or huge arguments still costs a header line.
ARGUMENT_VALUE_CHARS = 40
ARGUMENTS_MAX_CHARS = 160
# A header names at most this many messages whose windows were the same (JSON hits carry them all).
IDENTICAL_IDS_IN_HEADER = 8


def _cut(text: str, limit: int) -> str:
    text = one_line(text)
    return text if len(text) <= limit else text[:limit] + "…"


def _top_key(path: str) -> str:
    """The argument a leaf's path starts in: ``files[0].path`` -> ``files``."""
    return re.split(r"[.\[]", path, maxsplit=1)[0]


def args_brief(arguments: Sequence[tuple[str, str]], *, matched_path: str = "") -> str:
    """``offset=120 limit=40``: the call's arguments but the one that matched, each cut short, the whole bounded.

    "" when the call has no other argument: a ``Read`` with no brief read the whole file.
    """
    skip = _top_key(matched_path) if matched_path else None
    parts = [
        f"{_cut(key, ARGUMENT_VALUE_CHARS)}={_cut(value, ARGUMENT_VALUE_CHARS)}"
        # Sorted: PostgreSQL's jsonb keeps no order, so every database shows one.
        for key, value in sorted(arguments)
        if key != skip
    ]
    return _cut(" ".join(parts), ARGUMENTS_MAX_CHARS)


def link_suffix(link: HitLink | None, *, arg_id: int, brief: str = "") -> str:
    """`` tool=<name> result=<id> (<n> chars) args: …`` / `` tool=<name> call=<id>``; "" for a hit that is no tool's."""
    if link is None:
        return ""
    tool = one_line(link.tool) if link.tool else "-"
    if not arg_id:
        return f" tool={tool} call={link.call_message_id or '-'}"
    ids = link.result_message_ids
    chars = link.result_chars if len(link.result_chars) == len(ids) else (None,) * len(ids)
    shown = ",".join(
        f"{message_id} ({size:,} chars)" if size is not None else str(message_id)
        for message_id, size in zip(ids[:RESULT_IDS_IN_HEADER], chars, strict=False)
    )
    if len(ids) > RESULT_IDS_IN_HEADER:
        shown += ",…"
    return f" tool={tool} result={shown or '-'}" + (f" args: {brief}" if brief else "")


def identical_suffix(message_ids: Sequence[int]) -> str:
    """`` (×N identical: messageIds a, b, c)`` for an entry that stands for N hits with one window; "" for one."""
    if len(message_ids) < 2:
        return ""
    shown = ", ".join(str(message_id) for message_id in message_ids[:IDENTICAL_IDS_IN_HEADER])
    if len(message_ids) > IDENTICAL_IDS_IN_HEADER:
        shown += ", …"
    return f" (×{len(message_ids)} identical: messageIds {shown})"


def hit_header(candidate: Candidate, suffix: str = "", *, field_name: str | None = None) -> str:
    """The hit's header line; ``suffix`` names its tool and other half (``link_suffix``)."""
    header = HIT_HEADER.format(
        message_id=candidate.message_id,
        session=one_line(candidate.session_id) or "-",
        generation=candidate.generation,
        role=candidate.role,
        field=one_line(field_name or candidate.field_name),
    )
    return header + suffix


# The field of a call's entry whose window is its result's content (the call's argument matched too).
RESULT_FIELD = "result.content"


@dataclass
class Entry:
    """One listed entry: the hit whose header it shows, and the later hits with the same window (contract §9).

    ``from_result``: the entry of a call whose argument and result both
    matched, shown with the result's window (it came first): the header is
    the call's, its field ``result.content``, and the brief names every
    argument, the matched one too, since the window does not show it.
    """

    source: Candidate  # the hit whose header the entry shows (a call's argument when its result matched too)
    link: HitLink | None
    shown: str  # the window as the model reads it
    from_result: bool = False
    identical: list[int] = field(default_factory=list)  # later hits' message ids, same window and call shape

    @property
    def field_name(self) -> str:
        return RESULT_FIELD if self.from_result else self.source.field_name

    @property
    def brief(self) -> str:
        if self.link is None or not self.source.arg_id:
            return ""
        return args_brief(self.link.arguments, matched_path="" if self.from_result else self.source.path)

    def text(self) -> str:
        ids = [self.source.message_id, *self.identical]
        suffix = link_suffix(self.link, arg_id=self.source.arg_id, brief=self.brief)
        return f"{hit_header(self.source, suffix, field_name=self.field_name)}{identical_suffix(ids)}\n{self.shown}"

    def shape(self) -> tuple:
        """What must be equal for a later hit to be listed here as identical: the window and the call's shape.

        The results' sizes too: two reads of a file that changed between them
        share the window (the path) but not the output, and an older one may
        hold what the newer lost.
        """
        tool = self.link.tool if self.link else None
        sizes = self.link.result_chars if self.link else ()
        return (self.source.role, self.field_name, tool, self.brief, sizes, self.shown)

    def hit(self) -> Hit:
        link = self.link
        return Hit(
            message_id=self.source.message_id,
            session_id=self.source.session_id,
            generation=self.source.generation,
            role=self.source.role,
            field=self.field_name,
            window=self.shown,
            tool=link.tool if link else None,
            result_message_ids=link.result_message_ids if link else (),
            call_message_id=link.call_message_id if link else None,
            result_chars=link.result_chars if link else (),
            arguments=self.brief,
            identical_message_ids=tuple(self.identical),
        )


Call = tuple[int, int]  # (message id, call index)


def call_of_fields(
    candidates: Iterable[Candidate], links: Mapping[tuple[int, int], HitLink | None], windowed: Container[Any]
) -> tuple[dict[tuple[int, int], Call], dict[Call, Candidate]]:
    """One entry per tool call (contract §9): each field's call, and the argument hit that heads the call's entry.

    An argument field belongs to its call; a tool result's content belongs to
    its call when one of that call's arguments matched too (the argument's
    link names the result, the result's names the call's message). Only
    fields with a window (``windowed``: the (field, term) pairs the listing's
    walk reached) are joined, whichever statement cut them.
    """
    calls: dict[tuple[int, int], Call] = {}
    heads: dict[Call, Candidate] = {}
    by_result: dict[tuple[int, int], Call] = {}
    candidates = [c for c in candidates if (c.field_key, c.term) in windowed]
    for candidate in candidates:
        link = links.get(candidate.field_key)
        if candidate.arg_id and link is not None and link.call_index is not None:
            call = (candidate.message_id, link.call_index)
            calls[candidate.field_key] = call
            heads.setdefault(call, candidate)
            for result_id in link.result_message_ids:
                by_result.setdefault((result_id, candidate.message_id), call)
    for candidate in candidates:
        link = links.get(candidate.field_key)
        if not candidate.arg_id and link is not None and link.call_message_id is not None:
            call = by_result.get((candidate.message_id, link.call_message_id))
            if call is not None:
                calls[candidate.field_key] = call
    return calls, heads
