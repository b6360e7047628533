"""A Kubernetes Secret's values: under ``data:`` (base64) and ``stringData:``, in YAML or JSON."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from threadmem.lib.secrets import shapes
from threadmem.lib.secrets.rule import Found

_DATA_LINE = re.compile(r"^([ \t]*)(?:data|stringData|\"data\"|\"stringData\"):[ \t]*$")
_ENTRY_LINE = re.compile(r"""^([ \t]+)[\w.-]{1,253}:[ \t]*(?:(["']?)([^\n"']{1,100000})\2)?[ \t]*$""")
_DATA_JSON = re.compile(r'"(?:data|stringData)"\s*:\s*\{([^{}]{0,100000})\}')
_JSON_VALUE = re.compile(r'"[^"\n]{1,253}"\s*:\s*"([^"\n]{1,100000})"')


def _width(indent: str) -> int:
    return len(indent.expandtabs(8))


@dataclass(frozen=True)
class KubernetesSecret:
    """The values under ``data:`` (base64) and ``stringData:`` of a Secret, in YAML or JSON."""

    label: str = "kubernetes secret"
    keywords: tuple[str, ...] = (
        *("kind: Secret", '"kind": "Secret"', "kind: 'Secret'", 'kind: "Secret"'),
        *("kind: secret", '"kind": "secret"', "kind: 'secret'", 'kind: "secret"'),
    )
    folded: bool = True
    before: int = 0
    after: int = 0
    whole_text: bool = True
    gate: re.Pattern[str] | None = None
    source: str = "https://kubernetes.io/docs/concepts/configuration/secret/ (gitleaks kubernetes-secret-yaml)"

    def spans(self, text: str, hits: list[tuple[int, int]]) -> Iterator[Found]:
        yield from self._yaml(text)
        for block in _DATA_JSON.finditer(text):
            for value in _JSON_VALUE.finditer(text, *block.span(1)):
                if not shapes.is_placeholder(value.group(1)):
                    yield Found(self.label, *value.span(1))

    def _yaml(self, text: str) -> Iterator[Found]:
        """Every line more indented than a ``data:`` line, up to the first one that is not: its value, or the
        lines of its block scalar (``|``, ``>``)."""
        at, block = 0, None
        for line in text.splitlines(keepends=True):
            body = line.rstrip("\r\n")
            start, at = at, at + len(line)
            if block is None:
                data = _DATA_LINE.match(body)
                block = _width(data.group(1)) if data else None
                continue
            indent = len(body) - len(body.lstrip(" \t"))
            if body.strip() and _width(body[:indent]) <= block:
                data = _DATA_LINE.match(body)
                block = _width(data.group(1)) if data else None
                continue
            entry = _ENTRY_LINE.match(body)
            value = entry.group(3) if entry else body.strip()
            if not value or value in ("|", ">", "|-", ">-") or shapes.is_placeholder(value):
                continue
            offset = entry.start(3) if entry else indent
            yield Found(self.label, start + offset, start + offset + len(value))
