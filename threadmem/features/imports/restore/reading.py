"""Reading an export's lines: the header, generations and messages checked as exported, every bad line listed.

What is read goes to one of two places: ``writing.NewThread`` for a channel the importer does not have, or
``existing.KnownCheck`` for one that exists (never written to).
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.utils.dateparse import parse_datetime

from threadmem.domain import services
from threadmem.errors import DomainError, InvalidInput, PermissionDenied
from threadmem.features.imports.export import FORMAT, VERSION
from threadmem.features.imports.records import Line, Problem, load_record
from threadmem.features.imports.restore.existing import KnownCheck
from threadmem.features.imports.restore.outcome import Refused, Restored
from threadmem.features.imports.restore.writing import GenerationLine, Meta, NewThread, positive
from threadmem.lib.storable import MAX_JSON_DEPTH, json_problem
from threadmem.models import Generation, Message, Thread

GENERATION_STATES = tuple(Generation.State.values)
MESSAGE_FIELDS = ("role", "content", "tool_calls", "tool_call_id", "session_id", "model_visible", "source_id")
ORIGIN_MAX_CHARS = 32
# The export's last_activity_at is not restored: a restore is activity, so retention counts from it (docs/erase.md).
THREAD_TIMES = ("created_at",)
# The columns' ranges, the same on both databases (PostgreSQL's integer and bigint): a number past them is the
# line's fault, answered as such, not a database error. A seq leaves room for the thread's next_seq after it.
GENERATION_MAX = 2**31 - 1
SEQ_MAX = services.MAX_ROW_ID - 1
# A message line wraps its tool calls' arguments in three levels of its own (line, tool_calls, call).
LINE_DEPTH = MAX_JSON_DEPTH + 3


class ExportReader:
    """One export read line by line; ``read`` ends in the thread written, or the channel's messages known."""

    def __init__(
        self, *, owner: AbstractBaseUser, channel: str | None, restore_isolation: bool, restored: Restored
    ) -> None:
        self.owner, self.channel_override, self.restore_isolation = owner, channel, restore_isolation
        self.restored = restored
        self.header: dict[str, Any] = {}
        self.times: dict[str, datetime | None] = {}
        self.generations: dict[int, GenerationLine] = {}
        self.writer: NewThread | None = None
        self.known: KnownCheck | None = None
        self.source_ids: set[str] = set()
        self.message_lines = 0
        self.last_seq = 0
        self.left_out = {"withheld": 0, "isolated": 0}

    def read(self, lines: Iterator[Line]) -> None:
        end: dict[str, Any] | None = None
        end_line = 0
        for line in lines:
            record = load_record(line)
            if record is None:
                continue
            # NUL, a lone surrogate, a number past 64 bits anywhere in the line: refused before any of it
            # reaches a query (PostgreSQL cannot hold them), whatever field it is in.
            unstorable = None if isinstance(record, Problem) else json_problem(record, max_depth=LINE_DEPTH)
            if not self.header:
                if unstorable:
                    raise Refused(line.number, f"the header {unstorable}: nothing restored")
                self._take_header(record, line)
                continue
            if unstorable:
                record = Problem(line.number, f"the line {unstorable}")
            if isinstance(record, Problem):
                self.restored.problem(record)
                continue
            if end is not None:
                self.restored.problem(Problem(line.number, "a record after the end line"))
                continue
            kind = record.get("type")
            if kind == "generation":
                self._take_generation(record, line)
            elif kind == "message":
                self.message_lines += 1
                self._start()
                self._take_message(record, line)
            elif kind == "end":
                end = record
                end_line = line.number
            else:
                self.restored.problem(Problem(line.number, f"unknown record type {kind!r}"))
        if not self.header:
            raise Refused(1, "the file is empty: expected a threadmem export")
        if self.restored.problems:
            if end is None:
                self.restored.problem(
                    Problem(self.restored.lines, "the export ends without its end line: it was cut short")
                )
            raise Refused(
                self.restored.problems[0].line,
                f"{len(self.restored.problems)} line(s) of the export cannot be restored as exported (each is "
                "listed): nothing restored; a restore is whole or not at all",
            )
        if end is None:
            raise Refused(
                self.restored.lines, "the export ends without its end line: it was cut short; nothing restored"
            )
        expected = (end.get("generations"), end.get("messages"))
        if expected != (len(self.generations), self.message_lines):
            raise Refused(
                end_line,
                f"the end line counts {expected[0]} generations and {expected[1]} messages, the export holds "
                f"{len(self.generations)} and {self.message_lines}: nothing restored",
            )
        if self.known is not None:
            self.known.verify()
            return
        self._start()
        assert self.writer is not None
        self.writer.flush()
        self.writer.finish(generations=self.generations, last_seq=self.last_seq, times=self.times)
        if self.left_out["withheld"]:
            self.restored.note(
                1,
                f"{self.left_out['withheld']} isolated message(s) left out: the export holds them without their "
                "content (an export by a non-staff owner)",
            )
        if self.left_out["isolated"]:
            self.restored.note(
                1, f"{self.left_out['isolated']} isolated message(s) left out: only an admin's import restores them"
            )

    def _start(self) -> None:
        """The new thread and its generations, created once, at the first message (or the end)."""
        if self.writer is not None:
            self.writer.start(self.generations)

    def _take_header(self, record: dict[str, Any] | Problem, line: Line) -> None:
        if isinstance(record, Problem) or record.get("format") != FORMAT:
            raise Refused(line.number, 'not a threadmem export: the first record has no "format": "threadmem"')
        if record.get("version") != VERSION:
            raise Refused(
                line.number, f"threadmem export version {record.get('version')!r}: this service reads version {VERSION}"
            )
        thread = record.get("thread")
        if not isinstance(thread, dict) or not isinstance(thread.get("channel"), str):
            raise Refused(line.number, "the header's thread must be an object with a channel")
        try:
            self.times = {name: export_time(thread.get(name), line=line.number, name=name) for name in THREAD_TIMES}
        except InvalidInput as exc:
            raise Refused(line.number, f"{exc.message}: nothing restored") from None
        self.header = thread
        channel = self.channel_override or thread["channel"]
        self.restored.channel = channel
        existing = Thread.objects.filter(owner=self.owner, channel=channel).first()
        if existing is not None:
            self.known = KnownCheck(thread=existing, restored=self.restored)
            return
        if thread.get("isolated") is True and not self.restore_isolation:
            raise Refused(
                line.number,
                f"thread {channel!r} is isolated: only an admin's import restores it; nothing restored",
                PermissionDenied,
            )
        self.writer = NewThread(owner=self.owner, header=thread, restored=self.restored)

    def _take_generation(self, record: dict[str, Any], line: Line) -> None:
        if self.message_lines:
            self.restored.problem(Problem(line.number, "a generation after the first message is not read"))
            return
        number, state, summary_seq = record.get("number"), record.get("state"), record.get("summary_seq")
        if not positive(number, GENERATION_MAX) or state not in GENERATION_STATES or number in self.generations:
            self.restored.problem(
                Problem(line.number, f"a generation needs a new number from 1 to {GENERATION_MAX} and a known state")
            )
            return
        if summary_seq is not None and not positive(summary_seq, SEQ_MAX):
            self.restored.problem(Problem(line.number, "a generation's summary_seq must be a seq or null"))
            return
        try:
            started_at = export_time(record.get("started_at"), line=line.number, name="started_at")
            closed_at = export_time(record.get("closed_at"), line=line.number, name="closed_at")
        except InvalidInput as exc:
            self.restored.problem(Problem(line.number, exc.message))
            return
        # A compaction running at export time does not run here: its generation is open again.
        if state == Generation.State.COMPACTING:
            state = Generation.State.OPEN
        self.generations[number] = GenerationLine(state, started_at, closed_at, summary_seq)

    def _take_message(self, record: dict[str, Any], line: Line) -> None:
        seq, generation = record.get("seq"), record.get("generation")
        if not positive(seq, SEQ_MAX) or not positive(generation, GENERATION_MAX):
            self.restored.problem(
                Problem(
                    line.number,
                    f"a message needs a seq from 1 to {SEQ_MAX} and a generation from 1 to {GENERATION_MAX}",
                )
            )
            return
        if seq <= self.last_seq:
            self.restored.problem(Problem(line.number, f"seq {seq} does not follow seq {self.last_seq}"))
            return
        self.last_seq = seq
        if record.get("content_withheld") is True:
            self.left_out["withheld"] += 1
            return
        isolated = record.get("isolated", False)
        if isolated is True and not self.restore_isolation:
            self.left_out["isolated"] += 1
            return
        if self.known is not None:
            self.known.check(record, line)
            return
        assert self.writer is not None
        try:
            message, meta = self._parse(record, line, self.writer, seq=seq, generation=generation, isolated=isolated)
        except DomainError as exc:
            self.restored.problem(Problem(line.number, exc.message))
            return
        if message.source_id:
            if message.source_id in self.source_ids:
                self.restored.problem(
                    Problem(line.number, f"source_id {message.source_id!r} repeats an earlier message's")
                )
                return
            self.source_ids.add(message.source_id)
        if self.restored.problems:
            return  # the file is refused at its end: what is left is only read for its problems
        self.writer.add(message, meta)

    def _parse(
        self, record: dict[str, Any], line: Line, writer: NewThread, *, seq: int, generation: int, isolated: Any
    ) -> tuple[services.MessageIn, Meta]:
        kind = record.get("kind", Message.Kind.MESSAGE)
        data = {name: record[name] for name in MESSAGE_FIELDS if name in record}
        if kind == Message.Kind.SUMMARY:
            refs = record.get("refs")
            if refs and isinstance(data.get("content"), str):
                writer.flush()  # the messages it names are stored first
                data["content"] = writer.point_refs(data["content"], refs)
        elif kind is not None:
            data["kind"] = kind
        message = services.message_parse(data, position=f"line {line.number}")
        if kind == Message.Kind.SUMMARY:
            message.kind = Message.Kind.SUMMARY
        if not isinstance(isolated, bool):
            raise InvalidInput(f"line {line.number}.isolated must be true or false")
        superseded_by = record.get("superseded_by_seq")
        if superseded_by is not None and not positive(superseded_by, SEQ_MAX):
            raise InvalidInput(f"line {line.number}.superseded_by_seq must be a seq or null")
        origin = record.get("summary_origin") or ""
        if not isinstance(origin, str) or len(origin) > ORIGIN_MAX_CHARS:
            raise InvalidInput(f"line {line.number}.summary_origin must be a string of at most {ORIGIN_MAX_CHARS}")
        meta = Meta(
            line=line.number,
            seq=seq,
            generation=generation,
            created_at=export_time(record.get("created_at"), line=line.number, name="created_at"),
            isolated=isolated,
            superseded_by_seq=superseded_by,
            summary_origin=origin,
        )
        return message, meta


def export_time(value: Any, *, line: int, name: str) -> datetime | None:
    if value is None:
        return None
    try:
        parsed = parse_datetime(value) if isinstance(value, str) else None
        # In UTC, as the databases store it: a time at the calendar's edge must not overflow on the way in.
        if parsed is not None:
            return (parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)).astimezone(UTC)
    except (ValueError, OverflowError):
        pass  # well formed but no time (month 13), or past year 9999 in UTC
    raise InvalidInput(f"line {line}.{name} must be an ISO 8601 time")
