"""The tools' declarations (threadmem.features.tools) as drf-spectacular sees them: a body serializer, query parameters,
and the answers' serializers (``threadmem.features.search.answers``).

Only the OpenAPI document reads these: the views check keys against the declaration and the
domain checks values, so what the schema says and what is refused come from one place; the
answers are rendered by their declaration, which these serializers only describe.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiParameter, extend_schema_field
from rest_framework import serializers

from threadmem.features.search.answers import Key
from threadmem.features.tools import Arg, ToolRequest


def _body_field(name: str, spec: Arg, *, required: bool) -> serializers.Field:
    schema = spec.schema
    common: dict[str, Any] = {"required": required, "help_text": spec.rest_doc}
    if spec.choices:  # a ChoiceField: drf-spectacular names the enum a component
        return serializers.ChoiceField(choices=list(spec.choices), allow_blank=spec.blank, **common)
    if schema.get("type") == "string":
        lengths = {"min_length": schema.get("minLength"), "max_length": schema.get("maxLength")}
        if "pattern" in schema:
            return serializers.RegexField(schema["pattern"], allow_null=spec.nullable, **lengths, **common)
        return serializers.CharField(allow_null=spec.nullable, **lengths, **common)
    # Anything else (one name or a list of them, ...): the declared schema. Its branches are of different
    # types, so oneOf says what anyOf says; the document has always said oneOf.
    if "anyOf" in schema:
        schema = {"oneOf": schema["anyOf"], **{k: v for k, v in schema.items() if k != "anyOf"}}
    field_class = type(f"{name.title()}Field", (serializers.JSONField,), {"__module__": __name__})
    return extend_schema_field(schema)(field_class)(**common)


def request_serializer(request: type[ToolRequest], name: str) -> type[serializers.Serializer]:
    """A JSON body of the tool's arguments, for ``extend_schema(request=...)``."""
    required = set(request.required())
    fields = {key: _body_field(key, spec, required=key in required) for key, spec in request.args().items()}
    return type(name, (serializers.Serializer,), {"__module__": __name__, **fields})


def query_parameters(request: type[ToolRequest], *, exclude: tuple[str, ...] = ()) -> list[OpenApiParameter]:
    """The tool's arguments as query parameters: one or many is the list, sent repeated (``?tool=a&tool=b``)."""
    required = set(request.required())
    parameters = []
    for key, spec in request.args().items():
        if key in exclude:
            continue
        schema, explode = dict(spec.schema), None
        lists = [branch for branch in schema.get("anyOf", ()) if branch.get("type") == "array"]
        if lists:
            schema, explode = lists[0], True
        if spec.blank and "enum" in schema:
            schema["enum"] = [*schema["enum"], ""]
        description = spec.query_doc if spec.query_doc is not None else spec.rest_doc
        parameters.append(
            OpenApiParameter(key, schema, required=key in required, description=description, explode=explode)
        )
    return parameters


def path_parameter(request: type[ToolRequest], key: str) -> OpenApiParameter:
    return OpenApiParameter(key, request.args()[key].schema, OpenApiParameter.PATH)


def _answer_field(key: Key) -> serializers.Field:
    """The serializer field of one answer key, from its JSON Schema."""
    common: dict[str, Any] = {"help_text": key.doc or None}
    if key.items:
        return answer_serializer(key.items, f"{key.name.title().rstrip('s')}Serializer")(many=True, **common)
    schema = key.schema
    types = schema.get("type")
    nullable = isinstance(types, list) and "null" in types
    kind = next((t for t in types if t != "null"), None) if isinstance(types, list) else types
    if kind == "string" and "enum" in schema:
        return serializers.ChoiceField(choices=list(key.choices or schema["enum"]), **common)
    if kind == "string" and schema.get("format") == "date-time":
        return serializers.DateTimeField(**common)
    if kind == "string":
        return serializers.CharField(allow_null=nullable, allow_blank=True, **common)
    if kind == "integer":
        return serializers.IntegerField(allow_null=nullable, **common)
    if kind == "boolean":
        return serializers.BooleanField(**common)
    if kind == "array" and schema.get("items") == {"type": "integer"}:
        return serializers.ListField(child=serializers.IntegerField(), **common)
    field_class = type(f"{key.name.title().replace('_', '')}Field", (serializers.JSONField,), {"__module__": __name__})
    return extend_schema_field(schema)(field_class)(**common)


def answer_serializer(shape: tuple[Key, ...], name: str) -> type[serializers.Serializer]:
    """An answer's shape (``search/answers.py``) as a serializer, for ``extend_schema(responses=...)``."""
    fields = {key.name: _answer_field(key) for key in shape}
    return type(name, (serializers.Serializer,), {"__module__": __name__, **fields})
