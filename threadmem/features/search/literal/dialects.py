"""How each database matches a term literally and case-insensitively, finds it and cuts its window.

* PostgreSQL: ``col ~* '***=<term>'``. The ``***=`` director makes the rest of
  the pattern a literal string (``%``, ``_``, ``\\`` and regex characters are
  plain characters, nothing to escape), the trigram GIN indexes of migration
  0002 serve it, and the regex engine matches case-insensitively without
  lower-casing the whole field first. (Django's ``__icontains`` compiles to
  ``UPPER(col) LIKE UPPER(...)``, which those indexes do not serve.)
  Positions come from ``strpos`` in the field lowered ASCII-only for an ASCII
  term (the same first match, cheaper on large fields), else from
  ``regexp_instr`` with the same pattern and flag, so a row that matched has
  a position. Needs PostgreSQL 15 or newer.
* PostgreSQL with threadmem's extension ``threadmem_search`` (pg/, migration
  0007; ``Dialect.has_extension``): for an ASCII term, its operator
  ``col ~~~ '%<term>%'`` (the LIKE form pg_trgm reads trigrams from, served
  by the same indexes; ``~~~~``, the same test at a cost that makes the
  planner narrow with the index first, in one large thread),
  ``threadmem_icontains`` in scans and ``threadmem_ipos``/``threadmem_iwindow``
  for windows. They compare bytes, folding ASCII letters, which is what ``~*``
  does for an ASCII term. Other terms keep ``~*``.
* SQLite: a deterministic Python function ``threadmem_ifind(field, folded)``
  registered on the connection: SQLite's own ``LIKE``/``lower`` fold ASCII
  only, which would make non-ASCII queries case-sensitive.

Both fold case one character to one (``fold``), and ``substr`` counts
characters on both, so a window never splits a character. Measurements of
these choices: docs/search.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from threadmem.domain.db import reading as connection  # where reads go now (the primary outside a model-facing read)
from threadmem.features.search.answer_caps import WINDOW_CHARS, WINDOW_LEAD
from threadmem.lib.terms import fold, fold_each


class Dialect:
    vendor = ""
    has_extension = False  # PostgreSQL with threadmem's extension threadmem_search (PostgresDialect)
    has_tokens = False  # PostgreSQL with the token indexes of migration 0022 (PostgresDialect)
    has_link_function = False  # PostgreSQL with threadmem_hit_link (link_function.py, created after migrations)

    def pattern(self, term: str) -> str:
        raise NotImplementedError

    def matches(self, column: str, term: str, *, narrow: bool = False) -> tuple[str, Any]:
        """``(condition, its one parameter)``: ``column`` contains ``term``, in any case.

        The indexed form: on PostgreSQL the trigram indexes serve it.
        ``narrow``: the rows are one large thread's, which the index should
        narrow before any field is read.
        """
        raise NotImplementedError

    def needle(self, term: str) -> str | None:
        """What ``position`` may use besides ``pattern(term)``: None when nothing."""
        return None

    def scan_matches(self, column: str, term: str) -> tuple[str, Any]:
        """The condition of ``matches`` for a scan of one thread's rows: ``(sql, its one parameter)``.

        No index serves it; it only has to be the cheapest exact test.
        """
        return self.matches(column, term)

    def position(self, column: str, pattern_column: str, needle_column: str) -> str:
        """The 1-based position of the first match in ``column``, 0 when none.

        ``pattern_column`` holds ``pattern(term)``, ``needle_column`` ``needle(term)``.
        """
        raise NotImplementedError

    def window(self, body: str, position: str, needle_column: str) -> str:
        """The characters of ``body`` from WINDOW_LEAD before ``position`` on, WINDOW_CHARS + 1 of them."""
        return f"substr({body}, {self.greatest(f'{position} - {WINDOW_LEAD}', '1')}, {WINDOW_CHARS + 1})"

    def min_chars(self, column: str) -> str:
        raise NotImplementedError

    # The SQL names of the larger and the smaller of two values.
    greatest_function = ""
    least_function = ""

    def greatest(self, left: str, right: str) -> str:
        return f"{self.greatest_function}({left}, {right})"

    def least(self, left: str, right: str) -> str:
        return f"{self.least_function}({left}, {right})"

    # Ends a subquery that the planner must run as it is written, not merge
    # into the query around it (which would repeat its expressions there).
    fence = "OFFSET 0"

    def prepare(self) -> None:
        """Make the connection ready for the statements below."""

    def statement_sql(self, terms: Sequence[str], *, narrow: bool) -> StatementSql:
        """Every fragment a match statement takes from the dialect, in one call (``match_sql.py`` writes the rest)."""
        patterns = self.patterns(terms)
        return StatementSql(
            [self.term_sql(term, pattern, narrow=narrow) for term, pattern in zip(terms, patterns, strict=True)],
            {column: self.min_chars(column) for column in MATCHED_COLUMNS},
            self.least(
                self.least(self.greatest("u.min_chars", "t.length"), f"t.length + {WINDOW_LEAD}"), f"{WINDOW_CHARS}"
            ),
            self.window("w.body", "w.pos", "w.needle"),
            self.position("v.body", "v.pattern", "v.needle"),
        )

    def patterns(self, terms: Sequence[str]) -> list[str]:
        """``pattern`` of each term."""
        return [self.pattern(term) for term in terms]

    def term_sql(self, term: str, pattern: str, *, narrow: bool) -> TermSql:
        """One term's fragments of ``statement_sql`` (``pattern``: its ``pattern``)."""
        return TermSql(
            pattern,
            self.needle(term),
            {column: self.matches(column, term, narrow=narrow) for column in MATCHED_COLUMNS},
            {column: self.scan_matches(column, term) for column in SCANNED_COLUMNS},
        )


# The columns a match statement tests: a message's content, a tool argument's value; in scans also the text of
# the newest messages common words share (match_sql.py, nf).
MATCHED_COLUMNS = ("m.content", "a.value")
SCANNED_COLUMNS = (*MATCHED_COLUMNS, "x.body")


class TermSql(NamedTuple):
    pattern: str  # Dialect.pattern
    needle: str | None  # Dialect.needle
    matches: dict[str, tuple[str, Any]]  # by column: Dialect.matches
    scans: dict[str, tuple[str, Any]]  # by column: Dialect.scan_matches


class StatementSql(NamedTuple):
    terms: list[TermSql]
    min_chars: dict[str, str]  # by column: Dialect.min_chars
    least_window: str  # window_walk.min_window_chars in SQL, over u.min_chars and t.length
    window: str  # the window of w.body at w.pos
    position: str  # the term's position in v.body


@dataclass(frozen=True)
class PostgresDialect(Dialect):
    """``~*`` and ``strpos(lower(...))``, or with ``has_extension`` the functions of threadmem's extension.

    ``has_extension``: the database has ``threadmem_search`` (pg/, migration
    0007) and its operator class serves the trigram indexes. An ASCII term is
    then matched with its operator ``~~~`` (indexed) or ``threadmem_icontains``
    (scans), found with ``threadmem_ipos`` and cut with ``threadmem_iwindow``:
    each reads the field once with memchr and compares bytes, where ``~*``
    and ``lower()`` convert every character first (docs/search.md). A term
    with other characters keeps ``~*``, whose case folding is Unicode's.
    """

    vendor = "postgresql"
    has_extension: bool = False
    has_tokens: bool = False
    has_link_function: bool = False

    def pattern(self, term: str) -> str:
        return f"***={term}"

    def matches(self, column: str, term: str, *, narrow: bool = False) -> tuple[str, Any]:
        if self.has_extension and term.isascii():
            # ~~~~ is ~~~ with a test the planner is told is costly: it then
            # narrows a large thread with the trigram index instead of taking
            # the thread for an average one and reading it (pg/*.sql).
            return f"{column} {'~~~~' if narrow else '~~~'} %s", trigram_pattern(term)
        return f"{column} ~* %s", self.pattern(term)

    def needle(self, term: str) -> str | None:
        # An ASCII term is found with strpos in the field lowered ASCII-only
        # (COLLATE "C"): cheaper than regexp_instr on large fields (docs/search.md),
        # which collects every match, not just the first.
        return term.lower() if term.isascii() else None

    def scan_matches(self, column: str, term: str) -> tuple[str, Any]:
        # Functions, not the ~* operator, so the planner cannot pick the
        # trigram index. For an ASCII term, lowering ASCII-only and strpos
        # read bytes: cheaper than the regex engine on a field that does not
        # match (it converts the field to wide characters).
        needle = self.needle(term)
        if needle is None:
            return f"regexp_like({column}, %s, 'i')", self.pattern(term)
        if self.has_extension:
            return f"threadmem_icontains({column}, %s)", needle
        return f'strpos(lower({column} COLLATE "C"), %s) > 0', needle

    def position(self, column: str, pattern_column: str, needle_column: str) -> str:
        # ~* folds just the ASCII letters of an ASCII pattern, so both find the
        # same first match; where strpos finds none the regex decides.
        regex = f"regexp_instr({column}, {pattern_column}, 1, 1, 0, 'i')"
        if self.has_extension:
            return f"CASE WHEN {needle_column} IS NULL THEN {regex} ELSE threadmem_ipos({column}, {needle_column}) END"
        return (
            f"CASE WHEN {needle_column} IS NULL THEN {regex} "
            f'ELSE coalesce(nullif(strpos(lower({column} COLLATE "C"), {needle_column}), 0), {regex}) END'
        )

    def window(self, body: str, position: str, needle_column: str) -> str:
        cut = super().window(body, position, needle_column)
        if not self.has_extension:
            return cut
        # The same characters without substr's walk to the position, one character at a time.
        return (
            f"CASE WHEN {needle_column} IS NULL THEN {cut} "
            f"ELSE threadmem_iwindow({body}, {needle_column}, {WINDOW_LEAD}, {WINDOW_CHARS + 1}) END"
        )

    def min_chars(self, column: str) -> str:
        # octet_length reads the stored size without decompressing the value;
        # UTF-8 needs at most 4 bytes a character.
        return f"((octet_length({column}) + 3) / 4)"

    greatest_function = "greatest"
    least_function = "least"


def ifind(field: str | None, folded_term: str | None) -> int:
    """1-based position of the first case-insensitive occurrence, 0 when absent."""
    if field is None or not folded_term:
        return 0
    return fold(field).find(folded_term) + 1


class SqliteDialect(Dialect):
    vendor = "sqlite"

    def pattern(self, term: str) -> str:
        return fold(term)

    def matches(self, column: str, term: str, *, narrow: bool = False) -> tuple[str, Any]:
        pattern = self.pattern(term)
        return self._finds(column, pattern), pattern

    def patterns(self, terms: Sequence[str]) -> list[str]:
        return fold_each(terms)

    def term_sql(self, term: str, pattern: str, *, narrow: bool) -> TermSql:
        # Every condition is the same function over the folded term, folded once (``patterns``).
        matches = {column: (self._finds(column, pattern), pattern) for column in MATCHED_COLUMNS}
        scanned = {column: (self._finds(column, pattern), pattern) for column in SCANNED_COLUMNS}
        return TermSql(pattern, None, matches, scanned)

    @staticmethod
    def _finds(column: str, pattern: str) -> str:
        if pattern and pattern.isascii():
            # ``ifind``'s answer in SQLite's own C functions, without a call into Python per row: lower() folds
            # ASCII only, and the only other characters ``fold`` maps into ASCII are U+0130 and U+212A (Kelvin).
            return f"instr(lower(replace(replace({column}, char(304), 'i'), char(8490), 'k')), %s) > 0"
        return f"threadmem_ifind({column}, %s) > 0"

    def position(self, column: str, pattern_column: str, needle_column: str) -> str:
        return f"threadmem_ifind({column}, {pattern_column})"

    def min_chars(self, column: str) -> str:
        return f"length({column})"

    greatest_function = "max"  # SQLite's scalar max and min of two or more values
    least_function = "min"

    fence = "LIMIT -1 OFFSET 0"  # SQLite has no OFFSET without LIMIT

    def prepare(self) -> None:
        # Registering is idempotent and costs microseconds; doing it here
        # (not on connection_created) covers connections opened before this
        # module was imported.
        connection.ensure_connection()
        connection.connection.create_function("threadmem_ifind", 2, ifind, deterministic=True)


# A LIKE pattern that finds ``{value}`` literally: backslash is LIKE's escape character.
_LIKE_SPECIALS = str.maketrans({"\\": "\\\\", "%": "\\%", "_": "\\_"})


def like_contains(value: str) -> str:
    """A LIKE pattern matching any text that contains ``value`` as it is."""
    return f"%{value.translate(_LIKE_SPECIALS)}%"


def trigram_pattern(term: str) -> str:
    """threadmem_search's operand for ``term``: ``like_contains`` with a % around each character not a letter or digit.

    The operators read those % as nothing (pg/threadmem_search.c). pg_trgm
    reads them as places where a word may end, and leaves out the trigrams
    of a word's first and last letters ("  t", "11 " in ``ticket-4711``):
    nearly every message has them, and reading their posting lists would be
    most of a rare term's cost (docs/search.md).
    """
    marked = (c.translate(_LIKE_SPECIALS) if c.isalnum() else f"%{c.translate(_LIKE_SPECIALS)}%" for c in term)
    return f"%{''.join(marked)}%"
