"""Imports over REST (contract §11): upload a JSONL file of sessions, read how its import went."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from django.conf import settings
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_field, inline_serializer
from rest_framework import serializers, status
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.parsers import FileUploadParser, MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from api.endpoints import errors
from api.serializers import CHANNEL_PATTERN, ReadOnlyModelSerializer
from threadmem.domain import selectors
from threadmem.domain.services import CHANNEL_MAX_CHARS
from threadmem.errors import InvalidInput, NotFound, PayloadTooLarge
from threadmem.features.compaction.pointer import compaction_pointer
from threadmem.features.imports import capture, uploads
from threadmem.features.imports.catalogue import (
    COMPACT_SOURCE,
    HOOK_FIELD_MAX_CHARS,
    SESSION_CATALOGUE_MAX_CHARS,
    check_hook_fields,
    session_start_catalogue,
    session_thread,
)
from threadmem.features.imports.records import FORMATS
from threadmem.lib.projects import PROJECT_MAX_CHARS
from threadmem.lib.validate import check_text
from threadmem.models import Import

MULTIPART_ENVELOPE_BYTES = 64 * 1024


class ImportSerializer(ReadOnlyModelSerializer):
    class Meta:
        model = Import
        fields = [
            "id",
            "format",
            "status",
            "name",
            "size",
            "channel",
            "channels",
            "lines_read",
            "lines_skipped",
            "messages_imported",
            "messages_known",
            "errors",
            "error",
            "created_at",
            "finished_at",
        ]


class ImportRequest(serializers.Serializer):
    """The upload's form, for the schema (the view reads it as the parsers left it)."""

    # A file part of at least one byte: a plain form field of text, or an empty part (the parser drops it), answers 400.
    file = extend_schema_field({"type": "string", "format": "binary", "minLength": 1})(serializers.FileField)(
        help_text="the JSONL, one record a line"
    )
    format = serializers.ChoiceField(
        choices=list(FORMATS),
        required=False,
        help_text="claude-code, codex, openai or threadmem (an export); default: read from the first record",
    )
    channel = serializers.RegexField(
        CHANNEL_PATTERN,
        required=False,
        max_length=CHANNEL_MAX_CHARS,
        help_text="the thread to import into (one session only)",
    )


class UploadFormatNegotiation(DefaultContentNegotiation):
    """Answers by the Accept header alone: here ``?format=`` names the upload's format (openai, codex …), which
    DRF's URL_FORMAT_OVERRIDE would take for a renderer's and answer 404."""

    settings = SimpleNamespace(URL_FORMAT_OVERRIDE=None)


class ImportListView(APIView):
    parser_classes = [MultiPartParser, FileUploadParser]
    content_negotiation_class = UploadFormatNegotiation

    @extend_schema(
        summary="Import agent sessions from a JSONL upload",
        description=(
            "Multipart `file` (or the raw body) holding Claude Code transcript records, Codex rollout records, "
            "OpenAI chat conversations or a threadmem export (`GET threads/{channel}/export/`), one a line; "
            "`format` (default: read from the first record, Claude Code's when it names no other) and `channel` as "
            "form fields or query parameters. An export restores its thread whole or not at all: a line that cannot be "
            "restored as exported refuses the file (400 naming the lines), an existing channel is never written "
            "to (409), and `isolated` is restored for admins only (403 for an isolated thread; docs/imports.md); "
            "a refused export stores nothing and its import reads `failed`, every bad line in `errors`. Small "
            "uploads import in the request (201); larger ones in a task (202): read `imports/{id}/` for the "
            "outcome. An upload that is not JSONL answers 400 and stores nothing; a channel of another owner "
            "answers 404; an upload over THREADMEM_IMPORT_MAX_BYTES answers 413.\n\n"
            "**Capture** (a hook on another host): the raw body holds the new bytes of one session file, `offset` "
            "the byte they start at and `name` the file's path on the client. They are appended to the server's "
            "copy of the file and what it gained is imported (200, with the copy's new `offset`); a half-written "
            "last line waits for the next bytes. 409 with the server's `offset` when the bytes do not start where "
            "the copy ends; `offset=0` sends the whole file again (a file rewritten on the client)."
        ),
        request={"multipart/form-data": ImportRequest},
        parameters=[
            OpenApiParameter(
                "format",
                OpenApiTypes.STR,
                OpenApiParameter.QUERY,
                enum=list(FORMATS),
                description="the upload's format, as the form field (the form field wins)",
            ),
            OpenApiParameter(
                "channel",
                {"type": "string", "pattern": CHANNEL_PATTERN, "maxLength": CHANNEL_MAX_CHARS},
                OpenApiParameter.QUERY,
                description="the thread to import into, as the form field (the form field wins)",
            ),
            OpenApiParameter(
                "project",
                {"type": "string", "maxLength": PROJECT_MAX_CHARS},
                OpenApiParameter.QUERY,
                description=(
                    "a capture's project: the git root of the session's directory as the hook resolved it on its "
                    "host, recorded on the threads the capture creates (else the session's directory)"
                ),
            ),
        ],
        responses={
            200: OpenApiTypes.OBJECT,
            201: ImportSerializer,
            202: ImportSerializer,
            **errors(400, 401, 403, 404, 409, 413),
        },
        tags=["imports"],
    )
    def post(self, request: Request, filename: str | None = None) -> Response:
        # Refused before the body is read when its declared length already says so (with room for the
        # multipart envelope); uploads.py counts the file's own bytes exactly.
        declared = request.META.get("CONTENT_LENGTH") or ""
        limit = settings.THREADMEM_IMPORT_MAX_BYTES + MULTIPART_ENVELOPE_BYTES
        if declared.isascii() and declared.isdigit() and int(declared) > limit:
            raise PayloadTooLarge(
                f"the upload is over {settings.THREADMEM_IMPORT_MAX_BYTES} bytes, the limit "
                "(THREADMEM_IMPORT_MAX_BYTES)",
                field="file",
            )
        upload = request.data.get("file")
        if upload is None or not hasattr(upload, "chunks"):
            raise InvalidInput("send the JSONL as a multipart field named 'file' (or as the raw body)", field="file")
        if _param(request, "offset"):
            return _capture(request, upload)
        fmt = _param(request, "format")
        channel = _param(request, "channel")
        record = uploads.import_upload(
            owner=request.user, fmt=fmt, name=upload.name or "", chunks=upload.chunks(), channel=channel
        )
        done = record.status in (Import.Status.SUCCEEDED, Import.Status.FAILED)
        return Response(
            ImportSerializer(record).data, status=status.HTTP_201_CREATED if done else status.HTTP_202_ACCEPTED
        )


def _capture(request: Request, upload: Any) -> Response:
    """New bytes of a session file on the client, from ``offset`` (the remote hook's request)."""
    raw = _param(request, "offset")
    if not raw.isascii() or not raw.isdigit() or len(raw) > 18:
        raise InvalidInput("offset must be a whole number of bytes, 0 or more", field="offset")
    try:
        done = capture.capture_append(
            owner=request.user,
            name=_param(request, "name") or upload.name or "",
            offset=int(raw),
            chunks=upload.chunks(),
            fmt=_param(request, "format") or None,
            project=_project(request),
        )
    except capture.OffsetMismatch as exc:
        return Response({"detail": exc.message, "offset": exc.server_offset}, status=status.HTTP_409_CONFLICT)
    report = done.result.report
    return Response(
        {
            "offset": done.offset,
            "channels": report.channels,
            "lines_read": report.lines,
            "lines_skipped": report.skipped,
            "messages_imported": report.messages_new,
            "messages_known": report.messages_known,
            "errors": report.problems,
            "rewritten": bool(done.result.rewritten),
        }
    )


def _project(request: Request) -> str:
    """The capture's ``project``: the git root the hook resolved on its host (the server may not have it)."""
    return check_text(_param(request, "project"), name="project", max_chars=PROJECT_MAX_CHARS).strip()


def _param(request: Request, name: str) -> str:
    value: Any = request.data.get(name) if hasattr(request.data, "get") else None
    value = value or request.query_params.get(name) or ""
    return str(value)


class ImportDetailView(APIView):
    @extend_schema(
        summary="Read an import",
        parameters=[OpenApiParameter("import_id", OpenApiTypes.STR, OpenApiParameter.PATH)],
        responses={200: ImportSerializer, **errors(401, 404)},
        tags=["imports"],
    )
    def get(self, request: Request, import_id: str) -> Response:
        imports = Import.objects.all()
        if not selectors.is_operator(request.user):
            imports = imports.filter(owner=request.user)
        record = (
            imports.filter(pk=int(import_id)).first()
            if import_id.isascii() and import_id.isdigit() and len(import_id) < 19
            else None
        )
        if record is None:
            raise NotFound(f"import {import_id!r} not found")
        return Response(ImportSerializer(record).data)


class SessionCatalogueView(APIView):
    @extend_schema(
        summary="The pointer at session start: the caller's earlier sessions of a project, or after a compaction",
        description=(
            "What a SessionStart hook on another host adds to the new session's context "
            "(`plugin/scripts/threadmem-capture-hook`; `manage.py capture` prints the same locally): the caller's "
            "earlier sessions of the project, newest first (channel, first prompt or title, dates, message count) "
            "and one line saying to call `search_memory` with a channel from it; never their content. The "
            "project: threads whose working directory is `cwd`, or whose session file (as the client named it "
            "when capturing) is in the folder of `transcript_path`; `session_id` (the session starting) is left "
            f"out. `context` is empty when there is none, and at most {SESSION_CATALOGUE_MAX_CHARS} characters. "
            "Only the caller's own threads are listed.\n\n"
            f"With `source={COMPACT_SOURCE}` (the hook after the agent's own compaction, once the hook has sent "
            "what the compaction wrote): where the compacted part of session `session_id` went instead: its "
            "channel and the paths, commands, hosts and URLs its tool calls touched, grouped, each group with the "
            "`search_memory` call that brings one back, those the agent's summary does not mention first; names "
            "only, never content, at most the same number of characters."
        ),
        parameters=[
            OpenApiParameter(
                name, {"type": "string", "maxLength": HOOK_FIELD_MAX_CHARS}, OpenApiParameter.QUERY, description=about
            )
            for name, about in (
                ("cwd", "the hook's cwd: the project's working directory"),
                ("transcript_path", "the hook's transcript_path: the new session's file on the client"),
                ("session_id", "the hook's session_id: the session starting, left out"),
                ("source", f"the hook's source; {COMPACT_SOURCE}: point at the compacted part of session_id"),
            )
        ],
        responses={
            200: inline_serializer(
                "SessionCatalogue", {"context": serializers.CharField(max_length=SESSION_CATALOGUE_MAX_CHARS)}
            ),
            **errors(400, 401),
        },
        tags=["imports"],
    )
    def get(self, request: Request) -> Response:
        params = request.query_params
        source, session_id = params.get("source", ""), params.get("session_id", "")
        check_hook_fields(source=source)
        if source == COMPACT_SOURCE:
            thread = session_thread(owner=request.user, session_id=session_id)
            text = compaction_pointer(thread=thread).text if thread is not None else ""
        else:
            text = session_start_catalogue(
                owner=request.user,
                cwd=params.get("cwd", ""),
                transcript_path=params.get("transcript_path", ""),
                session_id=session_id,
            )
        return Response({"context": text})
