"""The database side of search on PostgreSQL: threadmem_search's version and what a database offers (the probe).

threadmem's own extension (pg/, installed by scripts/install-pg-extension.sh,
created by migration 0007 where the server offers it) gives the trigram
operator class, the literal tests and ``threadmem_tokens``, whose lexemes the
token index holds. This module is the one place that knows which version
search's queries are written for and probes what a database offers
(``capabilities``), which a search reads while planning. Which lexemes a field
holds, which a term needs and what the token index's statistics say of it is
``term_tokens.py``'s.
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

import time
from dataclasses import dataclass, field
from typing import Any

from threadmem.domain.db import reading as connection  # where reads go now (the primary outside a model-facing read)

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

# Per field kind, a token branch's candidates (``match_sql.token_branch``): ids in listing order, read from the index
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
    """Probe again at the next search, and read the token index's statistics again (``term_tokens.common_words``:
    both caches live on the connection)."""
    connection.threadmem_search_extension = None
    connection.threadmem_common_words = None
