"""Compaction over REST: start one, read a thread's compaction history (SPEC §4, §6)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from api.serializers import ErrorSerializer
from api.views.threads import CHANNEL_PARAMETER, JSONAPIView, Pagination
from threadmem import selectors
from threadmem.compaction import selectors as compaction_selectors
from threadmem.compaction import service as compaction_service
from threadmem.models import Compaction


class CompactionStartedSerializer(serializers.Serializer):
    task_id = serializers.CharField()
    generation = serializers.IntegerField(help_text="the generation being compacted")
    compaction_id = serializers.IntegerField()
    status = serializers.ChoiceField(choices=Compaction.Status.choices)


class CompactionSerializer(serializers.ModelSerializer):
    requested_by = serializers.SlugRelatedField(slug_field="username", read_only=True)
    summary_message_id = serializers.IntegerField(read_only=True, allow_null=True)

    class Meta:
        model = Compaction
        fields = [
            "id",
            "generation",
            "status",
            "trigger",
            "task_id",
            "requested_by",
            "created_at",
            "started_at",
            "finished_at",
            "attempts",
            "error",
            "model",
            "cut_seq",
            "input_chars",
            "output_chars",
            "summary_message_id",
        ]
        read_only_fields = fields


def started(compaction: Compaction) -> dict[str, Any]:
    return {
        "task_id": compaction.task_id,
        "generation": compaction.generation,
        "compaction_id": compaction.id,
        "status": compaction.status,
    }


class CompactView(JSONAPIView):
    @extend_schema(
        summary="Compact the thread's current generation",
        description=(
            "Starts a compaction task and answers 202 with its task id. A request while one is pending or "
            "running answers with that one (same task_id). A generation with nothing since its summary answers "
            "409. A broker that refuses the task answers 503 and leaves nothing pending. Follow the outcome in "
            "`compactions/`."
        ),
        request=None,
        parameters=[CHANNEL_PARAMETER],
        responses={
            202: CompactionStartedSerializer,
            401: ErrorSerializer,
            404: ErrorSerializer,
            409: ErrorSerializer,
            503: ErrorSerializer,
        },
        tags=["compaction"],
    )
    def post(self, request: Request, channel: str) -> Response:
        thread = selectors.thread_get_for(user=request.user, channel=channel)
        compaction = compaction_service.compaction_request(thread=thread, requested_by=request.user, trigger="api")
        # Without a broker the task ran inline on commit: report where it stands now.
        compaction.refresh_from_db(fields=["status"])
        return Response(started(compaction), status=status.HTTP_202_ACCEPTED)


class CompactionListView(JSONAPIView):
    pagination_class = Pagination

    @extend_schema(
        summary="The thread's compaction history, newest first",
        description=(
            "Each compaction with its trigger, when it started and finished, attempts, the failure reason, the "
            "model used (`offline` for the deterministic summarizer), characters sent to the model and characters "
            "of the summary written."
        ),
        parameters=[CHANNEL_PARAMETER],
        responses={
            200: CompactionSerializer(many=True),
            400: ErrorSerializer,
            401: ErrorSerializer,
            404: ErrorSerializer,
        },
        tags=["compaction"],
    )
    def get(self, request: Request, channel: str) -> Response:
        thread = selectors.thread_get_for(user=request.user, channel=channel)
        paginator = self.pagination_class()
        page = paginator.paginate_queryset(compaction_selectors.compaction_list_for(thread=thread), request, view=self)
        return paginator.get_paginated_response(CompactionSerializer(page, many=True).data)
