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
from threadmem.features.search import search_memory
from threadmem.features.tools import SearchMemoryRequest
from threadmem.infrastructure.replicas import read
from threadmem.models import ToolCall


class Command(BaseCommand):
    help = "Run search_memory and print the tool text exactly as the model reads it."

    def add_arguments(self, parser: CommandParser) -> None:
        # The tool's arguments as declared: the required ones positional, the others options;
        # one that takes one name or a list is repeated (--tool Read --tool Edit).
        for name, spec in SearchMemoryRequest.args().items():
            if name in SearchMemoryRequest.required():
                parser.add_argument(name, help=spec.rest_doc)
                continue
            repeated = any(branch.get("type") == "array" for branch in spec.schema.get("anyOf", ()))
            # No argparse choices: search refuses a bad value with the message every surface gives.
            help_text = f"{spec.rest_doc}; repeat the option for several" if repeated else spec.rest_doc
            parser.add_argument(f"--{name}", action="append" if repeated else "store", help=help_text)
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
            request = SearchMemoryRequest.build({name: options[name] for name in SearchMemoryRequest.args()})
            # A model-facing read, routed by the rule every surface applies (threadmem/infrastructure/replicas/).
            result = read(lambda: search_memory(user=user, **request.keywords(), surface=ToolCall.Surface.CLI), user.pk)
        except DomainError as err:
            raise CommandError(err.message) from None
        # The text as is, then one newline to end the terminal line.
        self.stdout.write(result.text)
