"""Query terms and the stores' shared word folding: pure functions, property-tested."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contextfold.errors import ConfigError
from contextfold.search_terms import is_stopword, query_terms
from contextfold.stores.search import (
    MAX_TERMS,
    MAX_WORD,
    clean_terms,
    fold,
    matched_terms,
    snippet,
    words,
)

TEXT = st.text(st.characters(codec="utf-8"), max_size=300)
MIXED = st.lists(
    st.sampled_from(["İstanbul", "ışık", "Straße", "Москве", "café", "the", "when", "did",
                     "RX-4471", "नमस्ते", "  ", "?!", "\x00", "Krankenversicherung", "a", "7"]),
    max_size=40,
).map(" ".join)


@settings(max_examples=150, deadline=None)
@given(st.one_of(TEXT, MIXED), st.integers(1, 40))
def test_query_terms_are_unique_folded_words_without_stopwords(text: str, n: int) -> None:
    terms = query_terms(text, max_terms=n)
    assert len(terms) == len(set(terms)) <= n
    source = words(text)
    for term in terms:
        assert words(term) == [term]  # one folded word, stable under folding
        assert term in source and not is_stopword(term)
        assert len(term) > 1 or term.isdigit()
    assert query_terms(" ".join(terms), max_terms=n) == terms  # idempotent
    assert terms == [t for t in dict.fromkeys(source) if t in terms]  # first-seen order


@settings(max_examples=150, deadline=None)
@given(st.lists(st.one_of(TEXT, MIXED), max_size=50))
def test_clean_terms_are_safe_words_bounded(terms: list[str]) -> None:
    cleaned = clean_terms(terms)
    assert len(cleaned) == len(set(cleaned)) <= MAX_TERMS
    for term in cleaned:
        assert term and "\x00" not in term and '"' not in term and "'" not in term
        assert len(term) <= MAX_WORD and words(term) == [term]


@settings(max_examples=100, deadline=None)
@given(st.one_of(TEXT, MIXED))
def test_every_word_of_a_text_matches_it(text: str) -> None:
    found = words(text)
    indexed = " ".join(found)
    assert matched_terms(indexed, clean_terms(found)) == len(set(found[:MAX_TERMS]) & set(found))
    cut = snippet(text, found[:1])
    assert len(cut) <= 210
    if found and len(text) < 150:
        assert found[0] in words(cut)


def test_folding_matches_across_case_accents_and_turkish_i() -> None:
    assert words("IŞIK ışık Isik") == ["isik"] * 3
    assert words("İstanbul'da") == ["istanbul", "da"]
    assert fold("Straße") == "strasse" and words("CAFÉ café") == ["cafe", "cafe"]
    assert words("МОСКВЕ москве") == ["москве", "москве"]
    assert words("नमस्ते") == ["नमस्ते"]  # vowel signs do not cut the word
    assert words("RX-4471 foo_bar " + "x" * 65) == ["rx", "4471", "foo", "bar"]


def test_query_terms_of_questions() -> None:
    assert query_terms("When did Caroline go to the LGBTQ support group?") == [
        "caroline", "lgbtq", "support", "group"]
    assert query_terms("Wann hat Jörg die Krankenversicherung gekündigt?") == [
        "jorg", "krankenversicherung", "gekundigt"]
    assert query_terms("the a of to") == [] and query_terms("") == []
    assert query_terms("March 3 at 7pm") == ["march", "3", "7pm"]
    with pytest.raises(ConfigError):
        query_terms("x", max_terms=0)


def test_snippet_cuts_around_the_first_match() -> None:
    text = "word " * 100 + "the Zafferano booking for two " + "tail " * 100
    cut = snippet(text, ["zafferano"])
    assert "Zafferano" in cut and cut.startswith("…") and cut.endswith("…")
    assert snippet("short text", ["absent"]) == "short text"
