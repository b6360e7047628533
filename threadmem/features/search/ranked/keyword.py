"""Keyword relevance from the database's own full-text engine, over the pieces a scope may show.

The pieces are the embedded ones (``threadmem_chunk``: message content and
tool-argument leaves, at most 1,000 characters each), filtered by
``SearchScope.q`` like every other search path. Migration 0018 indexes them:

- PostgreSQL: ``search_vector`` (``to_tsvector('english', text)``, GIN). The
  query's lexemes come from the same configuration; the pieces holding any of
  them are read with each lexeme's count, and scored by BM25 here
  (``ts_rank_cd`` has no inverse document frequency: "Caroline" would weigh as
  much as "support" in a conversation between Caroline and Melanie;
  docs/search.md, "Ranked memory results"). Document frequencies are the
  scope's own; a global scope over a large table leaves its common lexemes
  out (LARGE_TABLE_PIECES).
- SQLite: FTS5's index over the same pieces (``threadmem_chunk_fts``, porter
  stemmer). The query's words are cut and stemmed by FTS5's own tokenizer (a
  connection's temporary FTS5 table), each stem's occurrences read from the
  index (``fts5vocab``, one row an occurrence), and scored by the same BM25.
  FTS5's ``bm25()`` would count the whole table, every owner's pieces: a
  score would move with another owner's data, and the ranking with it.

Both answer (chunk id, score), best first: the same scores on both databases.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from typing import TYPE_CHECKING

from django.db.models import BooleanField
from django.db.models.expressions import RawSQL

from threadmem.domain.db import reading as connection  # where reads go now (the primary outside a model-facing read)
from threadmem.domain.scope import SearchScope
from threadmem.features.search.ranked import lexicon
from threadmem.features.search.shared_sql import in_ids
from threadmem.models import Chunk

if TYPE_CHECKING:
    from threadmem.features.search.ranked.vectors import ScopePieces

# No length normalisation: pieces are at most 1,000 characters anyway (tuned on
# LoCoMo's tune half: docs/search.md).
BM25_K1 = 0.6
BM25_B = 0.0
# PostgreSQL: rows (piece, lexeme) read at most; a global scope's common word
# could otherwise read every piece of the store.
MAX_ROWS = 50_000
# PostgreSQL, a global scope over a table of more pieces than this (its planner
# estimate): the lexemes the column's statistics find in at least
# COMMON_LEXEME_SHARE of the pieces are left out of the match (they weigh
# little in BM25 and read most of the table), the index answers the rest and
# the scope's size is the table's estimate instead of a count (docs/scaling.md, "Ranked lane at 1M").
LARGE_TABLE_PIECES = 20_000
COMMON_LEXEME_SHARE = 0.01
# SQLite: a query word is a run of letters and digits (FTS5's unicode61 tokens). The words PostgreSQL's
# 'english' configuration drops (its english.stop, Snowball's list) are dropped here too: FTS5 would match nearly
# every piece for them, and the keyword ranking is then PostgreSQL's (docs/search.md, "Without a channel").
_WORD = re.compile(r"\w+")
STOP_WORDS = frozenset(
    (  # noqa: SIM905 (127 words: a list literal would take a line each)
        "i me my myself we our ours ourselves you your yours yourself yourselves he him his himself she her hers "
        "herself it its itself they them their theirs themselves what which who whom this that these those am is "
        "are was were be been being have has had having do does did doing a an the and but if or because as until "
        "while of at by for with about against between into through during before after above below to from up "
        "down in out on off over under again further then once here there when where why how all any both each "
        "few more most other some such no nor not only own same so than too very s t can will just don should now"
    ).split()
)
_MAX_WORDS = 64
# SQLite: a connection's temporary tables that stem a query as the index does and read the index's occurrences
# (the piece lengths BM25 reads are 1: BM25_B is 0, a piece's length changes nothing).
SQLITE_QUERY_TABLES = (
    "CREATE VIRTUAL TABLE IF NOT EXISTS temp.threadmem_query_fts USING fts5("
    "text, tokenize='porter unicode61 remove_diacritics 2')",  # the index's tokenizer (migration 0018)
    "CREATE VIRTUAL TABLE IF NOT EXISTS temp.threadmem_query_terms USING fts5vocab(temp, threadmem_query_fts, row)",
    "CREATE VIRTUAL TABLE IF NOT EXISTS temp.threadmem_chunk_occurrences "
    "USING fts5vocab(main, threadmem_chunk_fts, instance)",
)


def rank(*, scope: SearchScope, query: str, model: str, limit: int) -> list[tuple[int, float]]:
    """The ``limit`` pieces of ``model`` in the scope most relevant to ``query`` by keyword, best first."""
    return [(piece, score) for piece, _, score in rank_pieces(scope=scope, query=query, model=model, limit=limit)]


def rank_pieces(
    *, scope: SearchScope, query: str, model: str, limit: int, held: ScopePieces | None = None
) -> list[tuple[int, int, float]]:
    """``rank``'s pieces as (piece id, its message's id, score), best first.

    ``held``: the scope's pieces of ``model`` when the caller has read them (``vectors.scope_pieces``): on
    PostgreSQL they are ranked from the scope's keyword index kept in this process (``lexicon.py``).
    """
    if connection.vendor != "postgresql":
        if held is not None:  # the ids this search read: a list SQLite checks each piece against
            in_scope, params = in_ids(connection.vendor, "f.id", held.ids.tolist())
            return _rank_sqlite(in_scope, params, query, limit=limit, total=len(held.ids))
        scope_sql, scope_params = _scope_pieces(scope, model).query.sql_with_params()
        return _rank_sqlite(f"f.id IN ({scope_sql})", scope_params, query, limit=limit, total=None)
    return _rank_postgres(scope, model, query, limit=limit, held=held)


def _scope_pieces(scope: SearchScope, model: str):
    return Chunk.objects.filter(model=model).filter(scope.q(prefix="message__")).order_by().values("id")


def _tsquery(lexemes: list[str]) -> str:
    """An OR of the lexemes, each quoted (a lexeme may hold ``:``, ``|`` or ``&``)."""
    quoted = ("'" + lexeme.replace("\\", "\\\\").replace("'", "''") + "'" for lexeme in lexemes)
    return " | ".join(quoted)


def _rank_postgres(
    scope: SearchScope, model: str, query: str, *, limit: int, held: ScopePieces | None
) -> list[tuple[int, int, float]]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT tsvector_to_array(to_tsvector('english'::regconfig, %s))", [query])
        lexemes = list(cursor.fetchone()[0] or [])
        if not lexemes:
            return []
        if held is not None:
            return _rank_held(cursor, held, lexemes, limit=limit)
        pieces = _scope_pieces(scope, model)
        cursor.execute("SELECT reltuples::bigint FROM pg_class WHERE oid = 'threadmem_chunk'::regclass")
        estimate = cursor.fetchone()[0]
        if estimate > LARGE_TABLE_PIECES:
            return _rank_large_postgres(cursor, pieces, uncommon(cursor, lexemes), limit=limit, total=estimate)
        scope_sql, scope_params = pieces.query.sql_with_params()
        # One statement: the scope's pieces holding a query lexeme, each lexeme's count, and the scope's size.
        cursor.execute(
            f"WITH scope AS MATERIALIZED ({scope_sql}) "
            "SELECT c.id, u.lexeme, cardinality(u.positions), length(c.search_vector), (SELECT count(*) FROM scope), "
            "c.message_id "
            "FROM threadmem_chunk c CROSS JOIN LATERAL unnest(c.search_vector) u "
            "WHERE c.id IN (SELECT id FROM scope) AND c.search_vector @@ %s::tsquery AND u.lexeme = ANY(%s) LIMIT %s",
            [*scope_params, _tsquery(lexemes), lexemes, MAX_ROWS],
        )
        rows = cursor.fetchall()
    if not rows:
        return []
    total = rows[0][4]
    messages = {row[0]: row[5] for row in rows}
    return [(piece, messages[piece], score) for piece, score in bm25(rows, total=total)[:limit]]


def _rank_held(cursor, held: ScopePieces, lexemes: list[str], *, limit: int) -> list[tuple[int, int, float]]:
    """BM25 over a thread's held pieces from the scope's keyword index kept in this process (``lexicon.py``):
    the statement's rows, a piece's in the same order (the query's lexemes in the tsvector's order, as unnest
    lists them), so the same ranking."""
    rows = lexicon.rows(cursor, held.key, held.shown, lexemes)
    if not rows:
        return []
    messages = {row[0]: row[4] for row in rows}
    return [(piece, messages[piece], score) for piece, score in bm25(rows, total=len(held.ids))[:limit]]


def uncommon(cursor, lexemes: list[str]) -> list[str]:
    """The lexemes the column's statistics (ANALYZE's most common elements) find in under COMMON_LEXEME_SHARE."""
    cursor.execute(
        "SELECT x.lexeme FROM pg_stats s, "
        "unnest(s.most_common_elems::text::text[], s.most_common_elem_freqs) AS x(lexeme, share) "
        "WHERE s.schemaname = current_schema() AND s.tablename = 'threadmem_chunk' "
        "AND s.attname = 'search_vector' AND x.lexeme = ANY(%s) AND x.share >= %s",
        [lexemes, COMMON_LEXEME_SHARE],
    )
    common = {lexeme for (lexeme,) in cursor.fetchall()}
    return [lexeme for lexeme in lexemes if lexeme not in common]


def _rank_large_postgres(cursor, pieces, lexemes: list[str], *, limit: int, total: int) -> list[tuple[int, int, float]]:
    if not lexemes:  # every word of the query is common: the meaning ranking answers alone
        return []
    # The match inside the scope's statement: the planner starts from the GIN index, not from the scope.
    matched = pieces.annotate(
        matched=RawSQL("threadmem_chunk.search_vector @@ %s::tsquery", [_tsquery(lexemes)], output_field=BooleanField())
    ).filter(matched=True)
    scope_sql, scope_params = matched.query.sql_with_params()
    cursor.execute(
        "SELECT c.id, u.lexeme, cardinality(u.positions), length(c.search_vector), c.message_id "
        f"FROM ({scope_sql}) s JOIN threadmem_chunk c ON c.id = s.id CROSS JOIN LATERAL unnest(c.search_vector) u "
        "WHERE u.lexeme = ANY(%s) LIMIT %s",
        [*scope_params, lexemes, MAX_ROWS],
    )
    rows = cursor.fetchall()
    if not rows:
        return []
    messages = {row[0]: row[4] for row in rows}
    return [(piece, messages[piece], score) for piece, score in bm25(rows, total=total)[:limit]]


def bm25(rows: list[tuple], *, total: int) -> list[tuple[int, float]]:
    """BM25 of (piece, lexeme, count, piece length) rows; ``total`` pieces in the scope. Best first."""
    holders: dict[str, int] = defaultdict(int)
    lengths: dict[int, int] = {}
    for piece, lexeme, _, length, *_ in rows:
        holders[lexeme] += 1
        lengths[piece] = max(1, length)
    average = sum(lengths.values()) / len(lengths)
    total = max(total, len(lengths))
    scores: dict[int, float] = defaultdict(float)
    for piece, lexeme, count, *_ in rows:
        df = holders[lexeme]
        idf = math.log(1 + (total - df + 0.5) / (df + 0.5))
        norm = BM25_K1 * (1 - BM25_B + BM25_B * lengths[piece] / average)
        scores[piece] += idf * count * (BM25_K1 + 1) / (count + norm)
    return sorted(scores.items(), key=lambda item: (-item[1], -item[0]))


def _query_words(query: str) -> list[str]:
    words = [word for word in dict.fromkeys(word.lower() for word in _WORD.findall(query)) if word not in STOP_WORDS]
    return words[:_MAX_WORDS]


def _sqlite_stems(cursor, words: list[str]) -> list[str]:
    """``words`` as FTS5's tokenizer indexes them (the porter stemmer's terms), through a temporary FTS5 table.

    Temporary tables are the connection's own: writing one takes no lock on the store. The query leaves with its
    terms read: the connection keeps nothing of it.
    """
    for statement in SQLITE_QUERY_TABLES:
        cursor.execute(statement)
    cursor.execute("INSERT INTO temp.threadmem_query_fts(text) VALUES (%s)", [" ".join(words)])
    try:
        cursor.execute("SELECT term FROM temp.threadmem_query_terms")
        return [term for (term,) in cursor.fetchall()]
    finally:
        cursor.execute("DELETE FROM temp.threadmem_query_fts")


def _rank_sqlite(
    in_scope: str, scope_params: list, query: str, *, limit: int, total: int | None
) -> list[tuple[int, int, float]]:
    """BM25 of the scope's pieces holding a stem of the query; ``total``: the scope's pieces, counted if None."""
    words = _query_words(query)
    if not words:
        return []
    with connection.cursor() as cursor:
        stems = _sqlite_stems(cursor, words)
        if not stems:
            return []
        # Each (piece, stem) with its count, from the index's occurrences; the scope's condition after (materialized
        # first: pushed into the virtual table it would be checked once per occurrence of every stem).
        cursor.execute(
            "WITH f AS MATERIALIZED (SELECT doc AS id, term, count(*) AS n FROM temp.threadmem_chunk_occurrences "
            f"WHERE term IN ({', '.join(['%s'] * len(stems))}) GROUP BY doc, term) "
            f"SELECT f.id, f.term, f.n, 1, c.message_id FROM f JOIN threadmem_chunk c ON c.id = f.id WHERE {in_scope} "
            "LIMIT %s",
            [*stems, *scope_params, MAX_ROWS],
        )
        rows = cursor.fetchall()
        if not rows:
            return []
        if total is None:
            cursor.execute(f"SELECT count(*) FROM threadmem_chunk f WHERE {in_scope}", scope_params)
            total = cursor.fetchone()[0]
    messages = {row[0]: row[4] for row in rows}
    return [(piece, messages[piece], score) for piece, score in bm25(rows, total=total)[:limit]]
