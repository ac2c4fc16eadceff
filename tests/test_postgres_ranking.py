"""The pure parts of PostgreSQL's search ranking: the terms' BM25 weights (the store's
behaviour is in ``tests/postgres``)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from contextfold.stores.postgres_search import bm25_weights, search_sql


@given(st.lists(st.integers(0, 10**6), min_size=1, max_size=8), st.floats(0, 10**7))
def test_rarer_terms_weigh_more_and_no_weight_is_negative(counts: list[int], rows: float) -> None:
    weights = bm25_weights(counts, rows)
    assert all(w > 0 for w in weights)
    for a, wa in zip(counts, weights, strict=True):
        for b, wb in zip(counts, weights, strict=True):
            if a < b:
                assert wa > wb
            if a == b:
                assert wa == wb


def test_without_statistics_every_term_weighs_the_same() -> None:
    assert len(set(bm25_weights([0, 0, 0], 0.0))) == 1
    assert bm25_weights([0], 1000.0)[0] > bm25_weights([999], 1000.0)[0]


def test_the_statement_weighs_each_term() -> None:
    two = search_sql(2)
    assert "%(w0)s" in two and "%(w1)s" in two and "%(w2)s" not in two


def test_the_statement_filters_folded_messages_by_the_cursor() -> None:
    assert "m.seq <= s.through_seq" in search_sql(2, True)
    assert "m.seq > s.through_seq" in search_sql(2, False)
    assert "through_seq\n" not in search_sql(2, None).split("WHERE", 1)[1]
