"""The JSON answers of search_memory and message_context_read, each declared once.

A shape is a tuple of ``Key``: a key's name, its JSON Schema, what it says and
where its value comes from. From it come the dicts (``search_result_data``,
``audit_read_data``: REST's bodies and the MCP tools' ``structuredContent``),
the JSON Schemas (the MCP tools' ``outputSchema``) and the REST serializers of
the OpenAPI document (``api/declared.py``, ``answer_serializer``). They live
here, below both surfaces (a renderer two surfaces need lives in the domain);
a test holds REST's answers to the schemas.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from operator import attrgetter
from typing import Any

from rest_framework.fields import DateTimeField

from threadmem.features.search.answer_caps import AUDIT_READ_MAX_CHARS, THREAD_SEARCH_MAX_CHARS
from threadmem.features.search.audit import AuditRead
from threadmem.features.search.search_service import SearchResult
from threadmem.models import Message

# DRF's rendering of a time (its settings and time zone), as the REST serializers render created_at.
_DATETIME = DateTimeField()


@dataclass(frozen=True)
class Key:
    """One key of an answer: its JSON Schema, what it says, and its value read from the answer's source.

    ``value``: how to read it (default: the source's attribute of the same
    name); ``items``: the shape of each object of a list of objects;
    ``choices``: the model's choices behind an ``enum`` (their labels name
    the enum in the OpenAPI document, as the model's own fields do).
    """

    name: str
    schema: dict[str, Any]
    doc: str = ""
    value: Callable[[Any], Any] | None = None
    items: tuple[Key, ...] = ()
    choices: tuple[tuple[str, str], ...] = ()

    def read(self, source: Any) -> Any:
        found = (self.value or attrgetter(self.name))(source)
        if self.items:
            return [shape_data(self.items, item) for item in found]
        return found

    def json_schema(self) -> dict[str, Any]:
        schema = {"type": "array", "items": shape_schema(self.items)} if self.items else dict(self.schema)
        return {**schema, "description": self.doc} if self.doc else schema


def shape_data(shape: tuple[Key, ...], source: Any) -> dict[str, Any]:
    return {key.name: key.read(source) for key in shape}


def shape_schema(shape: tuple[Key, ...]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {key.name: key.json_schema() for key in shape},
        "required": [key.name for key in shape],
    }


STRING = {"type": "string"}
INTEGER = {"type": "integer"}
BOOLEAN = {"type": "boolean"}
NULLABLE_INTEGER = {"type": ["integer", "null"]}
NULLABLE_STRING = {"type": ["string", "null"]}
INTEGERS = {"type": "array", "items": INTEGER}
ROLE = {"type": "string", "enum": list(Message.Role.values)}
ROLES = tuple(Message.Role.choices)


def _integers(name: str) -> Callable[[Any], list[int]]:
    return lambda source: list(getattr(source, name))


HIT: tuple[Key, ...] = (
    Key("message_id", INTEGER),
    Key("session_id", STRING),
    Key("generation", INTEGER),
    Key("role", ROLE, choices=ROLES),
    Key("field", STRING, "content, or tool_args.<path> such as tool_args.files[0].path"),
    Key("window", STRING, "the window as the model reads it, with its … / …[truncated] markers"),
    Key(
        "tool",
        NULLABLE_STRING,
        "the tool of the hit's call (contract §9): a tool-argument hit's call's, a tool result's call's (null: no "
        "call stored); null for other hits",
    ),
    Key(
        "result_message_ids",
        INTEGERS,
        "a tool-argument hit: the messages holding its call's results",
        _integers("result_message_ids"),
    ),
    Key("call_message_id", NULLABLE_INTEGER, "a hit in a tool result: the message holding its call"),
    Key(
        "result_chars",
        INTEGERS,
        "a tool-argument hit: each result's length, as result_message_ids",
        _integers("result_chars"),
    ),
    Key("arguments", STRING, "a tool-argument hit: the call's other arguments in brief ('offset=120 limit=40')"),
    Key(
        "identical_message_ids",
        INTEGERS,
        "later hits with the same window, listed in this one",
        _integers("identical_message_ids"),
    ),
)

SEARCH_RESULT: tuple[Key, ...] = (
    Key("text", STRING, f"exactly what the model reads, at most {THREAD_SEARCH_MAX_CHARS:,} characters"),
    Key(
        "literal_hits_total",
        INTEGER,
        "literal hits counted; in the global scope counting stops at a bound (the text says 'more than')",
    ),
    Key("literal_hits_shown", INTEGER),
    Key("truncated", BOOLEAN, f"the whole result was cut at {THREAD_SEARCH_MAX_CHARS:,} characters"),
    Key("hits", {}, items=HIT),
    Key("next_cursor", NULLABLE_STRING, "pass it back as cursor for the hits left out; null when nothing is left"),
)


def _message(name: str) -> Callable[[AuditRead], Any]:
    return lambda read: getattr(read.message, name)


AUDIT_READ: tuple[Key, ...] = (
    Key("id", INTEGER, value=_message("id")),
    Key("channel", STRING, value=lambda read: read.message.thread.channel),
    Key("generation", INTEGER, value=_message("generation")),
    Key("seq", INTEGER, value=_message("seq")),
    Key("role", ROLE, value=_message("role"), choices=ROLES),
    Key(
        "kind",
        {"type": "string", "enum": list(Message.Kind.values)},
        value=_message("kind"),
        choices=tuple(Message.Kind.choices),
    ),
    Key("session_id", STRING, value=_message("session_id")),
    Key(
        "tool_calls",
        {
            "type": "array",
            "items": {"type": "object", "properties": {"id": STRING, "name": STRING, "arguments": {}}},
        },
        "the message's tool calls as stored: id, name and arguments each",
        _message("tool_calls"),
    ),
    Key("tool_call_id", STRING, value=_message("tool_call_id")),
    Key("model_visible", BOOLEAN, value=_message("model_visible")),
    Key("isolated", BOOLEAN, value=_message("isolated")),
    Key("superseded_by", NULLABLE_INTEGER, value=_message("superseded_by_id")),
    Key(
        "created_at",
        {"type": "string", "format": "date-time"},
        value=lambda read: _DATETIME.to_representation(read.message.created_at),
    ),
    Key(
        "content_chars",
        INTEGER,
        "the length of the whole content, in characters",
        lambda read: len(read.message.content),
    ),
    Key("offset", INTEGER, "where this page of content starts"),
    Key("content", STRING, "the page of content from offset"),
    Key("next_offset", NULLABLE_INTEGER, "where the next page starts; null at the end"),
    Key("result_message_ids", INTEGERS, "an assistant's tool calls: the messages holding their results"),
    Key("call_message_id", NULLABLE_INTEGER, "a tool result: the assistant message holding its call"),
    Key("call_tool", NULLABLE_STRING, "a tool result: its call's tool name"),
    Key(
        "calls",
        {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"id": STRING, "tool": STRING, "result_message_ids": INTEGERS},
            },
        },
        "an assistant's tool calls: id, tool and result_message_ids each",
    ),
    Key(
        "text",
        STRING,
        f"exactly what the model reads: metadata plus the page, at most {AUDIT_READ_MAX_CHARS:,} characters",
    ),
)

SEARCH_RESULT_SCHEMA = shape_schema(SEARCH_RESULT)
AUDIT_READ_SCHEMA = shape_schema(AUDIT_READ)


def search_result_data(result: SearchResult) -> dict[str, Any]:
    return shape_data(SEARCH_RESULT, result)


def audit_read_data(read: AuditRead) -> dict[str, Any]:
    return shape_data(AUDIT_READ, read)
