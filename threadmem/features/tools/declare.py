"""One typed request per memory tool, and what every surface derives from it.

A request is a frozen dataclass; each field's metadata holds an ``Arg``: the JSON Schema of a
value, what the model reads about it, what REST's schema says, MCP's name for it. From the
class come the OpenAI function schema (agent turns, ``/api/v1/tools/``), the MCP input schema
and, in ``api/``, the OpenAPI body and query parameters. Every surface checks a call's keys
against it and builds the request whose fields are the domain function's keywords.

Values (lengths, roles, cursors) are checked once, by ``threadmem.features.search``, which logs the calls
it refuses; the limits declared here are the constants it checks them against.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import MISSING, dataclass
from typing import Any, ClassVar, Self

from threadmem.errors import InvalidInput
from threadmem.lib.validate import OFFENDING_KEY, require_keys


@dataclass(frozen=True)
class Arg:
    """One argument of a tool as every surface shows it."""

    schema: dict[str, Any]  # a value as sent: type, enum, limits (JSON Schema)
    doc: str  # what the model reads (OpenAI and MCP)
    api_doc: str | None = None  # REST's body schema; None: doc
    query_doc: str | None = None  # REST's query parameter; None: api_doc
    mcp_doc: str | None = None  # where MCP differs (an MCP client has no current thread)
    mcp_name: str | None = None  # MCP's spelling (contract §10: messageId)
    nullable: bool = False  # null reads as omitted; REST's schema says so
    blank: bool = False  # "" reads as omitted; REST's schema lists it among the enum's values
    choices: tuple[tuple[str, str], ...] = ()  # the enum's (value, label) pairs, for REST's schema
    integer: bool = False  # a model may send it as a string of digits (``build``'s ``integer``)

    @property
    def rest_doc(self) -> str:
        return self.doc if self.api_doc is None else self.api_doc


def arg(**details: Any) -> dict[str, Arg]:
    """A request field's metadata: ``field(metadata=arg(...))``; a field with no default is required."""
    return {"arg": Arg(**details)}


class ToolRequest:
    """Base of the tool requests (frozen dataclasses with ``arg`` fields)."""

    name: ClassVar[str]  # the tool's name on every surface
    description: ClassVar[str]  # what the model reads about the tool

    @classmethod
    def args(cls) -> dict[str, Arg]:
        """The arguments in declared order: the order of every schema and message."""
        return {f.name: f.metadata["arg"] for f in dataclasses.fields(cls)}  # type: ignore[arg-type]

    @classmethod
    def required(cls) -> list[str]:
        return [f.name for f in dataclasses.fields(cls) if f.default is MISSING]  # type: ignore[arg-type]

    @classmethod
    def optional(cls) -> list[str]:
        return [name for name in cls.args() if name not in cls.required()]

    @classmethod
    def parameters(cls, *, mcp: bool = False) -> dict[str, Any]:
        """The arguments as a JSON Schema object: the model's (OpenAI), or MCP's names and texts."""
        properties = {}
        for name, spec in cls.args().items():
            key = (spec.mcp_name or name) if mcp else name
            doc = (spec.mcp_doc or spec.doc) if mcp else spec.doc
            properties[key] = {**spec.schema, "description": doc}
        required = [((cls.args()[name].mcp_name or name) if mcp else name) for name in cls.required()]
        return {"type": "object", "properties": properties, "required": required, "additionalProperties": False}

    @classmethod
    def function(cls) -> dict[str, Any]:
        """The OpenAI function-calling tool (a chat completion's ``tools`` entry)."""
        return {
            "type": "function",
            "function": {"name": cls.name, "description": cls.description, "parameters": cls.parameters()},
        }

    @classmethod
    def from_call(
        cls,
        arguments: Mapping[str, Any],
        *,
        unknown_message: str,
        error: type[InvalidInput] = InvalidInput,
        unknown_field: str | None = OFFENDING_KEY,
        integer: Callable[[Any, str], int] | None = None,
    ) -> Self:
        """The request of a surface's call: an argument the tool does not declare, or a required one missing,
        refused (``require_keys``); then ``build``. One call, so every surface checks the keys the same way."""
        require_keys(
            arguments,
            cls.args(),
            cls.required(),
            unknown_message=unknown_message,
            unknown_field=unknown_field,
            error=error,
        )
        return cls.build(arguments, integer=integer)

    @classmethod
    def build(cls, arguments: Mapping[str, Any], *, integer: Callable[[Any, str], int] | None = None) -> Self:
        """The request from checked keys: omitted arguments take their defaults; ``integer`` reads integer ones."""
        values = {}
        for name, spec in cls.args().items():
            if name in arguments:
                value = arguments[name]
                values[name] = integer(value, name) if integer is not None and spec.integer else value
        return cls(**values)

    def keywords(self) -> dict[str, Any]:
        """The domain function's keyword arguments."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}  # type: ignore[arg-type]
