"""What an operator runs on the token index: create, drop, its status, and the migration that moves it.

``manage.py token_index`` calls these (migration 0022 keeps its own frozen copy
of ``move_token_indexes``); search never does (it reads the probe and the
statistics in ``threadmem.features.search.database``).
"""

from __future__ import annotations

from threadmem.domain.db import reading as connection  # where reads go now (the primary outside a model-facing read)
from threadmem.features.search.database.capabilities import (
    OLDER_VERSIONS,
    TOKEN_INDEX_NAMES,
    TOKEN_INDEXES,
    TOKENS_VERSION,
    capabilities,
    forget_probe,
)


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
