"""Read-your-writes for an upload imported by a worker (threadmem/features/imports/run.py,
threadmem/infrastructure/replicas/positions.py).

The upload's task runs in a real Celery worker, another process: it records the owner's write position in the
cache every process shares (``CACHE_URL``'s Redis, as docs/production.md sets it), and the owner's next search
waits for a replica that has replayed the import, here one whose replay is paused.
"""

from __future__ import annotations

import pytest
from django.conf import settings as django_settings
from django.core.cache import cache
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection

from tests.ops.test_replicas import ALIAS, fallbacks, reads, replica, search, standby  # noqa: F401  (fixtures)
from tests.support.factories import make_user, token_client
from tests.support.workers import running_workers, wait_until
from threadmem.infrastructure.replicas import positions
from threadmem.models import Import

pytestmark = [
    pytest.mark.postgres,
    pytest.mark.worker,
    pytest.mark.django_db(transaction=True, databases=["default", ALIAS]),
]


def test_an_upload_imported_by_a_worker_is_found_by_its_owner_while_the_replica_does_not_replay(
    replica,  # noqa: F811
    fake_openai,
    settings,
    tmp_path,
):
    if not django_settings.CELERY_BROKER_URL.startswith("redis://"):
        pytest.skip("the shared cache is a Redis: here the broker's")
    # This process and the worker share the cache, as every process does in production (CACHE_URL).
    cache_url = django_settings.CELERY_BROKER_URL
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": cache_url}}
    settings.IMPORT_INLINE_MAX_BYTES = 0  # every upload waits for its task
    owner, operator = make_user("owner"), make_user("operator", is_staff=True)
    cache.delete_many([positions._WRITTEN_KEY.format(owner.pk), positions._FENCE_KEY])
    replica_url = f"postgres://postgres@127.0.0.1:{replica.port}/{connection.settings_dict['NAME']}"
    worker_env = {"CACHE_URL": cache_url, "DATABASE_REPLICA_URLS": replica_url}
    replica.caught_up()
    replica.sql("SELECT pg_wal_replay_pause()")

    with running_workers(
        fake_openai, tmp_path, prefix="threadmem-replica-imports", names={"importer": worker_env}
    ) as pool:
        line = b'{"type": "user", "message": {"role": "user", "content": "the axolotl ledger was imported"}}\n'
        upload = SimpleUploadedFile("session.jsonl", line, content_type="application/jsonl")
        api = token_client(owner)
        response = api.post("/api/v1/imports/", {"file": upload, "channel": "replica:imported"}, format="multipart")
        assert response.status_code == 202, response.content
        record = Import.objects.get(pk=response.json()["id"])
        wait_until(lambda: Import.objects.get(pk=record.pk).status != Import.Status.PENDING, pool, what="the import")
        wait_until(lambda: Import.objects.get(pk=record.pk).status != Import.Status.RUNNING, pool, what="the import")
        assert Import.objects.get(pk=record.pk).status == Import.Status.SUCCEEDED, pool.logs()
    behind = fallbacks("writes")

    # The owner finds it, in its thread and globally: their reads wait for the import, on the primary.
    assert "axolotl ledger" in search(owner, "axolotl", "replica:imported").text
    assert "axolotl ledger" in search(owner, "axolotl").text
    assert fallbacks("writes") - behind == 2
    # Another caller reads the paused replica, which has not got it: what the owner was spared.
    on_replica = reads(ALIAS)
    assert "axolotl ledger" not in search(operator, "axolotl").text
    assert reads(ALIAS) - on_replica == 1
