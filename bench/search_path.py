"""The path of a search through the code: from the REST view and from the MCP tool to the SQL and back.

    .venv/bin/python bench/search_path.py [--database-url postgres://...]

Uses its own small database, PATH_DATABASE_URL (default
postgres://postgres@127.0.0.1:5432/threadmem_search_path; a sqlite:/// URL works
too), migrated and seeded once. For a thread-scope search and a global one it
follows the frames (``sys.setprofile``) of three entry points, in process:

* rest: ``POST /api/v1/search/`` through DRF's test client with a token, from the
  view's ``dispatch`` until it returns the response;
* mcp: the ``search_memory`` tool as the MCP server calls it
  (``mcp_server/server.py:_call_in_thread``), until it returns the tool result;
* literal: ``literal_search`` until the statement that matches the terms (the
  one selecting ``AS term``) is executed: the part the SQL is written in.

Only the request's thread is followed: the ranked lane runs beside it in a
worker thread (``search/semantic.py``), a path of its own. For each it prints:

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
QUERY = "connection refused"
TERMS = ["connection refused", "connection", "refused"]  # lib/terms.py's of QUERY


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

    from threadmem.domain import services
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


def trace(run, entry, *, to_match: bool = False) -> list[tuple[str, str]]:
    """The project modules the interpreter is in, step by step, from the call of ``entry`` (a code object)
    until it returns, or with ``to_match`` until the match statement is executed: (module, the function it
    is in there)."""
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
            if to_match and frame.f_code.co_name == "execute" and "AS term" in str(frame.f_locals.get("sql", "")):
                state["done"] = True
                return
            step(frame)
        elif frame.f_code is entry:
            state["done"] = True
        elif frame.f_back is not None:
            step(frame.f_back)

    sys.setprofile(profile)
    try:
        run()
    finally:
        sys.setprofile(None)
    return steps


def _name(module: str) -> str:
    """``search/literal/plan`` for threadmem/features/search/literal/plan.py, ``api/views/memory``."""
    path = Path(module).with_suffix("")
    parts = path.parts[1:] if path.parts[0] == "threadmem" else path.parts
    return "/".join(parts[:-1] if parts[-1] == "__init__" else parts)


def folded(names: list[str]) -> list[str]:
    """The path with each loop written once: a block repeated back to back becomes ``(a -> b)×n``, inner
    loops first (a loop over the hits, and in it one over a hit's fields)."""
    while True:
        for length in range(1, len(names) // 2 + 1):
            out, i, changed = [], 0, False
            while i < len(names):
                block, times = names[i : i + length], 1
                while names[i + times * length : i + (times + 1) * length] == block:
                    times += 1
                if times > 1 and len(block) == length:
                    out.append(f"({' -> '.join(block)})×{times}" if length > 1 else f"{block[0]}×{times}")
                    i, changed = i + times * length, True
                else:
                    out.append(names[i])
                    i += 1
            if changed:
                names = out
                break
        else:
            return names


def report(label: str, steps: list[tuple[str, str]]) -> None:
    modules = [module for module, _ in steps]
    back = [(module, function) for i, (module, function) in enumerate(steps) if module in modules[:i]]
    # The same function come back to again (once per term, per field kind) counts once.
    distinct = Counter(module for module, _ in dict.fromkeys(back))
    counts = f"modules {len(set(modules))}, returns {len(back)}, distinct returns {sum(distinct.values())}"
    print(f"{label}: {counts}", end="")
    print(f" ({', '.join(f'{_name(m)} {n}' for m, n in distinct.most_common())})" if distinct else "")
    print("   " + " -> ".join(folded([_name(module) for module in modules])))


def _surfaces(user):
    """The three entry points, each as (name, the code its path starts in, a search of the channel, to_match)."""
    from rest_framework.authtoken.models import Token
    from rest_framework.test import APIClient

    from api.views.threads import JSONAPIView
    from mcp_server import server
    from threadmem.domain.scope import resolve_scope
    from threadmem.features.search.literal import literal_search as literal

    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.get_or_create(user=user)[0].key}")

    def rest(channel: str | None) -> None:
        body = {"query": QUERY, **({"channel": channel} if channel else {})}
        response = client.post("/api/v1/search/", body, format="json")
        assert response.status_code == 200, response.content

    def mcp(channel: str | None) -> None:
        arguments = {"query": QUERY, **({"channel": channel} if channel else {})}
        result = server._call_in_thread("search_memory", arguments, user)
        assert not result.is_error, result.content

    def literal_only(channel: str | None) -> None:
        literal.literal_search(scope=resolve_scope(user=user, channel=channel), terms=TERMS)

    return (
        ("rest", JSONAPIView.dispatch.__code__, rest, False),
        ("mcp", server._call_in_thread.__code__, mcp, False),
        ("literal", literal.literal_search.__code__, literal_only, True),
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--database-url", default=os.environ.get("PATH_DATABASE_URL", DEFAULT_URL))
    args = parser.parse_args()
    # This script's directory comes first on the path, and bench/mcp.py would hide the mcp package.
    sys.path[:] = [entry for entry in sys.path if Path(entry or ".").resolve() != ROOT / "bench"]
    os.environ["DATABASE_URL"] = args.database_url
    _ensure_database(args.database_url)
    import django
    from django.core.management import call_command
    from django.test.utils import setup_test_environment

    django.setup()
    setup_test_environment()  # the test client's host
    call_command("migrate", verbosity=0)
    user = _seed()
    from django.db import connection

    print(f"database: {connection.vendor}")
    for name, entry, search, to_match in _surfaces(user):
        for label, channel in (("thread scope", CHANNEL), ("global scope", None)):
            search(channel)  # warm: probes and caches, as a running server has them
            report(f"{name}, {label}", trace(lambda c=channel, s=search: s(c), entry, to_match=to_match))


if __name__ == "__main__":
    main()
