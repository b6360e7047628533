"""Model-facing reads on a real PostgreSQL streaming replica (threadmem/infrastructure/replicas/).

The replica is the suite's PostgreSQL copied with ``pg_basebackup -R`` into a
temporary folder and started on a free port (the whole cluster: the test
database is on it too). Its statistics show the reads it answered; replay
paused with ``pg_wal_replay_pause()`` makes it lag on demand. The tests commit
(``transaction=True``): a replica sees only what the primary committed.
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlencode

import psycopg
import pytest
from django.db import connection, connections

from tests.support.factories import append, make_thread, make_user, token_client
from tests.support.mcp_client import free_port
from tests.support.postgres_server import as_postgres, scratch_folder
from tests.support.semantic import embedded, listed_ids, semantic_part
from threadmem.features.search import semantic
from threadmem.features.search.hits import Coverage
from threadmem.features.tools import tool_answer
from threadmem.infrastructure import metrics, replicas
from threadmem.infrastructure.replicas import health, positions
from threadmem.models import ToolCall

ALIAS = "replica1"
# The replica is a test mirror of the test database: never flushed, read only by what routes reads there.
pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True, databases=["default", ALIAS])]

BINARIES = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_basebackup"))
# What a hot standby needs at least as high as its primary's, or it refuses to start.
AT_LEAST_THE_PRIMARYS = (
    "max_connections",
    "max_worker_processes",
    "max_wal_senders",
    "max_prepared_transactions",
    "max_locks_per_transaction",
)


class Standby:
    def __init__(self, bin_dir: Path, data: Path, root: Path, port: int) -> None:
        self.bin_dir, self.data, self.root, self.port = bin_dir, data, root, port

    def ctl(self, action: str) -> None:
        command = [str(self.bin_dir / "pg_ctl"), "-D", str(self.data), "-l", str(self.root / "log"), "-w"]
        extra = ["-m", "fast"] if action == "stop" else []
        subprocess.run(as_postgres([*command, *extra, action]), check=True, capture_output=True)

    def sql(self, statement: str) -> list[tuple]:
        with psycopg.connect(f"postgresql://postgres@127.0.0.1:{self.port}/postgres", autocommit=True) as admin:
            cursor = admin.execute(statement)
            return cursor.fetchall() if cursor.description else []

    def scans(self, database: str) -> int:
        """Scans of the messages table this replica answered (its own statistics; flushed within seconds)."""
        url = f"postgresql://postgres@127.0.0.1:{self.port}/{database}"
        with psycopg.connect(url, autocommit=True) as reader:
            row = reader.execute(
                "SELECT COALESCE(seq_scan, 0) + COALESCE(idx_scan, 0) FROM pg_stat_user_tables "
                "WHERE relname = 'threadmem_message'"
            ).fetchone()
        return row[0] if row else 0

    def caught_up(self, timeout: float = 30.0) -> None:
        with connections["default"].cursor() as cursor:
            cursor.execute("SELECT pg_current_wal_insert_lsn()::text")
            wanted = positions.lsn(cursor.fetchone()[0])
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            (replayed,) = self.sql("SELECT pg_last_wal_replay_lsn()::text")[0]
            if positions.lsn(replayed) >= wanted:
                return
            time.sleep(0.05)
        raise AssertionError("the replica did not catch up")


def forget_replicas() -> None:
    """Forget what this process knows of every replica (its status, the primary's positions, its libraries)."""
    health._statuses.clear()
    health._primary.clear()
    health._libraries.clear()


def forget_in_lane_threads(alias: str) -> None:
    """Drop ``alias``'s connection from the ranked lane's threads too, which keep one each: another module's
    replica, on another port, is then connected to afresh. One call a thread, held at a barrier until all ran."""
    barrier = threading.Barrier(semantic.SEMANTIC_WORKERS)

    def forget() -> None:
        connections[alias].close()
        del connections[alias]
        barrier.wait(timeout=30)

    for future in [semantic._executor.submit(forget) for _ in range(semantic.SEMANTIC_WORKERS)]:
        future.result()


@pytest.fixture(scope="module")
def standby(django_db_setup, django_db_blocker) -> Iterator[Standby]:
    if connection.vendor != "postgresql":
        pytest.skip("streaming replicas are PostgreSQL's")
    if not BINARIES:
        pytest.skip("needs PostgreSQL's server binaries (pg_basebackup, pg_ctl)")
    primary = connection.settings_dict
    bin_dir = Path(BINARIES[-1]).parent
    root = scratch_folder("threadmem-replica-")
    data, port = root / "data", free_port()
    host, primary_port = primary.get("HOST") or "127.0.0.1", str(primary.get("PORT") or 5432)
    user = primary.get("USER") or "postgres"
    copy = ["-h", host, "-p", primary_port, "-U", user, "-D", str(data), "-R", "-X", "stream", "-c", "fast"]
    backup = subprocess.run(
        as_postgres([str(bin_dir / "pg_basebackup"), *copy, "--no-sync"]),
        capture_output=True,
        text=True,
    )
    if backup.returncode != 0:
        shutil.rmtree(root, ignore_errors=True)
        pytest.skip(
            "cannot copy the primary with pg_basebackup (a replication connection needs a pg_hba.conf line: "
            f"scripts/allow-replication.sh): {backup.stderr.strip()[:300]}"
        )
    with django_db_blocker.unblock(), connection.cursor() as cursor:
        cursor.execute("SELECT name, setting FROM pg_settings WHERE name = ANY(%s)", [list(AT_LEAST_THE_PRIMARYS)])
        inherited = dict(cursor.fetchall())
    # Debian keeps the configuration outside the data directory: the copy has none of its own.
    conf = [f"port = {port}", "listen_addresses = '127.0.0.1'", f"unix_socket_directories = '{root}'"]
    conf += ["hot_standby = on", "fsync = off", "max_standby_streaming_delay = -1"]
    conf += [f"{name} = {value}" for name, value in inherited.items()]
    (data / "postgresql.conf").write_text("\n".join(conf) + "\n")
    (data / "pg_hba.conf").write_text("local all all trust\nhost all all 127.0.0.1/32 trust\n")
    for name in ("postgresql.conf", "pg_hba.conf"):
        if os.geteuid() == 0:
            shutil.chown(data / name, "postgres")
    server = Standby(bin_dir, data, root, port)
    try:
        server.ctl("start")
    except subprocess.CalledProcessError:
        log = (root / "log").read_text() if (root / "log").exists() else ""
        shutil.rmtree(root, ignore_errors=True)
        pytest.skip(f"the replica did not start: {log[-300:]}")
    # ``replica1`` as DATABASE_REPLICA_URLS would configure it, here before the tests' setup checks their
    # databases; the tests' fixture turns the router on.
    default = connections.settings["default"]
    connections.settings[ALIAS] = {
        **default,
        "ENGINE": "threadmem.infrastructure.replica_backend",
        "HOST": "127.0.0.1",
        "PORT": str(port),
        "OPTIONS": {**default.get("OPTIONS", {}), "connect_timeout": 2},
        "TEST": {**default.get("TEST", {}), "MIRROR": "default"},
    }
    try:
        yield server
    finally:
        forget_in_lane_threads(ALIAS)
        connections[ALIAS].close()
        del connections[ALIAS]
        del connections.settings[ALIAS]
        subprocess.run(
            as_postgres([str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop"]), capture_output=True
        )
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def replica(standby, settings, monkeypatch) -> Iterator[Standby]:
    """Reads routed: the router on, every status forgotten, replay running."""
    settings.DATABASE_ROUTERS = ["threadmem.infrastructure.replicas.router.ReplicaRouter"]
    settings.THREADMEM_REPLICA_MAX_LAG_SECONDS = 60.0
    monkeypatch.setattr(health, "DOWN_SECONDS", 0.5)
    forget_replicas()
    if standby.sql("SELECT pg_is_wal_replay_paused()")[0][0]:
        standby.sql("SELECT pg_wal_replay_resume()")
    try:
        yield standby
    finally:
        if standby.sql("SELECT pg_is_wal_replay_paused()")[0][0]:
            standby.sql("SELECT pg_wal_replay_resume()")
        connections[ALIAS].close()
        forget_replicas()


def reads(database: str) -> float:
    return metrics.READS.labels(database=database)._value.get()


def fallbacks(reason: str) -> float:
    return metrics.READ_FALLBACKS.labels(reason=reason)._value.get()


def search(user, query: str, channel: str | None = None):
    arguments = {"query": query, **({"channel": channel} if channel else {})}
    return tool_answer(name="search_memory", arguments=arguments, user=user, surface="mcp")


def test_reads_go_to_the_replica_and_writes_stay_on_the_primary(replica):
    owner = make_user("owner")
    thread = make_thread(owner, "replica:reads")
    append(thread, {"role": "user", "content": "the zeppelin hangar opens at dawn"})
    replica.caught_up()
    database = connection.settings_dict["NAME"]
    scans_before, on_replica, logged = replica.scans(database), reads(ALIAS), ToolCall.objects.count()

    answer = search(owner, "zeppelin", "replica:reads")
    assert not answer.is_error and "zeppelin hangar" in answer.text
    assert "zeppelin hangar" in search(owner, "zeppelin").text  # globally too
    api = token_client(owner)
    context = api.get("/api/v1/threads/replica:reads/context/")
    assert context.status_code == 200 and "zeppelin" in context.content.decode()
    listing = api.get("/api/v1/threads/")
    assert listing.status_code == 200 and "replica:reads" in listing.content.decode()

    assert reads(ALIAS) - on_replica == 4
    assert ToolCall.objects.count() == logged + 2  # the search's log rows, on the primary
    deadline = time.monotonic() + 15  # a standby's backends flush their statistics within seconds
    while replica.scans(database) == scans_before and time.monotonic() < deadline:
        time.sleep(0.25)
    assert replica.scans(database) > scans_before


def test_read_your_writes_while_the_replica_does_not_replay(replica):
    owner, operator = make_user("owner"), make_user("operator", is_staff=True)
    make_thread(owner, "replica:ryw")
    replica.caught_up()
    replica.sql("SELECT pg_wal_replay_pause()")
    api = token_client(owner)
    stored = api.post(
        "/api/v1/threads/replica:ryw/messages/",
        {"role": "user", "content": "the quokka ledger balances"},
        format="json",
    )
    assert stored.status_code == 201
    behind = fallbacks("writes")

    # The writer finds it, in its thread and globally, and by the API's search.
    assert "quokka ledger" in search(owner, "quokka", "replica:ryw").text
    assert "quokka ledger" in search(owner, "quokka").text
    assert "quokka ledger" in api.get("/api/v1/threads/replica:ryw/context/").content.decode()
    assert fallbacks("writes") - behind == 3
    # Another caller reads the paused replica, which has not got it: what the writer was spared.
    on_replica = reads(ALIAS)
    assert "quokka ledger" not in search(operator, "quokka").text
    assert reads(ALIAS) - on_replica == 1

    replica.sql("SELECT pg_wal_replay_resume()")
    replica.caught_up()
    on_replica = reads(ALIAS)
    assert "quokka ledger" in search(owner, "quokka", "replica:ryw").text
    assert reads(ALIAS) - on_replica == 1  # replayed: the writer reads the replica again


def test_a_capture_is_found_by_its_owner_while_the_replica_does_not_replay(replica, settings, tmp_path):
    """A remote capture (the hook's ``POST imports/?offset=``) is a write like an append: its owner's next search
    waits for a replica that has replayed it."""
    settings.THREADMEM_IMPORT_DIR = tmp_path / "imports"
    owner, operator = make_user("owner"), make_user("operator", is_staff=True)
    replica.caught_up()
    replica.sql("SELECT pg_wal_replay_pause()")
    session = "5b1c52a4-63a0-4c8e-9d55-0d6e1f0b8a11"
    record = {
        "type": "user",
        "sessionId": session,
        "uuid": "0c9e3f55-2d4b-4f61-8f0e-6b7c1a2d3e4f",
        "timestamp": "2025-09-24T20:12:23.000Z",
        "message": {"role": "user", "content": "the kakapo roster was captured"},
    }
    name = f"/home/agent/.claude/projects/-srv-app/{session}.jsonl"
    captured = token_client(owner).post(
        f"/api/v1/imports/?{urlencode({'offset': 0, 'name': name})}",
        (json.dumps(record) + "\n").encode(),
        content_type="application/octet-stream",
        HTTP_CONTENT_DISPOSITION=f'attachment; filename="{session}.jsonl"',
    )
    assert captured.status_code == 200 and captured.json()["messages_imported"] == 1, captured.content
    behind = fallbacks("writes")

    assert "kakapo roster" in search(owner, "kakapo").text
    assert fallbacks("writes") - behind == 1
    # Another caller reads the paused replica, which has not got it: what the owner was spared.
    on_replica = reads(ALIAS)
    assert "kakapo roster" not in search(operator, "kakapo").text
    assert reads(ALIAS) - on_replica == 1


def test_an_isolation_or_a_delete_reaches_no_reader_through_a_replica_that_still_holds_it(replica):
    """Read-your-writes spares the writer; what leaves every reader's sight fences every reader."""
    owner, admin = make_user("owner"), make_user("admin", is_staff=True, is_superuser=True)
    thread = make_thread(owner, "replica:fence")
    (leaked,) = append(thread, {"role": "tool", "content": "the platypus token pt-7731 leaked"})
    doomed = make_thread(owner, "replica:doomed")
    append(doomed, {"role": "user", "content": "the numbat plan is abandoned"})
    replica.caught_up()
    replica.sql("SELECT pg_wal_replay_pause()")
    on_replica = reads(ALIAS)
    assert "platypus token" in search(owner, "platypus", "replica:fence").text  # read on the paused replica
    assert reads(ALIAS) - on_replica == 1

    admin_api = token_client(admin)
    assert admin_api.patch(f"/api/v1/messages/{leaked.id}/", {"isolated": True}, format="json").status_code == 200
    assert admin_api.delete("/api/v1/threads/replica:doomed/").status_code == 200
    fenced, on_replica = fallbacks("writes"), reads(ALIAS)
    # The owner wrote nothing since the pause: the fence, not their own writes, sends them to the primary.
    assert "platypus token" not in search(owner, "platypus", "replica:fence").text
    assert "numbat plan" not in search(owner, "numbat").text
    assert reads(ALIAS) == on_replica and fallbacks("writes") - fenced == 2

    replica.sql("SELECT pg_wal_replay_resume()")
    replica.caught_up()
    assert "platypus token" not in search(owner, "platypus", "replica:fence").text
    assert reads(ALIAS) - on_replica == 1  # replayed past the fence: the replica again


def test_a_replica_too_far_behind_is_not_read(replica, settings):
    settings.THREADMEM_REPLICA_MAX_LAG_SECONDS = 1.0
    owner, operator = make_user("owner"), make_user("operator", is_staff=True)
    thread = make_thread(owner, "replica:lag")
    replica.caught_up()
    replica.sql("SELECT pg_wal_replay_pause()")
    append(thread, {"role": "user", "content": "the wombat census is late"})  # not this caller's write
    time.sleep(1.5)
    forget_replicas()
    lagging, on_primary = fallbacks("lag"), reads("default")

    assert "wombat census" in search(operator, "wombat").text
    assert fallbacks("lag") - lagging == 1 and reads("default") - on_primary == 1
    assert metrics.REPLICA_LAG.labels(database=ALIAS)._value.get() > 1.0

    replica.sql("SELECT pg_wal_replay_resume()")
    replica.caught_up()
    forget_replicas()
    on_replica = reads(ALIAS)
    assert "wombat census" in search(operator, "wombat").text
    assert reads(ALIAS) - on_replica == 1
    # Caught up, or behind only by what the shared primary wrote meanwhile.
    assert metrics.REPLICA_LAG.labels(database=ALIAS)._value.get() < 1.0


def test_a_replica_stopped_and_restarted(replica):
    owner = make_user("owner")
    thread = make_thread(owner, "replica:restart")
    append(thread, {"role": "user", "content": "the narwhal manifest is signed"})
    replica.caught_up()
    assert "narwhal manifest" in search(owner, "narwhal").text  # a connection to the replica is kept
    on_primary = reads("default")

    replica.ctl("stop")
    try:
        for _ in range(3):
            answer = search(owner, "narwhal")
            assert not answer.is_error and "narwhal manifest" in answer.text
            assert answer.result.coverage == Coverage.ALL
        assert reads("default") - on_primary == 3
        assert fallbacks("failed") + fallbacks("down") > 0
        context = token_client(owner).get("/api/v1/threads/replica:restart/context/")
        assert context.status_code == 200 and "narwhal manifest" in context.content.decode()
    finally:
        replica.ctl("start")
    replica.caught_up()
    time.sleep(health.DOWN_SECONDS)
    on_replica = reads(ALIAS)
    assert "narwhal manifest" in search(owner, "narwhal").text
    assert reads(ALIAS) - on_replica == 1  # back in use on its own


def owner_with_a_note(channel: str):
    """An owner whose thread ``channel`` holds a note the ranked lane finds, among literal hits, embedded."""
    owner = make_user("owner")
    thread = make_thread(owner, channel)
    (note,) = append(thread, {"role": "user", "content": "The orchard irrigation schedule moved to Tuesday."})
    append(thread, *({"role": "user", "content": f"the heron count {k} is in"} for k in range(3)))
    embedded(thread)
    return owner, note


def test_a_replica_that_goes_down_before_the_ranked_lane_connects_costs_a_rerun_not_the_lane(
    replica, static_model, settings, monkeypatch
):
    """The lane's thread holds no connection to the replica and opens one after the replica went down (the search's
    own statements ran there first): the read runs again on the primary, whole, and the replica is passed over
    until it answers again."""
    settings.THREADMEM_SEMANTIC_DEADLINE = 30.0  # stopping the replica happens inside the lane's wait
    owner, note = owner_with_a_note("replica:lane-down")
    replica.caught_up()
    assert "heron count" in search(owner, "heron count", "replica:lane-down").text  # the replica, known up
    forget_in_lane_threads(ALIAS)
    # The replica stops once the search's own part is done, just before the lane opens its connection.
    literal_done, stopped = threading.Event(), []
    real_lane, real_start = semantic._lane, semantic.start

    def lane(**kwargs):
        if not stopped:
            assert literal_done.wait(timeout=30)
            replica.ctl("stop")
            stopped.append(True)
        return real_lane(**kwargs)

    def start(**kwargs):
        started = real_start(**kwargs)
        return started._replace(text=lambda: (literal_done.set(), started.text())[1])

    monkeypatch.setattr(semantic, "_lane", lane)
    monkeypatch.setattr(semantic, "start", start)
    on_replica, on_primary, failed, down = reads(ALIAS), reads("default"), fallbacks("failed"), fallbacks("down")
    try:
        # No literal hit: only the lane, which reads the vectors, finds it.
        answer = search(owner, "irrigating orchards", "replica:lane-down")
        assert stopped and not answer.is_error and "failed" not in answer.text, answer.text
        assert answer.result.coverage == Coverage.ALL and note.id in listed_ids(semantic_part(answer.text))
        assert reads(ALIAS) - on_replica == 1 and reads("default") - on_primary == 1
        assert fallbacks("failed") - failed == 1
        # Passed over: the next read goes to the primary without trying it.
        answer = search(owner, "heron count", "replica:lane-down")
        assert "failed" not in answer.text and answer.result.literal_hits_total == 3
        assert fallbacks("down") - down == 1 and reads(ALIAS) - on_replica == 1
    finally:
        if stopped:
            replica.ctl("start")
    replica.caught_up()
    time.sleep(health.DOWN_SECONDS)
    on_replica = reads(ALIAS)
    assert "heron count" in search(owner, "heron count", "replica:lane-down").text
    assert reads(ALIAS) - on_replica == 1  # answers again: read again


def test_reads_fail_over_under_four_clients(replica):
    """The replica stops while four clients search: every answer complete, none an error, none lost."""
    clients, rounds = 4, 30
    users = [make_user(f"client{n}") for n in range(clients)]
    words = ["aardvark", "bandicoot", "capybara", "dugong"]
    for n, user in enumerate(users):
        thread = make_thread(user, f"replica:client{n}")
        append(thread, *({"role": "user", "content": f"{words[n]} note {k}"} for k in range(5)))
    replica.caught_up()
    errors: list[str] = []
    answered = [0] * clients
    on_replica, failed_over = reads(ALIAS), fallbacks("failed") + fallbacks("down")

    def client(n: int) -> None:
        try:
            for k in range(rounds):
                channel = f"replica:client{n}" if k % 2 else None
                answer = search(users[n], words[n], channel)
                result = answer.result
                if answer.is_error or result is None:
                    errors.append(f"client {n}: {answer.text[:200]}")
                    continue
                complete = result.literal_hits_total == 5 and not result.stopped_early
                if not complete or result.coverage != Coverage.ALL or answer.text.count(f"{words[n]} note") < 5:
                    errors.append(f"client {n}, round {k}: incomplete: {answer.text[:300]}")
                answered[n] += 1
        except Exception as error:  # reported below
            errors.append(f"client {n}: {error!r}")
        finally:
            connections.close_all()

    threads = [threading.Thread(target=client, args=(n,)) for n in range(clients)]
    for started in threads:
        started.start()
    deadline = time.monotonic() + 120
    while sum(answered) < clients * 5 and time.monotonic() < deadline:
        time.sleep(0.01)
    replica.ctl("stop")  # mid-stream: some searches are on the replica now
    stopped_at = sum(answered)
    for started in threads:
        started.join(timeout=300)
    replica.ctl("start")
    assert errors == []
    assert answered == [rounds] * clients  # none lost
    # One log row a search: a read run again on the primary logs once.
    assert ToolCall.objects.filter(tool=ToolCall.Tool.SEARCH_MEMORY).count() == clients * rounds
    assert stopped_at < clients * rounds and reads(ALIAS) > on_replica
    assert fallbacks("failed") + fallbacks("down") > failed_over


def test_the_ranked_lane_follows_whichever_database_a_read_went_to(replica, static_model):
    """The keyword index and a global scope's kept pieces, first read on the replica, then on the primary
    while the replica does not replay, then on the replica again: each answer holds what its database holds.
    The queries' words are in none of the messages as written (no literal hit): only the lane finds them."""
    owner = make_user("owner")
    thread = make_thread(owner, "replica:ranked")
    (first,) = append(thread, {"role": "user", "content": "The orchard irrigation schedule moved to Tuesday."})
    embedded(thread)
    replica.caught_up()
    on_replica = reads(ALIAS)
    for channel in ("replica:ranked", None):
        assert first.id in listed_ids(semantic_part(search(owner, "irrigating orchards", channel).text))
    assert reads(ALIAS) - on_replica == 2

    replica.sql("SELECT pg_wal_replay_pause()")
    stored = token_client(owner).post(
        "/api/v1/threads/replica:ranked/messages/",
        {"role": "user", "content": "The orchard irrigation pump was replaced by a quieter one."},
        format="json",
    )
    assert stored.status_code == 201
    embedded(thread)
    replicas.wrote(owner.pk)  # the pieces too, as a caller who embeds would
    second = stored.json()[0]["id"] if isinstance(stored.json(), list) else stored.json()["id"]
    for channel in ("replica:ranked", None):
        assert int(second) in listed_ids(semantic_part(search(owner, "irrigating orchards pumps", channel).text))

    replica.sql("SELECT pg_wal_replay_resume()")
    replica.caught_up()
    on_replica = reads(ALIAS)
    for channel in ("replica:ranked", None):
        ids = listed_ids(semantic_part(search(owner, "irrigating orchards pumps", channel).text))
        assert {first.id, int(second)} <= ids
    assert reads(ALIAS) - on_replica == 2


def test_a_read_on_the_replica_shows_the_replicas_pieces_not_the_primarys(replica, static_model):
    """Every statement of the ranked lane reads where the read went, the pieces' text too: a primary that has
    moved on since is not mixed into an answer the replica ranked."""
    owner = make_user("owner")
    thread = make_thread(owner, "replica:pieces")
    (note,) = append(thread, {"role": "user", "content": "The orchard irrigation schedule moved to Tuesday."})
    embedded(thread)
    replica.caught_up()
    replica.sql("SELECT pg_wal_replay_pause()")
    try:
        with connections["default"].cursor() as cursor:  # on the primary only: the replica does not replay it
            cursor.execute(
                "UPDATE threadmem_chunk SET text = %s WHERE message_id = %s", ["since, on the primary", note.id]
            )
        on_replica = reads(ALIAS)
        part = semantic_part(search(owner, "irrigating orchards", "replica:pieces").text)
        assert reads(ALIAS) - on_replica == 1
        assert note.id in listed_ids(part)
        assert "schedule moved to Tuesday" in part and "since, on the primary" not in part
    finally:
        replica.sql("SELECT pg_wal_replay_resume()")
