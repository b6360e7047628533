"""Template filters for the console: message-id links, sizes, JSON."""

from __future__ import annotations

import re
from typing import Any

from django import template
from django.urls import reverse
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

register = template.Library()

# `messageId=123`, `messageIds=12,15` and `#123` in summaries. The look-behind
# keeps HTML entities (`&#39;`) and words like `C#1` out.
MESSAGE_ID_PATTERN = re.compile(r"(?P<key>messageIds?=)(?P<ids>\d+(?:\s*,\s*\d+)*)|(?<![\w&#])#(?P<hash>\d+)\b")
NUMBER = re.compile(r"\d+")


def _link(message_id: str) -> str:
    url = reverse("console:message", args=[int(message_id)])
    return f'<a class="mid" href="{url}">{message_id}</a>'


@register.filter
def message_links(text: str) -> SafeString:
    """Escape ``text`` and turn every message id reference into a link to its audit page."""

    def replace(match: re.Match[str]) -> str:
        if match.group("hash"):
            return "#" + _link(match.group("hash"))
        ids = NUMBER.sub(lambda m: _link(m.group(0)), match.group("ids"))
        return match.group("key") + ids

    return mark_safe(MESSAGE_ID_PATTERN.sub(replace, str(escape(text))))  # escaped above


@register.filter
def thousands(value: Any) -> str:
    if value is None or value == "":
        return "–"
    try:
        return f"{int(value):,}"
    except (TypeError, ValueError, OverflowError):  # OverflowError: an infinity
        return str(value)


@register.filter
def message_id(value: Any) -> int | None:
    """A logged ``message_id`` as a linkable id, or None: the log keeps whatever a caller sent (``-1``, ``²``)."""
    if isinstance(value, str) and value.isascii() and value.isdigit():
        value = int(value)
    if isinstance(value, int) and not isinstance(value, bool) and 0 < value < 2**63:
        return value
    return None


@register.filter
def size(value: Any) -> str:
    """A character count the eye can take in: 812, 12.3k, 5.2M."""
    if value is None:
        return "–"
    value = int(value)
    if value < 10_000:
        return f"{value:,}"
    if value < 1_000_000:
        return f"{value / 1000:.1f}k"
    return f"{value / 1_000_000:.1f}M"


@register.filter
def snippet(text: str | None, length: int = 240) -> str:
    """The first ``length`` characters on one line."""
    if not text:
        return ""
    flat = " ".join(text[: length * 2].split())
    return flat if len(flat) <= length else flat[: length - 1] + "…"


@register.filter
def ms(value: Any) -> str:
    if value is None:
        return "–"
    value = float(value)
    return f"{value:.0f} ms" if value >= 10 else f"{value:.1f} ms"


@register.filter
def elapsed(start: Any, end: Any) -> str:
    """The time between two datetimes, in seconds or minutes: ``3.4 s``, ``2 min 5 s``."""
    if not start or not end:
        return ""
    seconds = (end - start).total_seconds()
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, rest = divmod(int(seconds), 60)
    return f"{minutes} min {rest} s"
