"""``manage.py chat CHANNEL``: an interactive terminal loop over the agent-turn service.

For operators and for trying a local model (Ollama, LM Studio, vLLM through
OPENAI_BASE_URL and THREADMEM_CHAT_MODEL). Each line typed runs one turn,
exactly as ``POST /api/v1/threads/{channel}/turns/`` does: the same prompt,
tools, storage and errors.
"""

from __future__ import annotations

import contextlib
import json
import logging
import sys
from collections.abc import Iterator
from typing import Any, TextIO

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from threadmem.domain import selectors, services
from threadmem.errors import DomainError, NotFound
from threadmem.features import agent
from threadmem.models import Message, Thread

EXIT_WORDS = {"/exit", "/quit"}
# The SDK's HTTP client logs every request at INFO, between the lines of the
# conversation; -v 2 shows them again.
HTTP_CLIENT_LOGGERS = ("httpx", "httpx2", "openai")
# Tool arguments and results are shown on one line each, cut here.
PREVIEW_CHARS = 160


@contextlib.contextmanager
def _quiet_http_client(verbosity: int) -> Iterator[None]:
    loggers = [logging.getLogger(name) for name in HTTP_CLIENT_LOGGERS] if verbosity < 2 else []
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.WARNING)
    try:
        yield
    finally:
        for logger, level in zip(loggers, levels, strict=True):
            logger.setLevel(level)


def _preview(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= PREVIEW_CHARS else text[: PREVIEW_CHARS - 1] + "…"


class Command(BaseCommand):
    help = (
        "Chat with the configured model on a thread, one agent turn per line (creates the thread if missing). "
        "Type /exit or send end-of-file (Ctrl-D) to leave."
    )
    # call_command(..., stdin=...) in tests, as createsuperuser does.
    stealth_options = ("stdin",)

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("channel", help="the thread's channel")
        parser.add_argument(
            "--user",
            dest="username",
            help="who speaks (and owns the thread if it is created); default: the thread's owner",
        )
        parser.add_argument("--session", dest="session_id", default="", help="session_id stored on every message")

    def handle(self, *args: Any, **options: Any) -> None:
        stdin = options.get("stdin") or sys.stdin
        thread, user = self._thread_and_user(options["channel"], options.get("username"))
        missing = agent.missing_model_settings()
        if missing:
            raise CommandError(f"agent turns need a chat model; set {' and '.join(missing)}")
        self.stdout.write(
            f"thread {thread.channel} (generation {thread.current_generation}) as {user.get_username()}; /exit to leave"
        )
        with _quiet_http_client(options["verbosity"]):
            try:
                self._converse(thread, user, stdin=stdin, session_id=options["session_id"])
            except KeyboardInterrupt:
                self.stdout.write("")

    def _converse(self, thread: Thread, user: Any, *, stdin: TextIO, session_id: str) -> None:
        interactive = stdin.isatty()
        while True:
            if interactive:
                self.stdout.write("you> ", ending="")
                self.stdout.flush()
            line = stdin.readline()
            if not line:
                break
            content = line.rstrip("\n")
            if content.strip() in EXIT_WORDS:
                break
            if not content.strip():
                continue
            try:
                result = agent.turn_run(thread=thread, user=user, content=content, session_id=session_id)
            except DomainError as err:
                self.stderr.write(f"error ({err.status_code}): {err.message}")
                continue
            for message in result.messages:
                self._show_step(message)
            self.stdout.write(f"agent> {result.answer}")

    def _thread_and_user(self, channel: str, username: str | None) -> tuple[Thread, Any]:
        users = get_user_model()
        user = None
        if username:
            try:
                user = users.objects.get(**{users.USERNAME_FIELD: username})
            except users.DoesNotExist:
                raise CommandError(f"no user {username!r}") from None
        try:
            # The same rule as the API: the user's own thread (an operator's own first, else the one holder).
            thread = selectors.thread_named(channel=channel, user=user)
        except NotFound:
            thread = None
        except DomainError as err:
            raise CommandError(err.message) from None
        if thread is None:
            if user is None:
                raise CommandError(f"thread {channel!r} does not exist; pass --user USERNAME to create it")
            try:
                thread = services.thread_create(owner=user, channel=channel)
            except DomainError as err:
                raise CommandError(err.message) from None
            self.stdout.write(f"created thread {thread.channel} owned by {user.get_username()}")
            return thread, user
        return thread, user or thread.owner

    def _show_step(self, message: Message) -> None:
        if message.role == Message.Role.ASSISTANT and message.tool_calls:
            for call in message.tool_calls:
                arguments = json.dumps(call["arguments"], ensure_ascii=False)
                self.stdout.write(f"  · {call['name']}({_preview(arguments)})")
        elif message.role == Message.Role.TOOL:
            self.stdout.write(f"    → {len(message.content)} chars: {_preview(message.content)}")
