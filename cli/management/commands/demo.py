"""`manage.py demo`: an admin login, its API token and demo threads, printed for `make run`.

Safe to run on every start: the admin gets a fresh random password each run
(printed, never stored in clear), keeps its token, and demo threads that
exist are left alone. ``--empty`` leaves the demo threads out (`threadmem serve`:
the user's own memory). Both say how many of the agents' own sessions wait to be imported.
"""

from __future__ import annotations

import secrets
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from threadmem.features.demo import ADMIN_USERNAME, DEPLOY_CHANNEL, admin_ensure, demo_load
from threadmem.features.embeddings import choice, tasks
from threadmem.features.embeddings import thread_embedding as embedding_service
from threadmem.features.imports.found import sessions_found, sessions_notice

# What the notice tells a checkout's user to run, the folders after it; `threadmem serve` says `threadmem import`.
CHECKOUT_IMPORT = ".venv/bin/python manage.py import_sessions --owner admin"


def _embed_behind() -> int:
    """Embed, in this process, what the model in force has not (the static model: well under a second here)."""
    tasks.wait_for_background()
    model = choice.active_model()
    if not model or model != choice.static.STATIC_MODEL:
        return 0  # a model server embeds through the pipeline (tasks.py), never in `make run`'s way
    return sum(
        embedding_service.embed_thread(thread_id=t, model=model).chunks for t in embedding_service.threads_behind(model)
    )


class Command(BaseCommand):
    help = "Create or refresh the admin login and its API token, load demo threads, and print how to use them."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--host", default="127.0.0.1", help="host the server will listen on (for the printed URLs)")
        parser.add_argument("--port", default=8000, type=int, help="port the server will listen on")
        parser.add_argument("--empty", action="store_true", help="no demo threads: the admin and its token only")
        parser.add_argument("--import-command", default=None, help="what the import notice says to run")

    def _embed(self) -> None:
        # The ranked lane ranks pieces: the demo threads have theirs before the server answers a search.
        _embed_behind()

    def handle(self, *args: Any, host: str, port: int, empty: bool, import_command: str | None, **options: Any) -> None:
        password = secrets.token_urlsafe(12)
        _, token = admin_ensure(password=password)
        base = f"http://{host}:{port}"
        lines = [
            "",
            "threadmem is ready.",
            f"  console:    {base}/console/",
            f"  login:      {ADMIN_USERNAME}",
            f"  password:   {password}   (new on every start)",
            f"  API token:  {token}",
            f"  API docs:   {base}/api/v1/docs/",
        ]
        if not empty:
            result = demo_load()
            self._embed()
            created = ", ".join(result.created) or "none (all present)"
            lines.append(f"  demo data:  threads created: {created}; owner {result.owner.get_username()}")
        lines += [
            "",
            "Try:",
            f'  curl -H "Authorization: Token {token}" {base}/api/v1/threads/',
        ]
        if not empty:
            lines.append(f'  curl -H "Authorization: Token {token}" {base}/api/v1/threads/{DEPLOY_CHANNEL}/context/')
        lines += [
            "",
            "MCP (Claude Code; docs/mcp.md: the plugin, Claude Desktop, Cursor, stdio):",
            f'  claude mcp add --transport http threadmem {base}/mcp/ --header "Authorization: Bearer {token}"',
            "",
        ]
        found = sessions_found()
        command = import_command or " ".join([CHECKOUT_IMPORT, *(str(f.folder) for f in found if f.waiting)])
        notice = sessions_notice(found, command=command)
        self.stdout.write("\n".join([*lines, *notice, *([""] if notice else [])]))
