"""The database side of search on PostgreSQL: threadmem_search's version, the probe, the token index's grammar
and statistics.

threadmem's own extension (pg/, installed by scripts/install-pg-extension.sh,
created by migration 0007 where the server offers it) gives the trigram
operator class, the literal tests and ``threadmem_tokens``, whose lexemes the
token index holds. This package is the one place that knows which version
search's queries are written for, probes what a database offers
(``capabilities``), says which lexemes a field holds and which a term needs
(the token grammar: ``field_tokens``, ``term_tokens``) and reads the token
index's statistics (``common_words``): what a search reads while planning.
What an operator runs, creating, dropping, reporting and migrating the token
index, is ``token_index.py``. The link function (literal/link_function.py) is
created by apps.py after every migration.

The token index is on by default (migration 0022 builds it concurrently):
with it a global search lists every hit of a host, path or phrase the trigram
index cannot narrow in time (docs/scaling.md). A deployment may drop it
(``manage.py token_index drop``); ``SearchTuning.tokens`` (search/literal/plan.py)
leaves it unused, for comparison.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any, NamedTuple

from threadmem.db import reading as connection  # where reads go now (the primary outside a model-facing read)
from threadmem.search.bounded import SEARCH_COUNT_LIMIT

# threadmem_tokens as the token grammar below describes it. An index built at an
# older version holds other lexemes: search leaves it unused until it is rebuilt
# and the version moves (``token_index.move_token_indexes``). Unknown versions are
# assumed later.
TOKENS_VERSION = "2.0"
OLDER_VERSIONS = ("1.0", "1.1", "1.2", "1.3")
TOKENS_FUNCTION_SQL = (
    "coalesce((SELECT extversion <> ALL(ARRAY['" + "', '".join(OLDER_VERSIONS) + "']) "
    "FROM pg_extension WHERE extname = 'threadmem_search'), false)"
)

# (index, table, column): the token indexes, one a searched column.
TOKEN_INDEXES = (
    ("message_content_tokens", "threadmem_message", "content"),
    ("toolarg_value_tokens", "threadmem_toolargument", "value"),
)
TOKEN_INDEX_NAMES = tuple(name for name, _, _ in TOKEN_INDEXES)

# Per field kind, a token branch's candidates (``match.token_branch``): ids in listing order, read from the index
# and the rows' small columns, the join back to the row, the order. Beside TOKEN_INDEXES because they must repeat
# the indexes' expression (``threadmem_tokens(column)``, as token_index.py creates them) to use them. The
# candidates are the fields whose lexemes the term asks for, in the scope, then (UNION ALL) the fields too large
# to index, found alone and only then held to the scope: the unindexed lexeme has no statistics, and ORed into
# the term's query it would make every term look common to the planner. The fence (OFFSET 0) keeps the scope out
# of the unindexed fields' index scan, and each argument of theirs finds its message by id
# (docs/search.md, "The token index").
TOKEN_CANDIDATES = {
    "content": (
        "SELECT u.id FROM ("
        "SELECT m.id FROM threadmem_message m WHERE {where} AND threadmem_tokens(m.content) @@ CAST(%s AS tsquery) "
        "UNION ALL SELECT m.id FROM (SELECT * FROM threadmem_message x "
        "WHERE threadmem_tokens(x.content) @@ CAST(%s AS tsquery) OFFSET 0) m WHERE {where}"
        ") u ORDER BY u.id DESC OFFSET 0",
        "JOIN threadmem_message m ON m.id = k.id",
        "k.id DESC",
    ),
    "argument": (
        "SELECT u.id, u.message_id FROM ("
        "SELECT a.id, a.message_id FROM threadmem_toolargument a JOIN threadmem_message m ON m.id = a.message_id "
        "WHERE {where} AND threadmem_tokens(a.value) @@ CAST(%s AS tsquery) "
        "UNION ALL SELECT a.id, a.message_id FROM (SELECT * FROM threadmem_toolargument x "
        "WHERE threadmem_tokens(x.value) @@ CAST(%s AS tsquery) OFFSET 0) a "
        "CROSS JOIN LATERAL (SELECT * FROM threadmem_message y WHERE y.id = a.message_id OFFSET 0) m WHERE {where}"
        ") u ORDER BY u.message_id DESC, u.id OFFSET 0",
        "JOIN threadmem_toolargument a ON a.id = k.id JOIN threadmem_message m ON m.id = k.message_id",
        "k.message_id DESC, k.id",
    ),
}

# An index counts once it is valid: a concurrent build shows it in the catalogue
# long before (search would compute every row's lexemes instead), and a failed
# one leaves it there, invalid.
_VALID_SQL = "EXISTS (SELECT 1 FROM pg_index WHERE indexrelid = to_regclass('{name}') AND indisvalid AND indisready)"
_PROBE_SQL = (
    "SELECT (SELECT count(*) = 2 FROM pg_index i JOIN pg_opclass o ON o.oid = i.indclass[0] "
    "WHERE i.indexrelid IN (to_regclass('message_content_trgm'), to_regclass('toolarg_value_trgm')) "
    "AND o.opcname = 'threadmem_trgm_ops'), "
    "to_regprocedure('threadmem_hit_link(bigint, bigint, bigint[], bigint[])') IS NOT NULL, "
    "(SELECT extversion FROM pg_extension WHERE extname = 'threadmem_search'), "
    f"{TOKENS_FUNCTION_SQL}, " + ", ".join(_VALID_SQL.format(name=name) for name in TOKEN_INDEX_NAMES)
)
# A process other than the one that built or dropped the index learns of it within this.
PROBE_SECONDS = 60.0


@dataclass(frozen=True)
class DatabaseCapabilities:
    """What the database offers search, whatever the settings make of it (``plan.dialect`` applies them)."""

    vendor: str
    trigram_ops: bool = False  # threadmem_search's operator class serves both trigram indexes
    link_function: bool = False  # threadmem_hit_link (literal/link_function.py)
    extension_version: str | None = None  # threadmem_search's installed version; None: not installed
    tokens_function: bool = False  # threadmem_tokens of TOKENS_VERSION or later
    token_index_names: frozenset[str] = frozenset()  # the valid token indexes, all or some
    # Both token indexes valid, holding the lexemes of TOKENS_VERSION: search may use them. Derived once, a field
    # like the others, so the probe's answer is plain data wherever it goes.
    token_indexes: bool = field(init=False)

    def __post_init__(self) -> None:
        whole = self.tokens_function and self.token_index_names == frozenset(TOKEN_INDEX_NAMES)
        object.__setattr__(self, "token_indexes", whole)


def _probe() -> tuple[Any, ...]:
    """PostgreSQL: the fields of ``DatabaseCapabilities`` after ``vendor``, in order.

    Once per connection and PROBE_SECONDS, on the driver's cursor (not one of a search's statements); again
    after migrations (apps.py) or the token index command (``forget_probe``).
    """
    connection.ensure_connection()
    raw = connection.connection
    probed = getattr(connection, "threadmem_search_extension", None)
    if probed is None or probed[0] is not raw or probed[1] < time.monotonic():
        with raw.cursor() as cursor:
            cursor.execute(_PROBE_SQL)
            found = cursor.fetchone()
        trigram_ops, link_function, version, tokens_function, *valid = found
        names = frozenset(name for name, exists in zip(TOKEN_INDEX_NAMES, valid, strict=True) if exists)
        capabilities = (bool(trigram_ops), bool(link_function), version, bool(tokens_function), names)
        probed = (raw, time.monotonic() + PROBE_SECONDS, *capabilities)
        connection.threadmem_search_extension = probed
    return probed[2:]


def capabilities(*, fresh: bool = False) -> DatabaseCapabilities:
    """The database's capabilities: every module of search reads them here, none probes on its own.

    ``fresh``: probe again now (the token index command reports the database as it is).
    """
    if fresh:
        forget_probe()
    if connection.vendor == "postgresql":
        return DatabaseCapabilities(connection.vendor, *_probe())
    return DatabaseCapabilities(connection.vendor)


def forget_probe() -> None:
    """Probe again at the next search, and read the token index's statistics again (``common_words``)."""
    connection.threadmem_search_extension = None
    connection.threadmem_common_words = None


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


def forget_common_words() -> None:
    """Read the index statistics again at the next search (after ANALYZE; ``database.forget_probe`` also does)."""
    connection.threadmem_common_words = None


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
