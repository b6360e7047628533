"""Moving threadmem_search to a version whose ``threadmem_tokens`` gives other lexemes (migrations 0015, 0017).

Not a migration (the loader skips names that start with ``_``): the step
those migrations share. The server's copy of the extension is always its
newest code (``make pg-extension``), so a token index built before holds
lexemes search no longer asks for: it is rebuilt concurrently (appends go on;
it takes about as long as ``manage.py token_index create`` did), and only
then does the version move, since search uses the token index only at the
version its queries are written for (search/literal/dialects.py).
"""

from __future__ import annotations

TOKEN_INDEXES = ("message_content_tokens", "toolarg_value_tokens")


def rebuild_token_indexes_then_update(schema_editor, *, before: tuple[str, ...], version: str) -> None:
    """Where the database's extension is at one of ``before`` and the server offers ``version``: rebuild, update.

    When the server's newest version is later still, the rebuild is left to
    the migration that moves to it: the function already gives that
    version's lexemes, and the index would be built twice.
    """
    if schema_editor.connection.vendor != "postgresql":
        return
    with schema_editor.connection.cursor() as cursor:
        cursor.execute(
            "SELECT "
            + ", ".join(f"to_regclass('{name}') IS NOT NULL" for name in TOKEN_INDEXES)
            + ", a.default_version = %s FROM pg_extension e JOIN pg_available_extensions a ON a.name = e.extname "
            "WHERE e.extname = 'threadmem_search' AND e.extversion = ANY(%s) AND EXISTS "
            "(SELECT 1 FROM pg_available_extension_versions v WHERE v.name = e.extname AND v.version = %s)",
            [version, list(before), version],
        )
        found = cursor.fetchone()
    if found is None:
        return
    *present, newest = found
    if newest:
        for name, exists in zip(TOKEN_INDEXES, present, strict=True):
            if exists:
                schema_editor.execute(f"REINDEX INDEX CONCURRENTLY {name}")
    schema_editor.execute(f"ALTER EXTENSION threadmem_search UPDATE TO '{version}'")
