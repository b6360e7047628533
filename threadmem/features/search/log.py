"""The tool-call log: one ToolCall row for every memory-tool call the service answers.

Refused calls (bad input, unknown ids) are logged too, with their status
code: an operator reading the log sees what the model tried, not only what
worked.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import connection

from threadmem.domain.db import read_runs_again
from threadmem.domain.redaction import text_redacted
from threadmem.errors import DomainError
from threadmem.infrastructure import metrics
from threadmem.lib.storable import int_in_range
from threadmem.models import ToolCall

# A refused call may carry a huge argument; the log keeps a readable prefix.
LOGGED_ARGUMENT_MAX_CHARS = 2_000


def _loggable(value: Any) -> Any:
    if isinstance(value, str):
        # A model's or a caller's query may hold a secret (a key it read): logged redacted, as it would be stored.
        value = text_redacted(value)
        # PostgreSQL's jsonb holds neither NUL nor a lone surrogate; the log shows where they were.
        value = value.replace("\x00", "\\u0000")
        if not value.isascii():
            value = value.encode("utf-8", "backslashreplace").decode("utf-8")
        if len(value) > LOGGED_ARGUMENT_MAX_CHARS:
            value = value[:LOGGED_ARGUMENT_MAX_CHARS] + "…[truncated]"
        return value
    if isinstance(value, bool) or value is None:
        return value
    # jsonb holds neither NaN nor infinities, and orjson no integer past 64 bits: the log keeps their text.
    if isinstance(value, float):
        return value if math.isfinite(value) else repr(value)
    if isinstance(value, int):
        return value if int_in_range(value) else repr(value)
    return _loggable(repr(value))


def _insert_async_commit(row: ToolCall) -> None:
    """Insert ``row`` in one round trip, with an asynchronous commit.

    The log row is the only write of a search or an audit read: waiting for
    its WAL flush would add a disk round trip to every answer (milliseconds
    when other writers keep the disk busy) for a row only operators read. A
    server crash may lose the last fraction of a second of log rows; it never
    leaves one half written. Only outside a transaction: inside one, the
    caller's commit decides. The setting and the INSERT go as one query string
    (one implicit transaction, so the setting ends with it), which is why the
    INSERT is written here rather than by ``save()``.
    """
    fields = [field for field in ToolCall._meta.concrete_fields if not field.primary_key]
    values = [field.get_db_prep_save(field.pre_save(row, True), connection) for field in fields]
    quote = connection.ops.quote_name
    columns = ", ".join(quote(field.column) for field in fields)
    placeholders = ", ".join(["%s"] * len(fields))
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT set_config('synchronous_commit', 'off', true); "
            f"INSERT INTO {quote(ToolCall._meta.db_table)} ({columns}) VALUES ({placeholders}) "
            f"RETURNING {quote(ToolCall._meta.pk.column)}",
            values,
        )
        cursor.nextset()
        (row.pk,) = cursor.fetchone()
    row._state.adding = False
    row._state.db = connection.alias


@dataclass
class LoggedCall:
    """One memory-tool call being answered: ``logged_call`` times it, ``log`` writes its row."""

    tool: str
    user: AbstractBaseUser | None
    surface: str
    arguments: dict[str, Any]
    thread_id: int | None = None
    started: float = field(default_factory=time.perf_counter)

    def log(
        self,
        *,
        chars_returned: int,
        hits_total: int = 0,
        hits_shown: int = 0,
        truncated: bool = False,
        status_code: int = 200,
        latency_ms: float | None = None,
        plan: dict[str, Any] | None = None,
    ) -> ToolCall | None:
        """Write the call's ToolCall row; ``latency_ms`` defaults to the time since the call started.

        None, and no row, for a read that runs again on the primary (``db.read_runs_again``): one call, one row.

        ``plan``: search_memory's executed plan (``LiteralPart.executed``, from ``literal_search``); its terms are
        the query's, checked storable before any search runs.
        """
        if self.surface not in ToolCall.Surface.values:
            raise ValueError(f"unknown surface {self.surface!r}; one of {', '.join(ToolCall.Surface.values)}")
        if read_runs_again():
            return None
        if latency_ms is None:
            latency_ms = (time.perf_counter() - self.started) * 1000
        row = ToolCall(
            tool=self.tool,
            caller=self.user if self.user is not None and self.user.is_authenticated else None,
            surface=self.surface,
            thread_id=self.thread_id,
            arguments={key: _loggable(value) for key, value in self.arguments.items()},
            hits_total=hits_total,
            hits_shown=hits_shown,
            chars_returned=chars_returned,
            truncated=truncated,
            latency_ms=round(latency_ms, 3),
            status_code=status_code,
            plan=plan,
        )
        if connection.vendor == "postgresql" and connection.get_autocommit():
            _insert_async_commit(row)
        else:
            row.save(force_insert=True)
        metrics.TOOL_CALLS.labels(tool=self.tool, surface=self.surface, status=str(status_code)).inc()
        metrics.TOOL_CALL_CHARS.labels(tool=self.tool, surface=self.surface).inc(chars_returned)
        return row


@contextmanager
def logged_call(
    *, tool: str, user: AbstractBaseUser | None, surface: str, arguments: dict[str, Any]
) -> Iterator[LoggedCall]:
    """Time one tool call; a DomainError raised inside is logged as a refusal (the error text is what came back).

    The body sets ``call.thread_id`` once it knows the thread and ends with
    ``call.log(...)`` of what it answers.
    """
    call = LoggedCall(tool=tool, user=user, surface=surface, arguments=arguments)
    try:
        yield call
    except DomainError as error:
        call.log(chars_returned=len(error.message), status_code=error.status_code)
        raise
