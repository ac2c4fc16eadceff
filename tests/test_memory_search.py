"""``Memory.search`` / ``AsyncMemory.search``: a typed question finds the stored messages,
folded ones included, on the default store."""

from __future__ import annotations

from pathlib import Path

import pytest

from contextfold import Memory, MessageCount
from contextfold.errors import ValidationError


def test_memory_search_finds_folded_and_live_messages(tmp_path: Path) -> None:
    with Memory(str(tmp_path / "m.db"), policy=MessageCount(4, fold=3)) as memory:
        memory.add("s", {"role": "user", "content": "We booked the ferry to Bodrum"},
                   {"role": "assistant", "content": "Ferry booked for the 14th."},
                   {"role": "user", "content": "My cat is called Pamuk"},
                   {"role": "assistant", "content": "Lovely."},
                   {"role": "user", "content": "Pamuk likes the Bodrum fish market"})
        assert memory.stats("s").through_seq >= 1  # type: ignore[union-attr]
        hits = memory.search("s", "When did we book the ferry to Bodrum?")
        assert hits[0].seq == 1 and hits[0].folded and hits[0].matched == 3  # ferry bodrum book
        assert {h.seq for h in hits} == {1, 2, 5}
        assert [h.seq for h in memory.search("s", "pamuk", folded=False)] == [5]
        assert [h.seq for h in memory.search("s", ["pamuk"], folded=True)] == [3]
        assert {h.seq for h in memory.search("s", "the")} == {1, 2, 5}  # only stop words: as typed
        assert memory.search("nobody", "ferry") == []
        with pytest.raises(ValidationError, match="limit"):
            memory.search("s", "ferry", limit=0)
