"""Restoring a thread from threadmem's own export (``export.py``): the same channel, generations and messages.

Messages are stored through ``services.messages_store`` (so every ingest rule applies to them) in seq
order, each run of one generation at the seq it was exported with: the thread's ``next_seq`` and
``current_generation`` are set before each run, which keeps seq gaps (an erased message) and late
arrivals a compaction moved to the next generation where they were. What the append path does not
take (timestamps, ``isolated``, ``superseded_by``, ``summary_origin``, a generation's summary and
state) is written after, in the same transaction: a thread is restored whole or not at all. A file with
any line that cannot be restored as exported is refused whole, every such line listed: a restore that
left a line out would read as a backup restored, and a client deleting its original would lose it.

The rules a restore keeps (docs/imports.md, "threadmem exports"):

- A channel that exists is never written to: when it is the importer's and every message of the export
  is in it by source id, the import counts them as known (importing an export again adds nothing);
  otherwise the thread is refused, naming the channel.
- A fork is restored as a fork when its parent channel is one of the importer's threads and holds the
  fork message's seq; otherwise as a plain thread, with a note.
- ``isolated`` is restored only by an import with an admin's authority (``restore_isolation``): for any
  other, an isolated thread is refused and isolated messages are left out, with a note, so that nothing
  an admin isolated reaches the model through an export and an import. A message exported without its
  content (``content_withheld``) is left out, with a note: there is nothing to restore.
- A summary's ``refs`` point its messageIds at the restored messages (same channel and seq).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NamedTuple

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils.dateparse import parse_datetime

from threadmem import services
from threadmem.errors import Conflict, DomainError, InvalidInput, PermissionDenied
from threadmem.imports.export import FORMAT, MESSAGE_REF, VERSION
from threadmem.imports.records import Line, Problem, load_record, read_complete_lines
from threadmem.lib.projects import PROJECT_MAX_CHARS, project_normal, project_root
from threadmem.lib.storable import MAX_JSON_DEPTH, json_problem
from threadmem.models import Generation, Message, Thread

BATCH_SIZE = 500
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


@dataclass
class Restored:
    """What one export's restore did: ``problems`` are refused lines (or the whole thread), ``notes`` what
    was restored otherwise than exported."""

    channel: str = ""
    lines: int = 0
    bytes: int = 0
    messages_new: int = 0
    messages_known: int = 0
    thread: Thread | None = None
    # Why nothing was restored (its kind: the HTTP status an upload answers with), or None.
    refusal: DomainError | None = None
    problems: list[Problem] = field(default_factory=list)
    notes: list[Problem] = field(default_factory=list)

    @property
    def refused(self) -> bool:
        return self.refusal is not None


class Refused(Exception):
    """The thread is not restored; nothing of it is stored."""

    def __init__(self, line: int, reason: str, kind: type[DomainError] = InvalidInput) -> None:
        super().__init__(reason)
        self.line, self.reason, self.kind = line, reason, kind


class GenerationLine(NamedTuple):
    state: str
    started_at: datetime | None
    closed_at: datetime | None
    summary_seq: int | None


class Meta(NamedTuple):
    """What a stored message takes from its export line besides its MessageIn."""

    line: int
    seq: int
    generation: int
    created_at: datetime | None
    isolated: bool
    superseded_by_seq: int | None
    summary_origin: str


def thread_restore(
    *,
    path: Path,
    owner: AbstractBaseUser,
    restore_isolation: bool,
    channel: str | None = None,
    progress: Callable[[int], None] | None = None,
) -> Restored:
    """Restore the thread of one export file for ``owner``, under ``channel`` if given, whole or not at all."""
    restored = Restored()
    with path.open("rb") as handle:
        lines = read_complete_lines(handle, offset=0, line_number=0, final=True)
        run = _Restore(owner=owner, channel=channel, restore_isolation=restore_isolation, restored=restored)
        try:
            with transaction.atomic():
                run.read(_counted(lines, restored, progress))
        except Refused as refused:
            # The bad lines are listed already; a refusal of the thread as a whole is its one problem.
            if not restored.problems:
                restored.problems.append(Problem(refused.line, refused.reason))
            restored.messages_new = restored.messages_known = 0
            restored.thread = None
            restored.refusal = refused.kind(refused.reason)
            restored.notes = []
    if restored.thread is not None and restored.messages_new:
        # After the commit, as other imports: embeddings, the automatic compaction check.
        services.after_append(restored.thread)
    return restored


def restore_order(paths: list[Path]) -> list[Path]:
    """Export files with each parent before its forks (a fork finds its parent restored), else as given."""
    headers: dict[Path, tuple[str, str]] = {}
    for path in paths:
        thread = _header_thread(path)
        parent = thread.get("parent") if isinstance(thread.get("parent"), dict) else {}
        headers[path] = (str(thread.get("channel") or ""), str(parent.get("channel") or ""))
    by_channel = {channel: path for path, (channel, _) in headers.items() if channel}
    ordered: list[Path] = []
    placed: set[Path] = set()

    def place(path: Path, seen: set[Path]) -> None:
        if path in placed or path in seen:
            return
        parent = by_channel.get(headers[path][1])
        if parent is not None:
            place(parent, seen | {path})
        placed.add(path)
        ordered.append(path)

    for path in paths:
        place(path, set())
    return ordered


def _header_thread(path: Path) -> dict[str, Any]:
    with path.open("rb") as handle:
        for raw in handle:
            if raw.strip():
                try:
                    record = json.loads(raw)
                except ValueError:
                    return {}
                thread = record.get("thread") if isinstance(record, dict) else None
                return thread if isinstance(thread, dict) else {}
    return {}


def _counted(lines: Iterator[Line], restored: Restored, progress: Callable[[int], None] | None) -> Iterator[Line]:
    reported = 0
    for line in lines:
        restored.lines += 1
        restored.bytes = line.end_offset
        if progress is not None and line.number % 256 == 0:
            progress(line.end_offset - reported)
            reported = line.end_offset
        yield line
    if progress is not None:
        progress(restored.bytes - reported)


class _Restore:
    def __init__(
        self, *, owner: AbstractBaseUser, channel: str | None, restore_isolation: bool, restored: Restored
    ) -> None:
        self.owner, self.channel_override, self.restore_isolation = owner, channel, restore_isolation
        self.restored = restored
        self.header: dict[str, Any] = {}
        self.exported_channel = ""
        self.generations: dict[int, GenerationLine] = {}
        self.known_generations: set[int] = set()
        self.thread: Thread | None = None
        self.existing: Thread | None = None
        self.pending: list[tuple[services.MessageIn, Meta]] = []
        self.supersessions: list[tuple[int, int]] = []  # (seq, superseded_by seq)
        self.source_ids: set[str] = set()
        self.message_lines = 0
        self.last_seq = 0
        self.left_out = {"withheld": 0, "isolated": 0}
        self.unmatched: tuple[int, str] | None = None
        self.unverified: list[tuple[int, str]] = []
        self.next_seq = 0
        self.current_generation = 0
        self.ref_threads: dict[str, Thread | None] = {}

    # --- reading --------------------------------------------------------------

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
                self._problem(record)
                continue
            if end is not None:
                self._problem(Problem(line.number, "a record after the end line"))
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
                self._problem(Problem(line.number, f"unknown record type {kind!r}"))
        if not self.header:
            raise Refused(1, "the file is empty: expected a threadmem export")
        if self.restored.problems:
            if end is None:
                self._problem(Problem(self.restored.lines, "the export ends without its end line: it was cut short"))
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
        self._start()
        if self.existing is not None:
            self._verify()
            return
        self._flush()
        self._finish()

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
            self.times = {name: _time(thread.get(name), line=line.number, name=name) for name in THREAD_TIMES}
        except InvalidInput as exc:
            raise Refused(line.number, f"{exc.message}: nothing restored") from None
        self.header, self.exported_channel = thread, thread["channel"]
        channel = self.channel_override or self.exported_channel
        self.restored.channel = channel
        existing = Thread.objects.filter(owner=self.owner, channel=channel).first()
        if existing is not None:
            self.existing = existing
        elif thread.get("isolated") is True and not self.restore_isolation:
            raise Refused(
                line.number,
                f"thread {channel!r} is isolated: only an admin's import restores it; nothing restored",
                PermissionDenied,
            )

    def _take_generation(self, record: dict[str, Any], line: Line) -> None:
        if self.thread is not None or self.message_lines:
            self._problem(Problem(line.number, "a generation after the first message is not read"))
            return
        number, state, summary_seq = record.get("number"), record.get("state"), record.get("summary_seq")
        if not _positive(number, GENERATION_MAX) or state not in GENERATION_STATES or number in self.generations:
            self._problem(
                Problem(line.number, f"a generation needs a new number from 1 to {GENERATION_MAX} and a known state")
            )
            return
        if summary_seq is not None and not _positive(summary_seq, SEQ_MAX):
            self._problem(Problem(line.number, "a generation's summary_seq must be a seq or null"))
            return
        try:
            started_at = _time(record.get("started_at"), line=line.number, name="started_at")
            closed_at = _time(record.get("closed_at"), line=line.number, name="closed_at")
        except InvalidInput as exc:
            self._problem(Problem(line.number, exc.message))
            return
        # A compaction running at export time does not run here: its generation is open again.
        if state == Generation.State.COMPACTING:
            state = Generation.State.OPEN
        self.generations[number] = GenerationLine(state, started_at, closed_at, summary_seq)

    def _take_message(self, record: dict[str, Any], line: Line) -> None:
        seq, generation = record.get("seq"), record.get("generation")
        if not _positive(seq, SEQ_MAX) or not _positive(generation, GENERATION_MAX):
            self._problem(
                Problem(
                    line.number,
                    f"a message needs a seq from 1 to {SEQ_MAX} and a generation from 1 to {GENERATION_MAX}",
                )
            )
            return
        if seq <= self.last_seq:
            self._problem(Problem(line.number, f"seq {seq} does not follow seq {self.last_seq}"))
            return
        self.last_seq = seq
        if record.get("content_withheld") is True:
            self.left_out["withheld"] += 1
            return
        isolated = record.get("isolated", False)
        if isolated is True and not self.restore_isolation:
            self.left_out["isolated"] += 1
            return
        if self.existing is not None:
            self._check_known(record, line)
            return
        try:
            message, meta = self._parse(record, line, seq=seq, generation=generation, isolated=isolated)
        except DomainError as exc:
            self._problem(Problem(line.number, exc.message))
            return
        if message.source_id:
            if message.source_id in self.source_ids:
                self._problem(Problem(line.number, f"source_id {message.source_id!r} repeats an earlier message's"))
                return
            self.source_ids.add(message.source_id)
        if self.restored.problems:
            return  # the file is refused at its end: what is left is only read for its problems
        if self.pending:
            last = self.pending[-1][1]
            if len(self.pending) >= BATCH_SIZE or (seq, generation) != (last.seq + 1, last.generation):
                self._flush()
        self.pending.append((message, meta))

    def _parse(
        self, record: dict[str, Any], line: Line, *, seq: int, generation: int, isolated: Any
    ) -> tuple[services.MessageIn, Meta]:
        kind = record.get("kind", Message.Kind.MESSAGE)
        data = {name: record[name] for name in MESSAGE_FIELDS if name in record}
        if kind == Message.Kind.SUMMARY:
            refs = record.get("refs")
            if refs and isinstance(data.get("content"), str):
                self._flush()  # the messages it names are stored first
                data["content"] = self._point_refs(data["content"], refs)
        elif kind is not None:
            data["kind"] = kind
        message = services.message_parse(data, position=f"line {line.number}")
        if kind == Message.Kind.SUMMARY:
            message.kind = Message.Kind.SUMMARY
        if not isinstance(isolated, bool):
            raise InvalidInput(f"line {line.number}.isolated must be true or false")
        superseded_by = record.get("superseded_by_seq")
        if superseded_by is not None and not _positive(superseded_by, SEQ_MAX):
            raise InvalidInput(f"line {line.number}.superseded_by_seq must be a seq or null")
        origin = record.get("summary_origin") or ""
        if not isinstance(origin, str) or len(origin) > ORIGIN_MAX_CHARS:
            raise InvalidInput(f"line {line.number}.summary_origin must be a string of at most {ORIGIN_MAX_CHARS}")
        meta = Meta(
            line=line.number,
            seq=seq,
            generation=generation,
            created_at=_time(record.get("created_at"), line=line.number, name="created_at"),
            isolated=isolated,
            superseded_by_seq=superseded_by,
            summary_origin=origin,
        )
        return message, meta

    def _problem(self, problem: Problem) -> None:
        self.restored.problems.append(problem)

    def _note(self, line: int, text: str) -> None:
        self.restored.notes.append(Problem(line, text))

    # --- an existing channel: known by source id, or refused ------------------

    def _check_known(self, record: dict[str, Any], line: Line) -> None:
        if self.unmatched is not None:
            return
        source_id = record.get("source_id")
        if not isinstance(source_id, str) or not source_id:
            self.unmatched = (line.number, f"its message at seq {record['seq']} has no source id")
            return
        self.unverified.append((line.number, source_id))
        if len(self.unverified) >= BATCH_SIZE:
            self._verify_batch()

    def _verify_batch(self) -> None:
        batch, self.unverified = self.unverified, []
        held = set(
            Message.objects.filter(thread=self.existing, source_id__in=[s for _, s in batch]).values_list(
                "source_id", flat=True
            )
        )
        for number, source_id in batch:
            if source_id in held:
                self.restored.messages_known += 1
            elif self.unmatched is None:
                self.unmatched = (number, f"its message with source id {source_id!r} is not in it")

    def _verify(self) -> None:
        self._verify_batch()
        if self.unmatched is not None:
            number, why = self.unmatched
            raise Refused(
                number,
                f"channel {self.restored.channel!r} already exists and {why}: nothing restored (delete the thread "
                "first, or import the export under another channel)",
                Conflict,
            )

    # --- a new thread -----------------------------------------------------------

    def _start(self) -> None:
        """Create the thread and its generations, once, at the first message (or the end)."""
        if self.thread is not None or self.existing is not None:
            return
        header = self.header
        fork_from = self._fork_point()
        try:
            thread = services.thread_create(
                owner=self.owner,
                channel=self.restored.channel,
                title=str(header.get("title") or "")[: services.TITLE_MAX_CHARS],
                fork_from=fork_from,
            )
        except Conflict:
            raise Refused(1, f"channel {self.restored.channel!r} already exists: nothing restored", Conflict) from None
        except DomainError as exc:
            raise Refused(1, exc.message, type(exc)) from None
        self.thread = self.restored.thread = thread
        numbers = set(self.generations) or {thread.current_generation}
        Generation.objects.filter(thread=thread).exclude(number__in=numbers).delete()
        Generation.objects.bulk_create(
            Generation(thread=thread, number=n) for n in sorted(numbers) if n != thread.current_generation
        )
        self.known_generations = set(numbers)
        self.next_seq, self.current_generation = thread.next_seq, thread.current_generation

    def _fork_point(self) -> Message | None:
        parent = self.header.get("parent")
        if not isinstance(parent, dict):
            return None
        channel, seq = parent.get("channel"), parent.get("fork_message_seq")
        found = None
        if isinstance(channel, str) and _positive(seq):
            found = Message.objects.filter(thread__channel=channel, thread__owner=self.owner, seq=seq).first()
        if found is None:
            self._note(
                1,
                f"restored as a plain thread: its parent {channel!r} (fork at seq {seq}) is not among the importer's "
                "threads",
            )
        return found

    def _flush(self) -> None:
        if not self.pending or self.thread is None:
            return
        batch, self.pending = self.pending, []
        thread = self.thread
        first = batch[0][1]
        if (first.seq, first.generation) != (self.next_seq, self.current_generation):
            Thread.objects.filter(pk=thread.pk).update(next_seq=first.seq, current_generation=first.generation)
            self.current_generation = first.generation
            if first.generation not in self.known_generations:
                Generation.objects.create(thread=thread, number=first.generation)
                self.known_generations.add(first.generation)
        stored = services.messages_store(thread=thread, messages=[m for m, _ in batch], run_hooks=False)
        if [row.seq for row in stored] != [meta.seq for _, meta in batch]:
            raise Refused(first.line, "the thread's messages were not stored at their seqs: nothing restored")
        self.next_seq = stored[-1].seq + 1
        self.restored.messages_new += len(stored)
        timed, isolated = [], []
        for row, (_, meta) in zip(stored, batch, strict=True):
            if meta.created_at is not None:
                timed.append(Message(pk=row.id, created_at=meta.created_at))
            if meta.isolated:
                isolated.append(row.id)
            if meta.summary_origin:
                Message.objects.filter(pk=row.id).update(summary_origin=meta.summary_origin)
            if meta.superseded_by_seq is not None:
                self.supersessions.append((meta.seq, meta.superseded_by_seq))
        if timed:
            Message.objects.bulk_update(timed, ["created_at"])
        if isolated:
            Message.objects.filter(pk__in=isolated).update(isolated=True)

    def _finish(self) -> None:
        thread = self.thread
        assert thread is not None
        ids = self._ids_by_seq(
            {s for pair in self.supersessions for s in pair}
            | {g.summary_seq for g in self.generations.values() if g.summary_seq is not None}
        )
        lost = 0
        for seq, by_seq in self.supersessions:
            if by_seq in ids:
                Message.objects.filter(pk=ids[seq]).update(superseded_by=ids[by_seq])
            else:
                lost += 1
        if lost:
            self._note(1, f"{lost} message(s) restored without superseded_by: the replacing message is left out")
        for number, data in self.generations.items():
            Generation.objects.filter(thread=thread, number=number).update(
                state=data.state,
                closed_at=data.closed_at,
                summary_message_id=ids.get(data.summary_seq),
                **({"started_at": data.started_at} if data.started_at else {}),
            )
        header = self.header
        numbers = self.known_generations
        current = header.get("current_generation")
        fields: dict[str, Any] = {
            "current_generation": current if current in numbers else max(numbers),
            "next_seq": max(self.next_seq, self.last_seq + 1),
            "isolated": header.get("isolated") is True,
        }
        for name, limit in (
            ("source_format", 32),
            ("source_path", 1000),
            ("source_session_id", 255),
            ("source_cwd", 1000),
        ):
            fields[name] = str(header.get(name) or "")[:limit]
        # An export before projects has none: its working directory's, as an import resolves it.
        project = str(header.get("project") or "") or project_root(fields["source_cwd"])
        fields["project"] = project_normal(project)[:PROJECT_MAX_CHARS]
        fields.update({name: when for name, when in self.times.items() if when is not None})
        Thread.objects.filter(pk=thread.pk).update(**fields)
        thread.refresh_from_db()
        if self.left_out["withheld"]:
            self._note(
                1,
                f"{self.left_out['withheld']} isolated message(s) left out: the export holds them without their "
                "content (an export by a non-staff owner)",
            )
        if self.left_out["isolated"]:
            self._note(
                1, f"{self.left_out['isolated']} isolated message(s) left out: only an admin's import restores them"
            )

    def _ids_by_seq(self, seqs: set[int]) -> dict[int, int]:
        if not seqs:
            return {}
        return dict(Message.objects.filter(thread=self.thread, seq__in=seqs).values_list("seq", "pk"))

    def _point_refs(self, content: str, refs: Any) -> str:
        """The summary's messageIds, each pointed at the restored message of the same channel and seq."""
        if not isinstance(refs, list):
            return content
        mapping: dict[str, str] = {}
        for ref in refs:
            if not isinstance(ref, dict) or not _positive(ref.get("id")) or not _positive(ref.get("seq")):
                continue
            target = self._ref_thread(ref.get("channel"))
            found = Message.objects.filter(thread=target, seq=ref["seq"]).values_list("pk", flat=True).first()
            if target is not None and found is not None:
                mapping[str(ref["id"])] = str(found)
        return MESSAGE_REF.sub(lambda m: f"messageId={mapping.get(m.group(1), m.group(1))}", content)

    def _ref_thread(self, channel: Any) -> Thread | None:
        if channel == self.exported_channel:
            return self.thread
        if not isinstance(channel, str):
            return None
        if channel not in self.ref_threads:
            self.ref_threads[channel] = Thread.objects.filter(channel=channel, owner=self.owner).first()
        return self.ref_threads[channel]


def _positive(value: Any, most: int = services.MAX_ROW_ID) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= most


def _time(value: Any, *, line: int, name: str) -> datetime | None:
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
