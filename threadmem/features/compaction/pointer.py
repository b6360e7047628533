"""The pointer after an agent's own compaction: where the compacted part of its session went, never its content.

A ``SessionStart`` hook with source ``compact`` (Claude Code, Codex CLI) adds the text to the context the model
continues with. It names the session's channel and what the compacted part's tool calls touched (paths, commands,
hosts, URLs: ``catalogue.collect_resources`` finds them, as for a summary's section 10), grouped by kind, each
group with the ``search_memory`` call that brings one back; first those the agent's own summary does not mention,
then, within each, what the session worked on (``standing.py``): the project's files before others, written before
only read, the most used first; dependency sources and scratch files last. Names only, at most ``POINTER_MAX_CHARS``.

The compacted part, and the summary it is compared with:

- the last closed generation, when nothing searchable follows its summary yet: the transcript already held the
  agent's boundary and summary when it was captured (Codex writes its ``compacted`` record before the hook);
- else the open generation: Claude Code writes the boundary after its hooks ran. Its summary is then the answer
  of the compaction run's own transcript (``<session>/subagents/agent-acompact-*.jsonl``, a fork named
  ``COMPACTION_RUN_SUFFIX``) when one was captured since the generation opened, else unknown: the pointer then
  names what was touched without saying what the summary left out.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from threadmem.features.compaction.catalogue import Resource, collect_resources
from threadmem.features.compaction.patterns import COMMAND_KEYS, HOST_KEYS, PATH_KEYS
from threadmem.features.compaction.standing import (
    PATCH_KEYS,
    PATCH_TOOLS,
    WRITE_TOOLS,
    Place,
    file_place,
    patched_files,
)
from threadmem.models import Generation, Message, Thread

# The same cap as the SessionStart catalogue of earlier sessions (imports/catalogue.py): one hook's context.
POINTER_MAX_CHARS = 2_000
# A resource counts as touched when a call named it in one of these arguments (or in a command), not when it
# only appears in text a call carried (an edit's old_string, a prompt) or in a tool's output.
URL_KEYS = {"url", "urls", "uri", "endpoint", "link"}
TOUCH_KEYS = PATH_KEYS | COMMAND_KEYS | HOST_KEYS | URL_KEYS
KINDS = ("file", "host", "url", "command")
KIND_LABELS = {"file": "files", "host": "hosts", "url": "URLs", "command": "commands"}
# Device and process paths (``2>/dev/null``) are plumbing, not something the agent worked on.
NOT_RESOURCES = ("/dev/", "/proc/")
COMMAND_MAX_CHARS = 80
# Claude Code's compaction run, imported as a fork of the session: ``<channel>:agent-acompact-<id>``.
COMPACTION_RUN_SUFFIX = ":agent-acompact"
SUMMARY_TAG_RE = re.compile(r"<summary>(.*?)(?:</summary>|\Z)", re.DOTALL)


@dataclass
class Touched:
    """One resource the compacted part's tool calls touched, as the pointer names it."""

    kind: str
    name: str  # as the pointer writes it: the query that brings it back
    spellings: set[str] = field(default_factory=set)  # as the calls wrote it (a path absolute and relative)
    accesses: int = 0
    last: int = 0  # the position of its latest access: later is more recent
    written: bool = False  # a call wrote or edited it (files only)
    place: Place = Place.PROJECT  # where a file stands; other kinds rank by use alone
    message_ids: set[int] = field(default_factory=set)  # the calls and results that touched it
    mentioned: bool | None = None  # in the agent's summary; None when the summary is unknown

    @property
    def low(self) -> bool:
        """A dependency's source or a scratch file: named only when the rest left room."""
        return self.place >= Place.DEPENDENCY

    def rank(self) -> tuple[int, bool, int, int]:
        """What the session worked on first: the project's own files, written, most used, latest."""
        return (self.place, not self.written, -self.accesses, -self.last)


@dataclass
class Pointer:
    text: str
    channel: str
    generation: int
    messages: int
    summary_known: bool
    touched: list[Touched]
    named: list[Touched]  # those the text names, in its order

    @property
    def dropped(self) -> list[Touched]:
        return [t for t in self.touched if t.mentioned is False]


@dataclass(frozen=True)
class _Row:
    """What ``collect_resources`` reads of a message, without its content: the pointer names what the calls
    named, not what their results mention or whether they failed (a result's text is never read)."""

    id: int
    role: str
    kind: str
    content: str
    tool_calls: list[dict[str, Any]]
    tool_call_id: str
    searchable: bool = True


def compaction_pointer(*, thread: Thread) -> Pointer:
    """The pointer for ``thread``'s latest compaction by its agent ("" text when it touched nothing and holds no
    message, or the thread is isolated)."""
    generation, summary = _compacted_part(thread)
    touched = generation_touched(thread=thread, generation=generation, summary=summary)
    count = Message.objects.searchable().filter(thread=thread, generation=generation).count()
    pointer = Pointer(
        text="",
        channel=thread.channel,
        generation=generation,
        messages=count,
        summary_known=summary is not None,
        touched=touched,
        named=[],
    )
    if thread.isolated or not count:
        return pointer
    pointer.text, pointer.named = _render(pointer)
    return pointer


def generation_touched(*, thread: Thread, generation: int, summary: str | None) -> list[Touched]:
    """What the tool calls of one generation of ``thread`` touched, judged against ``summary`` (None: unknown)."""
    rows = [
        _Row(
            id=r["id"],
            role=r["role"],
            kind=r["kind"],
            content="",
            tool_calls=r["tool_calls"] or [],
            tool_call_id=r["tool_call_id"],
        )
        for r in Message.objects.searchable()
        .filter(thread=thread, generation=generation, role__in=[Message.Role.ASSISTANT, Message.Role.TOOL])
        .order_by("seq")
        .values("id", "role", "kind", "tool_calls", "tool_call_id")
    ]
    patched = {
        row.id: files
        for row in rows
        for call in row.tool_calls
        if call.get("name") in PATCH_TOOLS and (files := patched_files(call.get("arguments")))
    }
    return touched_resources(collect_resources(rows), cwd=thread.source_cwd, summary=summary, patched=patched)


def touched_resources(
    resources: Iterable[Resource], *, cwd: str, summary: str | None, patched: dict[int, set[str]] | None = None
) -> list[Touched]:
    """The resources a call touched, one per thing (a path written absolute and relative is one file), ranked:
    those the summary leaves out first (when it is known), then by ``Touched.rank``. ``patched``: the files each
    message's patch tool calls name in their headers (by message id), the only paths a patch's text touches."""
    patched = patched or {}
    found: dict[tuple[str, str], Touched] = {}
    for resource in resources:
        accesses = [
            a
            for a in resource.accesses
            if a.key in TOUCH_KEYS or (a.key in PATCH_KEYS and resource.name in patched.get(a.message_id, ()))
        ]
        if resource.kind not in KINDS or not accesses:
            continue
        name = _pointer_name(resource.kind, resource.name, cwd=cwd)
        if not name:
            continue
        touched = found.setdefault((resource.kind, name), Touched(kind=resource.kind, name=name))
        if resource.kind == "file":
            place = file_place(resource.name, cwd=cwd)
            # One file spelled two ways stands where its better spelling puts it.
            touched.place = place if not touched.spellings else min(touched.place, place)
            touched.written |= any(_tool(a.way) in WRITE_TOOLS for a in accesses)
        touched.spellings.add(resource.name)
        touched.accesses += len(accesses)
        touched.last = max(touched.last, accesses[-1].position)
        touched.message_ids |= {i for a in accesses for i in (a.message_id, a.result_id) if i is not None}
    if summary is not None:
        for touched in found.values():
            touched.mentioned = any(spelling in summary for spelling in touched.spellings | {touched.name})
    return sorted(found.values(), key=lambda t: (bool(t.mentioned), *t.rank()))


def summary_text(answer: str) -> str:
    """What the model reads of a compaction run's answer: its ``<summary>``, without the analysis before it."""
    match = SUMMARY_TAG_RE.search(answer)
    return match.group(1).strip() if match else answer


def _compacted_part(thread: Thread) -> tuple[int, str | None]:
    """The generation the agent's latest compaction summarized, and the summary (None: not known yet)."""
    current = thread.current_generation
    closed = (
        Generation.objects.filter(thread=thread, number=current - 1, state=Generation.State.CLOSED)
        .select_related("summary_message")
        .first()
    )
    nothing_since = not Message.objects.searchable().filter(thread=thread, generation=current).exists()
    if closed is not None and closed.summary_message is not None and nothing_since:
        return closed.number, closed.summary_message.content
    opened = Generation.objects.filter(thread=thread, number=current).values_list("started_at", flat=True).first()
    run = (
        Thread.objects.filter(
            owner_id=thread.owner_id,
            channel__startswith=f"{thread.channel}{COMPACTION_RUN_SUFFIX}",
            isolated=False,
            created_at__gte=opened,
        )
        .order_by("-created_at", "-id")
        .first()
        if opened is not None
        else None
    )
    answer = (
        Message.objects.searchable()
        .filter(thread=run, role=Message.Role.ASSISTANT)
        .order_by("-seq")
        .values_list("content", flat=True)
        .first()
        if run is not None
        else None
    )
    return current, summary_text(answer) if answer else None


def _tool(way: str) -> str:
    """The tool's name in an access's way (``Edit (tool_args.file_path)``)."""
    return way.split(" (", 1)[0]


def _pointer_name(kind: str, name: str, *, cwd: str) -> str:
    if kind == "command":
        # A prefix of the command is still a literal of it: the query that finds the call.
        return name.rstrip("…")[:COMMAND_MAX_CHARS].rstrip()
    if kind != "file":
        return name
    if name.startswith(NOT_RESOURCES):
        return ""
    root = cwd.rstrip("/")
    if root and (name == root or name.rstrip("/") == root):
        return ""  # the project itself: every call is in it
    if root and name.startswith(root + "/"):
        name = name[len(root) + 1 :]  # the shorter spelling is a substring of the longer: one search finds both
    return name.removeprefix("./")


def _render(pointer: Pointer) -> tuple[str, list[Touched]]:
    """The text: a head, then groups of names by kind (the summary's omissions first), within the cap.

    Each group's first name goes in before any group gets a second one, so no kind is crowded out; dependency
    sources and scratch files go in only after every other name, so they never take the room of one.
    """
    channel = pointer.channel
    head = (
        f"[threadmem] This session's part before the compaction is kept whole in threadmem: channel "
        f"{json.dumps(channel, ensure_ascii=False)} ({pointer.messages} messages). Below are names its tool calls "
        "touched, never their content. To recall what a file held, what a command printed or how something "
        "failed, call search_memory with that channel and the name as the query; message_context_read(messageId) "
        "expands a hit."
    )
    if pointer.summary_known:
        sections = [("Not in your compaction summary:", False), ("Also touched (your summary names them):", True)]
    else:
        sections = [("Touched by tool calls before the compaction:", None)]
    groups = {(mentioned, kind): [] for _, mentioned in sections for kind in KINDS}
    order = [(mentioned, kind) for _, mentioned in sections for kind in KINDS]
    candidates = {key: [t for t in pointer.touched if (t.mentioned, t.kind) == key] for key in order}

    def text(extra: tuple[tuple[bool | None, str], Touched] | None = None) -> str:
        lines = [head]
        for title, mentioned in sections:
            body = []
            for kind in KINDS:
                names = groups[(mentioned, kind)] + ([extra[1]] if extra and extra[0] == (mentioned, kind) else [])
                if names:
                    listed = ", ".join(f"`{t.name.replace('`', chr(39))}`" for t in names)
                    call = f"search_memory(channel={json.dumps(channel, ensure_ascii=False)}, "
                    call += f"query={json.dumps(names[0].name, ensure_ascii=False)})"
                    body.append(f"- {KIND_LABELS[kind]}: {listed} → {call}")
            if body:
                lines += [title, *body]
        left = len(pointer.touched) - sum(map(len, groups.values())) - (1 if extra else 0)
        if left:
            lines.append(f"{left} more touched; search_memory finds each by its name.")
        return "\n".join(lines)

    def add(key: tuple[bool | None, str], touched: Touched) -> bool:
        if len(text((key, touched))) > POINTER_MAX_CHARS:
            return False
        groups[key].append(touched)
        candidates[key].remove(touched)
        return True

    for key in order:  # one name of each group first
        first = next((t for t in candidates[key] if not t.low), None)
        if first is not None:
            add(key, first)
    for low in (False, True):  # then the rest, the summary's omissions first, dependencies and scratch last
        for key in order:
            for touched in [t for t in candidates[key] if t.low == low]:
                add(key, touched)
    named = [t for key in order for t in groups[key]]
    return text(), named
