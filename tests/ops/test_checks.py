"""System checks for settings that must agree (threadmem/checks.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from django.core.checks import registry

from threadmem.checks import broker_visibility_timeout_check, replicas_cache_check

ROOT = Path(__file__).resolve().parents[2]

REDIS = "redis://127.0.0.1:6379/0"


def errors_of(settings, *, broker: str, visibility_timeout: int, time_limit: int = 900) -> list[str]:
    settings.CELERY_BROKER_URL = broker
    settings.CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": visibility_timeout}
    settings.COMPACTION_TIME_LIMIT = time_limit
    return [message.id for message in broker_visibility_timeout_check()]


def test_manage_py_check_runs_them():
    checks = registry.registry.get_checks()
    assert broker_visibility_timeout_check in checks and replicas_cache_check in checks


def test_a_redis_visibility_timeout_at_or_below_the_compaction_hard_limit_is_an_error(settings):
    assert errors_of(settings, broker=REDIS, visibility_timeout=960) == ["threadmem.E001"]
    assert errors_of(settings, broker=REDIS, visibility_timeout=600, time_limit=900) == ["threadmem.E001"]


def test_a_visibility_timeout_above_the_hard_limit_passes(settings):
    assert errors_of(settings, broker=REDIS, visibility_timeout=961) == []
    assert errors_of(settings, broker="rediss://cache.example.com:6380/0", visibility_timeout=3600) == []


def test_other_brokers_and_eager_tasks_are_not_checked(settings):
    assert errors_of(settings, broker="amqp://guest@127.0.0.1//", visibility_timeout=1) == []
    assert errors_of(settings, broker="", visibility_timeout=1) == []


LOCAL = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
SHARED = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": REDIS}}
REPLICA = "postgres://threadmem@replica:5432/threadmem"


def replica_errors(settings, *, replicas: list[str], caches: dict, debug: bool = False) -> list[str]:
    settings.DATABASE_REPLICA_URLS, settings.CACHES, settings.DEBUG, settings.TESTING = replicas, caches, debug, False
    return [message.id for message in replicas_cache_check()]


def test_replicas_with_a_cache_of_each_processs_own_are_an_error(settings):
    assert replica_errors(settings, replicas=[REPLICA], caches=LOCAL) == ["threadmem.E002"]
    dummy = {"default": {"BACKEND": "django.core.cache.backends.dummy.DummyCache"}}
    assert replica_errors(settings, replicas=[REPLICA], caches=dummy) == ["threadmem.E002"]


def test_replicas_with_a_shared_cache_or_no_replicas_or_debug_pass(settings):
    assert replica_errors(settings, replicas=[REPLICA], caches=SHARED) == []
    assert replica_errors(settings, replicas=[], caches=LOCAL) == []
    assert replica_errors(settings, replicas=[REPLICA], caches=LOCAL, debug=True) == []


def test_manage_py_check_refuses_replicas_without_cache_url():
    """As a deployment runs it: settings from the environment, outside a test run."""
    environment = {k: v for k, v in os.environ.items() if k not in ("CACHE_URL", "DEBUG")}
    environment.update(DATABASE_URL="postgres://threadmem@127.0.0.1:5432/threadmem", DATABASE_REPLICA_URLS=REPLICA)

    def check(**env: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "manage.py", "check"],
            cwd=ROOT,
            env={**environment, **env},
            capture_output=True,
            text=True,
            timeout=120,
        )

    refused = check()
    assert refused.returncode != 0 and "threadmem.E002" in refused.stderr, refused.stdout + refused.stderr
    shared = check(CACHE_URL=REDIS)
    assert shared.returncode == 0 and "threadmem.E002" not in shared.stdout + shared.stderr, shared.stderr
