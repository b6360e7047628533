"""Tokens: the runs of ASCII letters and digits of a text, and what a term needs of them to occur in a field.

The token index (PostgreSQL with threadmem_search 2.0, whose
``threadmem_tokens`` in pg/threadmem_tokens.c computes them) holds, per
field, a set of lexemes. For each maximal run of ``[A-Za-z0-9]``, lowered:
its first ``TOKEN_CHARS`` characters. For each two runs in a row: their
link ``tsrif/seco``: the first's last ``LINK_TAIL_CHARS`` characters at most,
reversed, the one character between them when it is one of
``LINK_SEPARATORS`` (else ``|``), then the second's first ``LINK_HEAD_CHARS``
at most. Every other character separates runs, whatever it is: punctuation,
spaces and non-ASCII letters alike.

A term occurs in a field only if the field holds certain lexemes, which
makes the index exact (never a missed hit), not just a good guess. For two
runs in a row of the term, the field has the same two runs in a row, except
that the term's first run may end a longer run of the field and its last may
start one; what lies between two runs of the term lies between the field's
(byte for byte: only ASCII terms are served), so the link's middle is known,
and a path's other spelling (``\\srv\\x``) asks for other links than
``/srv/x``. The link's tail is known when the first run is whole in the
term (a separator before it) or has LINK_TAIL_CHARS characters or more, and
its head when the second is whole or has LINK_HEAD_CHARS or more: then the
field holds the link exactly; with the tail known and a short open second
run, a link starting ``tsrif|se``. A first run too short to give the tail
says nothing. The six characters of the first run's end tell ``connection
refused`` (``noitce refu``) from ``function refused`` (``noitcn refu``).

A whole run in no such link is a lexeme of the field. A term that is one run
may sit inside a longer run of the field (``kalomi`` in ``prekalomi``): it
says nothing the index can use.

Links matter: a large field holds most common runs somewhere, so the runs of
``prebak-170.internal`` alone would leave thousands of fields to re-check,
where ``kaberp-170`` and ``071.inte`` leave the few that have the host. One
short link a pair, not the whole pair, keeps the index about twice the
trigram index's size (docs/search.md, "The token index").

Only ASCII terms are served: search folds an ASCII term's case byte by byte,
while a Unicode case mapping could turn a field's non-ASCII letter (the
Kelvin sign) into an ASCII one of the term.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from itertools import pairwise
from typing import NamedTuple

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
    (the index's statistics) is a floor on the share that contain the term,
    which may also sit inside longer runs (``tokens.py`` in search uses it).
    """
    if not term.isascii() or len(term) > TOKEN_CHARS or not _RUN.fullmatch(term):
        return None
    return _cut(term)


def token_query(term: str) -> str | None:
    """The tsquery a field must match to contain ``term``, or None when no lexeme can narrow it.

    ``'kaberp-170' & '071.inte'``: what the term's links and whole runs ask
    of a field (see above). A field too large to index holds
    ``UNINDEXED_QUERY``'s one lexeme instead, and can hold any term: search
    asks for those fields apart (``search/literal/tokens.py`` says why).
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


def term_tokens(terms: Sequence[str]) -> list[TermTokens]:
    """Each term's ``TermTokens``: a search's plan asks of all its terms at once."""
    return [TermTokens(token_query(term), word_lexeme(term)) for term in terms]
