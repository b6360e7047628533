"""The database side of search on PostgreSQL: threadmem_search's version, the probe, the token index.

threadmem's own extension (pg/, installed by scripts/install-pg-extension.sh,
created by migration 0007 where the server offers it) gives the trigram
operator class, the literal tests and ``threadmem_tokens``, whose lexemes
(threadmem/lib/tokens.py) the token index holds. This module is the one
place that knows which version search's queries are written for, probes what
a database offers (``capabilities``), reads the token index's statistics
(``common_words``), and creates, drops, reports and migrates the token
index. The link function (literal/filters.py) is created by apps.py after
every migration.

The token index is on by default (migration 0022 builds it concurrently):
with it a global search lists every hit of a host, path or phrase the trigram
index cannot narrow in time (docs/scaling.md). A deployment may drop it
(``manage.py token_index drop``) or leave it unused
(``THREADMEM_SEARCH_TOKENS=false``).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any

from django.db import connection

from threadmem.search.bounded import SEARCH_COUNT_LIMIT

# threadmem_tokens as lib/tokens.py describes it. An index built at an older
# version holds other lexemes: search leaves it unused until it is rebuilt and
# the version moves (``move_token_indexes``). Unknown versions are assumed later.
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
    """What the database offers search, whatever the settings make of it (``dialects.dialect`` applies them)."""

    vendor: str
    trigram_ops: bool = False  # threadmem_search's operator class serves both trigram indexes
    link_function: bool = False  # threadmem_hit_link (literal/filters.py)
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


class TokenIndexUnavailable(Exception):
    """The database cannot hold the token index: not PostgreSQL, or no threadmem_search TOKENS_VERSION."""


# The database's extension version, when the server offers TOKENS_VERSION.
_UPDATABLE_SQL = (
    "SELECT e.extversion FROM pg_extension e WHERE e.extname = 'threadmem_search' AND EXISTS "
    "(SELECT 1 FROM pg_available_extension_versions v WHERE v.name = e.extname AND v.version = %s)"
)
_INVALID_SQL = "SELECT 1 FROM pg_index WHERE indexrelid = to_regclass(%s) AND NOT indisvalid"


def move_token_indexes(cursor, *, concurrently: bool) -> bool:
    """Bring the extension to TOKENS_VERSION and build the token indexes it lacks; whether it could.

    At an older version a token index holds other lexemes: it is rebuilt
    first, and only then does the version move, since search uses the index
    only at the version its queries are written for. An index a failed
    concurrent build left invalid is dropped and built again.
    ``concurrently``: appends go on meanwhile (outside a transaction).
    """
    how = "CONCURRENTLY " if concurrently else ""
    cursor.execute(_UPDATABLE_SQL, [TOKENS_VERSION])
    found = cursor.fetchone()
    if found is None:
        return False
    if found[0] in OLDER_VERSIONS:
        for name, _table, _column in TOKEN_INDEXES:
            cursor.execute("SELECT to_regclass(%s) IS NOT NULL", [name])
            if cursor.fetchone()[0]:
                cursor.execute(f"REINDEX INDEX {how}{name}")
        cursor.execute(f"ALTER EXTENSION threadmem_search UPDATE TO '{TOKENS_VERSION}'")
    for name, table, column in TOKEN_INDEXES:
        cursor.execute(_INVALID_SQL, [name])
        if cursor.fetchone() is not None:
            cursor.execute(f"DROP INDEX {how}{name}")
        cursor.execute(f"CREATE INDEX {how}IF NOT EXISTS {name} ON {table} USING gin (threadmem_tokens({column}))")
    for _name, table, _column in TOKEN_INDEXES:
        cursor.execute(f"ANALYZE {table}")
    return True


def token_indexes_create(*, concurrently: bool = False) -> None:
    """Build the token indexes (``concurrently``: without blocking appends, outside a transaction), then ANALYZE."""
    if connection.vendor != "postgresql":
        raise TokenIndexUnavailable("the token index needs PostgreSQL with threadmem_search (make pg-extension)")
    with connection.cursor() as cursor:
        moved = move_token_indexes(cursor, concurrently=concurrently)
    forget_probe()
    if not moved:
        raise TokenIndexUnavailable(
            f"the token index needs PostgreSQL with threadmem_search {TOKENS_VERSION} (make pg-extension)"
        )


def token_indexes_drop() -> None:
    if connection.vendor != "postgresql":
        return
    with connection.cursor() as cursor:
        for name, _table, _column in TOKEN_INDEXES:
            cursor.execute(f"DROP INDEX IF EXISTS {name}")
    forget_probe()


# A build under way, as PostgreSQL reports it: the phase, and how far it is in blocks or rows.
_PROGRESS_SQL = (
    "SELECT c.relname, p.phase, p.blocks_done, p.blocks_total, p.tuples_done, p.tuples_total "
    "FROM pg_stat_progress_create_index p JOIN pg_class c ON c.oid = p.relid "
    "WHERE p.datid = (SELECT oid FROM pg_database WHERE datname = current_database()) "
    "AND p.command IN ('CREATE INDEX CONCURRENTLY', 'REINDEX CONCURRENTLY', 'CREATE INDEX', 'REINDEX') "
    "AND c.relname = ANY(%s)"
)


def token_index_status() -> str:
    """One line: whether search uses the token index, and a build under way with its phase and percent."""
    if connection.vendor != "postgresql":
        return f"token index: off, unavailable (needs PostgreSQL with threadmem_search {TOKENS_VERSION})"
    found = capabilities(fresh=True)
    with connection.cursor() as cursor:
        cursor.execute(_PROGRESS_SQL, [[table for _, table, _ in TOKEN_INDEXES]])
        building = cursor.fetchall()
        cursor.execute(
            "SELECT c.relname FROM pg_class c LEFT JOIN pg_index i ON i.indexrelid = c.oid "
            "WHERE c.relname = ANY(%s) AND c.relkind = 'i' AND NOT coalesce(i.indisvalid, false)",
            [list(TOKEN_INDEX_NAMES)],
        )
        invalid = sorted(row[0] for row in cursor.fetchall())
    if building:
        steps = []
        for table, phase, blocks_done, blocks_total, tuples_done, tuples_total in building:
            done, total = (blocks_done, blocks_total) if blocks_total else (tuples_done, tuples_total)
            percent = f", {100 * done / total:.0f} %" if total else ""
            steps.append(f"{table}: {phase}{percent}")
        return f"token index: building ({'; '.join(steps)}); search answers without it meanwhile"
    names = ", ".join(sorted(found.token_index_names))
    if invalid:
        return f"token index: invalid ({', '.join(invalid)}): a build stopped halfway; token_index create builds it"
    if found.token_index_names and not found.tokens_function:
        return f"token index: unused ({names}): make pg-extension, then token_index create"
    if found.token_indexes:
        return f"token index: on ({names})"
    if found.token_index_names:
        return f"token index: partial ({names}): token_index create builds the other"
    if found.tokens_function or _updatable():
        return "token index: off, available (token_index create builds it)"
    return f"token index: off, unavailable (needs threadmem_search {TOKENS_VERSION}: make pg-extension)"


def _updatable() -> bool:
    with connection.cursor() as cursor:
        cursor.execute(_UPDATABLE_SQL, [TOKENS_VERSION])
        return cursor.fetchone() is not None
