"""Agent turns over REST (contract §5 "Agent turns", §6): one call runs one turn.

The loop, the prompt and the error rules live in ``threadmem.features.agent``; this
view checks the body's shape, runs the turn and renders what it stored.
"""

from __future__ import annotations

from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.throttling import ScopedRateThrottle

from api.endpoints import errors, thread_endpoint
from api.serializers import SPACE_CHARS, MessageSerializer
from api.views.threads import JSONAPIView, body_object
from threadmem.domain.render import messages_data
from threadmem.domain.services import ID_FIELD_MAX_CHARS
from threadmem.features import agent
from threadmem.models import Thread

TURN_FIELDS = {"content", "session_id"}


class TurnRequest(serializers.Serializer):
    # Blank content answers 400: at least one character that is not whitespace.
    content = serializers.RegexField(f"[^{SPACE_CHARS}]", help_text="the user's message for this turn")
    session_id = serializers.CharField(
        max_length=ID_FIELD_MAX_CHARS,
        required=False,
        allow_blank=True,
        allow_null=True,
        help_text="stored on every message of the turn",
    )


class TurnResponse(serializers.Serializer):
    answer = serializers.CharField(
        help_text="the model's final answer (or, when the step limit was reached, a note that says so)"
    )
    messages = MessageSerializer(
        many=True,
        help_text=(
            "every message stored during the turn, in order: the user's message, each assistant tool-call "
            "message followed by its tool results, and the answer"
        ),
    )


class TurnView(JSONAPIView):
    # Each turn spends model calls: a leaked token must not spend without bound (THREADMEM_TURNS_RATE).
    throttle_classes = [ScopedRateThrottle]
    throttle_scope = "turns"

    @thread_endpoint(
        summary="Run one agent turn: the model answers, pulling its own memory",
        description=(
            "Appends the user's message, sends the chat model (OPENAI_BASE_URL, THREADMEM_CHAT_MODEL) the system "
            "prompt, the current generation's summary and model-visible messages, and the two memory tools; runs "
            "every tool call the model makes (search_memory defaults to this thread), storing each call and "
            "result as messages, until the model answers or THREADMEM_AGENT_MAX_STEPS model steps have run. "
            "A tool call with bad arguments gets a tool result saying what was wrong. No chat model configured: "
            "503 naming the missing settings, nothing stored. The model server down, timing out or answering "
            "garbage: 502 with the reason; the user's message and finished steps stay stored."
        ),
        request=TurnRequest,
        responses={200: TurnResponse, **errors(400, 413, 429, 502, 503)},
        tags=["agent"],
    )
    def post(self, request: Request, thread: Thread) -> Response:
        body = body_object(request, allowed=TURN_FIELDS)
        result = agent.turn_run(
            thread=thread, user=request.user, content=body.get("content"), session_id=body.get("session_id", "")
        )
        return Response({"answer": result.answer, "messages": messages_data(result.messages)})
