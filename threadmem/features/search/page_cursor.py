"""search_memory's continuation cursor (contract §9): where the next page of hits starts, signed.

The position is the listing-order key of the first hit a page left out
(term, messageId, ToolArgument id or 0 for content) and how many hits the
earlier pages listed. Listing order is term, then newest message first, then
content before arguments, so a key stays put while new messages arrive (they
sort before it): the next page is every candidate at or after the key.

The cursor is ``django.core.signing.TimestampSigner`` over a fixed-width
payload, salted with the caller, channel, query and filters: another caller's or
another query's cursor fails the signature, an old one fails ``max_age``.
Every cursor has the same length (``CURSOR_CHARS``), so the more-hits line
can be reserved before the listing knows where it stops.
"""

from __future__ import annotations

import hashlib
from functools import cache
from typing import Any, NamedTuple

from django.core import signing

from threadmem.errors import InvalidInput

CURSOR_MAX_AGE_SECONDS = 3600
_SALT = "threadmem.search.cursor"
_DIGITS = 12  # each field, zero-padded: a fixed-width payload
_FIELDS = 4


class CursorPosition(NamedTuple):
    term: int
    message_id: int
    arg_id: int
    listed_before: int  # hits the earlier pages listed

    @property
    def key(self) -> tuple[int, int, int]:
        return listing_key(self.term, self.message_id, self.arg_id)


def listing_key(term: int, message_id: int, arg_id: int) -> tuple[int, int, int]:
    """Sorts like the listing: term, newest message first, content (0) then arguments in stored order."""
    return (term, -message_id, arg_id)


def _salt(*, user_id: Any, channel: str | None, query: str, filters: Any = None) -> str:
    # ``filters``: search_memory's tool and role filters (a cursor of a filtered listing is no other's).
    bound = hashlib.sha256(f"{user_id}\0{channel or ''}\0{query.strip()}\0{filters!r}".encode()).hexdigest()
    return f"{_SALT}:{bound}"


def _payload(position: CursorPosition) -> str:
    return "".join(f"{value:0{_DIGITS}d}" for value in position)


def cursor_sign(position: CursorPosition, *, user_id: Any, channel: str | None, query: str, filters: Any = None) -> str:
    signer = signing.TimestampSigner(salt=_salt(user_id=user_id, channel=channel, query=query, filters=filters))
    return signer.sign(signing.b64_encode(_payload(position).encode()).decode())


@cache
def cursor_chars() -> int:
    """The length of every cursor (fixed-width payload, fixed-length timestamp and signature)."""
    return len(cursor_sign(CursorPosition(0, 0, 0, 0), user_id=0, channel=None, query="x"))


def cursor_read(cursor: Any, *, user_id: Any, channel: str | None, query: str, filters: Any = None) -> CursorPosition:
    """The position a cursor holds; InvalidInput when it is malformed, expired, or another caller's or query's."""
    if not isinstance(cursor, str) or not cursor.strip():
        raise InvalidInput("cursor must be the non-empty string a previous search_memory answer gave", field="cursor")
    signer = signing.TimestampSigner(salt=_salt(user_id=user_id, channel=channel, query=query, filters=filters))
    try:
        encoded = signer.unsign(cursor.strip(), max_age=CURSOR_MAX_AGE_SECONDS)
    except signing.SignatureExpired:
        raise InvalidInput(
            f"the cursor has expired (cursors last {CURSOR_MAX_AGE_SECONDS // 60} minutes); search again without it",
            field="cursor",
        ) from None
    except signing.BadSignature:
        raise InvalidInput(
            "the cursor is not valid for this caller and query: pass the cursor of the previous answer with the "
            "same query and channel, or search again without it",
            field="cursor",
        ) from None
    try:
        payload = signing.b64_decode(encoded.encode()).decode()
    except (ValueError, UnicodeDecodeError):  # pragma: no cover - only a signed payload gets here
        raise InvalidInput("the cursor is malformed", field="cursor") from None
    if len(payload) != _DIGITS * _FIELDS or not payload.isdigit():  # pragma: no cover - signed by us
        raise InvalidInput("the cursor is malformed", field="cursor")
    values = [int(payload[i : i + _DIGITS]) for i in range(0, len(payload), _DIGITS)]
    return CursorPosition(*values)
