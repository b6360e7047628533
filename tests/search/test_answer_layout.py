"""The pure half of search_memory: listing, counting and the merge (threadmem/features/search/answer_layout.py)."""

from __future__ import annotations

from tests.support.windows import window_around
from threadmem.features.search.answer_caps import (
    HEADER,
    SEMANTIC_HEADING,
    THREAD_LITERAL_MAX_CHARS,
    THREAD_SEARCH_MAX_CHARS,
    TRUNCATED_LINE,
    WINDOW_CHARS,
    WINDOW_LEAD,
)
from threadmem.features.search.answer_layout import entries_budget, header_lines, literal_part, merge
from threadmem.features.search.hits import Candidate
from threadmem.features.search.window_walk import fields_to_window


def candidate(term: int, message_id: int, *, arg_id: int = 0, path: str = "", chars: int = 100) -> Candidate:
    return Candidate(
        term=term,
        message_id=message_id,
        arg_id=arg_id,
        path=path,
        min_chars=chars,
        session_id="s1",
        generation=1,
        role="tool",
    )


def windows_for(texts: dict[tuple[int, int], str], terms: list[str], pairs) -> dict:
    """What the window statement returns, computed in memory."""
    out = {}
    for key, term in pairs:
        position = texts[key].lower().find(terms[term].lower()) + 1
        out[(key, term)] = (position, window_around(texts[key], position, width=WINDOW_CHARS, lead=WINDOW_LEAD))
    return out


def test_it_writes_the_exact_header_lines():
    assert header_lines(channel="slack:C1", query=' "restart nginx" ', total=12, shown=3, bounded=False) == (
        f'{HEADER}\nchannel: slack:C1 · query: ""restart nginx"" · literal hits: 12 (3 shown)'
    )
    assert header_lines(channel=None, query="a\nb", total=1000, shown=9, bounded=True).endswith(
        'channel: * · query: "a b" · literal hits: more than 1000 (9 shown)'
    )


def test_it_merges_a_word_hit_inside_a_listed_window_and_counts_it_once():
    terms = ["alpha beta", "alpha", "beta"]
    texts = {(1, 0): "x alpha beta y", (2, 0): "alpha " + "z" * 2000 + " beta"}
    candidates = [
        candidate(0, 1),
        candidate(1, 2, chars=2011),
        candidate(1, 1),
        candidate(2, 2, chars=2011),
        candidate(2, 1),
    ]
    pairs = fields_to_window(candidates, terms, budget=entries_budget(len(candidates), bounded=False))
    part = literal_part(candidates, terms, windows_for(texts, terms, pairs), candidate_count=len(candidates))
    # Message 1: the whole query's window holds both words. Message 2: "alpha"
    # and, 2,000 characters later, "beta" in a window of its own.
    assert [(hit.message_id, hit.window[:8]) for hit in part.hits] == [
        (1, "x alpha "),
        (2, "alpha zz"),
        (2, "…" + "z" * 7),
    ]
    assert (part.total, part.shown) == (3, 3)
    assert "more hits" not in part.text


def test_it_lists_in_order_until_the_cap_and_counts_the_rest_truly():
    terms = ["needle"]
    # Each window its own text (identical windows are one entry: test_hit_entries.py).
    texts = {(i, 0): "x" * 30_000 + f"needle {i:03d}" + "x" * 30_000 for i in range(1, 121)}
    candidates = [candidate(0, i, chars=60_010) for i in range(120, 0, -1)]
    pairs = fields_to_window(candidates, terms, budget=entries_budget(120, bounded=False))
    part = literal_part(candidates, terms, windows_for(texts, terms, pairs), candidate_count=120)
    assert [hit.message_id for hit in part.hits] == list(range(120, 120 - part.shown, -1))
    assert part.total == 120
    assert part.text.endswith(f"\n{120 - part.shown} more hits not shown; narrow the query to continue.")
    assert len(part.text) <= THREAD_LITERAL_MAX_CHARS
    # The walk asks for a bounded number of windows, not one per hit.
    assert part.shown < len(pairs) < 40


def test_it_says_more_than_when_counting_stopped_at_the_bound():
    terms = ["quasar"]
    texts = {(i, 0): f"quasar {i}" for i in range(1, 1001)}
    candidates = [candidate(0, i, chars=10) for i in range(1000, 0, -1)]
    pairs = fields_to_window(candidates, terms, budget=entries_budget(1000, bounded=True))
    part = literal_part(candidates, terms, windows_for(texts, terms, pairs), candidate_count=1000, bounded=True)
    assert part.text.endswith(f"\nmore than {1000 - part.shown} more hits not shown; narrow the query to continue.")
    assert len(part.text) <= THREAD_LITERAL_MAX_CHARS


def test_it_drops_a_field_that_stopped_matching_between_the_two_statements():
    terms = ["gone"]
    candidates = [candidate(0, 2), candidate(0, 1)]
    windows = {((2, 0), 0): None, ((1, 0), 0): (1, window_around("gone", 1, width=800, lead=200))}
    part = literal_part(candidates, terms, windows, candidate_count=2)
    assert [hit.message_id for hit in part.hits] == [1]
    assert part.total == 1


def test_it_names_tool_argument_fields_by_their_path():
    terms = ["id_ed25519"]
    texts = {(7, 3): "scp ~/.ssh/id_ed25519 deploy@web-1:"}
    candidates = [candidate(0, 7, arg_id=3, path="files[0].path")]
    pairs = fields_to_window(candidates, terms, budget=7000)
    part = literal_part(candidates, terms, windows_for(texts, terms, pairs), candidate_count=1)
    assert part.text == (
        "--- messageId=7 sessionId=s1 generation=1 role=tool field=tool_args.files[0].path\n"
        "scp ~/.ssh/id_ed25519 deploy@web-1:"
    )


def test_it_merges_to_exactly_12000_characters_whatever_the_semantic_part_returns():
    header = header_lines(channel="c", query="q", total=0, shown=0, bounded=False)
    text, truncated = merge(header=header, literal="", semantic="s" * 100_000)
    assert truncated
    assert len(text) == THREAD_SEARCH_MAX_CHARS
    assert text.endswith(f"\n{TRUNCATED_LINE}")
    assert text.startswith(f"{header}\n\n{SEMANTIC_HEADING}\n")


def test_it_leaves_a_result_that_fits_as_it_is():
    text, truncated = merge(header="H1\nH2", literal="--- hit\nwindow\n3 more hits", semantic="one line\n")
    assert not truncated
    assert text == "H1\nH2\n--- hit\nwindow\n3 more hits\n\n## Other memory results\none line"
