"""Every statement of 24 literal searches, written to a file, so that a refactoring can show it changed no SQL.

    .venv/bin/python bench/search_statements.py OUT.json [--database-url URL]
    .venv/bin/python bench/search_statements.py --compare BEFORE.json AFTER.json

Uses bench/search_path.py's seeded database. The searches: a thread and the
global scope, each without filters, with a tool filter and with a role filter,
for four queries. Run it on the code before and after a change (with
``--path index`` too, for the index paths of a small store), then
compare: the load-scaled time budget's figures are masked (they follow the
machine's load), and a search whose budget ran out in one run (one statement
more) is compared on its first statement.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import search_path  # sets the settings module and the project path

QUERIES = (["connection refused", "connection", "refused"], ["ticket-4"], ["curl host-3:8080"], ["Zürich"])


def _masked(statement: str) -> str:
    statement = re.sub(r"greatest\(\d+::float8", "greatest(N::float8", statement)
    return re.sub(r"set_config\('statement_timeout', '\d+'", "set_config('statement_timeout', 'T'", statement)


def capture(url: str, *, path: str = "auto") -> list[list[str]]:
    os.environ["DATABASE_URL"] = url
    search_path._ensure_database(url)
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from threadmem.domain.scope import resolve_scope
    from threadmem.features.search.literal import plan
    from threadmem.features.search.literal.literal_search import literal_search

    plan.TUNING = replace(plan.TUNING, path=plan.SearchPath(path))
    user = search_path._seed()
    searches = []
    for channel in (search_path.CHANNEL, None):
        scope = resolve_scope(user=user, channel=channel)
        for filtered in (scope, replace(scope, tools=("Bash",)), replace(scope, role="tool")):
            for terms in QUERIES:
                literal_search(scope=filtered, terms=terms)  # warm: probes and caches
                with CaptureQueriesContext(connection) as queries:
                    literal_search(scope=filtered, terms=terms)
                searches.append([_masked(query["sql"]) for query in queries.captured_queries])
    return searches


def compare(before: list[list[str]], after: list[list[str]]) -> int:
    differing = 0
    for index, (old, new) in enumerate(zip(before, after, strict=True)):
        same = old == new if len(old) == len(new) else old[0] == new[0]
        if not same:
            differing += 1
            print(f"search {index}: {len(old)} statements before, {len(new)} after, differing")
    print(f"{len(before)} searches, {sum(map(len, before))} statements before; {differing} differing")
    return differing


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("out", nargs="?")
    parser.add_argument("--database-url", default=os.environ.get("PATH_DATABASE_URL", search_path.DEFAULT_URL))
    parser.add_argument("--compare", nargs=2, metavar=("BEFORE", "AFTER"))
    parser.add_argument("--path", choices=("auto", "scan", "index"), default="auto", help="force a thread's match path")
    args = parser.parse_args()
    if args.compare:
        before, after = (json.loads(Path(name).read_text()) for name in args.compare)
        sys.exit(1 if compare(before, after) else 0)
    searches = capture(args.database_url, path=args.path)
    Path(args.out).write_text(json.dumps(searches, indent=0))
    print(f"{len(searches)} searches, {sum(map(len, searches))} statements: {args.out}")


if __name__ == "__main__":
    main()
