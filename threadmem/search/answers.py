"""The JSON answers of search_memory and message_context_read, and their JSON Schemas.

REST returns these dicts as its bodies and the MCP server returns them as
``structuredContent`` beside the text, so they live here, below both surfaces
(a renderer two surfaces need lives in the domain). The schemas are the MCP
tools' ``outputSchema``; a test holds REST's answers to them.
"""

from __future__ import annotations

from typing import Any

from rest_framework.fields import DateTimeField

from threadmem.search.audit import AuditRead
from threadmem.search.service import SearchResult

# DRF's rendering of a time (its settings and time zone), as the REST serializers render created_at.
_DATETIME = DateTimeField()


def search_result_data(result: SearchResult) -> dict[str, Any]:
    return {
        "text": result.text,
        "literal_hits_total": result.literal_hits_total,
        "literal_hits_shown": result.literal_hits_shown,
        "truncated": result.truncated,
        "hits": [
            {
                "message_id": hit.message_id,
                "session_id": hit.session_id,
                "generation": hit.generation,
                "role": hit.role,
                "field": hit.field,
                "window": hit.window,
                "tool": hit.tool,
                "result_message_ids": list(hit.result_message_ids),
                "call_message_id": hit.call_message_id,
                "result_chars": list(hit.result_chars),
                "arguments": hit.arguments,
                "identical_message_ids": list(hit.identical_message_ids),
            }
            for hit in result.hits
        ],
        "next_cursor": result.next_cursor,
    }


def audit_read_data(read: AuditRead) -> dict[str, Any]:
    message = read.message
    return {
        "id": message.id,
        "channel": message.thread.channel,
        "generation": message.generation,
        "seq": message.seq,
        "role": message.role,
        "kind": message.kind,
        "session_id": message.session_id,
        "tool_calls": message.tool_calls,
        "tool_call_id": message.tool_call_id,
        "model_visible": message.model_visible,
        "isolated": message.isolated,
        "superseded_by": message.superseded_by_id,
        "created_at": _DATETIME.to_representation(message.created_at),
        "content_chars": len(message.content),
        "offset": read.offset,
        "content": read.content,
        "next_offset": read.next_offset,
        "result_message_ids": read.result_message_ids,
        "call_message_id": read.call_message_id,
        "call_tool": read.call_tool,
        "calls": read.calls,
        "text": read.text,
    }


def _object(properties: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": list(properties)}


_STRING = {"type": "string"}
_INTEGER = {"type": "integer"}
_BOOLEAN = {"type": "boolean"}
_NULLABLE_INTEGER = {"type": ["integer", "null"]}
_NULLABLE_STRING = {"type": ["string", "null"]}
_INTEGERS = {"type": "array", "items": _INTEGER}

SEARCH_RESULT_SCHEMA: dict[str, Any] = _object(
    {
        "text": {"type": "string", "description": "exactly what the model reads, at most 12,000 characters"},
        "literal_hits_total": _INTEGER,
        "literal_hits_shown": _INTEGER,
        "truncated": {"type": "boolean", "description": "the whole result was cut at 12,000 characters"},
        "hits": {
            "type": "array",
            "items": _object(
                {
                    "message_id": _INTEGER,
                    "session_id": _STRING,
                    "generation": _INTEGER,
                    "role": _STRING,
                    "field": {"type": "string", "description": "content, or tool_args.<path>"},
                    "window": _STRING,
                    "tool": {**_NULLABLE_STRING, "description": "the tool of the hit's call (contract §9)"},
                    "result_message_ids": {**_INTEGERS, "description": "a tool-argument hit: its call's results"},
                    "call_message_id": {**_NULLABLE_INTEGER, "description": "a hit in a tool result: its call"},
                    "result_chars": {**_INTEGERS, "description": "each result's length, as result_message_ids"},
                    "arguments": {"type": "string", "description": "the call's other arguments in brief"},
                    "identical_message_ids": {
                        **_INTEGERS,
                        "description": "later hits with the same window, listed in this one",
                    },
                }
            ),
        },
        "next_cursor": {**_NULLABLE_STRING, "description": "pass it back as cursor for the next hits; null: none"},
    }
)

AUDIT_READ_SCHEMA: dict[str, Any] = _object(
    {
        "id": _INTEGER,
        "channel": _STRING,
        "generation": _INTEGER,
        "seq": _INTEGER,
        "role": _STRING,
        "kind": _STRING,
        "session_id": _STRING,
        "tool_calls": {
            "type": "array",
            "items": {"type": "object", "properties": {"id": _STRING, "name": _STRING, "arguments": {}}},
        },
        "tool_call_id": _STRING,
        "model_visible": _BOOLEAN,
        "isolated": _BOOLEAN,
        "superseded_by": _NULLABLE_INTEGER,
        "created_at": {"type": "string", "format": "date-time"},
        "content_chars": {"type": "integer", "description": "the length of the whole content"},
        "offset": {"type": "integer", "description": "where this page of content starts"},
        "content": {"type": "string", "description": "the page of content from offset"},
        "next_offset": {"type": ["integer", "null"], "description": "where the next page starts; null at the end"},
        "result_message_ids": _INTEGERS,
        "call_message_id": _NULLABLE_INTEGER,
        "call_tool": {**_NULLABLE_STRING, "description": "a tool result: its call's tool name"},
        "calls": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"id": _STRING, "tool": _STRING, "result_message_ids": _INTEGERS},
            },
            "description": "an assistant's tool calls: id, tool and result_message_ids each",
        },
        "text": {"type": "string", "description": "exactly what the model reads: metadata plus the page"},
    }
)
