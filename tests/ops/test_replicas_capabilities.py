"""A replica whose host lacks a library its catalog names (threadmem/infrastructure/replicas/).

A streaming replica has its primary's catalog: the vector column, the
threadmem_search functions and the indexes of its operator class are there
whatever its host has installed. Here the replica runs from a copy of
PostgreSQL's install tree without pgvector's or threadmem_search's library
(PostgreSQL finds ``$libdir`` beside its executable), so anything that loads
the library fails on it. Every answer is still complete and correct: the
replica is passed over, and reads go to the primary.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.ops.test_replicas import (  # noqa: F401  (standby: a fixture)
    ALIAS,
    Standby,
    fallbacks,
    forget_replicas,
    owner_with_a_note,
    reads,
    search,
    standby,
)
from tests.support.postgres_server import scratch_folder
from tests.support.semantic import listed_ids, semantic_part
from threadmem.features.search.hits import Coverage
from threadmem.infrastructure.replicas import health

pytestmark = pytest.mark.postgres


@pytest.fixture(scope="module")
def installs(standby) -> Iterator[dict[str, Path]]:  # noqa: F811
    """Copies of the replica's install tree, each without one library: its bin directory, by library."""
    install = standby.bin_dir.parent
    root = scratch_folder("threadmem-pg-install-")
    copies = {}
    for library in ("vector", "threadmem_search"):
        copy = root / library / install.name
        shutil.copytree(install, copy, symlinks=True)
        (copy / "lib" / f"{library}.so").unlink()
        copies[library] = copy / "bin"
    try:
        yield copies
    finally:
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(params=["vector", "threadmem_search"])
def replica_without(request, standby, installs, settings, monkeypatch) -> Iterator[Standby]:  # noqa: F811
    """The replica restarted from an install tree without ``request.param``'s library, reads routed to it."""
    settings.DATABASE_ROUTERS = ["threadmem.infrastructure.replicas.router.ReplicaRouter"]
    settings.THREADMEM_REPLICA_MAX_LAG_SECONDS = 60.0
    monkeypatch.setattr(health, "DOWN_SECONDS", 0.5)
    original = standby.bin_dir
    standby.ctl("stop")
    standby.bin_dir = installs[request.param]
    try:
        standby.ctl("start")
        forget_replicas()
        yield standby
    finally:
        from django.db import connections

        connections[ALIAS].close()
        standby.ctl("stop")
        standby.bin_dir = original
        standby.ctl("start")
        forget_replicas()


@pytest.mark.django_db(transaction=True, databases=["default", ALIAS])
def test_a_replica_without_a_library_answers_nothing_less(replica_without, static_model):
    owner, note = owner_with_a_note("replica:libraries")
    replica_without.caught_up()
    forget_replicas()
    failed, on_replica = fallbacks("failed"), reads(ALIAS)

    for channel in ("replica:libraries", None):
        # No literal hit: only the ranked lane, which reads the vectors, finds it.
        answer = search(owner, "irrigating orchards", channel)
        assert not answer.is_error and "failed" not in answer.text, answer.text
        assert note.id in listed_ids(semantic_part(answer.text))
        answer = search(owner, "heron count", channel)
        assert not answer.is_error and "failed" not in answer.text, answer.text
        assert answer.result.literal_hits_total == 3 and answer.result.coverage == Coverage.ALL
    # Passed over once probed, not met by a read that fails and runs again.
    assert fallbacks("failed") == failed
    assert fallbacks("libraries") > 0 and reads(ALIAS) == on_replica

    # A library gone since the probe said it loads: the read that meets its absence runs again on the primary.
    health._libraries[ALIAS] = (float("inf"), True)
    answer = search(owner, "irrigating orchards", "replica:libraries")
    assert "failed" not in answer.text and note.id in listed_ids(semantic_part(answer.text)), answer.text
    assert reads(ALIAS) == on_replica + 1 and fallbacks("failed") == failed + 1
    assert health._libraries[ALIAS][1] is False  # passed over from then on
