"""SQLite's literal match of an ASCII term runs in SQLite's own functions and answers exactly as ``ifind``."""

from __future__ import annotations

import pytest
from django.db import connection

from threadmem.features.search.literal.dialects import SqliteDialect, ifind
from threadmem.lib.terms import fold

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(connection.vendor != "sqlite", reason="SQLite's match"),
]

FIELDS = ["Kelvin \u212a here", "\u0130stanbul", "stra\u00dfe", "\u00c0B", "plain Text", "", "\u65e5\u672c K", None]
TERMS = ["k", "kelvin k", "istanbul", "i\u0307", "strasse", "TEXT", "\u00e0b", "n k"]


@pytest.mark.parametrize("term", TERMS)
def test_a_terms_match_is_ifinds_for_every_field(term):
    dialect = SqliteDialect()
    dialect.prepare()
    condition, pattern = dialect.matches("x", term)
    with connection.cursor() as cursor:
        for field in FIELDS:
            cursor.execute(f"SELECT {condition} FROM (SELECT %s AS x)", [pattern, field])
            (found,) = cursor.fetchone()
            assert bool(found) == (ifind(field, fold(term)) > 0), (field, term)
    assert ("threadmem_ifind" not in condition) == term.isascii()
