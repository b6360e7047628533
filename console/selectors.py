"""Reads behind the console pages.

Every page runs a fixed number of queries whatever the size of the thread:
lists are paginated, counts are correlated subqueries, and message content is
sliced in SQL (``Substr``/``Length``), so a 5 MB message or a thread of
10,000 messages never travels to Python whole.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from functools import reduce
from operator import or_
from typing import Any

from django.core.paginator import EmptyPage, Page, PageNotAnInteger, Paginator
from django.db.models import (
    Avg,
    Case,
    CharField,
    Count,
    Exists,
    IntegerField,
    Max,
    OuterRef,
    Q,
    QuerySet,
    Subquery,
    Sum,
    TextField,
    Value,
    When,
)
from django.db.models.functions import Cast, Coalesce, Length, Substr
from django.http import Http404

from threadmem.lib.storable import text_problem
from threadmem.models import (
    Compaction,
    EmbeddingProgress,
    Generation,
    IsolationEvent,
    Message,
    Thread,
    ToolArgument,
    ToolCall,
)
from threadmem.render import message_data

THREADS_PER_PAGE = 50
MESSAGES_PER_PAGE = 100
TOOL_CALLS_PER_PAGE = 50
# What an expanded row on the thread page shows; the audit page has the rest.
MESSAGE_PREVIEW_CHARS = 2_000
# The collapsed row: one glance, not a wall.
MESSAGE_SNIPPET_CHARS = 240
# Tool-call arguments larger than this are summarised on the thread page
# (name, id, size per argument) instead of pretty-printed; the audit page
# shows them whole.
TOOL_ARGS_INLINE_CHARS = 20_000
# The audit page's content page. Never a 10 MB page.
CONTENT_PAGE_CHARS = 50_000
# How far (in seq) the thread page looks beyond its rows for the result of a
# call, and back for the call of a result: a bounded range scan, whatever the
# thread's length. The audit page looks without bound.
CALL_LOOKBACK_SEQS = 2_000
COMPACTIONS_SHOWN = 20
ISOLATION_EVENTS_SHOWN = 50
THREAD_TOTALS_SHOWN = 20
CHART_MAX_POINTS = 500


def page_of(queryset: QuerySet, *, number: Any, per_page: int) -> Page:
    """A page of ``queryset``; a page number past the end is 404, junk is page 1."""
    paginator = Paginator(queryset, per_page)
    try:
        return paginator.page(number or 1)
    except PageNotAnInteger:
        return paginator.page(1)
    except EmptyPage:
        raise Http404("no such page") from None


# --- threads list -------------------------------------------------------------


def thread_rows(
    *, text: str = "", owner: str = "", isolated: bool | None = None, failed_compaction: bool = False
) -> QuerySet[Thread]:
    """Threads with their generation and message counts, newest activity first.

    The counts are correlated subqueries rather than ``Count`` over joins: two
    joins would multiply each other, and a subquery stays one index range scan
    per row of the page.
    """
    message_count = (
        Message.objects.filter(thread_id=OuterRef("pk")).order_by().values("thread_id").annotate(n=Count("pk"))
    )
    generation_count = (
        Generation.objects.filter(thread_id=OuterRef("pk")).order_by().values("thread_id").annotate(n=Count("pk"))
    )
    threads = Thread.objects.select_related("owner").annotate(
        message_count=Coalesce(Subquery(message_count.values("n"), output_field=IntegerField()), Value(0)),
        generation_count=Coalesce(Subquery(generation_count.values("n"), output_field=IntegerField()), Value(0)),
        has_failed_compaction=Exists(
            Compaction.objects.filter(thread_id=OuterRef("pk"), status=Compaction.Status.FAILED)
        ),
    )
    if text:
        threads = threads.filter(Q(channel__icontains=text) | Q(title__icontains=text))
    if owner:
        threads = threads.filter(owner__username__icontains=owner)
    if isolated is not None:
        threads = threads.filter(isolated=isolated)
    if failed_compaction:
        threads = threads.filter(has_failed_compaction=True)
    return threads.order_by("-last_activity_at", "-id")


# --- one thread -----------------------------------------------------------------


def thread_get(*, thread_id: int) -> Thread:
    try:
        return Thread.objects.select_related("owner", "parent", "fork_message").get(pk=thread_id)
    except Thread.DoesNotExist:
        raise Http404(f"thread {thread_id} not found") from None


def thread_id_for_channel(*, channel: str) -> int:
    if text_problem(channel):  # no stored channel has one, and PostgreSQL refuses a NUL in a query
        raise Http404("no thread with that channel")
    thread_id = Thread.objects.filter(channel=channel).values_list("id", flat=True).first()
    if thread_id is None:
        raise Http404(f"no thread with channel {channel!r}")
    return thread_id


def generation_timeline(*, thread: Thread) -> list[Generation]:
    """The thread's generations, oldest first, each with ``message_count``."""
    message_count = (
        Message.objects.filter(thread_id=OuterRef("thread_id"), generation=OuterRef("number"))
        .order_by()
        .values("generation")
        .annotate(n=Count("pk"))
    )
    return list(
        Generation.objects.filter(thread=thread)
        .annotate(message_count=Coalesce(Subquery(message_count.values("n"), output_field=IntegerField()), Value(0)))
        .order_by("number")
    )


def _sliced_messages() -> QuerySet[Message]:
    """Messages without their big columns; a preview and the sizes computed in SQL."""
    return Message.objects.only(
        "id",
        "thread",
        "generation",
        "seq",
        "role",
        "kind",
        "tool_call_id",
        "session_id",
        "model_visible",
        "isolated",
        "superseded_by",
        "created_at",
    ).annotate(
        preview=Substr("content", 1, MESSAGE_PREVIEW_CHARS),
        content_chars=Length("content"),
        tool_calls_chars=Length(Cast("tool_calls", TextField())),
    )


@dataclass
class CallView:
    """One tool call as the console shows it."""

    call_id: str
    name: str
    arguments: Any = None  # the parsed arguments, when small enough to show inline
    argument_chars: int = 0
    argument_leaves: list[dict[str, Any]] = field(default_factory=list)  # for large arguments
    result_id: int | None = None
    result_chars: int | None = None
    pretty_head: str = ""  # the audit page's pretty-printed arguments, cut at CONTENT_PAGE_CHARS
    pretty_chars: int = 0

    @property
    def pretty_arguments(self) -> str:
        return json.dumps(self.arguments, indent=2, ensure_ascii=False)

    @property
    def inline_arguments(self) -> str:
        """``{"command": "ls -la"}`` on one line, cut for the collapsed row."""
        if self.arguments is None:
            return f"{self.argument_chars:,} chars"
        text = json.dumps(self.arguments, ensure_ascii=False)
        return text if len(text) <= 160 else text[:159] + "…"


def thread_message_page(*, thread: Thread, generation: int, number: Any) -> Page:
    """A page of one generation's messages in seq order, with calls and results matched.

    The page is chosen on ids alone and the previews and sizes computed for
    those rows only: with OFFSET on the annotated query, PostgreSQL would
    detoast and measure every skipped row (page 50 would read 4,900 contents).
    """
    ids = Message.objects.filter(thread=thread, generation=generation).order_by("seq").values("pk")
    page = page_of(ids, number=number, per_page=MESSAGES_PER_PAGE)
    rows = list(_sliced_messages().filter(pk__in=page.object_list).order_by("seq"))
    attach_tool_calls(thread=thread, messages=rows, lookahead=CALL_LOOKBACK_SEQS)
    attach_calls_of_results(thread=thread, messages=rows, lookback=CALL_LOOKBACK_SEQS)
    page.object_list = rows
    return page


def attach_tool_calls(*, thread: Thread, messages: list[Message], lookahead: int | None = None) -> None:
    """Give each assistant message ``calls``: its tool calls, each with the size of its result.

    Small arguments are read whole (one query for the page); large ones are
    described from the ToolArgument rows (name, path and size of each string
    leaf) so a 2 MB ``write_file`` never lands on the thread page. Results are
    matched by ``tool_call_id``: the nearest tool message after the call.
    """
    with_calls = [m for m in messages if m.tool_calls_chars and m.tool_calls_chars > 2]
    for message in messages:
        message.calls = []
    if not with_calls:
        return
    small = [m.id for m in with_calls if m.tool_calls_chars <= TOOL_ARGS_INLINE_CHARS]
    large = [m.id for m in with_calls if m.tool_calls_chars > TOOL_ARGS_INLINE_CHARS]
    whole = dict(Message.objects.filter(id__in=small).values_list("id", "tool_calls")) if small else {}
    leaves: dict[int, dict[int, CallView]] = {}
    if large:
        argument_rows = (
            ToolArgument.objects.filter(message_id__in=large)
            .annotate(chars=Length("value"), head=Substr("value", 1, 200))
            .values("message_id", "call_index", "tool_call_id", "tool_name", "path", "chars", "head")
            .order_by("message_id", "call_index", "id")
        )
        for row in argument_rows:
            calls = leaves.setdefault(row["message_id"], {})
            call = calls.setdefault(row["call_index"], CallView(call_id=row["tool_call_id"], name=row["tool_name"]))
            call.argument_chars += row["chars"]
            call.argument_leaves.append({"path": row["path"], "chars": row["chars"], "head": row["head"]})
    for message in with_calls:
        if message.id in whole:
            message.calls = [
                CallView(
                    call_id=call.get("id", ""),
                    name=call.get("name", ""),
                    arguments=call.get("arguments", {}),
                    argument_chars=len(json.dumps(call.get("arguments", {}), ensure_ascii=False)),
                )
                for call in whole[message.id]
            ]
        else:
            message.calls = [leaves[message.id][i] for i in sorted(leaves.get(message.id, {}))]
    _attach_results(thread=thread, messages=with_calls, lookahead=lookahead)


def _attach_results(*, thread: Thread, messages: list[Message], lookahead: int | None = None) -> None:
    call_ids = {call.call_id for m in messages for call in m.calls if call.call_id}
    if not call_ids:
        return
    first_seq = min(m.seq for m in messages)
    window = Q(seq__lte=max(m.seq for m in messages) + lookahead) if lookahead is not None else Q()
    results = list(
        Message.objects.filter(
            window, thread=thread, role=Message.Role.TOOL, tool_call_id__in=call_ids, seq__gt=first_seq
        )
        .annotate(chars=Length("content"))
        .values_list("id", "seq", "tool_call_id", "chars")
        .order_by("seq")
    )
    for message in messages:
        for call in message.calls:
            match = next((r for r in results if r[2] == call.call_id and r[1] > message.seq), None)
            if match is not None:
                call.result_id, call.result_chars = match[0], match[3]


def attach_calls_of_results(*, thread: Thread, messages: list[Message], lookback: int | None = None) -> None:
    """Give each tool result ``call_message_id`` and ``call_name``: the assistant message that made the call.

    The call is usually on the same page; the ones that are not are found with
    one query matching the id inside the stored ``tool_calls`` JSON text (both
    databases render it as ``"id": "<id>"``).
    """
    known: dict[str, tuple[int, int, str]] = {}  # call id -> (message id, seq, tool name)
    for message in messages:
        for call in getattr(message, "calls", []):
            known.setdefault(call.call_id, (message.id, message.seq, call.name))
    results = [m for m in messages if m.role == Message.Role.TOOL and m.tool_call_id]
    for message in results:
        message.call_message_id = None
        message.call_name = ""
    missing = sorted({m.tool_call_id for m in results if m.tool_call_id not in known})
    if missing:
        last_seq = max(m.seq for m in results)
        window = Q(seq__gte=min(m.seq for m in results) - lookback) if lookback is not None else Q()
        needles = {call_id: f'"id": {json.dumps(call_id, ensure_ascii=False)}' for call_id in missing}
        matched = Case(
            *[When(calls_text__contains=needle, then=Value(call_id)) for call_id, needle in needles.items()],
            default=Value(""),
            output_field=CharField(),
        )
        candidates = (
            Message.objects.filter(window, thread=thread, role=Message.Role.ASSISTANT, seq__lt=last_seq)
            .annotate(calls_text=Cast("tool_calls", TextField()))
            .filter(reduce(or_, [Q(calls_text__contains=needle) for needle in needles.values()]))
            .annotate(matched_call=matched)
            .values_list("id", "seq", "matched_call")
            .order_by("-seq")
        )
        for message_id, seq, call_id in candidates:
            known.setdefault(call_id, (message_id, seq, ""))
    for message in results:
        found = known.get(message.tool_call_id)
        if found is not None and found[1] < message.seq:
            message.call_message_id, _, message.call_name = found


# --- one message ------------------------------------------------------------------


@dataclass
class ContentPage:
    text: str
    number: int
    count: int
    total_chars: int
    start: int  # 0-based offset of the first character shown

    @property
    def end(self) -> int:
        return self.start + len(self.text)

    @property
    def has_previous(self) -> bool:
        return self.number > 1

    @property
    def has_next(self) -> bool:
        return self.number < self.count


def message_audit(*, message_id: int, page: Any = 1) -> tuple[Message, ContentPage]:
    """One message as stored, with one ``CONTENT_PAGE_CHARS`` page of its content cut in SQL."""
    try:
        number = max(1, int(page or 1))
    except (TypeError, ValueError):
        number = 1
    start = (number - 1) * CONTENT_PAGE_CHARS
    try:
        message = (
            Message.objects.defer("content")
            .select_related("thread", "thread__owner", "superseded_by")
            .annotate(
                content_page=Substr("content", start + 1, CONTENT_PAGE_CHARS),
                content_chars=Length("content"),
                tool_calls_chars=Length(Cast("tool_calls", TextField())),
            )
            .get(pk=message_id)
        )
    except Message.DoesNotExist:
        raise Http404(f"message {message_id} not found") from None
    count = max(1, -(-message.content_chars // CONTENT_PAGE_CHARS))
    if number > count:
        raise Http404(f"message {message_id} has {count} content pages")
    return message, ContentPage(
        text=message.content_page, number=number, count=count, total_chars=message.content_chars, start=start
    )


def message_thread_page(*, message: Message) -> int:
    """The page of the thread view that lists ``message``."""
    before = Message.objects.filter(
        thread_id=message.thread_id, generation=message.generation, seq__lt=message.seq
    ).count()
    return before // MESSAGES_PER_PAGE + 1


def message_supersedes(*, message: Message) -> list[int]:
    return list(Message.objects.filter(superseded_by=message).values_list("id", flat=True).order_by("seq"))


def message_results(*, message: Message) -> list[dict[str, Any]]:
    """Each tool call of ``message`` with its parsed arguments and its result (id, size)."""
    calls = [
        CallView(
            call_id=call.get("id", ""),
            name=call.get("name", ""),
            arguments=call.get("arguments", {}),
        )
        for call in message.tool_calls
    ]
    for call in calls:
        pretty = call.pretty_arguments
        call.pretty_head, call.pretty_chars = pretty[:CONTENT_PAGE_CHARS], len(pretty)
    message.calls = calls
    _attach_results(thread=message.thread, messages=[message])
    return calls


def message_call(*, message: Message) -> tuple[int | None, str]:
    """For a tool result: the id of the assistant message that made its call, and the tool's name."""
    if message.role != Message.Role.TOOL or not message.tool_call_id:
        return None, ""
    message.calls = []
    attach_calls_of_results(thread=message.thread, messages=[message])
    name = ""
    if message.call_message_id is not None:
        for call in Message.objects.values_list("tool_calls", flat=True).get(pk=message.call_message_id):
            if call.get("id") == message.tool_call_id:
                name = call.get("name", "")
                break
    return message.call_message_id, name


def message_raw(*, message_id: int) -> dict[str, Any]:
    """The stored row as JSON, for download: the original, whole."""
    try:
        message = Message.objects.select_related("thread").get(pk=message_id)
    except Message.DoesNotExist:
        raise Http404(f"message {message_id} not found") from None
    return {**message_data(message), "channel": message.thread.channel}


# --- compaction and isolation history -----------------------------------------


def compaction_history(*, thread: Thread) -> list[Compaction]:
    return list(Compaction.objects.filter(thread=thread).select_related("requested_by")[:COMPACTIONS_SHOWN])


def embedding_progress(*, thread: Thread) -> list[EmbeddingProgress]:
    """How far the thread is embedded, per embedding model, with the last failure."""
    return list(EmbeddingProgress.objects.filter(thread=thread))


def compaction_is_live(compactions: list[Compaction]) -> bool:
    return any(c.status in (Compaction.Status.PENDING, Compaction.Status.RUNNING) for c in compactions)


def isolation_trail(*, thread: Thread | None = None, message: Message | None = None) -> list[IsolationEvent]:
    """Who isolated what, when: a thread's trail includes its messages' toggles."""
    events = IsolationEvent.objects.select_related("actor")
    events = events.filter(message=message) if message is not None else events.filter(thread=thread)
    return list(events[:ISOLATION_EVENTS_SHOWN])


def recent_channels(*, limit: int = 30) -> list[str]:
    """Suggestions for the search page's channel box."""
    return list(Thread.objects.order_by("-last_activity_at").values_list("channel", flat=True)[:limit])


# --- the tool-call log --------------------------------------------------------------


def tool_call_rows(
    *,
    thread: str = "",
    caller: str = "",
    tool: str = "",
    surface: str = "",
    since: datetime | None = None,
    until: datetime | None = None,
    truncated_only: bool = False,
) -> QuerySet[ToolCall]:
    calls = ToolCall.objects.select_related("thread", "caller")
    if thread:
        calls = calls.filter(thread__channel=thread)
    if caller:
        calls = calls.filter(caller__username=caller)
    if tool:
        calls = calls.filter(tool=tool)
    if surface:
        calls = calls.filter(surface=surface)
    if since is not None:
        calls = calls.filter(created_at__gte=since)
    if until is not None:
        calls = calls.filter(created_at__lt=until)
    if truncated_only:
        calls = calls.filter(truncated=True)
    return calls.order_by("-created_at", "-id")


def tool_call_totals(calls: QuerySet[ToolCall]) -> list[dict[str, Any]]:
    """Per-thread totals of the filtered log, busiest first (global searches have no thread)."""
    return list(
        calls.order_by()
        .values("thread_id", "thread__channel")
        .annotate(
            calls=Count("pk"),
            chars=Sum("chars_returned"),
            max_chars=Max("chars_returned"),
            truncated=Count("pk", filter=Q(truncated=True)),
            latency_ms=Avg("latency_ms"),
        )
        .order_by("-calls", "thread__channel")[:THREAD_TOTALS_SHOWN]
    )


def tool_call_chart_points(calls: QuerySet[ToolCall]) -> list[tuple[datetime, int, bool]]:
    """The latest ``CHART_MAX_POINTS`` calls as (time, characters returned, truncated), oldest first."""
    points = list(
        calls.order_by("-created_at", "-id").values_list("created_at", "chars_returned", "truncated")[:CHART_MAX_POINTS]
    )
    points.reverse()
    return points
