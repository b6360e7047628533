"""The pointer at session start: where this project's earlier sessions are in threadmem, never their content.

Claude Code's and Codex's ``SessionStart`` hook adds the text to the new session's
context (``hookSpecificOutput.additionalContext``). It lists the owner's
earlier sessions of the same project (same working directory, or transcripts
in the same Claude Code project folder): channel, first prompt (or title),
dates, message count, newest first, and one line saying how to read them
with ``search_memory``. It is bounded to ``SESSION_CATALOGUE_MAX_CHARS``.
"""

from __future__ import annotations

from pathlib import PurePosixPath

from django.contrib.auth.models import AbstractBaseUser
from django.db.models import Count, OuterRef, Q, Subquery

from threadmem.errors import InvalidInput
from threadmem.features.imports.codex import CHANNEL_PREFIX as CODEX_CHANNEL_PREFIX
from threadmem.lib.storable import text_problem
from threadmem.models import Message, Thread

SESSION_CATALOGUE_MAX_CHARS = 2_000
SESSION_CATALOGUE_MAX_SESSIONS = 12
PROMPT_MAX_CHARS = 90
HOOK_FIELD_MAX_CHARS = 4_096
# The session starting is named by Claude Code's session id; its thread's channel is the importer's.
SESSION_CHANNEL_PREFIX = "claude-code:"
# A Codex session's thread (imports/codex.py): the hooks of both agents name their session by its id.
SESSION_CHANNEL_PREFIXES = (SESSION_CHANNEL_PREFIX, f"{CODEX_CHANNEL_PREFIX}:")
# A Codex rollout (``sessions/YYYY/MM/DD/rollout-*.jsonl``) lies in a day's folder, not a project's.
CODEX_ROLLOUT_PREFIX = "rollout-"
# SessionStart's source after the agent's own compaction: the hook points at the compacted part instead
# (compaction/pointer.py).
COMPACT_SOURCE = "compact"
HINT = (
    "To recall what was decided or done in one of them, call search_memory with its channel "
    '(or channel "*" for all your threads); message_context_read expands a hit.'
)


def session_catalogue(
    *, owner: AbstractBaseUser, cwd: str, project_dir: str = "", exclude_channels: tuple[str, ...] = ()
) -> str:
    """The catalogue text, or "" when the project has no earlier session in threadmem."""
    where = Q(source_cwd=cwd) if cwd else Q(pk__in=[])
    if project_dir.rstrip("/"):  # never "/": that would be every session of the owner
        where |= Q(source_path__startswith=project_dir.rstrip("/") + "/")
    # The text lands in the model's context: an isolated thread or message is never named in it.
    first_prompt = (
        Message.objects.searchable()
        .filter(thread=OuterRef("pk"), role=Message.Role.USER)
        .order_by("seq")
        .values("content")[:1]
    )
    threads = list(
        Thread.objects.filter(where, owner=owner, parent__isnull=True, isolated=False)
        .exclude(channel__in=exclude_channels)
        .order_by("-last_activity_at", "-id")
        .annotate(prompt=Subquery(first_prompt))
        .values("pk", "channel", "title", "prompt", "created_at", "last_activity_at")[:SESSION_CATALOGUE_MAX_SESSIONS]
    )
    if not threads:
        return ""
    counts = dict(
        Message.objects.filter(thread_id__in=[t["pk"] for t in threads])
        .values_list("thread_id")
        .annotate(n=Count("id"))
        .order_by()
    )
    head = "Earlier sessions of this project are kept in threadmem (newest first):"
    lines = [head]
    budget = SESSION_CATALOGUE_MAX_CHARS - len(head) - len(HINT) - 2
    for t in threads:
        line = _session_line(t, counts.get(t["pk"], 0))
        if len(line) + 1 > budget:
            break
        lines.append(line)
        budget -= len(line) + 1
    lines.append(HINT)
    return "\n".join(lines)


def session_start_catalogue(
    *, owner: AbstractBaseUser, cwd: str = "", transcript_path: str = "", session_id: str = ""
) -> str:
    """The catalogue for a SessionStart hook's fields (``cwd``, ``transcript_path``, ``session_id``).

    The project folder is the transcript's folder as the client names it:
    a remote capture keeps the client's path as the thread's ``source_path``.
    A Codex rollout's folder is a day (``sessions/YYYY/MM/DD``), not a project: its sessions are found by ``cwd``.
    """
    check_hook_fields(cwd=cwd, transcript_path=transcript_path, session_id=session_id)
    transcript = PurePosixPath(transcript_path.replace("\\", "/"))
    by_folder = transcript_path and not transcript.name.startswith(CODEX_ROLLOUT_PREFIX)
    return session_catalogue(
        owner=owner,
        cwd=cwd,
        project_dir=str(transcript.parent) if by_folder else "",
        exclude_channels=tuple(f"{prefix}{session_id}" for prefix in SESSION_CHANNEL_PREFIXES) if session_id else (),
    )


def check_hook_fields(**fields: str) -> None:
    """InvalidInput naming the first hook field that is too long or holds what no text field may (a NUL)."""
    for name, value in fields.items():
        too_long = f"is over {HOOK_FIELD_MAX_CHARS} characters" if len(value) > HOOK_FIELD_MAX_CHARS else None
        problem = text_problem(value) or too_long
        if problem:
            raise InvalidInput(f"{name} {problem}", field=name)


def session_thread(*, owner: AbstractBaseUser, session_id: str) -> Thread | None:
    """The owner's thread of the agent session ``session_id`` (Claude Code's or Codex's), None before its first
    capture."""
    check_hook_fields(session_id=session_id)
    if not session_id:
        return None
    channels = [f"{prefix}{session_id}" for prefix in SESSION_CHANNEL_PREFIXES]
    return Thread.objects.filter(owner=owner, channel__in=channels, parent__isnull=True).order_by("id").first()


def _session_line(thread: dict, messages: int) -> str:
    about = " ".join(str(thread["prompt"] or thread["title"] or "").split())
    if len(about) > PROMPT_MAX_CHARS:
        about = about[: PROMPT_MAX_CHARS - 1] + "…"
    started, last = thread["created_at"].date().isoformat(), thread["last_activity_at"].date().isoformat()
    dates = started if started == last else f"{started} to {last}"
    return f'- {thread["channel"]} · "{about}" · {dates} · {messages} messages'
