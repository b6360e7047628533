"""Reads behind the console pages.

Every page runs a fixed number of queries whatever the size of the thread:
lists are paginated, counts are correlated subqueries, and message content is
sliced in SQL (``Substr``/``Length``), so a 5 MB message or a thread of
10,000 messages never travels to Python whole.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.core.paginator import EmptyPage, Page, PageNotAnInteger, Paginator
from django.db.models import (
    Avg,
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
)
from django.db.models.expressions import RawSQL
from django.db.models.functions import Cast, Coalesce, Length, Substr
from django.http import Http404

from console.calls import CallView, attach_calls_of_results, attach_results, attach_tool_calls
from threadmem.domain import selectors as domain_selectors
from threadmem.domain.render import message_data
from threadmem.domain.scope import project_sql
from threadmem.errors import DomainError
from threadmem.lib.projects import project_normal
from threadmem.models import Compaction, EmbeddingProgress, Generation, IsolationEvent, Message, Thread, ToolCall

THREADS_PER_PAGE = 50
MESSAGES_PER_PAGE = 100
TOOL_CALLS_PER_PAGE = 50
# What an expanded row on the thread page shows; the audit page has the rest.
MESSAGE_PREVIEW_CHARS = 2_000
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


def _filter_given(rows: QuerySet, **lookups: Any) -> QuerySet:
    """``rows`` filtered by each of ``lookups`` that was given: a None value is a filter the operator left empty."""
    return rows.filter(**{lookup: value for lookup, value in lookups.items() if value is not None})


# --- threads list -------------------------------------------------------------


def thread_rows(
    *,
    text: str = "",
    owner: str = "",
    project: str = "",
    isolated: bool | None = None,
    failed_compaction: bool = False,
) -> QuerySet[Thread]:
    """Threads with their generation and message counts, newest activity first; ``project``: its threads and those
    of a directory below it, as search_memory's project keeps them.

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
    if project:
        # The rule search applies (scope.project_sql), not a second spelling of it.
        condition, params = project_sql(project_normal(project))
        threads = threads.filter(pk__in=RawSQL(f"SELECT t.id FROM threadmem_thread t WHERE {condition}", params))
    threads = _filter_given(
        threads,
        owner__username__icontains=owner or None,
        isolated=isolated,
        has_failed_compaction=failed_compaction or None,
    )
    return threads.order_by("-last_activity_at", "-id")


# --- one thread -----------------------------------------------------------------


def thread_get(*, thread_id: int) -> Thread:
    try:
        return Thread.objects.select_related("owner", "parent", "fork_message").get(pk=thread_id)
    except Thread.DoesNotExist:
        raise Http404(f"thread {thread_id} not found") from None


def thread_id_for_channel(*, user: AbstractBaseUser, channel: str) -> int:
    """The thread ``user`` means by ``channel`` (the API's rule); one several owners hold is a 404 naming them."""
    try:
        return domain_selectors.thread_get_for(user=user, channel=channel).pk
    except DomainError as exc:
        raise Http404(exc.message) from None


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
    attach_results(thread=message.thread, messages=[message])
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


def recent_projects(*, limit: int = 50) -> list[str]:
    """Suggestions for the project boxes (threads and search): the projects of the latest activity first."""
    latest = Thread.objects.exclude(project="").values("project").annotate(last=Max("last_activity_at"))
    return [row["project"] for row in latest.order_by("-last")[:limit]]


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
    calls = _filter_given(
        ToolCall.objects.select_related("thread", "caller"),
        thread__channel=thread or None,
        caller__username=caller or None,
        tool=tool or None,
        surface=surface or None,
        created_at__gte=since,
        created_at__lt=until,
        truncated=truncated_only or None,
    )
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


# What an operator reads of a search's coverage (search/hits.py Coverage).
_COVERAGE_WORDS = {"all": "complete", "recent": "newest messages only", "none": "out of time"}


def plan_lines(plan: dict[str, Any] | None) -> list[str]:
    """A search's executed plan (ToolCall.plan), one line per term: why, the branch, the coverage, the time.

    The terms share one match statement, so the milliseconds are the statement's (with its fallback's).
    """
    if not plan:
        return []
    coverage = _COVERAGE_WORDS.get(plan.get("coverage", ""), plan.get("coverage", ""))
    ms = plan.get("ms", 0.0)
    took = f"{ms:.0f} ms" if ms >= 10 else f"{ms:.1f} ms"
    matched = plan.get("matched_by", "")
    fell_back = "" if matched in ("index", "spelled", "") or plan.get("plan") == "scan" else f" (matched by {matched})"
    return [
        f"{term['term']!r} ({term['reason']}): {term['branch']}, {coverage}{fell_back}, {took}"
        for term in plan.get("terms", ())
    ]
