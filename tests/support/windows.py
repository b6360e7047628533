"""A window computed from a whole field in memory: what the database cuts, as the tests' expectation."""

from __future__ import annotations

from threadmem.lib.windows import Window, window_from_slice, window_start


def window_around(text: str, position: int, *, width: int, lead: int) -> Window:
    """The window around the hit at ``position`` of ``text``, as the statements cut it (``window_from_slice``)."""
    start = window_start(position, lead=lead)
    return window_from_slice(position=position, piece=text[start - 1 : start - 1 + width + 1], width=width, lead=lead)
