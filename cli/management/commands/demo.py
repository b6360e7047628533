"""`manage.py demo`: an admin login, its API token and demo threads, printed for `make run`.

Safe to run on every start: the admin gets a fresh random password each run
(printed, never stored in clear), keeps its token, and demo threads that
exist are left alone.
"""

from __future__ import annotations

import secrets
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandParser
from django.db import transaction
from rest_framework.authtoken.models import Token

from threadmem.demo import DEPLOY_CHANNEL, demo_load
from threadmem.embeddings import choice, tasks
from threadmem.embeddings import service as embedding_service

ADMIN_USERNAME = "admin"


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

    def _embed(self) -> None:
        # The ranked lane ranks pieces: the demo threads have theirs before the server answers a search.
        _embed_behind()

    def handle(self, *args: Any, host: str, port: int, **options: Any) -> None:
        password = secrets.token_urlsafe(12)
        with transaction.atomic():
            admin, _ = get_user_model().objects.get_or_create(username=ADMIN_USERNAME)
            admin.is_staff = admin.is_superuser = admin.is_active = True
            admin.set_password(password)
            admin.save()
            token, _ = Token.objects.get_or_create(user=admin)
        result = demo_load()
        self._embed()

        base = f"http://{host}:{port}"
        created = ", ".join(result.created) or "none (all present)"
        self.stdout.write(
            "\n".join(
                [
                    "",
                    "threadmem is ready.",
                    f"  console:    {base}/console/",
                    f"  login:      {ADMIN_USERNAME}",
                    f"  password:   {password}   (new on every `make run`)",
                    f"  API token:  {token.key}",
                    f"  API docs:   {base}/api/v1/docs/",
                    f"  demo data:  threads created: {created}; owner {result.owner.get_username()}",
                    "",
                    "Try:",
                    f'  curl -H "Authorization: Token {token.key}" {base}/api/v1/threads/',
                    f'  curl -H "Authorization: Token {token.key}" {base}/api/v1/threads/{DEPLOY_CHANNEL}/context/',
                    "",
                    "MCP (Claude Code; docs/mcp.md: Claude Desktop, Cursor, stdio):",
                    f"  claude mcp add --transport http threadmem {base}/mcp/"
                    f' --header "Authorization: Bearer {token.key}"',
                    "",
                ]
            )
        )
