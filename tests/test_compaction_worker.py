"""Compaction on real Celery workers over the real broker (marked ``worker``).

Skipped without CELERY_BROKER_URL (conftest.celery_mode); CI runs them on
PostgreSQL with Redis. The workers are separate processes started here with
``celery -A threadmem worker``, pointed at pytest's test database and at the
loopback fake model server, consuming a queue of their own; tests use
committed data (``transaction=True``) so the workers see it.

- two prefork workers, ten concurrent requests (plus duplicate deliveries of
  the task): one claim, one model call, one new generation;
- messages appended while the model call is held open land in the new
  generation, none lost or duplicated;
- SIGKILL of the pool process running a compaction: ``reject_on_worker_lost``
  puts the message back at once, and the redelivered task takes over the dead
  claim (same host, pid gone) and completes;
- SIGKILL of a whole worker (solo pool, nothing left to report the loss): on
  Redis the message comes back after the visibility timeout, set to a few
  seconds for these workers (CELERY_VISIBILITY_TIMEOUT), and another worker
  completes it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from django.conf import settings
from django.db import connection, connections
from rest_framework.test import APIClient

from tests.conftest import make_thread, token_client
from tests.fake_openai import FakeOpenAI
from tests.test_compaction_summary import deploy_conversation, nine_sections, section
from threadmem import selectors
from threadmem.celery import app
from threadmem.compaction.tasks import compaction_run_task
from threadmem.models import Compaction, Generation, Message, Thread

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]

ROOT = Path(__file__).resolve().parent.parent
CELERY = ROOT / ".venv" / "bin" / "celery"
READY_SECONDS = 60
WAIT_SECONDS = 60
# The whole-worker kill test: Redis hands an unacknowledged task to another worker after this.
SHORT_VISIBILITY_TIMEOUT = 4


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
        self, name: str, *, pool: str = "prefork", extra_env: dict[str, str] | None = None, beat: bool = False
    ) -> str:
        node = f"{name}-{self.queue}@%h"
        env = {
            **os.environ,
            "DATABASE_URL": database_url(),
            "CELERY_BROKER_URL": settings.CELERY_BROKER_URL,
            "CELERY_TASK_DEFAULT_QUEUE": self.queue,
            "OPENAI_BASE_URL": self.fake.base_url,
            "OPENAI_API_KEY": self.fake.api_key,
            "THREADMEM_CHAT_MODEL": self.fake.chat_model,
            "THREADMEM_LLM_TIMEOUT": "90",
            "THREADMEM_COMPACTION_RETRY_BACKOFF": "1",
            **(extra_env or {}),
        }
        command = [str(CELERY), "-A", "threadmem", "worker", "-P", pool, "-n", node, "-Q", self.queue, "-l", "info"]
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
        """Messages waiting in the queue; a queue the broker does not know (Redis drops empty ones) holds none."""
        with app.connection_for_write() as conn:
            try:
                return conn.default_channel.queue_declare(queue=self.queue, passive=True).message_count
            except conn.channel_errors:
                return 0

    def purge(self) -> None:
        # No such queue yet: nothing to purge.
        with app.connection_for_write() as conn, contextlib.suppress(*conn.channel_errors):
            conn.default_channel.queue_purge(self.queue)

    def delete_queue(self) -> None:
        with app.connection_for_write() as conn:
            channel = conn.default_channel
            try:
                channel.queue_delete(self.queue)
            except conn.channel_errors:
                return
            client = getattr(channel, "client", None)
            if conn.transport_cls == "redis" or "redis" in type(client).__module__:
                # Kombu's Redis transport keeps the exchange bindings of a queue name in keys of their own.
                for key in client.scan_iter(match=f"_kombu.binding*.{self.queue}"):
                    client.delete(key)


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
    previous_queue = app.conf.task_default_queue
    app.conf.task_default_queue = queue
    pool = Workers(queue=queue, log_dir=log_dir, fake=fake)
    try:
        pool.purge()
        for name, extra_env in names.items():
            pool.start(name, extra_env=extra_env)
        yield pool
    finally:
        pool.stop_all()
        pool.delete_queue()
        app.conf.task_default_queue = previous_queue


@pytest.fixture(scope="module")
def workers(django_db_setup, fake_openai_server, tmp_path_factory) -> Iterator[Workers]:
    log_dir = tmp_path_factory.mktemp("workers")
    with running_workers(fake_openai_server, log_dir, prefix="threadmem-test", names={"w1": {}, "w2": {}}) as pool:
        yield pool


@pytest.fixture
def fake(fake_openai) -> FakeOpenAI:
    # Any model call beyond the scripted ones gets a valid summary.
    fake_openai.default_chat = lambda body: nine_sections(s8="default answer")
    return fake_openai


@pytest.fixture
def idle_after(workers) -> Iterator[None]:
    """Leave no task behind for the next test (whose tables are flushed meanwhile)."""
    yield
    wait_until(lambda: workers.queued() == 0, workers, what="the queue to drain")
    time.sleep(1.0)  # a task taken just before the drain finishes against this test's rows


def close_connections() -> None:
    for conn in connections.all():
        conn.close()


def api_post(client: APIClient, url: str, data: Any = None) -> tuple[int, Any]:
    try:
        response = client.post(url, data, format="json")
        return response.status_code, response.json()
    finally:
        close_connections()  # each request thread opened its own connection


def compaction_of(thread: Thread) -> Compaction:
    return Compaction.objects.get(thread=thread)


def assert_history_intact(thread: Thread, *, before: int, summary_count: int = 1) -> list[Message]:
    messages = list(Message.objects.filter(thread=thread).order_by("seq"))
    assert [m.seq for m in messages] == list(range(1, len(messages) + 1))  # no gap, no duplicate
    assert len(messages) == before + summary_count
    assert sum(m.kind == Message.Kind.SUMMARY for m in messages) == summary_count
    return messages


def test_ten_concurrent_requests_on_two_workers_make_exactly_one_new_generation(workers, owner, fake, idle_after):
    thread = make_thread(owner, "worker:concurrent")
    deploy_conversation(thread)
    before = Message.objects.filter(thread=thread).count()
    gate = fake.push_chat(nine_sections(s8="the one summary"), hold=True)
    url = f"/api/v1/threads/{thread.channel}/compact/"
    start = threading.Barrier(10)

    def request(_: int) -> tuple[int, Any]:
        client = token_client(owner)
        start.wait()
        return api_post(client, url)

    with ThreadPoolExecutor(max_workers=10) as pool:
        answers = list(pool.map(request, range(10)))
    compaction = compaction_of(thread)
    # Once the requested task holds the claim (its model call is held open),
    # the same task is delivered again and again: both workers get copies.
    fake.wait_for_requests(1, path_suffix="/chat/completions")
    duplicates = [f"duplicate-{index}-{uuid.uuid4().hex[:8]}" for index in range(4)]
    for task_id in duplicates:
        compaction_run_task.apply_async(args=[compaction.id], task_id=task_id)
    time.sleep(1.5)  # let the duplicates reach the workers while the model call is held
    gate.set()
    wait_until(lambda: compaction_of(thread).status == "succeeded", workers, what="the compaction")
    wait_until(lambda: workers.queued() == 0, workers, what="the duplicates")
    time.sleep(1.5)

    assert [status for status, _ in answers] == [202] * 10
    assert {body["task_id"] for _, body in answers} == {compaction.task_id}
    assert {body["compaction_id"] for _, body in answers} == {compaction.id}
    assert Compaction.objects.filter(thread=thread).count() == 1
    assert len(fake.chat_requests()) == 1  # claimed once: one model call
    thread.refresh_from_db()
    assert thread.current_generation == 2
    assert list(Generation.objects.filter(thread=thread).values_list("number", "state")) == [
        (1, "closed"),
        (2, "open"),
    ]
    messages = assert_history_intact(thread, before=before)
    summary = next(m for m in messages if m.kind == Message.Kind.SUMMARY)
    assert section(summary.content, 8) == "the one summary"
    assert compaction_of(thread).attempts == 1
    # Both workers ran copies; every duplicate found the claim taken and left.
    for task_id in duplicates:
        finished = [line for line in workers.logs().splitlines() if task_id in line and "succeeded in" in line]
        assert len(finished) == 1, workers.logs()
        assert "'busy:" in finished[0] or "'skipped:" in finished[0]
    ran = [*duplicates, compaction.task_id]
    assert all(any(task_id in workers.log(name) for task_id in ran) for name in ("w1", "w2"))


def test_messages_appended_while_the_model_call_is_in_flight_land_in_the_new_generation(
    workers, owner, fake, idle_after
):
    thread = make_thread(owner, "worker:late-arrivals")
    deploy_conversation(thread)
    before = Message.objects.filter(thread=thread).count()
    gate = fake.push_chat(nine_sections(), hold=True)
    client = token_client(owner)
    messages_url = f"/api/v1/threads/{thread.channel}/messages/"

    status, started = api_post(client, f"/api/v1/threads/{thread.channel}/compact/")
    fake.wait_for_requests(1, path_suffix="/chat/completions")
    running = compaction_of(thread)

    def append_one(index: int) -> tuple[int, Any]:
        return api_post(token_client(owner), messages_url, {"role": "user", "content": f"late message {index}"})

    with ThreadPoolExecutor(max_workers=5) as pool:
        singles = list(pool.map(append_one, range(5)))
    batch_status, _ = api_post(
        client, messages_url, [{"role": "assistant", "content": f"late batch {index}"} for index in range(3)]
    )
    gate.set()
    wait_until(lambda: compaction_of(thread).status == "succeeded", workers, what="the compaction")

    assert status == 202 and started["generation"] == 1
    assert running.status == "running"
    assert running.cut_seq == before
    assert [s for s, _ in singles] == [201] * 5 and batch_status == 201
    late_texts = {f"late message {i}" for i in range(5)} | {f"late batch {i}" for i in range(3)}
    messages = assert_history_intact(thread, before=before + len(late_texts))
    generation_one = [m for m in messages if m.generation == 1]
    generation_two = [m for m in messages if m.generation == 2]
    assert [m.seq for m in generation_one] == list(range(1, before + 1))
    assert {m.content for m in generation_two if m.kind == Message.Kind.MESSAGE} == late_texts
    assert all(m.seq > running.cut_seq for m in generation_two)
    summary = next(m for m in generation_two if m.kind == Message.Kind.SUMMARY)
    assert not any(text in summary.content for text in late_texts)
    thread.refresh_from_db()
    context = selectors.context_messages(thread)
    assert context[0].id == summary.id
    assert [m.seq for m in context[1:]] == sorted(m.seq for m in generation_two if m.id != summary.id)


def test_a_pool_process_killed_mid_compaction_is_redelivered_and_completed(workers, owner, fake, idle_after):
    thread = make_thread(owner, "worker:killed-child")
    deploy_conversation(thread)
    before = Message.objects.filter(thread=thread).count()
    gate = fake.push_chat(nine_sections(s8="never delivered"), hold=True)
    fake.push_chat(nine_sections(s8="written after the redelivery"))

    status, _ = api_post(token_client(owner), f"/api/v1/threads/{thread.channel}/compact/")
    fake.wait_for_requests(1, path_suffix="/chat/completions")
    claimed = compaction_of(thread)
    state_while_running = Generation.objects.get(thread=thread, number=1).state
    holder_pid = int(claimed.claimed_by.rsplit(":", 2)[1])
    assert holder_pid not in {p.pid for p in workers.processes.values()}  # a pool process, not a worker
    os.kill(holder_pid, signal.SIGKILL)
    wait_until(lambda: compaction_of(thread).status == "succeeded", workers, what="the redelivered compaction")
    gate.set()

    assert status == 202
    assert claimed.status == "running"
    assert state_while_running == "compacting"
    done = compaction_of(thread)
    assert done.attempts == 2
    assert done.error == ""
    messages = assert_history_intact(thread, before=before)
    summary = next(m for m in messages if m.kind == Message.Kind.SUMMARY)
    assert section(summary.content, 8) == "written after the redelivery"
    assert Generation.objects.filter(thread=thread).count() == 2
    assert "WorkerLostError" in workers.logs() or "signal 9" in workers.logs()


def test_a_whole_worker_killed_mid_compaction_is_redelivered_by_the_broker(workers, owner, fake, tmp_path):
    """Solo workers: the task runs in the worker process itself, so killing it leaves nobody to
    reject the message; the broker hands it out again (Redis after the visibility timeout)."""
    solo = Workers(queue=f"{workers.queue}-solo", log_dir=tmp_path, fake=fake)
    short = {"CELERY_VISIBILITY_TIMEOUT": str(SHORT_VISIBILITY_TIMEOUT)}
    app.conf.task_default_queue = solo.queue
    try:
        solo.purge()
        solo.start("s1", pool="solo", extra_env=short)
        solo.start("s2", pool="solo", extra_env=short)
        thread = make_thread(owner, "worker:killed-worker")
        deploy_conversation(thread)
        before = Message.objects.filter(thread=thread).count()
        gate = fake.push_chat(nine_sections(s8="never delivered"), hold=True)
        fake.push_chat(nine_sections(s8="written by the other worker"))

        status, _ = api_post(token_client(owner), f"/api/v1/threads/{thread.channel}/compact/")
        fake.wait_for_requests(1, path_suffix="/chat/completions")
        holder_pid = int(compaction_of(thread).claimed_by.rsplit(":", 2)[1])
        holder = next(name for name, process in solo.processes.items() if process.pid == holder_pid)
        survivor = next(name for name in solo.processes if name != holder)
        solo.kill(holder)
        wait_until(lambda: compaction_of(thread).status == "succeeded", solo, what="the broker's redelivery")
        gate.set()

        assert status == 202
        done = compaction_of(thread)
        assert done.attempts == 2
        messages = assert_history_intact(thread, before=before)
        summary = next(m for m in messages if m.kind == Message.Kind.SUMMARY)
        assert section(summary.content, 8) == "written by the other worker"
        assert done.task_id in solo.log(survivor)
        wait_until(lambda: solo.queued() == 0, solo, what="the queue to drain")
    finally:
        solo.stop_all()
        solo.delete_queue()
        app.conf.task_default_queue = workers.queue
