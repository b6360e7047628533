"""Windows around a hit: which characters of a field a search result shows.

Positions are 1-based character positions, as SQL's ``strpos``/``substr``
count them, so the SQL that cuts a window and the Python that labels it agree.
The database cuts the characters (it never ships a 60,000-character field to
Python); these helpers decide the markers from the slice it returns.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class Window:
    """The shown part of one field around one hit."""

    start: int  # 1-based position of the first shown character
    text: str  # the shown characters, at most the window width
    cut_before: bool  # the field has characters before ``start``
    cut_after: bool  # the field goes on after the shown characters

    @property
    def end(self) -> int:
        """1-based position of the last shown character."""
        return self.start + len(self.text) - 1

    def covers(self, position: int, length: int) -> bool:
        """Whether a hit of ``length`` characters at ``position`` lies wholly inside the window."""
        return self.start <= position and position + length - 1 <= self.end

    def render(self, *, head_mark: str, tail_mark: str) -> str:
        return f"{head_mark if self.cut_before else ''}{self.text}{tail_mark if self.cut_after else ''}"


def window_start(position: int, *, lead: int) -> int:
    """The window starts ``lead`` characters before the hit, or at the field start."""
    return max(1, position - lead)


def window_from_slice(*, position: int, piece: str, width: int, lead: int) -> Window:
    """The window for a hit at ``position``, given ``piece``: the field's characters
    from ``window_start(position)`` on, at most ``width + 1`` of them.

    The one character past the width only tells whether the field goes on.
    """
    start = window_start(position, lead=lead)
    return Window(start=start, text=piece[:width], cut_before=start > 1, cut_after=len(piece) > width)


def windows_from_slices(
    slices: Iterable[tuple[int | None, str | None]], *, width: int, lead: int
) -> list[tuple[int, Window] | None]:
    """``(position, Window)`` for each ``(position, piece)`` the database cut (``window_from_slice``); None where
    the position is 0 or None: the field no longer matches."""
    return [
        (position, window_from_slice(position=position, piece=piece, width=width, lead=lead)) if position else None
        for position, piece in slices
    ]
