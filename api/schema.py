"""Schema post-processing: what drf-spectacular cannot derive from the serializers."""

from __future__ import annotations

from typing import Any

from api.serializers import SPACE_CHARS
from threadmem.domain.scope import GLOBAL_CHANNEL
from threadmem.lib.terms import TRIGRAM_RUN

# Bodies whose view refuses a key it does not know (``require_keys``); a multipart form ignores extra fields.
OPEN_BODIES = {"ImportRequest"}

# Query parameters whose empty value reads as omitted (threads.Pagination, memory._offset).
EMPTY_AS_OMITTED = {"page", "page_size", "offset"}

# What the domain refuses across fields, which no serializer field can say: each body's extra keywords.
# JSON Schema reads "properties" only where the key is present, so an absent key satisfies a branch on it.
BODY_RULES: dict[str, dict[str, Any]] = {
    # "nothing to change" (400).
    "PatchedThreadUpdateRequest": {"minProperties": 1},
    # A tool call names no other keys (the OpenAI wire shape's type and function are read too, not documented).
    "ToolCall": {"additionalProperties": False},
    # A PATCH's body, but isolated is what it changes ("send isolated: true or false").
    "PatchedMessageIsolationRequest": {"required": ["isolated"]},
    "MessageRequest": {
        "allOf": [
            # services.message_parse: "needs content or tool_calls".
            {
                "anyOf": [
                    {"required": ["content"], "properties": {"content": {"type": "string", "minLength": 1}}},
                    {"required": ["tool_calls"], "properties": {"tool_calls": {"type": "array", "minItems": 1}}},
                ]
            },
            # "tool_calls are only allowed on assistant messages".
            {
                "anyOf": [
                    {"properties": {"role": {"enum": ["assistant"]}}},
                    {"properties": {"tool_calls": {"maxItems": 0}}},
                ]
            },
        ]
    },
    # search_memory without a channel (or with the global one) needs a run of letters or digits in the query:
    # the GET form's query parameters cannot say so, its description does.
    "SearchRequest": {
        "anyOf": [
            {
                "required": ["channel"],
                # A channel of whitespace only reads as none.
                "properties": {
                    "channel": {"type": "string", "pattern": f"[^{SPACE_CHARS}]", "not": {"enum": [GLOBAL_CHANNEL]}}
                },
            },
            {"properties": {"query": {"pattern": f"[\\p{{L}}\\p{{N}}]{{{TRIGRAM_RUN}}}"}}},
        ]
    },
}


def closed_request_bodies(result: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
    """Mark every JSON request body ``additionalProperties: false``: the views answer 400 to an unknown key.

    Then add ``BODY_RULES``, and ``minItems: 1`` to a batch of messages ("the batch is empty"); a body that
    cannot be empty (required keys, or one or many messages) is itself required: no body answers 400 too.
    ``EMPTY_AS_OMITTED`` parameters allow an empty value.
    """
    schemas = result.get("components", {}).get("schemas", {})
    for name, component in schemas.items():
        if name.endswith("Request") and name not in OPEN_BODIES and component.get("type") == "object":
            component["additionalProperties"] = False
        component.update(BODY_RULES.get(name, {}))
    for branch in schemas.get("MessageAppend", {}).get("oneOf", ()):
        if branch.get("type") == "array":
            branch["minItems"] = 1
    for operation in (op for path in result.get("paths", {}).values() for op in path.values()):
        for parameter in operation.get("parameters", ()):
            if parameter["in"] == "query" and parameter["name"] in EMPTY_AS_OMITTED:
                parameter["allowEmptyValue"] = True
        for content in operation.get("requestBody", {}).get("content", {}).values():
            body = schemas.get(content["schema"].get("$ref", "").rsplit("/", 1)[-1], {})
            if {"required", "minProperties", "oneOf"} & body.keys():
                operation["requestBody"]["required"] = True
    return result
