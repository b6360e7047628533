"""A session file streams: importing one four times longer does not hold more Python objects (contract §11)."""

from __future__ import annotations

import tracemalloc

import pytest

from tests.support.sessions import LONG, data_dir, write_repeated_session
from threadmem.features.imports.import_once import import_paths
from threadmem.models import Message

pytestmark = pytest.mark.django_db

MB = 1024 * 1024


def traced_peak_of_import(path, owner, channel: str) -> int:
    """The most memory Python held at once (tracemalloc) while importing the file, above what it held before."""
    tracemalloc.start()
    try:
        before, _ = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        import_paths(paths=[path], fmt="claude-code", owner=owner, channel=channel)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak - before


def test_importing_a_file_four_times_longer_holds_no_more_memory(owner, tmp_path):
    source = data_dir() / f"{LONG}.jsonl"
    small, large = tmp_path / "small.jsonl", tmp_path / "large.jsonl"
    small_bytes = write_repeated_session(source, small, times=2)
    large_bytes = write_repeated_session(source, large, times=8)
    assert large_bytes >= 4 * small_bytes > 5 * MB

    small_peak = traced_peak_of_import(small, owner, "memory:small")
    large_peak = traced_peak_of_import(large, owner, "memory:large")

    # Every repetition was imported (fresh ids: nothing taken for a re-import)...
    assert (
        Message.objects.filter(thread__channel="memory:large").count()
        == 4 * Message.objects.filter(thread__channel="memory:small").count()
    )
    # ...through a bounded buffer: the peak is one batch and one open message, whatever the file's length.
    assert large_peak < 1.5 * small_peak, (small_peak, large_peak)
    assert large_peak < large_bytes / 4, (large_peak, large_bytes)
