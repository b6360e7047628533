"""``retention --days`` and THREADMEM_RETENTION_DAYS past what a date can go back: a clear error, never a traceback."""

from __future__ import annotations

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.core.management import CommandError, call_command

from config.env import env_int
from tests.support.factories import make_thread
from threadmem.models import Thread

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("days", ["36501", "999999999999", str(2**64)])
@pytest.mark.parametrize("dry_run", [True, False], ids=["dry-run", "run"])
def test_retention_days_past_a_hundred_years_is_a_clear_error_and_deletes_nothing(owner, days, dry_run):
    make_thread(owner, "kept")
    with pytest.raises(CommandError, match=r"--days must be at most 36500 \(a hundred years\)"):
        call_command("retention", "--days", days, *(["--dry-run"] if dry_run else []))
    assert Thread.objects.filter(channel="kept").exists()


def test_a_hundred_years_is_taken(owner, capsys):
    make_thread(owner, "kept")
    call_command("retention", "--days", "36500", "--dry-run")
    assert "0 thread(s) idle for more than 36500 days would be deleted" in capsys.readouterr().out


def test_the_setting_past_a_hundred_years_stops_the_process_naming_it(monkeypatch):
    monkeypatch.setenv("THREADMEM_RETENTION_DAYS", "999999999999")
    with pytest.raises(ImproperlyConfigured, match="THREADMEM_RETENTION_DAYS must be at most 36500"):
        env_int("THREADMEM_RETENTION_DAYS", 0, maximum=36_500)
