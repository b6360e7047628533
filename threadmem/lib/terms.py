"""A search query as the terms search_memory matches (contract §2 "terms").

The whole query comes first (trimmed, surrounding quotes stripped); then each
whitespace-separated word that is at least ``WORD_MIN_CHARS`` long once its
surrounding quotes are stripped. Matching is case-insensitive, so duplicates
are dropped case-insensitively: the first spelling wins.

A path term (a separator and no whitespace, not a URL) is followed by its
spelling with the other separator: a Windows session's tools write
``C:\\app\\src\\x.py`` where its prose, its summary and the model's query say
``src/x.py``. The variant takes a word's place, so a query never searches
more than ``1 + WORD_TERMS_MAX`` terms.
"""

from __future__ import annotations

from collections.abc import Sequence

# Straight and curly, single and double, and backticks.
QUOTE_CHARS = frozenset("\"'`“”‘’")
# Opening quote -> the closing quotes that pair with it around a whole query.
QUOTE_PAIRS = {'"': '"', "'": "'", "`": "`", "“": "”“", "”": "”", "‘": "’‘", "’": "’"}
WORD_MIN_CHARS = 3
# Each term is one more scan of the scope; a long pasted query would otherwise
# multiply the cost of a call. The whole query is always searched; only words
# after this many are not searched on their own.
WORD_TERMS_MAX = 16
# A term served by the trigram index needs a run of three letters or digits:
# pg_trgm extracts nothing from shorter runs at a pattern's open ends, and a
# term without trigrams reads the whole index (seconds over millions of rows).
TRIGRAM_RUN = 3


def strip_surrounding_quotes(text: str) -> str:
    """Strip quote characters from both ends of a word (``"kubectl`` -> ``kubectl``)."""
    start, end = 0, len(text)
    while start < end and text[start] in QUOTE_CHARS:
        start += 1
    while end > start and text[end - 1] in QUOTE_CHARS:
        end -= 1
    return text[start:end]


def whole_query_term(query: str) -> str:
    """The query trimmed, with surrounding quotes stripped while both ends carry a matching pair.

    Only a pair is surrounding: ``echo 'hi'`` keeps its closing quote,
    ``"git push --force"`` and ``“deploy”`` lose both, ``“a” and `b``` keeps all.
    """
    text = query.strip()
    while len(text) >= 2 and text[-1] in QUOTE_PAIRS.get(text[0], ""):
        text = text[1:-1].strip()
    return text


def fold(text: str) -> str:
    """Case folding that keeps every character at its position.

    ``str.lower`` maps one character to one, except U+0130 (capital I with dot
    above), which becomes two; mapping it to ``i`` first keeps positions
    aligned with the original text, as PostgreSQL's case mapping does.
    """
    return text.replace("\u0130", "i").lower()


def fold_each(texts: Sequence[str]) -> list[str]:
    """``fold`` of each text: a statement folds its terms together."""
    return [fold(text) for text in texts]


def separator_variant(term: str) -> str | None:
    """``term`` with the other path separator, when it is a path spelled with one of them."""
    if "://" in term or any(character.isspace() for character in term):
        return None
    if "/" in term and "\\" not in term:
        return term.replace("/", "\\")
    if "\\" in term and "/" not in term:
        return term.replace("\\", "/")
    return None


def query_terms(query: str) -> list[str]:
    """The terms of a query, in the order their hits are listed."""
    terms: list[str] = []
    seen: set[str] = set()
    words = 0

    def add(term: str, *, counted: bool) -> None:
        nonlocal words
        terms.append(term)
        seen.add(fold(term))
        words += counted
        variant = separator_variant(term)
        if variant is not None and fold(variant) not in seen and words < WORD_TERMS_MAX:
            terms.append(variant)
            seen.add(fold(variant))
            words += 1

    whole = whole_query_term(query)
    if whole:
        add(whole, counted=False)
    for raw in query.split():
        word = strip_surrounding_quotes(raw)
        if len(word) < WORD_MIN_CHARS or fold(word) in seen:
            continue
        if words >= WORD_TERMS_MAX:
            break
        add(word, counted=True)
    return terms


def has_trigram_run(term: str) -> bool:
    """Whether ``term`` holds ``TRIGRAM_RUN`` consecutive letters or digits."""
    run = 0
    for char in term:
        run = run + 1 if char.isalnum() else 0
        if run >= TRIGRAM_RUN:
            return True
    return False
