"""Writes: every change to threads and messages goes through a function here.

Surfaces (REST, console, agent turns, management commands) validate shape,
call one of these and render; the rules live here so every surface gets the
same ones.
"""

from __future__ import annotations

import json
import logging
import math
import secrets
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, NamedTuple

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import IntegrityError, connection, transaction
from django.db.models import F
from django.utils import timezone

from threadmem.errors import Conflict, InvalidInput, NotFound, PayloadTooLarge, PermissionDenied
from threadmem.lib.jsonleaves import string_leaves
from threadmem.lib.storable import json_problem, text_problem
from threadmem.models import Generation, IsolationEvent, Message, Thread, ToolArgument

CHANNEL_MAX_CHARS = 255
TITLE_MAX_CHARS = 500
ID_FIELD_MAX_CHARS = 255
# Ids are 64-bit; a larger number would overflow the database driver, not just miss.
MAX_ROW_ID = 2**63 - 1
# The suffixes of the /api/v1/threads/<channel>/<suffix>/ routes.
CHANNEL_RESERVED_LAST_SEGMENTS = frozenset({"messages", "context", "compact", "compactions", "turns"})
# Tuples, not sets: a client may send an unhashable role such as a list.
ROLES = tuple(Message.Role.values)
KINDS = tuple(Message.Kind.values)
MESSAGE_FIELDS = {
    "role",
    "content",
    "tool_calls",
    "tool_call_id",
    "session_id",
    "kind",
    "model_visible",
    "supersedes",
    "source_id",
}

logger = logging.getLogger(__name__)

# Called after messages land, with the thread; compaction registers its
# automatic trigger here so this module does not import it.
after_append_hooks: list[Callable[[Thread], None]] = []
# Called in the isolation's transaction with the message and the admin; compaction registers the
# re-summary of a compacted generation here (a summary must not keep quoting an isolated message).
after_isolation_hooks: list[Callable[[Message, AbstractBaseUser], object]] = []


# --- validation -------------------------------------------------------------


def _check_text(value: Any, *, name: str, max_chars: int | None = None, allow_empty: bool = True) -> str:
    if value is None:
        value = ""
    if not isinstance(value, str):
        raise InvalidInput(f"{name} must be a string", field=name)
    problem = text_problem(value)
    if problem:
        raise InvalidInput(f"{name} {problem}", field=name)
    if not allow_empty and not value.strip():
        raise InvalidInput(f"{name} must not be empty", field=name)
    if max_chars is not None and len(value) > max_chars:
        raise InvalidInput(f"{name} is longer than {max_chars} characters", field=name)
    return value


def _finite_float(text: str) -> float:
    number = float(text)
    if not math.isfinite(number):
        raise ValueError(f"{text} is out of range for a JSON number")
    return number


def _not_a_number(text: str) -> None:
    raise ValueError(f"{text} is not a JSON value")


def _parse_arguments(text: str, *, where: str, name: str) -> Any:
    """String-form arguments (the OpenAI wire shape) as strict JSON: no NaN, no infinities."""
    if not text.strip():
        return {}
    try:
        return json.loads(text, parse_float=_finite_float, parse_constant=_not_a_number)
    except json.JSONDecodeError as exc:
        raise InvalidInput(f"{where}.arguments is not valid JSON: {exc.msg}", field=name) from None
    except ValueError as exc:  # a non-finite number, or an integer past Python's digit limit
        raise InvalidInput(f"{where}.arguments is not valid JSON: {exc}", field=name) from None
    except RecursionError:
        raise InvalidInput(f"{where}.arguments nests too deeply", field=name) from None


def _check_tool_calls(value: Any, *, name: str) -> list[dict[str, Any]]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise InvalidInput(f"{name} must be a list of {{id, name, arguments}} objects", field=name)
    calls = []
    for index, call in enumerate(value):
        where = f"{name}[{index}]"
        if not isinstance(call, dict):
            raise InvalidInput(f"{where} must be an object with id, name and arguments", field=name)
        unknown = set(call) - {"id", "name", "arguments", "type", "function"}
        if unknown:
            raise InvalidInput(f"{where} has unknown keys: {', '.join(sorted(unknown))}", field=name)
        # Accept the OpenAI wire shape too: {"id", "type": "function", "function": {"name", "arguments": "<json>"}}.
        function = call.get("function")
        if function is not None:
            if not isinstance(function, dict):
                raise InvalidInput(f"{where}.function must be an object", field=name)
            call_name, arguments = function.get("name"), function.get("arguments")
        else:
            call_name, arguments = call.get("name"), call.get("arguments")
        call_id = call.get("id") or ""
        if not isinstance(call_id, str) or len(call_id) > ID_FIELD_MAX_CHARS:
            raise InvalidInput(f"{where}.id must be a string of at most {ID_FIELD_MAX_CHARS} characters", field=name)
        if not isinstance(call_name, str) or not call_name.strip() or len(call_name) > ID_FIELD_MAX_CHARS:
            raise InvalidInput(f"{where}.name must be a non-empty string", field=name)
        if arguments is None:
            arguments = {}
        if isinstance(arguments, str):
            arguments = _parse_arguments(arguments, where=where, name=name)
        if not isinstance(arguments, dict):
            raise InvalidInput(f"{where}.arguments must be a JSON object", field=name)
        for part, problem in (("id", text_problem(call_id)), ("name", text_problem(call_name))):
            if problem:
                raise InvalidInput(f"{where}.{part} {problem}", field=name)
        problem = json_problem(arguments)
        if problem:
            raise InvalidInput(f"{where}.arguments {problem}", field=name)
        calls.append({"id": call_id, "name": call_name, "arguments": arguments})
    return calls


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


def message_parse(data: Any, *, position: str = "message") -> MessageIn:
    """Check one incoming message object; raise InvalidInput/PayloadTooLarge naming the problem."""
    if not isinstance(data, dict):
        raise InvalidInput(f"{position} must be a JSON object")
    unknown = set(data) - MESSAGE_FIELDS
    if unknown:
        raise InvalidInput(f"{position} has unknown fields: {', '.join(sorted(unknown))}")
    role = data.get("role")
    if role not in ROLES:
        raise InvalidInput(f"{position}.role must be one of {', '.join(ROLES)}", field="role")
    kind = data.get("kind", Message.Kind.MESSAGE) or Message.Kind.MESSAGE
    if kind not in KINDS:
        raise InvalidInput(f"{position}.kind must be one of {', '.join(KINDS)}", field="kind")
    if kind == Message.Kind.SUMMARY:
        raise InvalidInput(f"{position}.kind: summaries are written by compaction only", field="kind")
    content = _check_text(data.get("content"), name=f"{position}.content")
    tool_calls = _check_tool_calls(data.get("tool_calls"), name=f"{position}.tool_calls")
    if tool_calls and role != Message.Role.ASSISTANT:
        raise InvalidInput(f"{position}.tool_calls are only allowed on assistant messages", field="tool_calls")
    tool_call_id = _check_text(data.get("tool_call_id"), name=f"{position}.tool_call_id", max_chars=ID_FIELD_MAX_CHARS)
    session_id = _check_text(data.get("session_id"), name=f"{position}.session_id", max_chars=ID_FIELD_MAX_CHARS)
    source_id = _check_text(data.get("source_id"), name=f"{position}.source_id", max_chars=ID_FIELD_MAX_CHARS)
    model_visible = data.get("model_visible", True)
    if not isinstance(model_visible, bool):
        raise InvalidInput(f"{position}.model_visible must be true or false", field="model_visible")
    supersedes = data.get("supersedes")
    if supersedes is not None and (
        not isinstance(supersedes, int) or isinstance(supersedes, bool) or not 1 <= supersedes <= MAX_ROW_ID
    ):
        raise InvalidInput(f"{position}.supersedes must be a message id", field="supersedes")
    size = len(content.encode("utf-8"))
    if tool_calls:
        size += len(json.dumps([c["arguments"] for c in tool_calls], ensure_ascii=False).encode("utf-8"))
    limit = settings.THREADMEM_MAX_MESSAGE_BYTES
    if size > limit:
        raise PayloadTooLarge(f"{position} is {size} bytes; the limit is {limit} bytes (THREADMEM_MAX_MESSAGE_BYTES)")
    if not content and not tool_calls:
        raise InvalidInput(f"{position} needs content or tool_calls", field="content")
    return MessageIn(
        role=role,
        content=content,
        tool_calls=tool_calls,
        tool_call_id=tool_call_id,
        session_id=session_id,
        kind=kind,
        model_visible=model_visible,
        supersedes=supersedes,
        source_id=source_id,
        size=size,
    )


def messages_parse(data: Any) -> list[MessageIn]:
    """One message object or a list of them (all or nothing)."""
    if isinstance(data, dict):
        return [message_parse(data)]
    if not isinstance(data, list):
        raise InvalidInput("the body must be a message object or a list of message objects")
    if not data:
        raise InvalidInput("the batch is empty")
    if len(data) > settings.THREADMEM_MAX_BATCH:
        raise PayloadTooLarge(
            f"the batch has {len(data)} messages; the limit is {settings.THREADMEM_MAX_BATCH} (THREADMEM_MAX_BATCH)"
        )
    parsed = [message_parse(item, position=f"messages[{index}]") for index, item in enumerate(data)]
    seen: set[str] = set()
    for index, message in enumerate(parsed):
        if message.source_id in seen:
            raise InvalidInput(
                f"messages[{index}].source_id {message.source_id!r} repeats an earlier message's", field="source_id"
            )
        if message.source_id:
            seen.add(message.source_id)
    return parsed


# --- threads ----------------------------------------------------------------


def _check_channel(channel: Any) -> str:
    """The channel grammar: 1-255 characters, no surrounding whitespace, no control characters, no '*'
    (search shows it for "every thread"), no '.' or '..' path segment (clients and proxies rewrite those in
    URLs), and no last segment that names an API route."""
    channel = _check_text(channel, name="channel", max_chars=CHANNEL_MAX_CHARS, allow_empty=False)
    if channel != channel.strip() or any(unicodedata.category(c) == "Cc" for c in channel):
        raise InvalidInput("channel must not have surrounding whitespace or control characters", field="channel")
    if "*" in channel:
        raise InvalidInput("channel must not contain '*': search results use it for every thread", field="channel")
    if any(segment in (".", "..") for segment in channel.split("/")):
        raise InvalidInput("channel must not have a '.' or '..' segment: URLs would resolve it away", field="channel")
    if "/" in channel and channel.endswith("/"):
        raise InvalidInput("channel must not end with '/'", field="channel")
    if "/" in channel and channel.rsplit("/", 1)[1] in CHANNEL_RESERVED_LAST_SEGMENTS:
        # threads/<channel>/<suffix>/ routes would read "a/messages" as thread "a".
        raise InvalidInput(
            f"channel must not end with '/{channel.rsplit('/', 1)[1]}': it names an API route", field="channel"
        )
    return channel


def _new_channel() -> str:
    return f"thread-{secrets.token_hex(8)}"


@transaction.atomic
def thread_create(
    *,
    owner: AbstractBaseUser,
    channel: str | None = None,
    title: str = "",
    fork_from: Message | None = None,
) -> Thread:
    """Create a thread, or a fork of ``fork_from``'s thread at that message.

    A fork starts at the generation of its fork message: its ancestry is the
    parent's history up to and including that message, and its context starts
    as the parent's context did at that point.
    """
    channel = _check_channel(channel) if channel is not None else _new_channel()
    title = _check_text(title, name="title", max_chars=TITLE_MAX_CHARS)
    number = 1
    parent = None
    if fork_from is not None:
        number = fork_from.generation
        parent = fork_from.thread
    try:
        with transaction.atomic():
            thread = Thread.objects.create(
                channel=channel,
                title=title,
                owner=owner,
                parent=parent,
                fork_message=fork_from,
                current_generation=number,
            )
    except IntegrityError:
        raise Conflict(f"channel {channel!r} already exists", field="channel") from None
    Generation.objects.create(thread=thread, number=number)
    return thread


def thread_update(*, thread: Thread, title: Any) -> Thread:
    thread.title = _check_text(title, name="title", max_chars=TITLE_MAX_CHARS)
    thread.save(update_fields=["title"])
    return thread


ISOLATION_DENIED = "only admins (superusers or holders of the threadmem.isolate permission) may change isolation"


def can_isolate(user: AbstractBaseUser) -> bool:
    return bool(user.is_superuser or user.has_perm("threadmem.isolate"))


@transaction.atomic
def thread_set_isolated(*, thread: Thread, isolated: bool, actor: AbstractBaseUser, surface: str = "api") -> Thread:
    if not can_isolate(actor):
        raise PermissionDenied(ISOLATION_DENIED, field="isolated")
    if not isinstance(isolated, bool):
        raise InvalidInput("isolated must be true or false", field="isolated")
    Thread.objects.filter(pk=thread.pk).update(isolated=isolated)
    thread.isolated = isolated
    IsolationEvent.objects.create(actor=actor, thread=thread, isolated=isolated, surface=surface)
    return thread


@transaction.atomic
def message_set_isolated(*, message: Message, isolated: bool, actor: AbstractBaseUser, surface: str = "api") -> Message:
    if not can_isolate(actor):
        raise PermissionDenied(ISOLATION_DENIED, field="isolated")
    if not isinstance(isolated, bool):
        raise InvalidInput("isolated must be true or false", field="isolated")
    Message.objects.filter(pk=message.pk).update(isolated=isolated)
    message.isolated = isolated
    IsolationEvent.objects.create(
        actor=actor, thread_id=message.thread_id, message=message, isolated=isolated, surface=surface
    )
    for hook in after_isolation_hooks:
        hook(message, actor)
    return message


# --- messages ---------------------------------------------------------------


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
    tool_calls: list[dict[str, Any]]
    tool_call_id: str
    session_id: str
    source_id: str
    model_visible: bool
    isolated: bool
    superseded_by_id: int | None
    created_at: datetime


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
_PG_COPY_MESSAGES = (
    "COPY threadmem_message (id, thread_id, generation, seq, role, kind, content, tool_calls, tool_call_id,"
    " session_id, source_id, model_visible, isolated, created_at) FROM STDIN"
)
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


def _store_pg(*, thread: Thread, messages: Sequence[MessageIn], now: datetime) -> list[StoredMessage]:
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
        with cursor.copy(_PG_COPY_MESSAGES) as copy:
            for (generation, seq, pk), m in zip(reserved, messages, strict=True):
                stored.append(
                    StoredMessage(
                        pk,
                        thread_id,
                        generation,
                        seq,
                        m.role,
                        m.kind,
                        m.content,
                        m.tool_calls,
                        m.tool_call_id,
                        m.session_id,
                        m.source_id,
                        m.model_visible,
                        False,
                        None,
                        now,
                    )
                )
                copy.write_row(
                    (
                        pk,
                        thread_id,
                        generation,
                        seq,
                        m.role,
                        m.kind,
                        m.content,
                        json.dumps(m.tool_calls, ensure_ascii=False) if m.tool_calls else "[]",
                        m.tool_call_id,
                        m.session_id,
                        m.source_id,
                        m.model_visible,
                        False,
                        created_at,
                    )
                )
            leaves = _tool_argument_rows(stored)
        if leaves:
            with cursor.copy(_PG_COPY_TOOL_ARGUMENTS) as copy:
                for row in leaves:
                    copy.write_row(row)
    return stored


def _store_orm(*, thread: Thread, messages: Sequence[MessageIn], now: datetime) -> list[StoredMessage]:
    """The portable path (SQLite): the seq block with an UPDATE, then bulk_create, which returns the ids there."""
    Thread.objects.filter(pk=thread.pk).update(next_seq=F("next_seq") + len(messages), last_activity_at=now)
    next_seq, generation = Thread.objects.values_list("next_seq", "current_generation").get(pk=thread.pk)
    first_seq = next_seq - len(messages)
    rows = Message.objects.bulk_create(
        [
            Message(
                thread=thread,
                generation=generation,
                seq=first_seq + offset,
                role=m.role,
                kind=m.kind,
                content=m.content,
                tool_calls=m.tool_calls,
                tool_call_id=m.tool_call_id,
                session_id=m.session_id,
                source_id=m.source_id,
                model_visible=m.model_visible,
                created_at=now,
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


def messages_store(*, thread: Thread, messages: Sequence[MessageIn], run_hooks: bool = True) -> list[StoredMessage]:
    """Append parsed messages to the thread's current generation, all or nothing; answer with the stored rows.

    The seq block is reserved with one UPDATE on the thread row, inside the
    transaction that inserts the rows: concurrent appends (and compaction,
    which moves ``current_generation`` under the same lock) serialize there.

    A message whose ``source_id`` the thread already holds is not stored
    again: the answer carries the stored one in its place, so a retried
    append, or a re-imported file, adds only what is new.

    ``run_hooks=False`` defers the after-append hooks: an agent turn appends
    several times and runs them once, after its last append
    (``after_append``), so no compaction starts in the middle of a turn.
    """
    if not messages:
        raise InvalidInput("nothing to append")
    now = timezone.now()
    store = _store_pg if connection.vendor == "postgresql" else _store_orm
    with transaction.atomic():
        known = _stored_by_source_id(thread, messages)
        if known:
            asked, messages = messages, [m for m in messages if m.source_id not in known]
            if not messages:
                return [known[m.source_id] for m in asked]
        superseded_ids = [m.supersedes for m in messages if m.supersedes is not None]
        if superseded_ids:
            found = set(Message.objects.filter(thread=thread, id__in=superseded_ids).values_list("id", flat=True))
            missing = sorted(set(superseded_ids) - found)
            if missing:
                raise InvalidInput(
                    f"supersedes names messages that are not in this thread: {', '.join(map(str, missing))}",
                    field="supersedes",
                )
        stored = store(thread=thread, messages=messages, now=now)
        generation = stored[0].generation
        visible_size = sum(m.size for m in messages if m.model_visible)
        if visible_size:
            Generation.objects.filter(thread=thread, number=generation).update(
                visible_chars=F("visible_chars") + visible_size
            )
        for message_in, message in zip(messages, stored, strict=True):
            if message_in.supersedes is not None:
                Message.objects.filter(pk=message_in.supersedes).update(superseded_by=message.id)
    thread.next_seq = stored[-1].seq + 1
    thread.current_generation = generation
    thread.last_activity_at = now
    if run_hooks:
        after_append(thread)
    if known:
        new = iter(stored)
        return [known[m.source_id] if m.source_id in known else next(new) for m in asked]
    return stored


def _stored_by_source_id(thread: Thread, messages: Sequence[MessageIn]) -> dict[str, StoredMessage]:
    """The thread's stored messages among the batch's source ids, read under the thread's row lock.

    The lock makes a concurrent retry of the same batch wait for this one and
    then find its messages; a batch without source ids costs nothing here.
    """
    source_ids = [m.source_id for m in messages if m.source_id]
    if not source_ids:
        return {}
    Thread.objects.select_for_update().filter(pk=thread.pk).values_list("pk").first()
    rows = Message.objects.filter(thread=thread, source_id__in=source_ids).values_list(*StoredMessage._fields)
    return {row.source_id: row for row in map(StoredMessage._make, rows)}


def messages_append(*, thread: Thread, messages: Sequence[MessageIn], run_hooks: bool = True) -> list[Message]:
    """``messages_store`` answering with Message instances, for callers that go on with the models."""
    created = []
    for row in messages_store(thread=thread, messages=messages, run_hooks=run_hooks):
        message = Message(**row._asdict())
        message.thread = thread  # cached: callers read message.thread
        message._state.adding = False
        message._state.db = connection.alias
        created.append(message)
    return created


def after_append(thread: Thread) -> None:
    """Run the after-append hooks (the automatic compaction check, embedding) for the thread.

    The messages are committed by now: a hook that fails (the broker is
    down, the database connection dropped) is logged, never raised, so a
    stored append never answers an error that would make a client retry it.
    """
    for hook in after_append_hooks:
        try:
            hook(thread)
        except Exception:
            logger.exception("after-append hook %s failed for thread %s; the messages are stored", hook, thread.pk)


def message_lookup_in_thread(*, thread: Thread, message_id: Any) -> Message:
    if not isinstance(message_id, int) or isinstance(message_id, bool):
        raise InvalidInput("message_id must be an integer", field="message_id")
    try:
        return Message.objects.select_related("thread").get(pk=message_id, thread=thread)
    except Message.DoesNotExist:
        raise NotFound(f"message {message_id} is not in thread {thread.channel!r}") from None
