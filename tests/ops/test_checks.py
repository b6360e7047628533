"""System checks for settings that must agree (threadmem/checks.py)."""

from __future__ import annotations

from django.core.checks import registry

from threadmem.checks import broker_visibility_timeout_check

REDIS = "redis://127.0.0.1:6379/0"


def errors_of(settings, *, broker: str, visibility_timeout: int, time_limit: int = 900) -> list[str]:
    settings.CELERY_BROKER_URL = broker
    settings.CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": visibility_timeout}
    settings.THREADMEM_COMPACTION_TIME_LIMIT = time_limit
    return [message.id for message in broker_visibility_timeout_check()]


def test_manage_py_check_runs_it():
    assert broker_visibility_timeout_check in registry.registry.get_checks()


def test_a_redis_visibility_timeout_at_or_below_the_compaction_hard_limit_is_an_error(settings):
    assert errors_of(settings, broker=REDIS, visibility_timeout=960) == ["threadmem.E001"]
    assert errors_of(settings, broker=REDIS, visibility_timeout=600, time_limit=900) == ["threadmem.E001"]


def test_a_visibility_timeout_above_the_hard_limit_passes(settings):
    assert errors_of(settings, broker=REDIS, visibility_timeout=961) == []
    assert errors_of(settings, broker="rediss://cache.example.com:6380/0", visibility_timeout=3600) == []


def test_other_brokers_and_eager_tasks_are_not_checked(settings):
    assert errors_of(settings, broker="amqp://guest@127.0.0.1//", visibility_timeout=1) == []
    assert errors_of(settings, broker="", visibility_timeout=1) == []
