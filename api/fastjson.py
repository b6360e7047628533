"""orjson for the ingest hot path: the stdlib json module (parsing the body,
rendering the stored messages back) was a large share of a batch append, and
orjson does the same work several times faster (docs/benchmarks.md, "Ingest")."""

from __future__ import annotations

import json
from typing import Any

import orjson
from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser
from rest_framework.renderers import JSONRenderer
from rest_framework.utils.encoders import JSONEncoder

from threadmem.lib.storable import json_clipped

_fallback = JSONEncoder()


def _has_rounded_integer(value: Any) -> bool:
    """Whether orjson read a number in ``value`` as a float past the 64-bit integers (it does so silently)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, float):
            if abs(item) >= 2**63 and item.is_integer():
                return True
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


def _rounded_integer_in_arguments(data: Any) -> bool:
    """Whether a message's tool-call arguments (the only numbers an append keeps) hold such a float.

    Only the arguments are walked: a whole 500-message batch would cost more than parsing it.
    """
    for message in data if isinstance(data, list) else [data]:
        calls = message.get("tool_calls") if isinstance(message, dict) else None
        for call in calls if isinstance(calls, list) else ():
            function = call.get("function") if isinstance(call, dict) else None  # the OpenAI wire shape
            for arguments in (call.get("arguments") if isinstance(call, dict) else None, function):
                if _has_rounded_integer(arguments):
                    return True
    return False


def _refuse_constant(name: str) -> None:
    raise ValueError(f"{name} is not a JSON value")


class FastJSONParser(JSONParser):
    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> Any:
        body = stream.read()
        try:
            data = orjson.loads(body)
        except orjson.JSONDecodeError as exc:
            raise ParseError(f"JSON parse error - {exc}") from None
        if not _rounded_integer_in_arguments(data):
            return data
        # Read again exactly, so the checks after parsing see the integer as sent and refuse it
        # (storable.json_problem) rather than store a rounded float.
        try:
            return json.loads(body, parse_constant=_refuse_constant)
        except (ValueError, RecursionError) as exc:
            raise ParseError(f"JSON parse error - {exc}") from None


class SafeJSONParser(JSONParser):
    """DRF's JSON parser, with a body nested past Python's recursion limit answered as a parse error (400)."""

    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> Any:
        try:
            return super().parse(stream, media_type, parser_context)
        except RecursionError:
            raise ParseError("JSON parse error - the body nests too deeply") from None


class FastJSONRenderer(JSONRenderer):
    def render(self, data: Any, accepted_media_type: str | None = None, renderer_context: Any = None) -> bytes:
        if data is None:
            return b""
        # Lazy translation strings, decimals and the like go through DRF's own encoder.
        try:
            return orjson.dumps(data, default=_fallback.default)
        except orjson.JSONEncodeError:
            # A value nested past orjson's limit or an integer outside 64 bits, stored before appends refused one.
            return orjson.dumps(json_clipped(data), default=_fallback.default)
