from __future__ import annotations

from tests.support.windows import window_around
from threadmem.features.search.window_walk import min_window_chars
from threadmem.lib.windows import Window, window_from_slice


def test_it_starts_the_window_lead_characters_before_the_hit():
    text = "a" * 1000 + "HIT" + "b" * 2000
    window = window_around(text, 1001, width=800, lead=200)
    assert window.start == 801
    assert window.text == text[800:1600]
    assert (window.cut_before, window.cut_after) == (True, True)
    assert window.render(head_mark="…", tail_mark="…[truncated]") == "…" + text[800:1600] + "…[truncated]"


def test_it_starts_at_the_field_start_when_the_hit_is_near_it():
    window = window_around("0123456789HIT", 11, width=800, lead=200)
    assert (window.start, window.text, window.cut_before, window.cut_after) == (1, "0123456789HIT", False, False)
    assert window.render(head_mark="…", tail_mark="…[truncated]") == "0123456789HIT"


def test_it_marks_the_end_only_when_the_field_goes_on():
    exact = "x" * 800
    assert not window_around(exact, 1, width=800, lead=200).cut_after
    assert window_around(exact + "y", 1, width=800, lead=200).cut_after


def test_it_reads_the_markers_from_the_slice_the_database_cut():
    window = window_from_slice(position=500, piece="z" * 801, width=800, lead=200)
    assert (window.start, len(window.text), window.cut_before, window.cut_after) == (300, 800, True, True)


def test_it_tells_whether_a_hit_lies_inside_the_window():
    window = Window(start=100, text="x" * 800, cut_before=True, cut_after=True)
    assert window.end == 899
    assert window.covers(100, 5)
    assert window.covers(895, 5)
    assert not window.covers(896, 5)
    assert not window.covers(99, 5)


def test_it_bounds_the_smallest_window_a_hit_can_have():
    # A hit at the very end of a long field: lead + term.
    assert min_window_chars(field_chars_at_least=60_000, term_chars=7, width=800, lead=200) == 207
    # A short field is its own window at least.
    assert min_window_chars(field_chars_at_least=30, term_chars=7, width=800, lead=200) == 30
    # The bound is never above the width.
    assert min_window_chars(field_chars_at_least=60_000, term_chars=900, width=800, lead=200) == 800
    text = "y" * 10_000 + "needle"
    assert len(window_around(text, 10_001, width=800, lead=200).text) == 206
