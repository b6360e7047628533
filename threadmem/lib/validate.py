"""Shape checks the surfaces and the services share: allowed keys, storable text, tool calls.

Each raises ``InvalidInput`` (or the subclass a caller names) with a message
a client can act on; none touches the database.
"""

from __future__ import annotations

import json
import math
from collections.abc import Collection, Mapping
from typing import Any

from threadmem.errors import InvalidInput
from threadmem.lib.storable import json_problem, text_problem

# The error's field is the offending key itself (the first unknown one, or the missing one).
OFFENDING_KEY = "<offending key>"


def require_keys(
    arguments: Mapping[str, Any],
    allowed: Collection[str],
    required: Collection[str] = (),
    *,
    unknown_message: str = "unknown fields: {unknown}",
    missing_message: str = "{missing} is required",
    joined_message: str | None = None,
    unknown_field: str | None = OFFENDING_KEY,
    missing_field: str | None = OFFENDING_KEY,
    error: type[InvalidInput] = InvalidInput,
) -> None:
    """Refuse ``arguments`` with a key outside ``allowed`` or without one of ``required``.

    The messages are templates over ``{unknown}``, ``{allowed}`` and
    ``{missing}`` (sorted names, comma-separated). Unknown keys are reported
    before missing ones; with ``joined_message`` (a template over
    ``{problems}``) both are reported in one error, joined by "; ".
    """
    unknown = sorted(set(arguments) - set(allowed))
    missing = sorted(set(required) - set(arguments))
    names = {"unknown": ", ".join(unknown), "allowed": ", ".join(sorted(allowed)), "missing": ", ".join(missing)}
    if joined_message is not None and (unknown or missing):
        problems = [unknown_message.format(**names)] if unknown else []
        problems += [missing_message.format(**names)] if missing else []
        raise error(joined_message.format(problems="; ".join(problems)), field=unknown_field)
    if unknown:
        field = unknown[0] if unknown_field == OFFENDING_KEY else unknown_field
        raise error(unknown_message.format(**names), field=field)
    if missing:
        field = missing[0] if missing_field == OFFENDING_KEY else missing_field
        raise error(missing_message.format(**names), field=field)


def check_text(value: Any, *, name: str, max_chars: int | None = None, allow_empty: bool = True) -> str:
    """``value`` as storable text (None reads as ""), or InvalidInput naming ``name``."""
    if value is None:
        value = ""
    if not isinstance(value, str):
        raise InvalidInput(f"{name} must be a string", field=name)
    problem = text_problem(value)
    if problem:
        raise InvalidInput(f"{name} {problem}", field=name)
    if not allow_empty and not value.strip():
        raise InvalidInput(f"{name} must not be empty", field=name)
    if max_chars is not None and len(value) > max_chars:
        raise InvalidInput(f"{name} is longer than {max_chars} characters", field=name)
    return value


def _finite_float(text: str) -> float:
    number = float(text)
    if not math.isfinite(number):
        raise ValueError(f"{text} is out of range for a JSON number")
    return number


def _not_a_number(text: str) -> None:
    raise ValueError(f"{text} is not a JSON value")


def _parse_arguments(text: str, *, where: str, name: str) -> Any:
    """String-form arguments (the OpenAI wire shape) as strict JSON: no NaN, no infinities."""
    if not text.strip():
        return {}
    try:
        return json.loads(text, parse_float=_finite_float, parse_constant=_not_a_number)
    except json.JSONDecodeError as exc:
        raise InvalidInput(f"{where}.arguments is not valid JSON: {exc.msg}", field=name) from None
    except ValueError as exc:  # a non-finite number, or an integer past Python's digit limit
        raise InvalidInput(f"{where}.arguments is not valid JSON: {exc}", field=name) from None
    except RecursionError:
        raise InvalidInput(f"{where}.arguments nests too deeply", field=name) from None


def check_tool_calls(value: Any, *, name: str, id_max_chars: int) -> list[dict[str, Any]]:
    """A message's tool calls as ``[{id, name, arguments}]``, from that shape or the OpenAI wire shape."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise InvalidInput(f"{name} must be a list of {{id, name, arguments}} objects", field=name)
    calls = []
    for index, call in enumerate(value):
        where = f"{name}[{index}]"
        if not isinstance(call, dict):
            raise InvalidInput(f"{where} must be an object with id, name and arguments", field=name)
        require_keys(
            call,
            {"id", "name", "arguments", "type", "function"},
            unknown_message=f"{where} has unknown keys: {{unknown}}",
            unknown_field=name,
        )
        # Accept the OpenAI wire shape too: {"id", "type": "function", "function": {"name", "arguments": "<json>"}}.
        function = call.get("function")
        if function is not None:
            if not isinstance(function, dict):
                raise InvalidInput(f"{where}.function must be an object", field=name)
            call_name, arguments = function.get("name"), function.get("arguments")
        else:
            call_name, arguments = call.get("name"), call.get("arguments")
        call_id = call.get("id") or ""
        if not isinstance(call_id, str) or len(call_id) > id_max_chars:
            raise InvalidInput(f"{where}.id must be a string of at most {id_max_chars} characters", field=name)
        if not isinstance(call_name, str) or not call_name.strip() or len(call_name) > id_max_chars:
            raise InvalidInput(f"{where}.name must be a non-empty string", field=name)
        if arguments is None:
            arguments = {}
        if isinstance(arguments, str):
            arguments = _parse_arguments(arguments, where=where, name=name)
        if not isinstance(arguments, dict):
            raise InvalidInput(f"{where}.arguments must be a JSON object", field=name)
        for part, problem in (("id", text_problem(call_id)), ("name", text_problem(call_name))):
            if problem:
                raise InvalidInput(f"{where}.{part} {problem}", field=name)
        problem = json_problem(arguments)
        if problem:
            raise InvalidInput(f"{where}.arguments {problem}", field=name)
        calls.append({"id": call_id, "name": call_name, "arguments": arguments})
    return calls
