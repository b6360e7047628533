"""django-oauth-toolkit's views with threadmem's rules: one resource, S256 only, registration that can be turned off.

Discovery: the protected-resource metadata (RFC 9728) names this server as the
authorization server of the MCP endpoint; the authorization-server metadata
(RFC 8414) is the library's, configured in settings (``OAUTH2_PROVIDER``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from functools import wraps
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.utils.decorators import method_decorator
from django.views.decorators.csrf import csrf_exempt
from oauth2_provider.exceptions import OAuthToolkitError
from oauth2_provider.models import get_application_model
from oauth2_provider.views import (
    AuthorizationView,
    DynamicClientRegistrationManagementView,
    DynamicClientRegistrationView,
    OAuthProtectedResourceMetadataView,
)
from oauthlib.oauth2.rfc6749.errors import CustomOAuth2Error

from oauth.registration import UNUSED_CLIENTS_MAX, RegistrationThrottle, room_for_a_client
from oauth.resource import MCP_PATH, RESOURCE_METADATA_PATH, base_url_of, mcp_resource, same_resource
from threadmem.domain.selectors import is_operator
from threadmem.lib.storable import text_problem

REGISTRATION_OFF = (
    "dynamic client registration is off on this server (THREADMEM_OAUTH_REGISTRATION=false): "
    "ask its operator to register your client in the admin and give you its client_id"
)
LOOPBACK_HOSTS = {"127.0.0.1", "localhost", "::1"}
# Hosted clients ask for the authorization code grant (with refresh tokens); nothing else is issued here.
GRANT_TYPES = {"authorization_code", "refresh_token"}
MAX_REGISTRATION_BYTES = 16 * 1024
# C0, DEL and C1: nothing a client name, a URI or any other metadata needs.
CONTROL_CHARACTER = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def _error(error: str, description: str, status: int = 400) -> JsonResponse:
    return JsonResponse({"error": error, "error_description": description}, status=status)


class ProtectedResourceMetadataView(OAuthProtectedResourceMetadataView):
    """RFC 9728 metadata at the root and in the path-suffixed form for /mcp/ (or /mcp, as the client spelled it)."""

    def get(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        suffix = request.path.removeprefix(RESOURCE_METADATA_PATH)
        if suffix not in ("", MCP_PATH, MCP_PATH.rstrip("/")):
            return _error("not_found", f"this server protects one resource, {MCP_PATH}", status=404)
        return super().get(request, *args, **kwargs)

    def get_resource(self, request: HttpRequest) -> str:
        # RFC 9728 §3.3: the client compares this with the URL it derived the metadata URL from, exactly.
        suffix = request.path.removeprefix(RESOURCE_METADATA_PATH)
        return base_url_of(request) + suffix if suffix else mcp_resource(base_url_of(request))

    def get_authorization_servers(self, request: HttpRequest) -> list[str]:
        return [base_url_of(request)]

    def get_resource_name(self) -> str:
        return "threadmem memory"


def storable_parameters(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """``view`` behind a 400 for a query or form parameter holding NUL: the library looks codes and clients up
    by them, and PostgreSQL refuses such a query with an error (a 500), where no code or client could match."""

    @wraps(view)
    def checked(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        for name, values in [*request.GET.lists(), *request.POST.lists()]:
            for text in (name, *values):
                problem = text_problem(text)
                if problem:
                    return _error("invalid_request", f"the parameter {name!r} {problem}")
        return view(request, *args, **kwargs)

    return checked


def _refusal(error: str, description: str, credentials: dict[str, Any]) -> OAuthToolkitError:
    # Raised once the client and its redirect URI are known good, so the error goes back to the client.
    return OAuthToolkitError(
        error=CustomOAuth2Error(error=error, description=description, state=credentials.get("state")),
        redirect_uri=credentials["redirect_uri"],
    )


class ConsentView(AuthorizationView):
    """The authorization endpoint: the owner signs in with the console's login, then allows or denies the client."""

    template_name = "oauth/authorize.html"

    def validate_authorization_request(self, request: HttpRequest) -> tuple[list[str], dict[str, Any]]:
        scopes, credentials = super().validate_authorization_request(request)
        if credentials.get("code_challenge_method") != "S256":
            raise _refusal("invalid_request", "PKCE with code_challenge_method=S256 is required", credentials)
        resource = mcp_resource(base_url_of(request))
        for value in request.GET.getlist("resource"):
            if not same_resource(value, resource):
                raise _refusal("invalid_target", f"this server issues tokens for {resource} only", credentials)
        return scopes, credentials

    def form_valid(self, form: Any) -> HttpResponse:
        resource = mcp_resource(base_url_of(self.request))
        asked = form.cleaned_data.get("resource", "").split()
        if any(not same_resource(value, resource) for value in asked):
            application = get_application_model().objects.get(client_id=form.cleaned_data["client_id"])
            error = _refusal("invalid_target", f"this server issues tokens for {resource} only", form.cleaned_data)
            return self.error_response(error, application)
        # A token naming no resource would be valid anywhere: bind it to the one resource this server has.
        form.cleaned_data["resource"] = " ".join(asked) or resource
        return super().form_valid(form)

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        context = super().get_context_data(**kwargs)
        redirect_uri = context.get("redirect_uri") or ""
        context["redirect_host"] = urlsplit(redirect_uri).netloc or redirect_uri
        context["resource"] = mcp_resource(base_url_of(self.request))
        context["operator"] = is_operator(self.request.user)
        return context


# The library's own decorators sit on dispatch, which these views override: put them back.
@method_decorator(csrf_exempt, name="dispatch")
class RegistrationView(DynamicClientRegistrationView):
    """RFC 7591 registration, open to anyone while ``THREADMEM_OAUTH_REGISTRATION`` is on.

    On top of the library's checks: the redirect URIs are https, or http on a
    loopback address (a client on the same machine), and only the authorization
    code grant is registered.
    """

    def dispatch(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not settings.THREADMEM_OAUTH_REGISTRATION:
            return _error("not_found", REGISTRATION_OFF, status=404)
        return super().dispatch(request, *args, **kwargs)

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        # Every attempt counts, a refused one too: probing the checks costs the same as registering.
        throttle = RegistrationThrottle()
        if not throttle.allow_request(request, self):
            return _too_many(
                "too many registrations from this address: try again later (THREADMEM_OAUTH_REGISTRATION)",
                throttle.retry_after(),
            )
        wait = room_for_a_client()
        if wait:
            return _too_many(
                f"{UNUSED_CLIENTS_MAX} registered clients have never been used: try again once the oldest expires",
                wait,
            )
        return _body_problem(request.body) or super().post(request, *args, **kwargs)


@method_decorator(csrf_exempt, name="dispatch")
class RegistrationManagementView(DynamicClientRegistrationManagementView):
    """RFC 7592: a registered client reads, updates or deletes its registration (with its registration token)."""

    def dispatch(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not settings.THREADMEM_OAUTH_REGISTRATION:
            return _error("not_found", REGISTRATION_OFF, status=404)
        if _text_problem(kwargs.get("client_id", "")):
            # No client_id holds one, and the lookup would hand PostgreSQL a NUL.
            return _error("invalid_token", "Token does not match client_id", status=401)
        refused = _body_problem(request.body) if request.method == "PUT" else None
        return refused or super().dispatch(request, *args, **kwargs)


def _body_problem(body: bytes) -> JsonResponse | None:
    """The 400 that a registration's body earns before the library reads it (which answers bad JSON itself)."""
    if len(body) > MAX_REGISTRATION_BYTES:
        return _error("invalid_client_metadata", f"the metadata passes {MAX_REGISTRATION_BYTES} bytes")
    try:
        data = json.loads(body)
    except ValueError:
        return None
    return _metadata_problem(data) if isinstance(data, dict) else None


def _metadata_problem(data: dict[str, Any]) -> JsonResponse | None:
    """The 400 that client metadata earns before the library sees it, or None."""
    text = _metadata_text_problem(data)
    if text:
        return _error("invalid_redirect_uri" if text.startswith("redirect_uris") else "invalid_client_metadata", text)
    redirect_uris = data.get("redirect_uris")
    if isinstance(redirect_uris, list):
        for uri in redirect_uris:
            problem = redirect_uri_problem(uri)
            if problem:
                return _error("invalid_redirect_uri", problem)
    grant_types = data.get("grant_types", ["authorization_code"])
    if isinstance(grant_types, list) and not set(grant_types) <= GRANT_TYPES:
        other = sorted(str(grant) for grant in set(grant_types) - GRANT_TYPES)
        return _error("invalid_client_metadata", f"only authorization_code and refresh_token are served, not {other}")
    response_types = data.get("response_types", ["code"])
    if isinstance(response_types, list) and response_types != ["code"]:
        return _error("invalid_client_metadata", 'response_types must be ["code"]')
    return None


def _text_problem(value: str) -> str:
    """Why ``value`` may not be client metadata ('' when it may): no database holds NUL or a lone surrogate, and a
    control character in a name or a URI only serves to mislead the owner reading the consent page."""
    problem = text_problem(value)
    if problem:
        return problem
    return "holds a control character" if CONTROL_CHARACTER.search(value) else ""


def _metadata_text_problem(data: Any, name: str = "") -> str:
    """The first field of the metadata (at any depth) whose text cannot be taken, named, or ''."""
    stack: list[tuple[str, Any]] = [(name, data)]
    while stack:
        where, value = stack.pop()
        if isinstance(value, str):
            problem = _text_problem(value)
            if problem:
                return f"{where or 'the metadata'} {problem}"
        elif isinstance(value, dict):
            for key, child in value.items():
                problem = _text_problem(key)
                if problem:
                    return f"a field name {problem}"
                stack.append((f"{where}.{key}" if where else key, child))
        elif isinstance(value, list):
            stack.extend((f"{where}[{index}]", child) for index, child in enumerate(value))
    return ""


def _too_many(description: str, retry_after: int) -> JsonResponse:
    response = _error("too_many_requests", description, status=429)
    response["Retry-After"] = str(retry_after)
    return response


def redirect_uri_problem(uri: Any) -> str:
    """Why ``uri`` may not be a redirect URI ('' when it may): https, or http on a loopback address, no fragment."""
    if not isinstance(uri, str):
        return "each redirect URI must be a string"
    try:
        parts = urlsplit(uri)
        host = parts.hostname or ""
    except ValueError:
        return f"{uri!r} is not a URL"
    if parts.fragment or "#" in uri:
        return f"{uri!r} has a fragment, which a redirect URI must not have"
    if parts.scheme == "https" and host:
        return ""
    if parts.scheme == "http" and host in LOOPBACK_HOSTS:
        return ""
    return f"{uri!r} must be https, or http on a loopback address (127.0.0.1, [::1], localhost)"
