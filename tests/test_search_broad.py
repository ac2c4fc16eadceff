"""Broad search terms (words in very many messages): which terms are broad, what a store
searches first when a query has some, and that the memory and SQLite stores fall back to
ranking every match when the selective search finds fewer than ``limit`` hits."""

from __future__ import annotations

import asyncio
import itertools
import tempfile
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contextfold.messages import Message
from contextfold.stores import MemoryStore, search, sqlite_search
from contextfold.stores.base import PreparedMessage, Store
from contextfold.stores.postgres_search import TermStats, tsquery_text
from contextfold.stores.search import (
    BROAD_MESSAGES,
    broad_terms,
    selective_search,
    term_groups,
)
from contextfold.stores.sqlite import SQLiteStore

T0 = datetime(2026, 1, 2, tzinfo=timezone.utc)
TERMS = st.lists(st.sampled_from(["photo", "great", "zebra", "lake", "go", "up", "4"]),
                 min_size=1, max_size=7, unique=True)


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_broad_terms_are_the_common_ones_beyond_the_rare_ones_budget(data: Any) -> None:
    terms = data.draw(TERMS)
    counts = {t: data.draw(st.integers(0, 3 * BROAD_MESSAGES), label=t) for t in terms}
    broad = broad_terms(counts)
    selective = [t for t in terms if t not in broad]
    assert broad <= set(terms) and selective  # the rarest term is always selective
    assert min(counts.values()) in {counts[t] for t in selective}
    assert len(selective) == 1 or sum(counts[t] for t in selective) <= BROAD_MESSAGES
    if broad:
        assert min(counts[t] for t in broad) >= max(counts[t] for t in selective)
        assert sum(counts[t] for t in selective) + min(counts[t] for t in broad) > BROAD_MESSAGES
    else:
        assert sum(counts.values()) <= BROAD_MESSAGES or len(terms) == 1


@settings(max_examples=200, deadline=None)
@given(TERMS, st.integers(1, 4), st.data())
def test_selective_search_leaves_out_only_matches_of_broad_terms_alone(
    terms: list[str], m: int, data: Any
) -> None:
    broad = set(data.draw(st.lists(st.sampled_from(terms), unique=True)))
    groups = term_groups(terms, m)
    narrow = selective_search(groups, broad)
    selective = [t for t in terms if t not in broad]
    only_broad = [g for g in groups if broad.issuperset(g)]
    if narrow is None:
        assert not broad or not selective or (len(groups[0]) > 1 and not only_broad)
        return
    assert narrow and broad and selective
    for words in itertools.chain.from_iterable(
            itertools.combinations(terms, k) for k in range(1, len(terms) + 1)):
        # a message holding exactly these terms: searched first iff it matches a group
        # with a selective term, or (single terms) two terms with a broad one
        found = any(set(g) <= set(words) for g in narrow)
        if len(groups[0]) == 1:
            assert found == (bool(set(words) - broad) or len(words) >= 2)
        else:
            assert found == any(set(g) <= set(words) and not broad.issuperset(g)
                                for g in groups)


def test_queries_of_the_selective_search_in_both_engines() -> None:
    narrow = selective_search([("go",), ("zebra",)], {"go"})
    assert narrow == [("zebra",), ("go", "zebra")]
    assert sqlite_search.match_expression(narrow) == '"zebra"* OR ("go" AND "zebra"*)'
    assert tsquery_text(narrow) == "'zebra':* | ('go' & 'zebra':*)"


def test_postgres_term_stats_count_a_lexeme_and_the_words_a_long_term_begins() -> None:
    stats = TermStats()
    stats.load(["photo", "photos", "go", "photograph", "zebra"], [0.5, 0.1, 0.2, 0.05, 0.01,
                                                                   0.01, 0.5, 0.0], 1000.0)
    counts = asyncio.run(stats.counts(None, ["photo", "go", "zebr", "lake", "phot"]))
    assert counts == {"photo": 650, "go": 200, "zebr": 10, "lake": 0, "phot": 650}


def _p(text: str) -> PreparedMessage:
    return PreparedMessage(Message(role="user", content=text), 4)


def _stores() -> list[Callable[[], Store]]:
    path = Path(tempfile.mkdtemp(prefix="cf-broad-")) / "s.db"
    return [MemoryStore, lambda: SQLiteStore(path)]


@pytest.mark.parametrize("make", _stores(), ids=["memory", "sqlite"])
def test_selective_matches_first_and_every_match_when_they_are_too_few(
    make: Callable[[], Store], monkeypatch: Any
) -> None:
    monkeypatch.setattr(search, "BROAD_MESSAGES", 3)
    monkeypatch.setattr(sqlite_search, "BROAD_MESSAGES", 3)
    searched: list[str] = []
    real = sqlite_search._ranked

    def ranked(conn: Any, expression: str, *args: Any) -> Any:
        searched.append(expression)
        return real(conn, expression, *args)

    monkeypatch.setattr(sqlite_search, "_ranked", ranked)
    texts = ["a photo of the great lake"] * 5 + ["a zebra photo", "a great zebra"] + [
        "nothing here"]

    async def main(store: Store) -> None:
        await store.setup()
        await store.append("s", [_p(t) for t in texts], T0)
        terms = ["photo", "great", "zebra"]
        two = await store.search("s", terms, limit=2, min_matched=2)
        assert sorted(h.seq for h in two) == [6, 7] and all(h.matched == 2 for h in two)
        # (each term is the only word of the index it begins: queried as that word)
        assert searched == ['("photo" AND "zebra") OR ("great" AND "zebra")']
        searched.clear()
        five = await store.search("s", terms, limit=5, min_matched=2)
        assert len(five) == 5 and {6, 7} <= {h.seq for h in five}  # every match ranked
        assert len(searched) == 2
        searched.clear()
        one = await store.search("s", ["photo", "zebra"], limit=2)
        assert sorted(h.seq for h in one) == [6, 7]
        assert searched == ['"zebra" OR ("photo" AND "zebra")']
        await store.close()

    asyncio.run(main(make()))
