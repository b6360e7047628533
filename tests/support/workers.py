"""Real Celery worker processes for the ``worker`` tests: started on a queue of their own (every kind of task
routed to it unless a test routes a kind elsewhere), pointed at pytest's test database and the loopback fake model
server, stopped with their pool children."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

from django.conf import settings
from django.db import connection, connections
from rest_framework.test import APIClient

from config.celery import app
from tests.support.fake_openai import FakeOpenAI

ROOT = Path(__file__).resolve().parents[2]
CELERY = ROOT / ".venv" / "bin" / "celery"
READY_SECONDS = 60
WAIT_SECONDS = 60
# The settings naming each routed kind's queue (config/settings.py, CELERY_TASK_ROUTES; the child's: child_settings.py).
QUEUE_SETTINGS = ("COMPACTION_QUEUE", "EMBEDDINGS_QUEUE", "IMPORTS_QUEUE")


def database_url() -> str:
    """pytest's test database, as a URL the worker processes' settings read."""
    db = connection.settings_dict
    if db["ENGINE"].endswith("sqlite3"):
        return f"sqlite:///{db['NAME']}"
    credentials = quote(db["USER"] or "", safe="")
    if db.get("PASSWORD"):
        credentials += ":" + quote(db["PASSWORD"], safe="")
    host = f"{db.get('HOST') or '127.0.0.1'}:{db.get('PORT') or 5432}"
    return f"postgres://{credentials}@{host}/{db['NAME']}"


@dataclass
class Workers:
    queue: str
    log_dir: Path
    fake: FakeOpenAI
    processes: dict[str, subprocess.Popen] = field(default_factory=dict)

    def start(
        self,
        name: str,
        *,
        pool: str = "prefork",
        extra_env: dict[str, str] | None = None,
        beat: bool = False,
        queues: list[str] | None = None,
    ) -> str:
        node = f"{name}-{self.queue}@%h"
        env = {
            **os.environ,
            "DATABASE_URL": database_url(),
            # The recovery's timings a test shortens (extra_env) are read by the child's settings.
            "DJANGO_SETTINGS_MODULE": "tests.support.child_settings",
            "CELERY_BROKER_URL": settings.CELERY_BROKER_URL,
            # The queues, constants in the product, are the child settings' to rename: tasks the worker sends (a
            # retry, the sweep's) stay on this test's queue too.
            "CELERY_TASK_DEFAULT_QUEUE": self.queue,
            **dict.fromkeys(QUEUE_SETTINGS, self.queue),
            "OPENAI_BASE_URL": self.fake.base_url,
            "OPENAI_API_KEY": self.fake.api_key,
            "THREADMEM_CHAT_MODEL": self.fake.chat_model,
            "THREADMEM_LLM_TIMEOUT": "90",
            "COMPACTION_RETRY_BACKOFF": "1",
            **(extra_env or {}),
        }
        consumed = ",".join(queues or [self.queue])
        command = [str(CELERY), "-A", "config", "worker", "-P", pool, "-n", node, "-Q", consumed, "-l", "info"]
        command += ["--without-gossip", "--without-mingle", "--without-heartbeat"]
        if pool == "prefork":
            command += ["-c", "1"]
        if beat:  # Celery beat inside this worker, its schedule file beside the logs
            command += ["-B", "-s", str(self.log_dir / f"{name}-beat-schedule")]
        log = open(self.log_dir / f"{name}.log", "w")  # noqa: SIM115  (closed with the process)
        # A session of its own, so teardown can end the worker and its pool children together.
        self.processes[name] = subprocess.Popen(
            command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        self.wait_for_log(name, " ready.", READY_SECONDS)
        return name

    def log(self, name: str) -> str:
        return (self.log_dir / f"{name}.log").read_text(errors="replace")

    def logs(self) -> str:
        return "\n".join(f"--- {name}\n{self.log(name)[-4000:]}" for name in self.processes)

    def wait_for_log(self, name: str, text: str, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while text not in self.log(name):
            if self.processes[name].poll() is not None:
                raise AssertionError(f"worker {name} exited:\n{self.logs()}")
            if time.monotonic() > deadline:
                raise AssertionError(f"worker {name} not ready in {seconds} s:\n{self.logs()}")
            time.sleep(0.2)

    def kill(self, name: str) -> None:
        process = self.processes.pop(name)
        with contextlib.suppress(ProcessLookupError):  # already gone
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=30)

    def stop_all(self) -> None:
        for process in list(self.processes.values()):
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
        for name, process in list(self.processes.items()):
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.kill(name)
        self.processes.clear()

    def queued(self) -> int:
        return queued(self.queue)

    def purge(self) -> None:
        purge(self.queue)

    def delete_queue(self) -> None:
        delete_queue(self.queue)


def queued(queue: str) -> int:
    """Messages waiting in the queue; a queue the broker does not know (Redis drops empty ones) holds none."""
    with app.connection_for_write() as conn:
        try:
            return conn.default_channel.queue_declare(queue=queue, passive=True).message_count
        except conn.channel_errors:
            return 0


def purge(queue: str) -> None:
    # No such queue yet: nothing to purge.
    with app.connection_for_write() as conn, contextlib.suppress(*conn.channel_errors):
        conn.default_channel.queue_purge(queue)


def delete_queue(queue: str) -> None:
    # Kombu's Redis transport deletes only the queues its own channel declared: empty it first in any case.
    purge(queue)
    with app.connection_for_write() as conn:
        channel = conn.default_channel
        try:
            channel.queue_delete(queue)
        except conn.channel_errors:
            return
        client = getattr(channel, "client", None)
        if conn.transport_cls == "redis" or "redis" in type(client).__module__:
            # Kombu's Redis transport keeps the exchange bindings of a queue name in keys of their own.
            for key in client.scan_iter(match=f"_kombu.binding*.{queue}"):
                client.delete(key)


@contextlib.contextmanager
def sending_to(default: str, routes: dict[str, str] | None = None) -> Iterator[None]:
    """This process sends its tasks to ``default``; ``routes``: a routed kind's queue, by its setting's name."""
    previous = {"task_default_queue": app.conf.task_default_queue, "task_routes": app.conf.task_routes}
    queue_of = {**dict.fromkeys(QUEUE_SETTINGS, default), **(routes or {})}
    setting_of = {getattr(settings, setting): setting for setting in QUEUE_SETTINGS}
    # Through update(), which makes the app rebuild its router (an assignment would leave the old one in use).
    app.conf.update(
        task_default_queue=default,
        task_routes={
            task: {"queue": queue_of[setting_of[route["queue"]]]} for task, route in settings.CELERY_TASK_ROUTES.items()
        },
    )
    try:
        yield
    finally:
        app.conf.update(previous)


def wait_until(condition: Callable[[], bool], workers: Workers, *, what: str, seconds: float = WAIT_SECONDS) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}:\n{workers.logs()}")
        time.sleep(0.2)


@contextlib.contextmanager
def running_workers(
    fake: FakeOpenAI, log_dir: Path, *, prefix: str, names: dict[str, dict[str, str]]
) -> Iterator[Workers]:
    """Workers on a queue of their own, which the app sends tasks to meanwhile; ``names``: worker -> extra env."""
    queue = f"{prefix}-{os.getpid()}-{uuid.uuid4().hex[:6]}"
    pool = Workers(queue=queue, log_dir=log_dir, fake=fake)
    with sending_to(queue):
        try:
            pool.purge()
            for name, extra_env in names.items():
                pool.start(name, extra_env=extra_env)
            yield pool
        finally:
            pool.stop_all()
            pool.delete_queue()


def close_connections() -> None:
    for conn in connections.all():
        conn.close()


def api_post(client: APIClient, url: str, data: Any = None) -> tuple[int, Any]:
    try:
        response = client.post(url, data, format="json")
        return response.status_code, response.json()
    finally:
        close_connections()  # each request thread opened its own connection
