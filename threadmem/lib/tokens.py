"""Tokens: the runs of ASCII letters and digits of a text, and what a term needs of them to occur in a field.

The token index (migration 0014: PostgreSQL with threadmem_search, whose
``threadmem_tokens`` in pg/threadmem_tokens.c computes them) holds, per
field, a set of lexemes. For each maximal run of ``[A-Za-z0-9]``, lowered:
its first ``TOKEN_CHARS`` characters. For each two runs in a row: the pair
``first|second`` of those, and the reversed pair ``~dnoces|tsrif``, each
run's last ``TOKEN_CHARS`` characters reversed, the second first; and when
both runs have at least ``JUNCTION_CHARS`` characters, the junction
``^seco|tsrif``: the second's first ``JUNCTION_CHARS``, then the first's last
``JUNCTION_TAIL_CHARS`` at most, reversed. Every other character separates
runs, whatever it is: punctuation, spaces and non-ASCII letters alike.

A term occurs in a field only if the field holds certain lexemes, which
makes the index exact (never a missed hit), not just a good guess. If the
term has two runs in a row:

* both with a separator on either side in the term: they are two whole runs
  of the field, a pair;
* the first whole, the second the term's last run, open at its end: the
  field's pair starts with ``first|second``;
* the first the term's first run, open at its start, the second whole: the
  field's reversed pair starts with the second reversed, ``|``, the first
  reversed;
* both open (the term is those two runs, ``connection refused``), each of at
  least ``JUNCTION_CHARS`` characters: the field's runs end and start with
  them, so it holds their junction ``^refu|noitce``. Either run may continue
  in the field, so no pair can say it; the junction is a short exact lexeme,
  found in few fields besides the ones with the phrase (the six characters of
  the first run's end tell ``connection`` from ``function``). A first run
  shorter than ``JUNCTION_TAIL_CHARS`` may end a longer run of the field: the
  junction is then a prefix (``'^refu|noit':*`` for ``tion refused``).

A whole run in no such pair is a lexeme of the field. A term that is one run
may sit inside a longer run of the field (``kalomi`` in ``prekalomi``): it
says nothing the index can use.

Pairs matter: a large field holds most common runs somewhere, so the runs of
``prebak-170.internal`` alone would leave thousands of fields to re-check,
where ``~071|kaberp`` and ``170|internal`` leave the few that have the host.

Only ASCII terms are served: search folds an ASCII term's case byte by byte,
while a Unicode case mapping could turn a field's non-ASCII letter (the
Kelvin sign) into an ASCII one of the term.
"""

from __future__ import annotations

import re
from itertools import pairwise

# A run longer than this is cut to it, in the index and in the query alike.
TOKEN_CHARS = 32
# Joins the two runs of a pair; starts a reversed pair. Neither is a letter or digit, so no run holds them.
PAIR = "|"
REVERSED = "~"
# Starts a junction: where two runs meet, JUNCTION_CHARS characters of each side.
JUNCTION = "^"
JUNCTION_CHARS = 4
# A junction holds at most this many characters of the first run's end, reversed, after the second's start.
JUNCTION_TAIL_CHARS = 6
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


def _cut_reversed(run: str) -> str:
    return run.lower()[::-1][:TOKEN_CHARS]


def _junction(first: str, second: str) -> str:
    return f"{JUNCTION}{second[:JUNCTION_CHARS].lower()}{PAIR}{_cut_reversed(first)[:JUNCTION_TAIL_CHARS]}"


def field_tokens(text: str) -> set[str]:
    """The lexemes of ``text`` as the index holds them (the reference for pg/threadmem_tokens.c)."""
    runs = _RUN.findall(text)
    lexemes = {_cut(run) for run in runs}
    for first, second in pairwise(runs):
        lexemes.add(f"{_cut(first)}{PAIR}{_cut(second)}")
        lexemes.add(f"{REVERSED}{_cut_reversed(second)}{PAIR}{_cut_reversed(first)}")
        if len(first) >= JUNCTION_CHARS and len(second) >= JUNCTION_CHARS:
            lexemes.add(_junction(first, second))
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

    ``'b|c' & 'c|d':*``: what the term's pairs and whole runs ask of a field
    (see above). A field too large to index holds ``UNINDEXED_QUERY``'s one
    lexeme instead, and can hold any term: search asks for those fields
    apart (``search/literal/tokens.py`` says why). Exact lexemes come alone when there are any: a
    prefix makes the index read every lexeme that starts with it, with all
    their fields (tens of milliseconds for a pair of common runs), where an
    exact one skips through its list. A lexeme holds letters, digits, ``|``,
    ``~`` and ``^`` only: quoting it in a tsquery needs no escaping.
    """
    if not term.isascii():
        return None
    matches = list(_RUN.finditer(term))
    runs = [match.group() for match in matches]
    whole = [match.start() > 0 and match.end() < len(term) for match in matches]
    exact: list[str] = []
    prefixes: list[str] = []
    paired: set[int] = set()
    for index in range(len(runs) - 1):
        first, second = runs[index], runs[index + 1]
        if whole[index] and whole[index + 1]:
            exact.append(f"'{_cut(first)}{PAIR}{_cut(second)}'")
        elif whole[index]:  # the second is the last run, open at its end
            prefixes.append(f"'{_cut(first)}{PAIR}{_cut(second)}':*")
        elif whole[index + 1]:  # the first is the first run, open at its start
            prefixes.append(f"'{REVERSED}{_cut_reversed(second)}{PAIR}{_cut_reversed(first)}':*")
        elif len(first) >= JUNCTION_CHARS and len(second) >= JUNCTION_CHARS:  # the term is two open runs
            if len(first) >= JUNCTION_TAIL_CHARS:
                exact.append(f"'{_junction(first, second)}'")
            else:  # the field's run may be longer: its junction holds more of it
                prefixes.append(f"'{_junction(first, second)}':*")
        else:
            continue
        paired.update((index, index + 1))
    exact += [f"'{_cut(run)}'" for index, run in enumerate(runs) if whole[index] and index not in paired]
    lexemes = exact or prefixes
    if not lexemes:
        return None
    return " & ".join(dict.fromkeys(lexemes))
