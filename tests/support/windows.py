"""A hit's window computed from a whole field in memory: the baseline the database's windows are held to."""

from __future__ import annotations

from threadmem.lib.windows import Window, window_from_slice, window_start


def window_around(text: str, position: int, *, width: int, lead: int) -> Window:
    """The window ``window_from_slice`` gives for the slice the database would cut out of ``text``."""
    start = window_start(position, lead=lead)
    return window_from_slice(position=position, piece=text[start - 1 : start - 1 + width + 1], width=width, lead=lead)
