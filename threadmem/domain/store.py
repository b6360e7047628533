"""The bulk write of a parsed batch: COPY on PostgreSQL, bulk_create elsewhere.

``services.messages_store`` holds the rules (the seq block, source_id
dedupe, supersedes); the functions here only put the rows in and answer
with them as stored.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from operator import attrgetter
from typing import Any, NamedTuple

from django.db import connection, transaction
from django.db.models import F

from threadmem.errors import NotFound
from threadmem.lib.jsonleaves import string_leaves
from threadmem.models import Message, Thread, ToolArgument


@dataclass
class MessageIn:
    role: str
    content: str = ""
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    tool_call_id: str = ""
    session_id: str = ""
    kind: str = Message.Kind.MESSAGE
    model_visible: bool = True
    supersedes: int | None = None
    source_id: str = ""
    # UTF-8 bytes of content and tool-call arguments (the size limit's measure).
    size: int = 0


class StoredMessage(NamedTuple):
    """One appended message as stored, under the attribute names of Message.

    The API's batch append answers from these: building Message instances
    (their __init__, the related descriptor behind ``thread=``) was the
    largest share of the append's Python (bench/ingest.py), and the answer
    needs only the stored values.
    """

    id: int
    thread_id: int
    generation: int
    seq: int
    role: str
    kind: str
    content: str
    tool_call_id: str
    session_id: str
    source_id: str
    model_visible: bool
    isolated: bool
    superseded_by_id: int | None
    # Last: the two values COPY takes in another form (store_pg).
    tool_calls: list[dict[str, Any]]
    created_at: datetime


# The columns a message takes from its parsed input as they are (MessageIn), in StoredMessage's order.
INPUT_COLUMNS = ("role", "kind", "content", "tool_call_id", "session_id", "source_id", "model_visible")
_input_values = attrgetter(*INPUT_COLUMNS)


TOOL_ARGUMENT_COLUMNS = ("message_id", "thread_id", "call_index", "tool_call_id", "tool_name", "path", "value")


def _tool_argument_rows(stored: Sequence[StoredMessage]) -> list[tuple[Any, ...]]:
    """One tuple (in TOOL_ARGUMENT_COLUMNS order) per string leaf of the messages' tool-call arguments."""
    return [
        (message.id, message.thread_id, index, call["id"], call["name"], path, value)
        for message in stored
        for index, call in enumerate(message.tool_calls)
        for path, value in string_leaves(call["arguments"])
    ]


# PostgreSQL bulk path (see _pg_cursor). Column lists match the models.
# The seq reservation also draws the message ids, one per seq in seq order, once
# the thread row is locked (search reads id order as "newest first"). The
# sequence is looked up once, not per row: per row it was most of the query.
_PG_RESERVE = (
    "WITH reserved AS ("
    " UPDATE threadmem_thread SET next_seq = next_seq + %(count)s, last_activity_at = %(now)s"
    " WHERE id = %(thread)s RETURNING next_seq, current_generation"
    "), ids AS MATERIALIZED (SELECT pg_get_serial_sequence('threadmem_message', 'id')::regclass AS sequence)"
    " SELECT reserved.current_generation, seq, nextval(ids.sequence)"
    " FROM reserved, ids, generate_series(reserved.next_seq - %(count)s, reserved.next_seq - 1) AS seq"
    " ORDER BY seq"
)
_PG_COPY_MESSAGES = f"COPY threadmem_message ({', '.join(StoredMessage._fields)}) FROM STDIN"
_PG_COPY_TOOL_ARGUMENTS = f"COPY threadmem_toolargument ({', '.join(TOOL_ARGUMENT_COLUMNS)}) FROM STDIN"


def _pg_cursor() -> Any:
    """A plain psycopg cursor on Django's own connection (so inside its transaction).

    Batches go in with COPY: Django's psycopg 3 backend binds parameters
    client-side, escaping every value into the SQL text in Python, which for
    a batch of long messages cost as much as the database's own work
    (bench/ingest.py). COPY streams the rows; ids are taken from the
    sequence first, since COPY cannot return them.
    """
    import psycopg

    connection.ensure_connection()
    return psycopg.Cursor(connection.connection)


def _deleted(thread: Thread) -> NotFound:
    """The thread was deleted while this append waited for its row lock (threadmem/features/erase)."""
    return NotFound(f"thread {thread.channel!r} not found: it was deleted")


def store_pg(*, thread: Thread, messages: Sequence[MessageIn], now: datetime) -> list[StoredMessage]:
    """Reserve seqs and ids in one round trip, then COPY the messages and their tool-argument leaves.

    The rows come straight from the parsed input. The database works through
    the streamed rows while Python is still writing them, so the per-message
    work (the stored rows, the tool-call JSON, the leaves) happens inside the
    COPY, where it overlaps the database's own.
    """
    stored: list[StoredMessage] = []
    thread_id = thread.pk
    created_at = now.isoformat()  # one timestamp for the batch, formatted once
    with _pg_cursor() as cursor:
        reserved = cursor.execute(_PG_RESERVE, {"count": len(messages), "now": now, "thread": thread_id}).fetchall()
        if not reserved:
            raise _deleted(thread)
        with cursor.copy(_PG_COPY_MESSAGES) as copy:
            for (generation, seq, pk), m in zip(reserved, messages, strict=True):
                row = StoredMessage(pk, thread_id, generation, seq, *_input_values(m), False, None, m.tool_calls, now)
                stored.append(row)
                # The last two in COPY's text form: the calls as JSON, the batch's one time formatted once.
                tool_calls = json.dumps(m.tool_calls, ensure_ascii=False) if m.tool_calls else "[]"
                copy.write_row((*row[:-2], tool_calls, created_at))
            leaves = _tool_argument_rows(stored)
        if leaves:
            with cursor.copy(_PG_COPY_TOOL_ARGUMENTS) as copy:
                for row in leaves:
                    copy.write_row(row)
    return stored


def store_orm(*, thread: Thread, messages: Sequence[MessageIn], now: datetime) -> list[StoredMessage]:
    """The portable path (SQLite): the seq block with an UPDATE, then bulk_create, which returns the ids there."""
    if not Thread.objects.filter(pk=thread.pk).update(next_seq=F("next_seq") + len(messages), last_activity_at=now):
        raise _deleted(thread)
    next_seq, generation = Thread.objects.values_list("next_seq", "current_generation").get(pk=thread.pk)
    first_seq = next_seq - len(messages)
    rows = Message.objects.bulk_create(
        [
            Message(
                thread=thread,
                generation=generation,
                seq=first_seq + offset,
                tool_calls=m.tool_calls,
                created_at=now,
                **dict(zip(INPUT_COLUMNS, _input_values(m), strict=True)),
            )
            for offset, m in enumerate(messages)
        ]
    )
    # Read back, created_at included: auto_now_add stamps each row in bulk_create.
    stored = [StoredMessage(*(getattr(row, name) for name in StoredMessage._fields)) for row in rows]
    leaves = _tool_argument_rows(stored)
    if leaves:
        ToolArgument.objects.bulk_create(
            [ToolArgument(**dict(zip(TOOL_ARGUMENT_COLUMNS, v, strict=True))) for v in leaves]
        )
    return stored


# A batch at least this large is a bulk write: after it the planner's statistics are refreshed when they are
# older than the table (never gathered, or this batch alone adds a fifth of the rows they counted). A fresh
# store loaded in batches with autovacuum off or behind otherwise plans global search on no statistics at all.
BULK_ANALYZE_MIN_ROWS = 500
_STATISTICS_ROWS = "SELECT reltuples FROM pg_class WHERE oid = 'threadmem_message'::regclass"


def analyze_after_bulk_write(rows: int) -> bool:
    """PostgreSQL: ANALYZE the message tables after a bulk write their statistics do not know of; True if it ran."""
    if connection.vendor != "postgresql" or rows < BULK_ANALYZE_MIN_ROWS:
        return False
    # A savepoint inside a caller's transaction (an import): a failure here must not abort it.
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(_STATISTICS_ROWS)
        (counted,) = cursor.fetchone()
        if counted >= 0 and rows <= 0.2 * counted:
            return False
        cursor.execute("ANALYZE threadmem_message, threadmem_toolargument")
    return True
