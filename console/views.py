"""The operator console: server-rendered pages under /console/ for staff.

Views stay thin: check access, read through ``console.selectors`` (or call
one service), render. Anonymous visitors are sent to the login page; a
signed-in user who is not staff gets 403 (they are who they say they are,
they just may not look). Isolation controls are for admins only
(``services.can_isolate``): others see no control and get 403 on the POST.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial, wraps
from typing import Any

from django.contrib import messages as flash
from django.contrib.auth.decorators import login_required
from django.contrib.auth.forms import AuthenticationForm
from django.contrib.auth.views import LoginView, redirect_to_login
from django.core.exceptions import PermissionDenied
from django.core.paginator import Page
from django.db.models import QuerySet
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.template.loader import render_to_string
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from console import selectors
from console.charts import chars_chart
from console.forms import IsolationForm, SearchForm, StaffAuthenticationForm, ThreadFilterForm, ToolCallFilterForm
from oauth.tokens import connectors_of, revoke_connector
from threadmem.domain import services
from threadmem.domain.selectors import generation_list_for, is_operator
from threadmem.errors import DomainError
from threadmem.features.compaction.compacting import compaction_request
from threadmem.features.search import message_context_read, search_memory
from threadmem.features.search.answer_caps import THREAD_SEARCH_MAX_CHARS
from threadmem.infrastructure.replicas import model_facing_read
from threadmem.models import Compaction, Deletion, Message, Thread, ToolCall

View = Callable[..., HttpResponse]
FilterForm = ThreadFilterForm | ToolCallFilterForm


def staff_required(view: View) -> View:
    @wraps(view)
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not request.user.is_authenticated:
            return redirect_to_login(request.get_full_path())
        if not is_operator(request.user):
            raise PermissionDenied("the console is for staff accounts")
        return view(request, *args, **kwargs)

    return wrapper


def admin_required(request: HttpRequest) -> None:
    if not services.can_isolate(request.user):
        raise PermissionDenied("only admins may change isolation")


class ConsoleLoginView(LoginView):
    template_name = "registration/login.html"
    authentication_form = StaffAuthenticationForm
    redirect_authenticated_user = False

    def for_owner(self) -> bool:
        """Whether this sign-in leads to a connector's consent or to the connectors page: any owner may."""
        next_path = self.get_redirect_url()
        return next_path.startswith((reverse("oauth2_provider:authorize"), reverse("console:connectors")))

    def get_form_class(self) -> type[AuthenticationForm]:
        return AuthenticationForm if self.for_owner() else super().get_form_class()

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        return {**super().get_context_data(**kwargs), "for_owner": self.for_owner()}


def _filtered_page(
    request: HttpRequest, form_class: type[FilterForm], rows_of: Callable[..., QuerySet], per_page: int
) -> tuple[FilterForm, QuerySet, Page]:
    """A list page's filter form, bound to the query string, the rows its filters select, and the page asked for."""
    form = form_class(request.GET or None)
    rows = rows_of(**form.filters())
    return form, rows, selectors.page_of(rows, number=request.GET.get("page"), per_page=per_page)


# --- threads ------------------------------------------------------------------


@require_GET
@staff_required
def threads(request: HttpRequest) -> HttpResponse:
    form, _, page = _filtered_page(request, ThreadFilterForm, selectors.thread_rows, selectors.THREADS_PER_PAGE)
    context = {"form": form, "page": page, "nav": "threads", "recent_projects": selectors.recent_projects()}
    return render(request, "console/threads.html", context)


@require_GET
@staff_required
def thread_by_channel(request: HttpRequest, channel: str) -> HttpResponse:
    """``/console/c/<channel>/``: a URL an operator can type from a channel name."""
    return redirect("console:thread", thread_id=selectors.thread_id_for_channel(user=request.user, channel=channel))


def _thread_context(request: HttpRequest, thread: Thread) -> dict[str, Any]:
    timeline = list(generation_list_for(thread=thread))
    numbers = [g.number for g in timeline]
    raw = request.GET.get("generation")
    try:
        chosen_number = int(raw) if raw else thread.current_generation
    except ValueError:
        chosen_number = -1
    if chosen_number not in numbers:
        raise Http404(f"thread {thread.channel!r} has no generation {raw}")
    chosen = timeline[numbers.index(chosen_number)]
    page = selectors.thread_message_page(thread=thread, generation=chosen_number, number=request.GET.get("page"))
    summary = None
    if chosen.summary_message_id is not None:
        summary, _ = selectors.message_audit(message_id=chosen.summary_message_id)
    compactions = selectors.compaction_history(thread=thread)
    return {
        "thread": thread,
        "timeline": timeline,
        "generation": chosen,
        "page": page,
        "summary": summary,
        "compactions": compactions,
        "compaction_live": selectors.compaction_is_live(compactions),
        "trail": selectors.isolation_trail(thread=thread),
        "embeddings": selectors.embedding_progress(thread=thread),
        "last_seq": thread.next_seq - 1,
        "can_isolate": services.can_isolate(request.user),
        "preview_chars": selectors.MESSAGE_PREVIEW_CHARS,
        "nav": "threads",
    }


@require_GET
@staff_required
def thread(request: HttpRequest, thread_id: int) -> HttpResponse:
    thread = selectors.thread_get(thread_id=thread_id)
    return render(request, "console/thread.html", _thread_context(request, thread))


@require_GET
@staff_required
def thread_compactions(request: HttpRequest, thread_id: int) -> JsonResponse:
    """The compaction history for the thread page's poll: the same partial the page renders."""
    thread = selectors.thread_get(thread_id=thread_id)
    compactions = selectors.compaction_history(thread=thread)
    html = render_to_string(
        "console/_compaction_rows.html", {"compactions": compactions, "thread": thread}, request=request
    )
    return JsonResponse(
        {
            "live": selectors.compaction_is_live(compactions),
            "current_generation": thread.current_generation,
            "html": html,
        }
    )


@require_POST
@staff_required
def thread_compact(request: HttpRequest, thread_id: int) -> HttpResponse:
    """The "compact now" button: request a compaction of the current generation, then back to the thread.

    A request while one runs answers with the running one; a generation with
    nothing to compact says so. Without a broker the task runs right after
    the request's commit, so the redirect already shows the outcome.
    """
    thread = selectors.thread_get(thread_id=thread_id)
    try:
        compaction = compaction_request(thread=thread, requested_by=request.user, trigger="console")
    except DomainError as exc:
        flash.error(request, exc.message)
    else:
        # Without a broker the task has already run (on commit): say how it went.
        compaction.refresh_from_db()
        if compaction.status == Compaction.Status.SUCCEEDED:
            flash.success(request, f"Generation {compaction.generation} compacted.")
        elif compaction.status == Compaction.Status.FAILED:
            flash.error(request, f"Compaction of generation {compaction.generation} failed: {compaction.error}")
        else:
            flash.info(request, f"Compaction of generation {compaction.generation} is {compaction.status}.")
    return redirect(reverse("console:thread", args=[thread.id]) + "#compactions")


def _isolation_toggle(request: HttpRequest, target: Thread | Message) -> HttpResponse:
    """An isolation form's POST: 400 on a bad value, the confirmation page first, then toggle, flash, redirect."""
    if isinstance(target, Thread):
        confirm_context = {"target": "thread", "thread": target, "nav": "threads"}
        toggle = partial(services.thread_set_isolated, thread=target)
        done, then = f"Thread {target.channel}", redirect("console:thread", thread_id=target.id)
    else:
        confirm_context = {"target": "message", "message": target, "thread": target.thread}
        toggle = partial(services.message_set_isolated, message=target)
        done, then = f"Message #{target.id}", redirect("console:message", message_id=target.id)
    form = IsolationForm(request.POST)
    if not form.is_valid():
        return HttpResponse("isolated must be true or false", status=400, content_type="text/plain")
    isolated = form.cleaned_data["isolated"]
    if not form.cleaned_data["confirm"]:
        return render(request, "console/isolation_confirm.html", {**confirm_context, "isolated": isolated})
    toggle(isolated=isolated, actor=request.user, surface="console")
    word = "isolated" if isolated else "released from isolation"
    flash.success(request, f"{done} {word}.")
    return then


@require_POST
@staff_required
def thread_isolation(request: HttpRequest, thread_id: int) -> HttpResponse:
    admin_required(request)
    return _isolation_toggle(request, selectors.thread_get(thread_id=thread_id))


# --- messages ---------------------------------------------------------------------


@require_GET
@staff_required
def message(request: HttpRequest, message_id: int) -> HttpResponse:
    message, content = selectors.message_audit(message_id=message_id, page=request.GET.get("page"))
    calls = selectors.message_results(message=message) if message.tool_calls else []
    call_message_id, call_name = selectors.message_call(message=message)
    return render(
        request,
        "console/message.html",
        {
            "message": message,
            "thread": message.thread,
            "content": content,
            "calls": calls,
            "call_message_id": call_message_id,
            "call_name": call_name,
            "supersedes": selectors.message_supersedes(message=message),
            "thread_page": selectors.message_thread_page(message=message),
            "trail": selectors.isolation_trail(message=message),
            "can_isolate": services.can_isolate(request.user),
            "args_cap": selectors.CONTENT_PAGE_CHARS,
            "nav": "threads",
        },
    )


@model_facing_read  # as the model would call it, so routed as the model's call is
@require_GET
@staff_required
def message_model_read(request: HttpRequest, message_id: int) -> HttpResponse:
    """``message_context_read`` as the model would call it (logged like any other call).

    A message the model may not read answers 404 to the model; the page says
    so instead of failing, since the operator can see the message.
    """
    message, _ = selectors.message_audit(message_id=message_id)
    try:
        offset = max(0, int(request.GET.get("offset") or 0))
    except ValueError:
        offset = 0
    context: dict[str, Any] = {"message": message, "thread": message.thread, "offset": offset, "nav": "threads"}
    try:
        context["read"] = message_context_read(
            user=request.user,
            message_id=message.id,
            offset=offset,
            surface=ToolCall.Surface.CONSOLE,
        )
    except DomainError as exc:
        context["refused"] = exc
    return render(request, "console/model_read.html", context)


@require_GET
@staff_required
def message_raw(request: HttpRequest, message_id: int) -> HttpResponse:
    """The stored row whole, as a JSON download: the escape hatch for pages that are cut."""
    response = JsonResponse(selectors.message_raw(message_id=message_id), json_dumps_params={"ensure_ascii": False})
    response["Content-Disposition"] = f'attachment; filename="message-{message_id}.json"'
    return response


@require_POST
@staff_required
def message_isolation(request: HttpRequest, message_id: int) -> HttpResponse:
    admin_required(request)
    message, _ = selectors.message_audit(message_id=message_id)
    return _isolation_toggle(request, message)


# --- search and the tool-call log ------------------------------------------------


@model_facing_read  # as the model would run it, so routed as the model's search is
@require_GET
@staff_required
def search(request: HttpRequest) -> HttpResponse:
    """``search_memory`` as the model would run it, logged like any other call."""
    params = request.GET.copy()
    if "q" not in params and "query" in params:  # the API's name for it, so a URL can be shared between them
        params["q"] = params["query"]
    form = SearchForm(params or None)
    context: dict[str, Any] = {
        "form": form,
        "nav": "search",
        "recent_channels": selectors.recent_channels(),
        "recent_projects": selectors.recent_projects(),
    }
    status = 200
    if form.is_valid():
        channel = form.cleaned_data["channel"].strip() or None
        try:
            result = search_memory(
                user=request.user,
                query=form.cleaned_data["q"],
                channel=channel,
                project=form.cleaned_data["project"].strip() or None,
                surface=ToolCall.Surface.CONSOLE,
            )
        except DomainError as exc:
            context["error"] = exc.message
            status = exc.status_code
        else:
            context["result"] = result
            if channel is not None:
                context["scope_thread_id"] = selectors.thread_id_for_channel(user=request.user, channel=channel)
                context["scope_channel"] = channel
    elif form.is_bound:
        context["error"] = "; ".join(f"{name}: {' '.join(errors)}" for name, errors in form.errors.items())
        status = 400
    return render(request, "console/search.html", context, status=status)


@require_GET
@staff_required
def tool_calls(request: HttpRequest) -> HttpResponse:
    form, calls, page = _filtered_page(
        request, ToolCallFilterForm, selectors.tool_call_rows, selectors.TOOL_CALLS_PER_PAGE
    )
    chart = chars_chart(selectors.tool_call_chart_points(calls), cap=THREAD_SEARCH_MAX_CHARS)
    return render(
        request,
        "console/tool_calls.html",
        {
            "form": form,
            "page": page,
            "totals": selectors.tool_call_totals(calls),
            "chart": chart,
            "nav": "tool_calls",
        },
    )


@require_GET
@staff_required
def tool_call(request: HttpRequest, call_id: int) -> HttpResponse:
    call = get_object_or_404(ToolCall.objects.select_related("thread", "caller"), pk=call_id)
    context = {"call": call, "plan": selectors.plan_lines(call.plan), "nav": "tool_calls"}
    return render(request, "console/tool_call.html", context)


# --- deletions ----------------------------------------------------------------


@require_GET
@staff_required
def deletions(request: HttpRequest) -> HttpResponse:
    page = selectors.page_of(
        Deletion.objects.all(), number=request.GET.get("page"), per_page=selectors.TOOL_CALLS_PER_PAGE
    )
    return render(request, "console/deletions.html", {"page": page, "nav": "deletions"})


# --- connectors ---------------------------------------------------------------
# Every signed-in owner, staff or not, sees and revokes the clients they authorized (OAuth, oauth/).


@require_GET
@login_required
def connectors(request: HttpRequest) -> HttpResponse:
    return render(request, "console/connectors.html", {"connectors": connectors_of(request.user), "nav": "connectors"})


@require_POST
@login_required
def connector_revoke(request: HttpRequest, application_id: int) -> HttpResponse:
    if revoke_connector(request.user, application_id):
        flash.success(request, "Revoked: that client's tokens no longer reach threadmem.")
    else:
        flash.info(request, "That client held no token of yours.")
    return redirect("console:connectors")
