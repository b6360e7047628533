"""The `threadmem` command (pip's entry point): serve, import, capture, mcp, each over the management commands.

Installed with pip it runs without a checkout: its database, key and files live in the user's data directory
(config/settings.py, ``DATA_DIR``). THREADMEM_URL and THREADMEM_TOKEN are the client's variables, read here for
the hook and the MCP bridge, as the plugin passes them.
"""

from __future__ import annotations

import argparse
import os
import runpy
import sys
from pathlib import Path

URL_VARIABLE = "THREADMEM_URL"
TOKEN_VARIABLE = "THREADMEM_TOKEN"
CLI_DIR = Path(__file__).resolve().parent
# The plugin's stdlib-only hook: in a checkout where the plugin keeps it, installed where setup.py puts it.
HOOK_PATHS = (
    CLI_DIR.parent / "plugin" / "scripts" / "threadmem-capture-hook",
    CLI_DIR / "hook" / "threadmem-capture-hook",
)
IMPORT_COMMAND = "threadmem import"


def _django() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()


def _manage(*argv: str) -> None:
    """A management command as `manage.py` runs it (its own exit status and error handling)."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    from django.core.management import execute_from_command_line

    execute_from_command_line(["threadmem", *argv])


def serve(args: argparse.Namespace) -> int:
    """`make run` for an installed copy: the database ready, the admin's token printed, the same ASGI app."""
    _django()
    import uvicorn
    from django.core.management import call_command

    from threadmem.features.demo import admin_ensure

    call_command("database")
    call_command("migrate", interactive=False, verbosity=0)
    call_command("demo", "--empty", "--host", args.host, "--port", str(args.port), import_command=IMPORT_COMMAND)
    _, token = admin_ensure(password=None)
    base = f"http://{args.host}:{args.port}"
    print(
        "\n".join(
            [
                "The Claude Code plugin (docs/mcp.md), in the shell Claude Code starts from:",
                f"  export {URL_VARIABLE}={base} {TOKEN_VARIABLE}={token}",
                "  claude plugin marketplace add /path/to/threadmem   # the clone (./ in it), or its git URL",
                "  claude plugin install threadmem@threadmem",
                "",
            ]
        ),
        flush=True,
    )
    # One ASGI app, as `make run` serves it: Django (API, console, static files) and MCP at /mcp/; tasks in-process.
    uvicorn.run("config.asgi:application", host=args.host, port=args.port)
    return 0


def import_(args: argparse.Namespace) -> int:
    """`import_sessions` over the agents' own folders by default, as the admin `threadmem serve` prints."""
    _django()
    from django.core.management import call_command
    from django.core.management.base import CommandError

    from threadmem.features.demo import ADMIN_USERNAME, admin_ensure
    from threadmem.features.imports.found import AGENT_FOLDERS, agent_folders

    paths = args.paths or agent_folders()
    if not paths:
        folders = ", ".join(f"~/{folder}" for _, folder in AGENT_FOLDERS)
        sys.stderr.write(f"threadmem import: none of {folders} exists here; name a session file or folder\n")
        return 1
    call_command("migrate", interactive=False, verbosity=0)
    if args.owner == ADMIN_USERNAME:
        admin_ensure(password=None)
    try:
        call_command("import_sessions", *map(str, paths), owner=args.owner)
    except CommandError as exc:
        sys.stderr.write(f"threadmem import: {exc}\n")
        return 1
    return 0


def capture(args: argparse.Namespace) -> int:
    """The Claude Code hook: the plugin's script when a server is named, else `manage.py capture` on this machine."""
    if os.environ.get(URL_VARIABLE):
        hook = next(path for path in HOOK_PATHS if path.is_file())
        runpy.run_path(str(hook), run_name="__main__")
        return 0
    _manage("capture", *args.rest)
    return 0


def mcp(args: argparse.Namespace) -> int:
    """stdio MCP: a bridge to `$THREADMEM_URL/mcp/` that passes the project, else `manage.py mcp` on this machine."""
    url = os.environ.get(URL_VARIABLE, "")
    if not url:
        _manage("mcp")
        return 0
    token = os.environ.get(TOKEN_VARIABLE, "").strip()
    if not token:
        sys.stderr.write(f"threadmem mcp: {URL_VARIABLE} is set but {TOKEN_VARIABLE} is not: set the API token\n")
        return 1
    from cli.bridge import bridge

    return bridge(url=url, token=token, cwd=Path.cwd())


def parser() -> argparse.ArgumentParser:
    root = argparse.ArgumentParser(prog="threadmem", description="threadmem: the memory of your agents' sessions.")
    commands = root.add_subparsers(dest="command", required=True, metavar="COMMAND")
    serving = commands.add_parser("serve", help="serve the API, console and MCP (embedded SQLite, tasks in-process)")
    serving.add_argument("--host", default="127.0.0.1")
    serving.add_argument("--port", default=8000, type=int)
    serving.set_defaults(run=serve)
    importing = commands.add_parser("import", help="import sessions (default: ~/.claude/projects, ~/.codex/sessions)")
    importing.add_argument("paths", nargs="*", type=Path, metavar="PATH", help="a session file or a folder of them")
    importing.add_argument("--owner", default="admin", help="the user the threads belong to (default: admin)")
    importing.set_defaults(run=import_)
    capturing = commands.add_parser(
        "capture", help="the Claude Code hook: the hook's JSON on stdin, THREADMEM_URL and THREADMEM_TOKEN"
    )
    capturing.add_argument("rest", nargs=argparse.REMAINDER, help="manage.py capture's options (--owner, --path)")
    capturing.set_defaults(run=capture)
    serving_mcp = commands.add_parser("mcp", help="the memory tools over stdio MCP (a bridge to THREADMEM_URL if set)")
    serving_mcp.set_defaults(run=mcp)
    return root


def main(argv: list[str] | None = None) -> None:
    args = parser().parse_args(argv)
    sys.exit(args.run(args))


if __name__ == "__main__":
    main()
