"""Tokens: the runs of ASCII letters and digits of a text, and what a term needs of them to occur in a field.

The token index (migration 0014: PostgreSQL with threadmem_search, whose
``threadmem_tokens`` in pg/threadmem_tokens.c computes them) holds, per
field, a set of lexemes: each maximal run of ``[A-Za-z0-9]``, lowered and
cut to ``TOKEN_CHARS`` characters, and for each two runs in a row the pair
``first|second``. Every other character separates runs, whatever it is:
punctuation, spaces and non-ASCII letters alike.

A term occurs in a field only if the field holds certain lexemes, which
makes the index exact (never a missed hit), not just a good guess:

* a run of the term with a separator on both sides in the term is a whole
  run of the field at that occurrence, and two such runs in a row of the
  term are a pair of the field;
* the term's last run, when the term ends in a letter or digit, starts a run
  of the field: after a whole run, a pair with that prefix;
* a run at the term's start may end a longer run of the field, and a term
  that is one run may sit inside one (``kalomi`` in ``prekalomi``): they say
  nothing the index can use.

Pairs matter: a large field holds most common runs somewhere, so the runs of
``prebak-170.internal`` alone would leave thousands of fields to re-check,
where ``170|internal`` leaves the few that have the host.

Only ASCII terms are served: search folds an ASCII term's case byte by byte,
while a Unicode case mapping could turn a field's non-ASCII letter (the
Kelvin sign) into an ASCII one of the term.
"""

from __future__ import annotations

import re
from itertools import pairwise

# A run longer than this is cut to it, in the index and in the query alike.
TOKEN_CHARS = 32
# Joins the two runs of a pair: not a letter or digit, so no run holds it.
PAIR = "|"
# A field whose lexemes would fill a tsvector (1 MB) is indexed as this one
# lexeme instead, which every token query also asks for: such fields are
# always re-checked, never missed. No run of letters or digits can be it.
UNINDEXED_TOKEN = "!all"
# The fewest bytes of distinct lexemes that mark a field UNINDEXED_TOKEN (the tsvector's limit is 1 MB).
UNINDEXED_BYTES = 500_000

_RUN = re.compile(r"[A-Za-z0-9]+")


def _cut(run: str) -> str:
    return run.lower()[:TOKEN_CHARS]


def field_tokens(text: str) -> set[str]:
    """The lexemes of ``text`` as the index holds them (the reference for pg/threadmem_tokens.c)."""
    runs = [_cut(run) for run in _RUN.findall(text)]
    lexemes = set(runs) | {f"{first}{PAIR}{second}" for first, second in pairwise(runs)}
    if sum(len(lexeme) for lexeme in lexemes) >= UNINDEXED_BYTES:
        return {UNINDEXED_TOKEN}
    return lexemes


def token_query(term: str) -> str | None:
    """The tsquery a field must match to contain ``term``, or None when no lexeme can narrow it.

    ``'a|b' & 'b|c':* | '!all'``: the pairs of whole runs, the last run as
    the start of a run after a whole one, whole runs in no such pair, or a
    field too large to index (``UNINDEXED_TOKEN``). A lone prefix is not
    used: it reads every lexeme that starts with it (a common word's, most
    of the store). A lexeme holds letters, digits and ``|`` only: quoting it
    in a tsquery needs no escaping.
    """
    if not term.isascii():
        return None
    runs = list(_RUN.finditer(term))
    whole = [run.start() > 0 and run.end() < len(term) for run in runs]
    lexemes: list[str] = []
    paired: set[int] = set()
    for index in range(len(runs) - 1):
        first, second = runs[index], runs[index + 1]
        if not whole[index]:
            continue
        if whole[index + 1]:
            lexemes.append(f"'{_cut(first.group())}{PAIR}{_cut(second.group())}'")
        else:  # the last run, open at its end
            lexemes.append(f"'{_cut(first.group())}{PAIR}{_cut(second.group())}':*")
        paired.update((index, index + 1))
    lexemes += [f"'{_cut(run.group())}'" for index, run in enumerate(runs) if whole[index] and index not in paired]
    if not lexemes:
        return None
    return f"{' & '.join(dict.fromkeys(lexemes))} | '{UNINDEXED_TOKEN}'"
