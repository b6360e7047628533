"""Run search_memory from the shell and print the exact text the model would read.

manage.py search_memory "kubectl rollout" --channel slack:C042/1700000000.1 --user alice
manage.py search_memory "~/.ssh/id_ed25519"            # global scope, as the first superuser
manage.py search_memory "/srv/app.py" --tool Read --tool Edit --role assistant
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from threadmem.errors import DomainError
from threadmem.models import ToolCall
from threadmem.search import search_memory


class Command(BaseCommand):
    help = "Run search_memory and print the tool text exactly as the model reads it."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("query", help="the query, as the model would send it")
        parser.add_argument("--channel", help="the thread to search; omit (or '*') for every readable thread")
        parser.add_argument(
            "--tool", action="append", help="only hits of this tool's calls and results (repeat for several)"
        )
        parser.add_argument("--role", help="only hits in messages of this role (user, assistant, tool, system)")
        parser.add_argument(
            "--user", help="search as this username (its reach applies); default: the first active superuser"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        User = get_user_model()
        username = options.get("user")
        if username:
            user = User.objects.filter(username=username).first()
            if user is None:
                raise CommandError(f"no user named {username!r}")
        else:
            user = User.objects.filter(is_superuser=True, is_active=True).order_by("pk").first()
            if user is None:
                raise CommandError("no active superuser to search as: pass --user USERNAME")
        try:
            result = search_memory(
                user=user,
                query=options["query"],
                channel=options.get("channel"),
                tool=options.get("tool"),
                role=options.get("role"),
                surface=ToolCall.Surface.CLI,
            )
        except DomainError as err:
            raise CommandError(err.message) from None
        # The text as is, then one newline to end the terminal line.
        self.stdout.write(result.text)
