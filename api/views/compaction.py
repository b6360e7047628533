"""Compaction over REST: start one, read a thread's compaction history (contract §4, §6)."""

from __future__ import annotations

from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from api.endpoints import errors, thread_endpoint
from api.serializers import ReadOnlyModelSerializer
from api.views.threads import JSONAPIView, Pagination
from threadmem.features.compaction import compacting
from threadmem.features.compaction import selectors as compaction_selectors
from threadmem.models import Compaction, Thread


class CompactionStartedSerializer(serializers.Serializer):
    task_id = serializers.CharField()
    generation = serializers.IntegerField(help_text="the generation being compacted")
    compaction_id = serializers.IntegerField(source="id")
    status = serializers.ChoiceField(choices=Compaction.Status.choices)


class CompactionSerializer(ReadOnlyModelSerializer):
    requested_by = serializers.SlugRelatedField(
        slug_field="username", read_only=True, allow_null=True, help_text="null: an automatic or isolation compaction"
    )
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


class CompactView(JSONAPIView):
    @thread_endpoint(
        summary="Compact the thread's current generation",
        request=None,  # no body: the thread's current generation is the one compacted
        description=(
            "Starts a compaction task and answers 202 with its task id. A request while one is pending or "
            "running answers with that one (same task_id). A generation with nothing since its summary answers "
            "409. A broker that refuses the task answers 503 and leaves nothing pending. Follow the outcome in "
            "`compactions/`."
        ),
        responses={202: CompactionStartedSerializer, **errors(409, 503)},
        tags=["compaction"],
    )
    def post(self, request: Request, thread: Thread) -> Response:
        compaction = compacting.compaction_request(thread=thread, requested_by=request.user, trigger="api")
        # Without a broker the task ran inline on commit: report where it stands now.
        compaction.refresh_from_db(fields=["status"])
        return Response(CompactionStartedSerializer(compaction).data, status=status.HTTP_202_ACCEPTED)


class CompactionListView(JSONAPIView):
    pagination_class = Pagination

    @thread_endpoint(
        summary="The thread's compaction history, newest first",
        description=(
            "Each compaction with its trigger, when it started and finished, attempts, the failure reason, the "
            "model used (`offline` for the deterministic summarizer), characters sent to the model and characters "
            "of the summary written."
        ),
        responses={200: CompactionSerializer(many=True), **errors(400)},
        tags=["compaction"],
    )
    def get(self, request: Request, thread: Thread) -> Response:
        paginator = self.pagination_class()
        page = paginator.paginate_queryset(compaction_selectors.compaction_list_for(thread=thread), request, view=self)
        return paginator.get_paginated_response(CompactionSerializer(page, many=True).data)
