"""threadmem's own format: a thread as JSONL lines that restore it (``restore``), and the file name it goes by.

The lines, in order (docs/imports.md, "threadmem exports"):

- ``{"format": "threadmem", "version": 1, "type": "thread", "exported_at", "content_withheld", "thread": {...}}``:
  the header, which ``records.detect_format`` recognizes; the thread's channel, title, source fields,
  times, isolation, current generation and, for a fork, ``parent: {"channel", "fork_message_seq"}``.
- ``{"type": "generation", ...}`` per generation: number, state, times, ``summary_seq``.
- ``{"type": "message", ...}`` per message in seq order: every stored field, ``superseded_by_seq`` for the
  replacing message, the message's ``id`` here, and for a summary that names messageIds, ``refs`` (each
  ``{"id", "channel", "seq"}``) so a restore can point them at the restored messages.
- ``{"type": "end", "generations": n, "messages": n}``: an export without it was cut short.

Everything is read from one snapshot on PostgreSQL (a read-only repeatable-read transaction), so a
compaction committing meanwhile cannot leave a summary without its generation.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from datetime import datetime
from typing import Any

import orjson
from django.db import connection, transaction
from django.utils import timezone

from threadmem.models import Generation, Message, Thread, quotes_isolated

FORMAT = "threadmem"
VERSION = 1
# Messages read per query (keyset by seq): memory stays flat whatever the thread's length.
BATCH = 500
# messageId=<id> in a summary (compaction's catalogue and offline summary; "result messageId=" too).
MESSAGE_REF = re.compile(r"\bmessageId=(\d+)")
FILENAME_MAX_CHARS = 120
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def thread_export_lines(*, thread: Thread, withhold_isolated: bool) -> Iterator[bytes]:
    """The thread as threadmem JSONL, one ``\\n``-terminated line at a time.

    ``withhold_isolated`` (a non-staff caller, contract §1): an isolated message, and a summary an
    isolation rewrote, keep their place and flags but carry no content, tool calls or refs, and say
    ``"content_withheld": true``; the message list API shows them the same way.
    """
    with _snapshot():
        # Read again inside the snapshot: the header's current generation agrees with the lines after it.
        thread = Thread.objects.filter(pk=thread.pk).first() or thread
        yield _line(_header(thread, withhold_isolated=withhold_isolated))
        generations = list(Generation.objects.filter(thread=thread).order_by("number"))
        summary_seqs = dict(
            Message.objects.filter(pk__in=[g.summary_message_id for g in generations if g.summary_message_id])
            .values_list("pk", "seq")
            .order_by()
        )
        for generation in generations:
            yield _line(
                {
                    "type": "generation",
                    "number": generation.number,
                    "state": generation.state,
                    "started_at": _time(generation.started_at),
                    "closed_at": _time(generation.closed_at),
                    "summary_seq": summary_seqs.get(generation.summary_message_id),
                }
            )
        lineage = _lineage(thread)
        count, last_seq = 0, None
        while True:
            batch = Message.objects.filter(thread=thread).order_by("seq")
            if last_seq is not None:
                batch = batch.filter(seq__gt=last_seq)
            rows = list(batch[:BATCH].iterator())
            superseding = dict(
                Message.objects.filter(pk__in={m.superseded_by_id for m in rows if m.superseded_by_id})
                .values_list("pk", "seq")
                .order_by()
            )
            for message in rows:
                yield _line(_message(message, superseding, lineage, withhold=withhold_isolated))
            count += len(rows)
            if len(rows) < BATCH:
                break
            last_seq = rows[-1].seq
        yield _line({"type": "end", "generations": len(generations), "messages": count})


def export_filename(channel: str) -> str:
    """A file name for the channel's export: its safe characters, and a hash of it when some were not.

    ``claude-code:258c…`` and ``claude-code/258c…`` both read ``claude-code_258c…``; the hash keeps them
    apart, so names from different channels never collide.
    """
    stem = _UNSAFE.sub("_", channel).strip("._") or "thread"
    if stem != channel or len(stem) > FILENAME_MAX_CHARS:
        stem = f"{stem[:FILENAME_MAX_CHARS]}-{hashlib.sha1(channel.encode('utf-8')).hexdigest()[:8]}"
    return f"{stem}.jsonl"


class _snapshot:
    """PostgreSQL: one read-only repeatable-read transaction around the export, when none is open already.

    Not on SQLite: its transactions take the write lock up front here (``transaction_mode=IMMEDIATE``),
    which would stop every append for as long as the client reads.
    """

    def __enter__(self) -> None:
        self.atomic = None
        if connection.vendor == "postgresql" and not connection.in_atomic_block:
            self.atomic = transaction.atomic()
            self.atomic.__enter__()
            with connection.cursor() as cursor:
                cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")

    def __exit__(self, *exc: Any) -> None:
        if self.atomic is not None:
            self.atomic.__exit__(*exc)


def _header(thread: Thread, *, withhold_isolated: bool) -> dict[str, Any]:
    parent = None
    if thread.parent_id is not None:
        parent = {
            "channel": Thread.objects.values_list("channel", flat=True).get(pk=thread.parent_id),
            "fork_message_seq": Message.objects.values_list("seq", flat=True).filter(pk=thread.fork_message_id).first(),
        }
    return {
        "format": FORMAT,
        "version": VERSION,
        "type": "thread",
        "exported_at": _time(timezone.now()),
        "content_withheld": withhold_isolated,
        "thread": {
            "channel": thread.channel,
            "title": thread.title,
            "source_format": thread.source_format,
            "source_path": thread.source_path,
            "source_session_id": thread.source_session_id,
            "source_cwd": thread.source_cwd,
            "project": thread.project,
            "created_at": _time(thread.created_at),
            "last_activity_at": _time(thread.last_activity_at),
            "isolated": thread.isolated,
            "current_generation": thread.current_generation,
            "parent": parent,
        },
    }


def _message(
    message: Message, superseding: dict[int, int], lineage: dict[int, str], *, withhold: bool
) -> dict[str, Any]:
    withheld = withhold and quotes_isolated(message)
    data: dict[str, Any] = {
        "type": "message",
        "id": message.pk,
        "generation": message.generation,
        "seq": message.seq,
        "role": message.role,
        "kind": message.kind,
        "content": "" if withheld else message.content,
        "tool_calls": [] if withheld else message.tool_calls,
        "tool_call_id": message.tool_call_id,
        "session_id": message.session_id,
        "source_id": message.source_id,
        "model_visible": message.model_visible,
        "isolated": message.isolated,
        "superseded_by_seq": superseding.get(message.superseded_by_id),
        "summary_origin": message.summary_origin,
        "created_at": _time(message.created_at),
    }
    if withheld:
        data["content_withheld"] = True
    elif message.kind == Message.Kind.SUMMARY:
        refs = _refs(message.content, lineage)
        if refs:
            data["refs"] = refs
    return data


def _lineage(thread: Thread) -> dict[int, str]:
    """The thread and its ancestors, id -> channel: the messages a summary of it may name."""
    lineage = {thread.pk: thread.channel}
    parent_id = thread.parent_id
    while parent_id is not None and parent_id not in lineage:
        channel, next_parent = Thread.objects.values_list("channel", "parent_id").get(pk=parent_id)
        lineage[parent_id] = channel
        parent_id = next_parent
    return lineage


def _refs(content: str, lineage: dict[int, str]) -> list[dict[str, Any]]:
    ids = {int(found) for found in MESSAGE_REF.findall(content) if len(found) < 19}
    if not ids:
        return []
    rows = Message.objects.filter(pk__in=ids, thread_id__in=lineage).values_list("pk", "thread_id", "seq")
    return [{"id": pk, "channel": lineage[thread_id], "seq": seq} for pk, thread_id, seq in sorted(rows)]


def _time(value: datetime | None) -> str | None:
    return None if value is None else value.isoformat()


def _line(data: dict[str, Any]) -> bytes:
    return orjson.dumps(data) + b"\n"
