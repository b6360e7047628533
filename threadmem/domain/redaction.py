"""Secrets never stored (issue #42): the switch, what an ingest path redacts, and the cleaning of an existing store.

Every write of new text redacts it here first when ``THREADMEM_REDACT_SECRETS`` is on (the default):
``services.messages_store`` (appends, imports, uploads, capture, restores, agent turns: content, tool-call
arguments and tool names) and the writes beside it (an import's boundaries, summaries and grown messages,
compaction's summaries, every thread title through ``services.thread_create`` and ``thread_update``, an import's
problems and error, the tool-call log). The rules are ``threadmem.lib.redact``'s.

``store_redact`` (``manage.py redact_secrets``) applies the same rules to what was stored before: message content
and tool calls (arguments and names), their tool-argument leaves (values and tool names), thread titles, import
problems, the tool-call log, and every index derived from them (pieces and their vectors are dropped for the
embedding pipeline to cut and embed again; the literal indexes follow the rows' UPDATEs by themselves).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import Count, F, Min
from django.db.models.functions import Greatest

from threadmem.domain.store import MessageIn
from threadmem.lib.jsonleaves import string_leaves
from threadmem.lib.redact import redact, redact_arguments, redact_tool_calls, redactions
from threadmem.models import Chunk, EmbeddingProgress, Import, Message, Thread, ToolArgument, ToolCall

# Messages read, and changed ones written, per transaction of ``store_redact``.
BATCH_MESSAGES = 500
# A placeholder may be longer than the secret it replaces: a title or a tool name is cut to its column after.
TITLE_MAX_CHARS = Thread._meta.get_field("title").max_length
TOOL_NAME_MAX_CHARS = ToolArgument._meta.get_field("tool_name").max_length

# The fields ``store_redact`` counts its redactions by (``StoreRedaction.by_field``).
CONTENT, ARGUMENTS, TOOL_NAMES, TITLES, IMPORTS, LOG = (
    "message content",
    "tool-call arguments",
    "tool names",
    "thread titles",
    "import problems",
    "tool-call log",
)


def redaction_on() -> bool:
    return bool(settings.THREADMEM_REDACT_SECRETS)


def text_redacted(text: str) -> str:
    """``text`` as it may be stored: its secrets replaced, unless redaction is off."""
    return redact(text) if redaction_on() else text


def title_redacted(title: str) -> str:
    """A thread title as it may be stored: redacted, then cut to its column (a placeholder may be the longer)."""
    return text_redacted(title)[:TITLE_MAX_CHARS]


def _names(tool_calls: list[dict[str, Any]]) -> Iterable[str]:
    return (call["name"] for call in tool_calls if isinstance(call.get("name"), str))


def tool_calls_redacted(tool_calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Tool calls with their arguments' string leaves and their names redacted (ids stay); the same list when none
    changed.

    A name is a caller's text like any other: a model or a client may name a call with what it read.
    """
    calls = redact_tool_calls(tool_calls)
    named = [_named(call) for call in calls]
    return named if any(new is not old for new, old in zip(named, calls, strict=True)) else calls


def _named(call: dict[str, Any]) -> dict[str, Any]:
    name = call.get("name")
    if not isinstance(name, str):
        return call
    redacted = redact(name)
    return call if redacted is name else {**call, "name": redacted[:TOOL_NAME_MAX_CHARS]}


def messages_redact(messages: Iterable[MessageIn]) -> None:
    """Replace the secrets in each parsed message's content, tool-call arguments and tool names, in place.

    In place, so that a caller comparing what it parsed with what was stored (an import growing a streamed
    message) compares like with like. ``size`` stays the parsed size: the limit was checked on it.
    """
    if not redaction_on():
        return
    for message in messages:
        message.content = redact(message.content)
        if message.tool_calls:
            message.tool_calls = tool_calls_redacted(message.tool_calls)


# --- cleaning a store written before -----------------------------------------------------------------------------


@dataclass
class StoreRedaction:
    """What ``store_redact`` changed (or would change, in a dry run): counts only, never a stored text (neither a
    secret nor the title, channel or name around it)."""

    messages_read: int = 0
    messages_changed: int = 0
    tool_arguments_changed: int = 0
    chunks_dropped: int = 0
    titles_changed: int = 0
    imports_changed: int = 0
    logged_calls_changed: int = 0
    by_rule: Counter[str] = field(default_factory=Counter)
    # Redactions per field (CONTENT, ARGUMENTS, TOOL_NAMES, TITLES, IMPORTS, LOG).
    by_field: Counter[str] = field(default_factory=Counter)
    # The threads whose pieces were dropped: the embedding pipeline embeds them again.
    to_embed: set[int] = field(default_factory=set)
    # The last message id done: ``from_id=last_id + 1`` resumes after it.
    last_id: int = 0


@dataclass
class _Changed:
    id: int
    thread_id: int
    # Its content or arguments change, which its pieces are cut from (a tool name is in none of them).
    pieces: bool


def _count(report: StoreRedaction, field_name: str, texts: Iterable[str]) -> bool:
    labels = [r.label for text in texts for r in redactions(text)]
    report.by_rule.update(labels)
    if labels:
        report.by_field[field_name] += len(labels)
    return bool(labels)


def _argument_texts(tool_calls: list[dict[str, Any]]) -> Iterable[str]:
    return (value for call in tool_calls for _, value in string_leaves(call.get("arguments")))


def store_redact(
    *,
    owner: AbstractBaseUser | None = None,
    from_id: int = 1,
    dry_run: bool = False,
    batch: int = BATCH_MESSAGES,
    progress: Callable[[StoreRedaction], None] | None = None,
) -> StoreRedaction:
    """Redact every stored message from id ``from_id`` on (of ``owner``'s threads, or all): content, tool-call
    arguments and tool names; then titles, imports and the tool-call log.

    Messages go in ascending id, ``batch`` at a time, each batch committed on its own (``progress`` is called
    after each): a run stopped midway resumes with ``from_id=last_id + 1``, and a run over a clean store changes
    nothing, so running again from the start is safe too. ``dry_run`` counts what would change and writes nothing.
    """
    report = StoreRedaction(last_id=from_id - 1)
    messages = Message.objects.order_by("id")
    if owner is not None:
        messages = messages.filter(thread__owner=owner)
    while True:
        rows = list(
            messages.filter(id__gt=report.last_id).values_list("id", "thread_id", "content", "tool_calls")[:batch]
        )
        if not rows:
            break
        changed = []
        for message_id, thread_id, content, tool_calls in rows:
            calls = tool_calls or []
            # Each counted on its own (no short cut): the report has every field's redactions.
            found = [
                _count(report, CONTENT, [content]),
                _count(report, ARGUMENTS, _argument_texts(calls)),
                _count(report, TOOL_NAMES, _names(calls)),
            ]
            if any(found):
                changed.append(_Changed(message_id, thread_id, pieces=found[0] or found[1]))
        report.messages_read += len(rows)
        report.messages_changed += len(changed)
        if changed and dry_run:
            _messages_count(changed, report)
        elif changed:
            _messages_commit(changed, report)
        report.last_id = rows[-1][0]
        if progress is not None:
            progress(report)
    _titles(report, owner=owner, dry_run=dry_run)
    _imports(report, owner=owner, dry_run=dry_run)
    _logged_calls(report, owner=owner, dry_run=dry_run)
    return report


def _messages_count(changed: list[_Changed], report: StoreRedaction) -> None:
    """A dry run's count of the leaves and pieces ``_messages_commit`` would change."""
    ids = [c.id for c in changed]
    leaves = ToolArgument.objects.filter(message_id__in=ids).values_list("value", "tool_name")
    report.tool_arguments_changed += sum(1 for value, name in leaves if redactions(value) or redactions(name))
    report.chunks_dropped += Chunk.objects.filter(message_id__in=[c.id for c in changed if c.pieces]).count()


def _messages_commit(changed: list[_Changed], report: StoreRedaction) -> None:
    """Write the batch's redacted messages and leaves, and drop their pieces, in one transaction."""
    ids = [c.id for c in changed]
    with transaction.atomic():
        # Locked and read again: an import may have grown one since the batch was read.
        rows = Message.objects.select_for_update().filter(id__in=ids).values_list("id", "content", "tool_calls")
        updates = [
            Message(id=message_id, content=redact(content), tool_calls=tool_calls_redacted(tool_calls or []))
            for message_id, content, tool_calls in rows
        ]
        Message.objects.bulk_update(updates, ["content", "tool_calls"])
        leaves = []
        # A leaf repeats its call's tool name (search's ``tool=`` and its tool filter read it there).
        for leaf in ToolArgument.objects.filter(message_id__in=ids).only("id", "value", "tool_name"):
            value, name = redact(leaf.value), redact(leaf.tool_name)
            if value is not leaf.value or name is not leaf.tool_name:
                leaf.value, leaf.tool_name = value, name[:TOOL_NAME_MAX_CHARS]
                leaves.append(leaf)
        ToolArgument.objects.bulk_update(leaves, ["value", "tool_name"])
        report.tool_arguments_changed += len(leaves)
        report.chunks_dropped += _drop_pieces([c.id for c in changed if c.pieces], report)
        # Every process's ranked-lane caches of these threads (lexicon, spread, vectors) read them again.
        EmbeddingProgress.objects.filter(thread_id__in={c.thread_id for c in changed}).update(changes=F("changes") + 1)


def _drop_pieces(message_ids: list[int], report: StoreRedaction) -> int:
    """Delete the messages' pieces; each model's progress goes back before the first of them (re-embedded next run)."""
    pieces = Chunk.objects.filter(message_id__in=message_ids)
    dropped = list(
        pieces.values("message__thread_id", "model").annotate(n=Count("id"), first_seq=Min("message__seq")).order_by()
    )
    if not dropped:
        return 0
    pieces.delete()
    for row in dropped:
        thread_id, first_seq = row["message__thread_id"], row["first_seq"]
        EmbeddingProgress.objects.filter(thread_id=thread_id, model=row["model"]).update(
            chunks=Greatest(F("chunks") - row["n"], 0)
        )
        # The pipeline embeds the messages after embedded_seq that have no pieces, and passes over the others.
        EmbeddingProgress.objects.filter(thread_id=thread_id, model=row["model"], embedded_seq__gte=first_seq).update(
            embedded_seq=first_seq - 1
        )
        report.to_embed.add(thread_id)
    return sum(row["n"] for row in dropped)


def _titles(report: StoreRedaction, *, owner: AbstractBaseUser | None, dry_run: bool) -> None:
    threads = Thread.objects.exclude(title="")
    if owner is not None:
        threads = threads.filter(owner=owner)
    for thread_id, title in threads.values_list("id", "title").iterator():
        if _count(report, TITLES, [title]):
            report.titles_changed += 1
            if not dry_run:
                Thread.objects.filter(pk=thread_id).update(title=redact(title)[:TITLE_MAX_CHARS])


def _imports(report: StoreRedaction, *, owner: AbstractBaseUser | None, dry_run: bool) -> None:
    """An import's problems may quote what a bad line held."""
    imports = Import.objects.all()
    if owner is not None:
        imports = imports.filter(owner=owner)
    for record in imports.only("id", "errors", "error").iterator():
        texts = [record.error, *(text for text in record.errors or [] if isinstance(text, str))]
        if not _count(report, IMPORTS, texts):
            continue
        report.imports_changed += 1
        if not dry_run:
            errors = [redact(text) if isinstance(text, str) else text for text in record.errors or []]
            Import.objects.filter(pk=record.pk).update(errors=errors, error=redact(record.error))


def _logged_calls(report: StoreRedaction, *, owner: AbstractBaseUser | None, dry_run: bool) -> None:
    """The tool-call log keeps each call's arguments: a query may have held a secret."""
    calls = ToolCall.objects.order_by("id")
    if owner is not None:
        calls = calls.filter(caller=owner)
    for call_id, arguments in calls.values_list("id", "arguments").iterator():
        if not _count(report, LOG, (text for _, text in string_leaves(arguments))):
            continue
        report.logged_calls_changed += 1
        if not dry_run:
            ToolCall.objects.filter(pk=call_id).update(arguments=redact_arguments(arguments))
