"""The path of a search's terms through the code: from ``literal_search`` to the match statement's ``cursor.execute``.

    .venv/bin/python bench/search_path.py [--database-url postgres://...]

Uses its own small database, PATH_DATABASE_URL (default
postgres://postgres@127.0.0.1:5432/threadmem_search_path; a sqlite:/// URL works
too), migrated and seeded once. For a thread-scope search and a global one it
follows the frames (``sys.setprofile``) from the call of ``literal_search``
until the statement that matches the terms (the one selecting ``AS term``)
is executed, and prints:

* modules: how many of the project's modules the path passes through;
* returns: how often it comes back to a module it had already left; distinct
  returns: the same, counting once each function come back to (per module in
  brackets);
* the path itself, one module per step.

Frames outside the project (Django, the driver) are left out; a step is a
change of the project's module the interpreter is in.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

DEFAULT_URL = "postgres://postgres@127.0.0.1:5432/threadmem_search_path"
PROJECT = tuple(str(ROOT / package) + os.sep for package in ("threadmem", "api", "console", "cli", "mcp_server"))
CHANNEL = "search-path-bench"


def _ensure_database(url: str) -> None:
    if not url.startswith("postgres"):
        return
    import psycopg

    base, name = url.rsplit("/", 1)
    with psycopg.connect(f"{base}/postgres", autocommit=True) as admin:
        if admin.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone() is None:
            admin.execute(f'CREATE DATABASE "{name}"')


def _seed():
    from django.contrib.auth import get_user_model

    from threadmem import services
    from threadmem.models import Thread

    users = get_user_model()
    user = users.objects.filter(username="search-path").first()
    if user is None:
        user = users.objects.create_user(username="search-path", password="search-path", is_staff=True)
    if not Thread.objects.filter(channel=CHANNEL).exists():
        thread = services.thread_create(owner=user, channel=CHANNEL)
        messages = []
        for n in range(40):
            content = f"deploy ticket-{n} to staging, connection refused on port 54{n}"
            messages.append({"role": "user", "content": content})
            messages.append(
                {
                    "role": "assistant",
                    "tool_calls": [{"id": f"c{n}", "name": "Bash", "arguments": {"command": f"curl host-{n}:8080"}}],
                }
            )
            messages.append({"role": "tool", "tool_call_id": f"c{n}", "content": f"curl: (7) connection refused {n}"})
        services.messages_append(thread=thread, messages=services.messages_parse(messages))
    return user


def _module(frame) -> str | None:
    name = frame.f_code.co_filename
    if not name.startswith(PROJECT):
        return None
    return str(Path(name).relative_to(ROOT))


def trace(run) -> list[tuple[str, str]]:
    """The project modules the interpreter is in, step by step, from literal_search to the match statement:
    (module, the function it is in there)."""
    from threadmem.search import literal

    entry = literal.literal_search.__code__
    steps: list[tuple[str, str]] = []
    state = {"active": False, "done": False}

    def step(frame) -> None:
        module = _module(frame)
        if module is not None and (not steps or steps[-1][0] != module):
            steps.append((module, frame.f_code.co_qualname))

    def profile(frame, event, arg):
        if state["done"] or event not in ("call", "return"):
            return
        if event == "call" and frame.f_code is entry:
            state["active"] = True
        if not state["active"]:
            return
        if event == "call":
            if frame.f_code.co_name == "execute" and "AS term" in str(frame.f_locals.get("sql", "")):
                state["done"] = True
                return
            step(frame)
        elif frame.f_back is not None:
            step(frame.f_back)

    sys.setprofile(profile)
    try:
        run()
    finally:
        sys.setprofile(None)
    return steps


def _name(module: str) -> str:
    path = Path(module)
    return path.parent.name if path.stem == "__init__" else path.stem


def report(label: str, steps: list[tuple[str, str]]) -> None:
    modules = [module for module, _ in steps]
    back = [(module, function) for i, (module, function) in enumerate(steps) if module in modules[:i]]
    # The same function come back to again (once per term, per field kind) counts once.
    distinct = Counter(module for module, _ in dict.fromkeys(back))
    counts = f"modules {len(set(modules))}, returns {len(back)}, distinct returns {sum(distinct.values())}"
    print(f"{label}: {counts}", end="")
    print(f" ({', '.join(f'{Path(m).name} {n}' for m, n in distinct.most_common())})" if distinct else "")
    print("   " + " -> ".join(_name(module) for module in modules))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--database-url", default=os.environ.get("PATH_DATABASE_URL", DEFAULT_URL))
    args = parser.parse_args()
    os.environ["DATABASE_URL"] = args.database_url
    _ensure_database(args.database_url)
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)
    from dataclasses import replace

    from threadmem.scope import resolve_scope
    from threadmem.search.literal import literal_search

    user = _seed()
    from django.db import connection

    print(f"database: {connection.vendor}")
    for label, channel in (("thread scope", CHANNEL), ("global scope", None)):
        scope = replace(resolve_scope(user=user, channel=channel))
        terms = ["connection refused", "connection", "refused"]
        literal_search(scope=scope, terms=terms)  # warm: probes and caches, as a running server has them
        report(label, trace(lambda scope=scope, terms=terms: literal_search(scope=scope, terms=terms)))


if __name__ == "__main__":
    main()
