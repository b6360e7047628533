from __future__ import annotations

from threadmem.lib.terms import (
    WORD_TERMS_MAX,
    fold,
    has_trigram_run,
    query_terms,
    separator_variant,
    strip_surrounding_quotes,
    whole_query_term,
)


def test_it_puts_the_whole_query_first_then_words_of_three_or_more_characters():
    assert query_terms("  restart nginx on web-1  ") == ["restart nginx on web-1", "restart", "nginx", "web-1"]


def test_it_strips_surrounding_quotes_of_the_whole_query_and_of_each_word():
    assert query_terms('"kubectl apply -f deploy.yaml"') == [
        "kubectl apply -f deploy.yaml",
        "kubectl",
        "apply",
        "deploy.yaml",
    ]
    assert query_terms("“smart quotes” and `ticks`") == [
        "“smart quotes” and `ticks`",
        "smart",
        "quotes",
        "and",
        "ticks",
    ]
    assert query_terms("‘single’") == ["single"]


def test_it_keeps_a_quote_that_is_not_surrounding():
    assert whole_query_term("echo 'hi'") == "echo 'hi'"
    assert whole_query_term("'both ends'") == "both ends"
    assert strip_surrounding_quotes("'it's'") == "it's"


def test_it_drops_duplicate_words_case_insensitively():
    assert query_terms("Error error ERROR") == ["Error error ERROR", "Error"]
    assert query_terms("nginx") == ["nginx"]


def test_it_counts_characters_not_bytes_for_the_three_character_rule():
    assert query_terms("日本語 の テキスト") == ["日本語 の テキスト", "日本語", "テキスト"]


def test_it_searches_at_most_a_fixed_number_of_words():
    query = " ".join(f"word{i:02d}" for i in range(40))
    terms = query_terms(query)
    assert terms[0] == query
    assert terms[1:] == [f"word{i:02d}" for i in range(WORD_TERMS_MAX)]


def test_it_returns_nothing_for_a_query_of_quotes_only():
    assert query_terms('""') == []
    assert query_terms("  ") == []


def test_it_folds_case_one_character_to_one():
    text = "İSTANBUL Straße ÄPFEL"
    assert len(fold(text)) == len(text)
    assert fold(text) == "istanbul straße äpfel"


def test_it_knows_which_terms_a_trigram_index_can_serve():
    assert has_trigram_run("~/.ssh/id_ed25519")
    assert has_trigram_run("日本語")
    assert not has_trigram_run("a.b.c")
    assert not has_trigram_run("%%%")
    assert not has_trigram_run("ab")


def test_a_path_term_is_followed_by_its_spelling_with_the_other_separator():
    assert query_terms("scripts/convert.py") == ["scripts/convert.py", "scripts\\convert.py"]
    assert query_terms("C:\\app\\x.py") == ["C:\\app\\x.py", "C:/app/x.py"]
    assert query_terms("open src/a.py now") == ["open src/a.py now", "open", "src/a.py", "src\\a.py", "now"]


def test_urls_mixed_separators_and_whole_queries_with_spaces_get_no_variant():
    assert separator_variant("https://example.org/a/b") is None
    assert separator_variant("a/b\\c") is None
    assert separator_variant("open src/a.py") is None
    assert separator_variant("nginx") is None


def test_variants_take_words_places_so_the_term_count_stays_bounded():
    query = " ".join(f"dir{i:02d}/file.py" for i in range(40))
    terms = query_terms(query)
    assert len(terms) == 1 + WORD_TERMS_MAX
    assert terms[1:3] == ["dir00/file.py", "dir00\\file.py"]
