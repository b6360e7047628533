"""Secrets replaced by a placeholder that names them: ``redact(text)``, ``redact_arguments(value)``.

The rules (``threadmem/lib/secrets/``, docs/secrets.md lists them and their sources):

- ``detect_secrets.py``: detect-secrets' plugins, their regexes imported from the installed package;
- ``vendors.py``: vendors' token formats (a prefix, an alphabet, a length), each citing the vendor's page;
- ``assignments.py``: a value assigned to a secret-named key;
- ``commands_headers_urls.py``: a password on a command line, an Authorization header, a URL's password;
- ``kubernetes.py``: a Kubernetes Secret's values.

What is replaced is the secret, never the text around it: a key's name, a URL's scheme, user and host, the quotes
around a value stay. Overlapping finds become one placeholder; text already redacted stays as it is.

One scan finds every rule's keywords at once (an Aho-Corasick automaton, built once); each rule then runs only
near its keywords' hits, so text holding none costs that scan alone and no rule's cost grows with a line's length.
"""

from __future__ import annotations

import re
from collections import defaultdict
from typing import Any

from ahocorasick_rs import AhoCorasick, Implementation

from threadmem.lib.secrets import assignments, commands_headers_urls, detect_secrets, kubernetes, vendors
from threadmem.lib.secrets.rule import Detector, Found

PLACEHOLDER = "[redacted: {label}]"
Redaction = Found

RULES: tuple[Detector, ...] = (
    *detect_secrets.RULES,
    *vendors.RULES,
    *commands_headers_urls.RULES,
    assignments.Assignment(),
    kubernetes.KubernetesSecret(),
)


def _variants(keyword: str, folded: bool) -> set[str]:
    return {keyword, keyword.lower(), keyword.upper(), keyword.capitalize()} if folded else {keyword}


def _automaton() -> tuple[AhoCorasick, list[tuple[Detector, ...]], tuple[Detector, ...]]:
    by_keyword: dict[str, list[Detector]] = defaultdict(list)
    for rule in RULES:
        for keyword in rule.keywords:
            for variant in _variants(keyword, rule.folded):
                if rule not in by_keyword[variant]:
                    by_keyword[variant].append(rule)
    keywords = sorted(by_keyword)
    gated = tuple(rule for rule in RULES if not rule.keywords)
    # A DFA: the fastest of the automaton's kinds on session text (docs/secrets.md, "Cost").
    return AhoCorasick(keywords, implementation=Implementation.DFA), [tuple(by_keyword[k]) for k in keywords], gated


_AUTOMATON, _RULES_OF_KEYWORD, _GATED = _automaton()
_SURROGATE = re.compile("[\ud800-\udfff]")
_GENERIC = frozenset({"secret", "password", "token", "cookie"})
_PLACEHOLDER_START = PLACEHOLDER[: PLACEHOLDER.index("{")]


def _in_placeholder(text: str, at: int) -> bool:
    opened = text.rfind(_PLACEHOLDER_START, max(0, at - 40), at)
    return opened >= 0 and text.find("]", opened, at) < 0


def redactions(text: str) -> list[Redaction]:
    """The secrets in ``text``, in order, overlapping finds merged (named by the first, a vendor's before "secret")."""
    if not text:
        return []
    hits_of: dict[int, list[tuple[int, int]]] = {}
    rules: dict[int, Detector] = {}
    try:
        found_keywords = _AUTOMATON.find_matches_as_indexes(text, overlapping=True)
    except UnicodeEncodeError:
        # A lone surrogate (which no UTF-8 holds) stood for by U+FFFD: one character for one, same offsets.
        found_keywords = _AUTOMATON.find_matches_as_indexes(_SURROGATE.sub("\ufffd", text), overlapping=True)
    for index, start, end in found_keywords:
        for rule in _RULES_OF_KEYWORD[index]:
            key = id(rule)
            if key not in hits_of:
                hits_of[key] = []
                rules[key] = rule
            hits_of[key].append((start, end))
    found: list[Redaction] = []
    for key, hits in hits_of.items():
        # Hits come in the order their keywords end: a rule's windows want them by start.
        hits.sort()
        found.extend(rules[key].spans(text, hits))
    for rule in _GATED:
        if rule.gate is not None and rule.gate.search(text):
            found.extend(rule.spans(text, [(0, 0)]))
    if not found:
        return found
    # "[redacted: password] <token>" reads as an assignment to some rules: what is inside a placeholder stays.
    found = [r for r in found if not _in_placeholder(text, r.start)]
    # Of two finds of the same secret, a vendor's label says more than "secret".
    found.sort(key=lambda r: (r.start, -r.end, r.label in _GENERIC))
    merged: list[Redaction] = []
    for redaction in found:
        if merged and redaction.start < merged[-1].end:
            if redaction.end > merged[-1].end:
                merged[-1] = merged[-1]._replace(end=redaction.end)
        else:
            merged.append(redaction)
    return merged


def redact(text: str) -> str:
    """``text`` with each secret replaced by ``[redacted: <what it was>]``; the same object when it holds none."""
    found = redactions(text)
    if not found:
        return text
    parts: list[str] = []
    at = 0
    for label, start, end in found:
        parts += (text[at:start], PLACEHOLDER.format(label=label))
        at = end
    parts.append(text[at:])
    return "".join(parts)


def redact_arguments(value: Any) -> Any:
    """A JSON value with every string leaf redacted (keys stay: they are names); the same object when none changed."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        changed = {key: redact_arguments(child) for key, child in value.items()}
        return changed if any(changed[key] is not child for key, child in value.items()) else value
    if isinstance(value, list):
        items = [redact_arguments(child) for child in value]
        return items if any(new is not old for new, old in zip(items, value, strict=True)) else value
    return value


def redact_tool_calls(tool_calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Tool calls (``[{"id", "name", "arguments"}]``) with their arguments redacted; the same list when none changed."""
    redacted = [
        call
        if (arguments := redact_arguments(call.get("arguments"))) is call.get("arguments")
        else {**call, "arguments": arguments}
        for call in tool_calls
    ]
    return redacted if any(new is not old for new, old in zip(redacted, tool_calls, strict=True)) else tool_calls
