"""Section 10: the resource catalogue, built from the messages themselves.

A resource is a file path (POSIX, ``~/``, Windows), a URL, a host (``user@host``,
a hostname, an IP), a command or an identifier, found in tool-call arguments
and tool results. Each entry says how it was accessed (tool and argument path)
and names the messageIds of its first successful access (a tool call whose
result is not an error) and of its latest access, so the model can go back to
the evidence with ``message_context_read``. The catalogue is a pointer list,
not evidence: no result text is copied into it.

Pure functions over messages in the order of events (``id``, ``role``, ``kind``,
``content``, ``tool_calls``, ``tool_call_id``, ``searchable``): no queries.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from threadmem.features.compaction.patterns import (
    COMMAND_KEYS,
    ERROR_ANYWHERE_RE,
    ERROR_START_RE,
    HOME_PATH_RE,
    HOST_KEYS,
    HOSTNAME_RE,
    IDENTIFIER_KEYS,
    IPV4_RE,
    KNOWN_ROOTS,
    PATH_KEYS,
    RELATIVE_PATH_RE,
    SECRET_WORDS,
    TRAILING_PUNCTUATION,
    UNIX_PATH_RE,
    URL_PASSWORD_RE,
    URL_RE,
    USER_HOST_RE,
    WINDOWS_PATH_RE,
)
from threadmem.lib.jsonleaves import string_leaves

GUIDANCE_TEMPLATE = (
    "To recover earlier experience with a resource, call search_memory(channel={channel}, "
    'query="<resource name/path>"). Results are bounded windows with messageIds for '
    'message_context_read(view="audit").'
)
# Entries listed in one summary; the rest are counted in one line.
CATALOGUE_MAX_ENTRIES = 80
CATALOGUE_MAX_CHARS = 12_000
# Characters of a tool result scanned for resources, and of its head checked for errors.
RESULT_SCAN_CHARS = 20_000
ERROR_HEAD_CHARS = 1_000
NAME_MAX_CHARS = 160
WAYS_SHOWN = 3

KIND_ORDER = ("file", "url", "host", "command", "identifier")

JSON_ERROR_MAX_CHARS = 100_000


def guidance_line(channel: str) -> str:
    """contract §4's closing line; the channel is quoted as a JSON string (so quotes in it stay readable)."""
    return GUIDANCE_TEMPLATE.format(channel=json.dumps(channel, ensure_ascii=False))


def result_is_error(content: str) -> bool:
    """Whether a tool result reports a failure (a heuristic over its head, or its JSON fields)."""
    text = content.lstrip()
    if text.startswith("{") and len(text) <= JSON_ERROR_MAX_CHARS:
        try:
            data = json.loads(text)
        except json.JSONDecodeError:
            data = None
        if isinstance(data, dict):
            if data.get("is_error") is True or data.get("ok") is False or data.get("success") is False:
                return True
            if data.get("error") or data.get("errors"):
                return True
            for key in ("exit_code", "exitCode", "returncode", "return_code", "status_code"):
                code = data.get(key)
                if isinstance(code, int) and not isinstance(code, bool):
                    return code != 0 if key != "status_code" else code >= 400
            return False
    head = text[:ERROR_HEAD_CHARS]
    return bool(ERROR_START_RE.search(head) or ERROR_ANYWHERE_RE.search(head))


@dataclass(frozen=True)
class Access:
    message_id: int
    position: int  # index in the generation's messages: the order of events
    way: str
    ok: bool | None  # None: the call has no result (yet)
    result_id: int | None = None
    # The argument's last key (``file_path``, ``command``), "" for a result's text: what the call did with it.
    key: str = ""


@dataclass
class Resource:
    kind: str
    name: str
    accesses: list[Access] = field(default_factory=list)
    from_arguments: bool = False

    @property
    def ways(self) -> list[str]:
        return list(dict.fromkeys(access.way for access in self.accesses))

    @property
    def first_ok(self) -> Access | None:
        return next((a for a in self.accesses if a.ok), None)

    @property
    def latest(self) -> Access:
        return self.accesses[-1]


def _clean(name: str) -> str:
    name = name.strip()
    while name and name[-1] in TRAILING_PUNCTUATION:
        # Keep a closing bracket that has its opening one ("f(x)" stays whole).
        closing = name[-1]
        opening = {")": "(", "]": "[", "}": "{", ">": "<"}.get(closing)
        if opening and name.count(opening) >= name.count(closing):
            break
        name = name[:-1]
    return name


def _clip(text: str, limit: int = NAME_MAX_CHARS) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _mask(text: str, match: re.Match[str]) -> str:
    return text[: match.start()] + " " * (match.end() - match.start()) + text[match.end() :]


def _unix_path_ok(path: str) -> bool:
    segments = [s for s in path.strip("/").split("/") if s not in ("", ".", "..")]
    if not segments or not any(c.isalpha() for c in path):
        return False
    if len(segments) >= 2:
        return True
    return segments[0] in KNOWN_ROOTS or bool(re.search(r"\.[A-Za-z0-9]{1,10}$", segments[0]))


def scan_text(text: str) -> Iterator[tuple[str, str]]:
    """``(kind, name)`` for every URL, path and host in free text, each span counted once."""
    for pattern, kind in ((URL_RE, "url"), (WINDOWS_PATH_RE, "file"), (USER_HOST_RE, "host")):
        for match in list(pattern.finditer(text)):
            name = _clean(match.group())
            if kind == "url":
                name = URL_PASSWORD_RE.sub(r"\1:***@", name)
            if kind == "file" and len(name) <= 3:
                continue
            if name:
                yield kind, name
            text = _mask(text, match)
    for pattern in (HOME_PATH_RE, UNIX_PATH_RE, RELATIVE_PATH_RE):
        for match in list(pattern.finditer(text)):
            name = _clean(match.group())
            if pattern is UNIX_PATH_RE and not _unix_path_ok(name):
                continue
            if name:
                yield "file", name
            text = _mask(text, match)
    for match in IPV4_RE.finditer(text):
        address = match.group().split(":")[0]
        if all(int(octet) <= 255 for octet in address.split(".")):
            yield "host", match.group()
            text = _mask(text, match)
    for match in HOSTNAME_RE.finditer(text):
        yield "host", _clean(match.group())


def _last_key(path: str) -> str:
    """``files[0].path`` -> ``path``; ``commands[2]`` -> ``commands``."""
    key = path.rsplit(".", 1)[-1]
    return re.sub(r"\[\d+\]$", "", key).lower()


def _is_secret(path: str) -> bool:
    lowered = path.lower()
    return any(word in lowered for word in SECRET_WORDS)


def scan_argument(path: str, value: str) -> Iterator[tuple[str, str]]:
    """Resources in one string leaf of a tool call's arguments, by its key and by its text."""
    if _is_secret(path) or not value.strip():
        return
    key = _last_key(path)
    single_line = "\n" not in value.strip() and len(value) <= 400
    if key in COMMAND_KEYS:
        yield "command", _clip(value.strip().splitlines()[0] if value.strip() else value)
    elif key in PATH_KEYS and single_line and re.search(r"[/\\.~]", value):
        yield "file", value.strip()
    elif key in HOST_KEYS and single_line and " " not in value.strip():
        yield "host", value.strip()
    elif (key in IDENTIFIER_KEYS or key.endswith(("_id", "_name"))) and single_line and len(value) <= 120:
        yield "identifier", value.strip()
    yield from scan_text(value)


def _tool_results(messages: list[Any]) -> dict[str, Any]:
    """The first result message of each tool-call id."""
    results: dict[str, Any] = {}
    for message in messages:
        if message.role == "tool" and message.tool_call_id and message.tool_call_id not in results:
            results[message.tool_call_id] = message
    return results


def _calls_by_id(messages: list[Any]) -> dict[str, str]:
    names = {}
    for message in messages:
        for call in message.tool_calls or []:
            if call.get("id"):
                names[call["id"]] = call.get("name", "")
    return names


def collect_resources(messages: Iterable[Any]) -> list[Resource]:
    """Every resource the searchable messages touched, accesses in the order of events."""
    # Input order is the order of events (a fork's inherited messages come first, with the parent's seqs).
    messages = [m for m in messages if m.searchable]
    results = _tool_results(messages)
    call_names = _calls_by_id(messages)
    found: dict[tuple[str, str], Resource] = {}

    def record(kind: str, name: str, access: Access, *, from_arguments: bool) -> None:
        key = (kind, name if kind in ("command", "identifier") else name.rstrip("/") or name)
        resource = found.get(key)
        if resource is None:
            resource = found[key] = Resource(kind=kind, name=name)
        if resource.accesses and resource.accesses[-1].message_id == access.message_id:
            # One message touching a resource twice is one access.
            if access.way not in resource.ways:
                resource.accesses.append(access)
        else:
            resource.accesses.append(access)
        resource.from_arguments |= from_arguments

    for position, message in enumerate(messages):
        for call in message.tool_calls or []:
            result = results.get(call.get("id") or "")
            ok = None if result is None else not result_is_error(result.content)
            name = call.get("name") or "tool"
            for path, value in string_leaves(call.get("arguments") or {}):
                for kind, resource_name in scan_argument(path, value):
                    access = Access(
                        message_id=message.id,
                        position=position,
                        way=f"{name} (tool_args.{path})" if path else name,
                        ok=ok,
                        result_id=result.id if result is not None else None,
                        key=_last_key(path),
                    )
                    record(kind, resource_name, access, from_arguments=True)
        if message.role == "tool" and message.content:
            tool_name = call_names.get(message.tool_call_id, "") or "a tool"
            ok = not result_is_error(message.content)
            for kind, resource_name in scan_text(message.content[:RESULT_SCAN_CHARS]):
                access = Access(message_id=message.id, position=position, way=f"result of {tool_name}", ok=ok)
                record(kind, resource_name, access, from_arguments=False)
    return list(found.values())


def _evidence(access: Access) -> str:
    text = f"messageId={access.message_id}"
    if access.result_id is not None:
        text += f" (result messageId={access.result_id}{', error' if access.ok is False else ''})"
    elif access.ok is False:
        text += " (error)"
    return text


def resource_line(resource: Resource) -> str:
    ways = resource.ways
    shown = ", ".join(ways[:WAYS_SHOWN]) + (f" and {len(ways) - WAYS_SHOWN} more" if len(ways) > WAYS_SHOWN else "")
    name = _clip(resource.name).replace("`", "'")
    first = resource.first_ok
    if first is not None:
        first_text = f"first successful access: {_evidence(first)}"
    else:
        failed = sum(1 for a in resource.accesses if a.ok is False)
        first_text = (
            f"no successful access ({failed} of {len(resource.accesses)} failed; "
            f"first attempt: {_evidence(resource.accesses[0])})"
        )
    latest = "the same" if resource.latest is first else _evidence(resource.latest)
    return f"- {resource.kind} `{name}` via {shown}; {first_text}; latest: {latest}"


PREVIOUS_LINE_RE = re.compile(r"^- (file|url|host|command|identifier) `(.*?)` ")
EARLIER_MARK = " · earlier generation"


def carried_lines(previous_section: str, *, exclude: set[tuple[str, str]]) -> list[str]:
    """Entries of the previous summary's catalogue for resources this generation did not touch.

    Their messageIds stay valid (search covers every generation), so the
    catalogue keeps pointing at resources used long ago.
    """
    lines = []
    for line in previous_section.splitlines():
        match = PREVIOUS_LINE_RE.match(line)
        if match is None or (match.group(1), match.group(2)) in exclude:
            continue
        lines.append(line if line.endswith(EARLIER_MARK) else line + EARLIER_MARK)
    return lines


def catalogue_text(resources: list[Resource], *, channel: str, previous_section: str = "") -> str:
    """The body of section 10: entries, a count of those left out, and the guidance line."""
    # Deliberate accesses (arguments) first, then the most used, then the oldest.
    ranked = sorted(resources, key=lambda r: (not r.from_arguments, -len(r.accesses), r.accesses[0].position))
    current = [(r, resource_line(r)) for r in ranked]
    shown_keys = {(r.kind, _clip(r.name).replace("`", "'")) for r in resources}
    carried = carried_lines(previous_section, exclude=shown_keys) if previous_section else []
    kept: list[tuple[int, int, str]] = []
    size = 0
    left_out = 0
    for resource, line in current:
        if len(kept) >= CATALOGUE_MAX_ENTRIES or size + len(line) + 1 > CATALOGUE_MAX_CHARS:
            left_out += 1
            continue
        kept.append((KIND_ORDER.index(resource.kind), resource.accesses[0].position, line))
        size += len(line) + 1
    kept.sort()
    lines = [line for _, _, line in kept]
    for line in carried:
        if len(lines) >= CATALOGUE_MAX_ENTRIES or size + len(line) + 1 > CATALOGUE_MAX_CHARS:
            left_out += 1
            continue
        lines.append(line)
        size += len(line) + 1
    if not lines:
        lines.append("No resources were accessed through tools in this generation.")
    if left_out:
        lines.append(f"{left_out} more resources are not listed; search_memory finds them by name.")
    lines.append(guidance_line(channel))
    return "\n".join(lines)
