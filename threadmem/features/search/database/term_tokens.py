"""What the token index can tell of a term: the lexemes threadmem_tokens (pg/threadmem_tokens.c) gives a field,
those a term needs (the token grammar), and the share of fields a common word is in (the index's statistics).

A global search's plan asks it of its terms at once (``term_tokens``).
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Sequence
from itertools import pairwise
from typing import NamedTuple

from threadmem.domain.db import reading as connection  # where reads go now (the primary outside a model-facing read)
from threadmem.features.search.answer_caps import SEARCH_COUNT_LIMIT

# How long a connection keeps the index statistics it read (common_words):
# they change only when ANALYZE runs, after large batches.
COMMON_WORDS_SECONDS = 60.0
_COMMON_WORDS_SQL = (
    "SELECT s.most_common_elems::text::text[], s.most_common_elem_freqs, "
    "(SELECT c.reltuples FROM pg_class c WHERE c.oid = to_regclass('threadmem_message')) "
    "FROM pg_stats s WHERE s.schemaname = current_schema() AND s.tablename = 'message_content_tokens'"
)


def common_words() -> dict[str, float]:
    """The lexemes of the content token index held by so many fields that reading newest first wins, with
    their shares of the fields.

    A word in a share ``f`` of N fields costs the newest-first read about
    (SEARCH_COUNT_LIMIT + 1) / f fields and the index about f * N of them to
    re-check and sort, so reading newest first costs less from
    f = sqrt((SEARCH_COUNT_LIMIT + 1) / N). The shares come from the
    statistics ANALYZE keeps of the index's expression (PostgreSQL's most
    common elements of a tsvector). Read once per COMMON_WORDS_SECONDS per
    connection.
    """
    cached = getattr(connection, "threadmem_common_words", None)
    if cached is not None and cached[0] > time.monotonic():
        return cached[1]
    # On the driver's cursor, as the capabilities' probe: a catalogue read once a minute, not a search's statement.
    connection.ensure_connection()
    with connection.connection.cursor() as cursor:
        cursor.execute(_COMMON_WORDS_SQL)
        found = cursor.fetchone()
    words: dict[str, float] = {}
    if found is not None and found[0] and found[2] and found[2] > 0:
        lexemes, shares, fields = found
        least = math.sqrt((SEARCH_COUNT_LIMIT + 1) / fields)
        words = {lexeme: share for lexeme, share in zip(lexemes, shares, strict=False) if share >= least}
    connection.threadmem_common_words = (time.monotonic() + COMMON_WORDS_SECONDS, words)
    return words


# The token grammar: the lexemes threadmem_tokens (pg/threadmem_tokens.c) gives a field, and those a term needs of
# one (docs/search.md, "The token index", says why each rule keeps the index exact). A field's lexemes: each
# maximal run of ASCII letters and digits, lowered and cut to TOKEN_CHARS, and for each two runs in a row their
# link ``tsrif/seco``: the first's last LINK_TAIL_CHARS characters at most, reversed, the one character between
# them when it is one of LINK_SEPARATORS (else LINK), the second's first LINK_HEAD_CHARS at most. Any other
# character, a non-ASCII letter too, separates runs. A term's first run may end a longer run of the field and
# its last may start one, so a term asks for a link only where it shows the link's tail and head (a prefix when
# the head is short and open), and for each whole run in no link. Only ASCII terms are served.

# A run longer than this is cut to it, in the index and in the query alike.
TOKEN_CHARS = 32
# A link: the first run's end (this many characters at most, reversed), the one character between the runs
# when it is one of LINK_SEPARATORS (else LINK), the second's start.
LINK = "|"
LINK_SEPARATORS = " ./\\-_:"
LINK_TAIL_CHARS = 6
LINK_HEAD_CHARS = 4
# A field whose lexemes would fill a tsvector (1 MB) is indexed as this one
# lexeme instead, whose fields every token branch also reads: such fields are
# always re-checked, never missed. No run of letters or digits can be it.
UNINDEXED_TOKEN = "!all"
# The tsquery of the fields indexed as UNINDEXED_TOKEN, which every term's candidates include.
UNINDEXED_QUERY = f"'{UNINDEXED_TOKEN}'"
# The fewest bytes of distinct lexemes that mark a field UNINDEXED_TOKEN (the tsvector's limit is 1 MB).
UNINDEXED_BYTES = 500_000

_RUN = re.compile(r"[A-Za-z0-9]+")


def _cut(run: str) -> str:
    return run.lower()[:TOKEN_CHARS]


def _tail(run: str) -> str:
    return run.lower()[::-1][:LINK_TAIL_CHARS]


def _link(first: str, between: str, second: str) -> str:
    middle = between if len(between) == 1 and between in LINK_SEPARATORS else LINK
    return f"{_tail(first)}{middle}{second.lower()[:LINK_HEAD_CHARS]}"


def _quoted(lexeme: str) -> str:
    """A lexeme as a tsquery operand: quoted, its backslashes escaped."""
    return "'" + lexeme.replace("\\", "\\\\") + "'"


def field_tokens(text: str) -> set[str]:
    """The lexemes of ``text`` as the index holds them (the reference for pg/threadmem_tokens.c)."""
    matches = list(_RUN.finditer(text))
    lexemes = {_cut(match.group()) for match in matches}
    lexemes.update(
        _link(first.group(), text[first.end() : second.start()], second.group()) for first, second in pairwise(matches)
    )
    if sum(len(lexeme) for lexeme in lexemes) >= UNINDEXED_BYTES:
        return {UNINDEXED_TOKEN}
    return lexemes


def word_lexeme(term: str) -> str | None:
    """The lexeme every field holding ``term`` as a whole run has, when ``term`` is one run of at most TOKEN_CHARS.

    Such a field contains the term, so the share of fields holding the lexeme
    (the index's statistics, ``common_words``) is a floor on the share that
    contain the term, which may also sit inside longer runs.
    """
    if not term.isascii() or len(term) > TOKEN_CHARS or not _RUN.fullmatch(term):
        return None
    return _cut(term)


def token_query(term: str) -> str | None:
    """The tsquery a field must match to contain ``term``, or None when no lexeme can narrow it.

    ``'kaberp-170' & '071.inte'``: what the term's links and whole runs ask
    of a field (the token grammar above). A field too large to index holds
    ``UNINDEXED_QUERY``'s one lexeme instead, and can hold any term: search
    asks for those fields apart (``TOKEN_CANDIDATES``).
    Exact lexemes come alone when there are any: a prefix makes the index
    read every lexeme that starts with it, with all their fields, where an
    exact one skips through its list. A lexeme holds letters, digits, ``|``
    and LINK_SEPARATORS: quoted, with its backslashes escaped.
    """
    if not term.isascii():
        return None
    matches = list(_RUN.finditer(term))
    runs = [match.group() for match in matches]
    whole = [match.start() > 0 and match.end() < len(term) for match in matches]
    exact: list[str] = []
    prefixes: list[str] = []
    linked: set[int] = set()
    for index in range(len(runs) - 1):
        first, second = runs[index], runs[index + 1]
        if not whole[index] and len(first) < LINK_TAIL_CHARS:
            continue  # the field's run may be longer at its start: the link's tail is unknown
        link = _link(first, term[matches[index].end() : matches[index + 1].start()], second)
        if whole[index + 1] or len(second) >= LINK_HEAD_CHARS:
            exact.append(_quoted(link))
        else:  # the field's run may be longer at its end: its link holds more of it
            prefixes.append(f"{_quoted(link)}:*")
        linked.update((index, index + 1))
    exact += [_quoted(_cut(run)) for index, run in enumerate(runs) if whole[index] and index not in linked]
    lexemes = exact or prefixes
    if not lexemes:
        return None
    return " & ".join(dict.fromkeys(lexemes))


class TermTokens(NamedTuple):
    """What the token index can tell of one term."""

    query: str | None  # token_query(term)
    word: str | None  # word_lexeme(term)
    share: float | None  # the word's share of fields when the statistics call it common (common_words)


def term_tokens(terms: Sequence[str], *, shares: bool) -> list[TermTokens]:
    """Each term's ``TermTokens``: a search's plan asks of all its terms at once.

    ``shares``: give the common words' shares (``common_words``, read only when some term is a word); without
    it every ``share`` is None.
    """
    words = [word_lexeme(term) for term in terms]
    common = common_words() if shares and any(word is not None for word in words) else {}
    return [
        TermTokens(token_query(term), word, common.get(word) if word is not None else None)
        for term, word in zip(terms, words, strict=True)
    ]
