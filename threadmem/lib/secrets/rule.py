"""A rule: where it may match (its keywords), what it matches, and what of a match is the secret.

Every rule names the literals any match holds (``keywords``). One scan of a text finds every keyword of every
rule at once (an Aho-Corasick automaton, ``lib/redact.py``); a rule runs only where one of its keywords is, and
only in a window around it (``before``/``after`` characters), so no rule's cost grows with the length of the text
and text without any keyword costs that one scan. A rule whose pattern is another project's (detect-secrets')
runs over the whole text instead, once, when a keyword is there (``whole_text``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import NamedTuple, Protocol

Span = tuple[int, int]
SpanOf = Callable[[str, re.Match[str]], Span | None]


class Found(NamedTuple):
    """One secret found: what it is (the placeholder's label) and where it is in the text."""

    label: str
    start: int
    end: int


class Detector(Protocol):
    label: str
    keywords: tuple[str, ...]
    # Keywords match as written, and also lowered, UPPERED and Capitalized.
    folded: bool
    # The window around a keyword's hit a match may lie in; ``whole_text``: anywhere, the rule runs once a text.
    before: int
    after: int
    whole_text: bool
    # For a rule with no keyword (its shape has no literal): a regex any text holding a match passes.
    gate: re.Pattern[str] | None

    def spans(self, text: str, hits: list[Span]) -> Iterator[Found]:
        """The secrets near the keywords found at ``hits`` (in order; anywhere, for a whole-text rule)."""
        ...


# --- what of a match is the secret ---------------------------------------------------------------------------


def whole(text: str, match: re.Match[str]) -> Span:
    return match.span()


def group(number: int | str) -> SpanOf:
    def span(text: str, match: re.Match[str]) -> Span | None:
        start, end = match.span(number)
        return (start, end) if start >= 0 else None

    return span


def token(rest: str, number: int | str = 0) -> SpanOf:
    """The match (or its group) and the characters of ``rest`` after it: a pattern that matches a token's start."""
    tail = re.compile(rest)

    def span(text: str, match: re.Match[str]) -> Span | None:
        start, end = match.span(number)
        if start < 0:
            return None
        return start, tail.match(text, end).end()  # type: ignore[union-attr]  # `*` always matches

    return span


def stripped(chars: str) -> SpanOf:
    """The match without the delimiters the pattern matches around the token."""

    def span(text: str, match: re.Match[str]) -> Span | None:
        start, end = match.span()
        while start < end and text[start] in chars:
            start += 1
        while end > start and text[end - 1] in chars:
            end -= 1
        return (start, end) if start < end else None

    return span


def after(lead: str) -> SpanOf:
    """The match after its literal ``lead`` (a name that says what the value is: it stays)."""

    def span(text: str, match: re.Match[str]) -> Span:
        start, end = match.span()
        return start + len(lead), end

    return span


def checked(span: SpanOf, accept: Callable[[str], bool]) -> SpanOf:
    """``span``, when ``accept`` takes the secret it covers."""

    def checked_span(text: str, match: re.Match[str]) -> Span | None:
        found = span(text, match)
        return found if found is not None and accept(text[found[0] : found[1]]) else None

    return checked_span


@dataclass(frozen=True)
class Rule:
    """A pattern, found near its keywords, with what of a match it replaces and where its shape is published."""

    label: str
    pattern: re.Pattern[str]
    keywords: tuple[str, ...]
    span: SpanOf = whole
    folded: bool = False
    before: int = 0
    after: int = 256
    whole_text: bool = False
    gate: re.Pattern[str] | None = None
    source: str = ""

    def spans(self, text: str, hits: list[Span]) -> Iterator[Found]:
        for start, end in [(0, len(text))] if self.whole_text else windows(hits, self.before, self.after, len(text)):
            for match in self.pattern.finditer(text, start, end):
                found = self.span(text, match)
                if found is not None and found[0] < found[1]:
                    yield Found(self.label, *found)


def windows(hits: list[Span], before: int, after: int, size: int) -> list[Span]:
    """The windows around ``hits``, overlapping ones joined: a text is read at most once per rule."""
    joined: list[Span] = []
    for hit, hit_end in hits:
        start, end = max(0, hit - before), min(size, hit_end + after)
        if joined and start <= joined[-1][1]:
            joined[-1] = (joined[-1][0], max(end, joined[-1][1]))
        else:
            joined.append((start, end))
    return joined


def vendor(label: str, keywords: str | tuple[str, ...], pattern: str, source: str, **options: object) -> Rule:
    """A vendor's token: a prefix (the keyword) and a fixed alphabet and length, bounded by non-token characters.

    ``after`` (256 unless given) must reach past the longest match the pattern allows after its keyword
    (tests/lib/test_secret_rules.py holds every vendor's to it).
    """
    keywords = (keywords,) if isinstance(keywords, str) else keywords
    return Rule(label=label, pattern=re.compile(pattern), keywords=keywords, source=source, **options)  # type: ignore[arg-type]
