"""Writing a new thread from an export's checked lines: the thread and its generations, messages in seq order
through ``services.messages_store``, then what the append path does not take (times, ``isolated``,
``superseded_by``, ``summary_origin``, a generation's summary and state) and a summary's ``refs``."""

from __future__ import annotations

from datetime import datetime
from typing import Any, NamedTuple

from django.contrib.auth.models import AbstractBaseUser

from threadmem.domain import services
from threadmem.errors import Conflict, DomainError
from threadmem.features.imports.export import MESSAGE_REF
from threadmem.features.imports.restore.outcome import Refused, Restored
from threadmem.lib.projects import PROJECT_MAX_CHARS, project_normal, project_root
from threadmem.models import Generation, Message, Thread

BATCH_SIZE = 500
# The header's source fields and the most characters each column holds.
SOURCE_FIELDS = (("source_format", 32), ("source_path", 1000), ("source_session_id", 255), ("source_cwd", 1000))


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


class NewThread:
    """The thread an export creates: ``start`` once, ``add`` each message, ``flush`` and ``finish`` at the end."""

    def __init__(self, *, owner: AbstractBaseUser, header: dict[str, Any], restored: Restored) -> None:
        self.owner, self.header, self.restored = owner, header, restored
        self.exported_channel: str = header["channel"]
        self.thread: Thread | None = None
        self.pending: list[tuple[services.MessageIn, Meta]] = []
        self.supersessions: list[tuple[int, int]] = []  # (seq, superseded_by seq)
        self.known_generations: set[int] = set()
        self.next_seq = 0
        self.current_generation = 0
        self.ref_threads: dict[str, Thread | None] = {}

    def start(self, generations: dict[int, GenerationLine]) -> None:
        """Create the thread and its generations, once."""
        if self.thread is not None:
            return
        fork_from = self._fork_point()
        try:
            thread = services.thread_create(
                owner=self.owner,
                channel=self.restored.channel,
                title=str(self.header.get("title") or "")[: services.TITLE_MAX_CHARS],
                fork_from=fork_from,
            )
        except Conflict:
            raise Refused(1, f"channel {self.restored.channel!r} already exists: nothing restored", Conflict) from None
        except DomainError as exc:
            raise Refused(1, exc.message, type(exc)) from None
        self.thread = self.restored.thread = thread
        numbers = set(generations) or {thread.current_generation}
        Generation.objects.filter(thread=thread).exclude(number__in=numbers).delete()
        Generation.objects.bulk_create(
            Generation(thread=thread, number=n) for n in sorted(numbers) if n != thread.current_generation
        )
        self.known_generations = set(numbers)
        self.next_seq, self.current_generation = thread.next_seq, thread.current_generation

    def add(self, message: services.MessageIn, meta: Meta) -> None:
        """Queue a message; a batch is stored when full or when the next message does not follow it."""
        if self.pending:
            last = self.pending[-1][1]
            if len(self.pending) >= BATCH_SIZE or (meta.seq, meta.generation) != (last.seq + 1, last.generation):
                self.flush()
        self.pending.append((message, meta))

    def flush(self) -> None:
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

    def finish(
        self, *, generations: dict[int, GenerationLine], last_seq: int, times: dict[str, datetime | None]
    ) -> None:
        """Supersessions, the generations' states and summaries, the thread's own fields."""
        thread = self.thread
        assert thread is not None
        ids = self._ids_by_seq(
            {s for pair in self.supersessions for s in pair}
            | {g.summary_seq for g in generations.values() if g.summary_seq is not None}
        )
        lost = 0
        for seq, by_seq in self.supersessions:
            if by_seq in ids:
                Message.objects.filter(pk=ids[seq]).update(superseded_by=ids[by_seq])
            else:
                lost += 1
        if lost:
            self.restored.note(
                1, f"{lost} message(s) restored without superseded_by: the replacing message is left out"
            )
        for number, data in generations.items():
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
            "next_seq": max(self.next_seq, last_seq + 1),
            "isolated": header.get("isolated") is True,
        }
        for name, limit in SOURCE_FIELDS:
            fields[name] = str(header.get(name) or "")[:limit]
        # An export before projects has none: its working directory's, as an import resolves it.
        project = str(header.get("project") or "") or project_root(fields["source_cwd"])
        fields["project"] = project_normal(project)[:PROJECT_MAX_CHARS]
        fields.update({name: when for name, when in times.items() if when is not None})
        Thread.objects.filter(pk=thread.pk).update(**fields)
        thread.refresh_from_db()

    def point_refs(self, content: str, refs: Any) -> str:
        """The summary's messageIds, each pointed at the restored message of the same channel and seq."""
        if not isinstance(refs, list):
            return content
        mapping: dict[str, str] = {}
        for ref in refs:
            if not isinstance(ref, dict) or not positive(ref.get("id")) or not positive(ref.get("seq")):
                continue
            target = self._ref_thread(ref.get("channel"))
            found = Message.objects.filter(thread=target, seq=ref["seq"]).values_list("pk", flat=True).first()
            if target is not None and found is not None:
                mapping[str(ref["id"])] = str(found)
        return MESSAGE_REF.sub(lambda m: f"messageId={mapping.get(m.group(1), m.group(1))}", content)

    def _fork_point(self) -> Message | None:
        parent = self.header.get("parent")
        if not isinstance(parent, dict):
            return None
        channel, seq = parent.get("channel"), parent.get("fork_message_seq")
        found = None
        if isinstance(channel, str) and positive(seq):
            found = Message.objects.filter(thread__channel=channel, thread__owner=self.owner, seq=seq).first()
        if found is None:
            self.restored.note(
                1,
                f"restored as a plain thread: its parent {channel!r} (fork at seq {seq}) is not among the importer's "
                "threads",
            )
        return found

    def _ids_by_seq(self, seqs: set[int]) -> dict[int, int]:
        if not seqs:
            return {}
        return dict(Message.objects.filter(thread=self.thread, seq__in=seqs).values_list("seq", "pk"))

    def _ref_thread(self, channel: Any) -> Thread | None:
        if channel == self.exported_channel:
            return self.thread
        if not isinstance(channel, str):
            return None
        if channel not in self.ref_threads:
            self.ref_threads[channel] = Thread.objects.filter(channel=channel, owner=self.owner).first()
        return self.ref_threads[channel]


def positive(value: Any, most: int = services.MAX_ROW_ID) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= most
