"""What the REST views share: the error answers they document, one-or-many bodies, the endpoints of one thread."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import wraps
from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, PolymorphicProxySerializer, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.serializers import Serializer

from api.serializers import ErrorSerializer
from threadmem.domain import selectors
from threadmem.models import Thread

CHANNEL_PARAMETER = OpenApiParameter(
    "channel",
    OpenApiTypes.STR,
    OpenApiParameter.PATH,
    description="the thread's channel; it may contain '/' and ':' (e.g. slack:C042/1700000000.1), sent as is or as %2F",
)

# Channels are unique per owner: an operator names the owner when several hold the channel (409 otherwise).
OWNER_PARAMETER = OpenApiParameter(
    "owner", OpenApiTypes.STR, description="operators: the thread's owner (username), when several owners hold it"
)

ThreadHandler = Callable[[Any, Request, Thread], Response]


def errors(*codes: int) -> dict[int, type[ErrorSerializer]]:
    """The error answers an endpoint documents: an ErrorSerializer body for each status code."""
    return dict.fromkeys(codes, ErrorSerializer)


def one_or_many(component_name: str, serializer: type[Serializer]) -> PolymorphicProxySerializer:
    """A body that is one ``serializer`` object or a list of them."""
    return PolymorphicProxySerializer(
        component_name=component_name,
        serializers=[serializer, serializer(many=True)],
        resource_type_field_name=None,
        many=False,
    )


def thread_endpoint(
    *,
    responses: dict[int, Any],
    parameters: Sequence[OpenApiParameter] = (),
    withdrawn: bool = False,
    **schema: Any,
) -> Callable[[ThreadHandler], Callable[..., Response]]:
    """A handler under /threads/{channel}/: it is called with the caller's thread of that channel, not the channel.

    Another owner's thread answers 404, as an unknown channel does (``selectors.thread_get_for``), before the
    handler reads anything else. The schema names the channel parameter and those 401 and 404 answers beside
    ``responses``; ``schema`` is the rest of ``extend_schema``'s arguments. ``withdrawn``: a thread whose
    deletion stopped half way is found by the channel it had (for the DELETE that finishes it).
    """

    def decorate(handler: ThreadHandler) -> Callable[..., Response]:
        @wraps(handler)
        def with_thread(view: Any, request: Request, channel: str) -> Response:
            owner = request.query_params.get("owner")
            thread = selectors.thread_get_for(user=request.user, channel=channel, owner=owner, withdrawn=withdrawn)
            return handler(view, request, thread)

        answers = dict(sorted({**responses, **errors(401, 404, 409)}.items()))
        return extend_schema(parameters=[CHANNEL_PARAMETER, OWNER_PARAMETER, *parameters], responses=answers, **schema)(
            with_thread
        )

    return decorate
