"""The threads imports write into: the owner's own, found or created; a subagent's fork point."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser

from threadmem.domain import services
from threadmem.errors import Conflict
from threadmem.lib.projects import PROJECT_MAX_CHARS, project_normal, project_root
from threadmem.models import Generation, Message, Thread, ToolArgument

TASK_TOOL_NAMES = ("Task", "Agent")


def thread_for_import(
    *,
    owner: AbstractBaseUser,
    channel: str,
    source_format: str,
    source_path: str,
    session_id: str = "",
    title: str = "",
    fork_from: Message | None = None,
    cwd: str = "",
    project: str = "",
) -> Thread:
    """The owner's thread on ``channel``, created if new (channels are per owner: another owner's is not this one).

    ``project``: the git root the client resolved; without it, ``cwd``'s own where it exists here, else ``cwd``."""
    thread = Thread.objects.filter(owner=owner, channel=channel).first()
    if thread is not None:
        return thread
    try:
        # Inside the import's transaction (FileImport.step): the source fields commit with the thread.
        thread = services.thread_create(owner=owner, channel=channel, title=title[:500], fork_from=fork_from)
    except Conflict:  # created meanwhile by another import of the same owner
        return Thread.objects.get(owner=owner, channel=channel)
    thread.source_format, thread.source_path, thread.source_session_id, thread.source_cwd = (
        source_format,
        source_path[:1000],
        session_id[:255],
        cwd[:1000],
    )
    thread.project = (project_normal(project) if project else project_root(cwd))[:PROJECT_MAX_CHARS]
    thread.save(update_fields=["source_format", "source_path", "source_session_id", "source_cwd", "project"])
    return thread


def subagent_fork_point(*, parent: Thread, prompt: str | None, agent: str) -> Message | None:
    """The parent's assistant message whose Task call started the subagent (its prompt is the subagent's first).

    Claude Code's own compaction agent (``agent-acompact-*``) has no Task
    call: it forks at the last message of the generation it summarized.
    """
    if prompt:
        message_id = (
            ToolArgument.objects.filter(thread=parent, tool_name__in=TASK_TOOL_NAMES, path="prompt", value=prompt)
            .order_by("message_id")
            .values_list("message_id", flat=True)
            .first()
        )
        if message_id is not None:
            return Message.objects.get(pk=message_id)
    if agent.startswith("agent-acompact"):
        closed = Generation.objects.filter(thread=parent, state=Generation.State.CLOSED).order_by("-number").first()
        if closed is not None:
            last = Message.objects.filter(thread=parent, generation=closed.number).exclude(
                kind=Message.Kind.MACHINE_EVENT
            )
            return last.order_by("-seq").first()
    return None
