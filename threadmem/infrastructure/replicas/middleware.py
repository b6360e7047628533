"""The rule over HTTP (REST and the console): a view's model-facing read runs through ``read`` for the request's
user; any other request that changes something and succeeds is a write of its user (read-your-writes)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, HttpResponse

from threadmem.infrastructure.replicas.positions import wrote
from threadmem.infrastructure.replicas.rule import read, reads
from threadmem.infrastructure.replicas.state import aliases

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS", "TRACE"})


def _user_pk(request: HttpRequest) -> Any:
    # DRF authenticates inside the view and sets the request's user then: until it does, no one (the primary).
    return getattr(getattr(request, "user", None), "pk", None)


class ReadRoutingMiddleware:
    """Last in MIDDLEWARE: it runs the view itself when the view is a model-facing read, so that a read that meets
    a failing replica runs the view again on the primary (``read``); the middleware before it see one answer."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if request.method in SAFE_METHODS or response.status_code >= 400 or not aliases():
            return response
        match = getattr(request, "resolver_match", None)
        if match is None or not reads(match.func, request.method or ""):
            wrote(_user_pk(request))
        return response

    def process_view(self, request: HttpRequest, view: Callable[..., HttpResponse], args: Any, kwargs: Any) -> Any:
        if not aliases() or not reads(view, request.method or ""):
            return None  # Django runs the view
        _user_pk(request)  # a session's user is looked up here, on the primary, not by the read
        if request.method not in SAFE_METHODS:
            try:
                request.body  # noqa: B018  (kept: a read run again on the primary parses the body again)
            except RequestDataTooBig:
                return None  # the view refuses it, as it does without replicas
        return read(lambda: view(request, *args, **kwargs), caller_of=lambda: _user_pk(request))
