"""Conformance tests for full-text search (part of :class:`StoreConformance`).

What recall and the ``/search`` route rely on, on every store: any term matches (OR), a
message with more of the terms ranks first, the folded filter, sessions never see each
other's messages, deleted sessions and ``delete`` retention folds leave nothing
searchable, bad terms are no hits (never an error), and words are folded alike in every
store (Turkish dotted/dotless i, accents, Cyrillic case, German word prefixes).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import replace
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, TypeVar

from ..errors import ValidationError
from ..messages import Message, ToolCall
from ..stores.base import FoldCommit, LedgerEntry, PreparedMessage, Retention, Store

__all__ = ["SearchConformance"]

T = TypeVar("T")
T0 = datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc)


def _p(role: str, content: str = "", **kw: Any) -> PreparedMessage:
    return PreparedMessage(Message(role=role, content=content, timestamp=T0, **kw), 5)  # type: ignore[arg-type]


def _fold(store: Store, sid: str, lo: int, hi: int, version: int = 0) -> Awaitable[Any]:
    entry = LedgerEntry(session_id=sid, outcome="committed", lo=lo, hi=hi, started_at=T0)
    return store.commit_fold(FoldCommit(sid, version, lo, hi, "summary", 3), entry)


async def _seqs(store: Store, sid: str, *terms: str, **kw: Any) -> list[int]:
    return [h.seq for h in await store.search(sid, terms, **kw)]


CHAT = [
    _p("user", "I booked the flight to Lisbon for March 3rd"),
    _p("assistant", "Great, your Lisbon flight is confirmed."),
    _p("user", "My sister's dog is called Biscuit"),
    _p("assistant", "Biscuit is a lovely name for a dog."),
    _p("user", "What about the hotel?"),
    _p("assistant", "The hotel in Porto is booked too."),
]


class SearchConformance:
    """``search`` and ``fetch``, as tests."""

    if TYPE_CHECKING:

        def _run(
            self, body: Callable[[Store], Awaitable[T]], retention: Retention = "archive"
        ) -> T: ...

    def test_search_matches_any_term_best_first(self) -> None:
        async def body(store: Store) -> None:
            await store.append("s", CHAT, T0)
            assert await _seqs(store, "s", "biscuit") == [3, 4] or await _seqs(
                store, "s", "biscuit"
            ) == [4, 3]
            hits = await store.search("s", ["dog", "sister"])
            assert {h.seq for h in hits} == {3, 4}
            assert hits[0].seq == 3 and hits[0].matched == 2 and hits[1].matched == 1
            assert hits[0].score > hits[1].score
            assert hits[0].role == "user" and hits[0].timestamp == T0 and not hits[0].folded
            assert "Biscuit" in hits[0].snippet
            assert {h.seq for h in await store.search("s", ["porto", "nothing", "lisbon"])} == {
                1,
                2,
                6,
            }
            assert await store.search("s", ["zeppelin"]) == []
            assert await store.search("nobody", ["lisbon"]) == []
            assert len(await store.search("s", ["booked", "lisbon", "dog"], limit=2)) == 2

        self._run(body)

    def test_search_folded_filter(self) -> None:
        async def body(store: Store) -> None:
            await store.append("s", CHAT, T0)
            await _fold(store, "s", 1, 2)
            assert await _seqs(store, "s", "lisbon", folded=True) in ([1, 2], [2, 1])
            assert await _seqs(store, "s", "lisbon", folded=False) == []
            assert await _seqs(store, "s", "hotel", folded=True) == []
            assert set(await _seqs(store, "s", "hotel", folded=False)) == {5, 6}
            hits = await store.search("s", ["lisbon", "hotel"])
            assert {(h.seq, h.folded) for h in hits} == {(1, True), (2, True), (5, False),
                                                         (6, False)}

        self._run(body)

    def test_sessions_never_see_each_other(self) -> None:
        async def body(store: Store) -> None:
            await store.append("s", CHAT, T0)
            await store.append("t", [_p("user", "a secret about Lisbon")], T0)
            assert set(await _seqs(store, "s", "lisbon")) == {1, 2}
            assert await _seqs(store, "t", "lisbon") == [1]
            assert await store.search("t", ["biscuit"]) == []

        self._run(body)

    def test_deleted_session_leaves_nothing_searchable(self) -> None:
        async def body(store: Store) -> None:
            await store.append("t", [_p("user", "Lisbon too")], T0)
            await store.append("s", CHAT, T0)  # the newest session: its slot may be reused
            assert await store.delete("s")
            assert await store.search("s", ["lisbon", "biscuit"]) == []
            await store.append("s", [_p("user", "a new life")], T0)
            assert await store.search("s", ["lisbon", "biscuit"]) == []
            assert await _seqs(store, "s", "life") == [1]
            assert await _seqs(store, "t", "lisbon") == [1]

        self._run(body)

    def test_delete_retention_fold_leaves_nothing_searchable(self) -> None:
        async def body(store: Store) -> None:
            items = [*CHAT[:2], _p("user", "Lisbon again", id="c-7"), *CHAT[2:]]
            await store.append("s", items, T0)
            await _fold(store, "s", 1, 3)
            assert await store.search("s", ["lisbon"]) == []
            assert await store.fetch("s", [1, 2, 3]) == []
            assert set(await _seqs(store, "s", "biscuit")) == {4, 5}

        self._run(body, "delete")

    def test_bad_terms_are_no_hits(self) -> None:
        async def body(store: Store) -> None:
            await store.append("s", [*CHAT, _p("user", 'he said "quote" OR NOT * (x) AND')], T0)
            for terms in ([], [""], ["   "], ["!!!", "--", "*"], ['"'], ["'"], ["\x00"],
                          ["NEAR(", ")"], ["x" * 100_000], ["^", ":"]):
                assert await store.search("s", terms) == [], terms
            assert await _seqs(store, "s", '"quote"') == [7]
            assert await _seqs(store, "s", "lis\x00bon", "\x00biscuit") in ([3, 4], [4, 3])
            assert await _seqs(store, "s", "OR", "NOT", "AND") == [7]
            many = [f"w{i}" for i in range(5000)] + ["biscuit"]
            assert await store.search("s", many) == []  # only the first terms are used
            assert await store.search("s\x00", ["lisbon"]) == []
            for limit in (0, -1, 10_001):
                try:
                    await store.search("s", ["lisbon"], limit=limit)
                except ValidationError:
                    continue
                raise AssertionError(f"limit {limit} accepted")

        self._run(body)

    def test_search_folds_words_alike_in_every_language(self) -> None:
        async def body(store: Store) -> None:
            await store.append(
                "s",
                [
                    _p("user", "IŞIK geldi, İstanbul'da buluşalım"),
                    _p("user", "Die Krankenversicherungen sind teuer."),
                    _p("user", "Мы встретились в МОСКВЕ в среду"),
                    _p("user", "Un café à Zürich"),
                    _p("user", "नमस्ते दुनिया"),
                ],
                T0,
            )
            assert await _seqs(store, "s", "ışık") == [1]
            assert await _seqs(store, "s", "istanbul") == [1]
            assert await _seqs(store, "s", "ISTANBUL'DA") == [1]
            assert await _seqs(store, "s", "krankenversicherung") == [2]
            assert await _seqs(store, "s", "москве") == [3]
            assert await _seqs(store, "s", "Среду") == [3]
            assert await _seqs(store, "s", "cafe", "zurich") == [4]
            assert await _seqs(store, "s", "दुनिया") == [5]

        self._run(body)

    def test_tool_calls_are_searchable(self) -> None:
        async def body(store: Store) -> None:
            call = ToolCall("call_1", "find_reservation", '{"reservation_id": "RX-4471"}')
            await store.append(
                "s",
                [
                    _p("user", "find it", name="Ada"),
                    _p("assistant", "", tool_calls=(call,)),
                    _p("tool", '{"status": "confirmed", "seat": "14C"}', tool_call_id="call_1"),
                ],
                T0,
            )
            assert await _seqs(store, "s", "rx", "4471") == [2]
            assert await _seqs(store, "s", "find_reservation") == [2, 1]  # both words first
            assert await _seqs(store, "s", "14c") == [3]
            assert await store.search("s", ["ada"]) == []  # speakers' names are not indexed
            hit = (await store.search("s", ["4471"]))[0]
            assert "4471" in hit.snippet and hit.role == "assistant"

        self._run(body)

    def test_fetch_returns_stored_messages_in_seq_order(self) -> None:
        async def body(store: Store) -> None:
            await store.append("s", CHAT, T0)
            await _fold(store, "s", 1, 2)
            got = await store.fetch("s", [5, 1, 99, 2, 5, 0])
            assert [(m.seq, m.folded) for m in got] == [(1, True), (2, True), (5, False)]
            assert got[0].message == CHAT[0].message and got[0].tokens == 5
            assert await store.fetch("s", []) == [] and await store.fetch("t", [1]) == []

        self._run(body)

    def test_search_without_snippets_finds_the_same_hits(self) -> None:
        async def body(store: Store) -> None:
            await store.append("s", [*CHAT, _p("user", "The dog took the ferry to Lisbon")], T0)
            await _fold(store, "s", 1, 3)
            cases: list[tuple[list[str], dict[str, Any]]] = [
                (["dog", "lisbon", "biscuit"], {}),
                (["dog", "lisbon", "biscuit"], {"min_matched": 2, "folded": True}),
                (["hotel", "porto"], {"limit": 1}),
            ]
            for terms, kw in cases:
                full = await store.search("s", terms, **kw)
                bare = await store.search("s", terms, snippets=False, **kw)
                assert full and all(h.snippet for h in full)
                assert bare == [replace(h, snippet="") for h in full]

        self._run(body)

    def test_min_matched_skips_messages_with_fewer_terms(self) -> None:
        async def body(store: Store) -> None:
            await store.append("s", [*CHAT, _p("user", "The dog took the ferry to Lisbon")], T0)
            terms = ["dog", "ferry", "lisbon", "biscuit"]
            every = await store.search("s", terms)
            assert {h.seq for h in every} == {1, 2, 3, 4, 7}
            two = await store.search("s", terms, min_matched=2)
            assert {h.seq for h in two} == {3, 4, 7}  # 1, 2: lisbon alone
            three = await store.search("s", terms, min_matched=3)
            assert [(h.seq, h.matched) for h in three] == [(7, 3)]
            assert await store.search("s", terms, min_matched=4) == []
            assert [h.seq for h in await store.search("s", ["lisbon"], min_matched=5)] in (
                [1, 2, 7], [2, 1, 7], [7, 1, 2], [7, 2, 1], [1, 7, 2], [2, 7, 1])  # capped at 1
            for bad in (0, -1, True):
                try:
                    await store.search("s", terms, min_matched=bad)
                except ValidationError:
                    continue
                raise AssertionError(f"min_matched={bad!r} accepted")

        self._run(body)
