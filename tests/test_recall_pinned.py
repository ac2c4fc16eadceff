"""Recall's output pinned on a seeded corpus, for the SQLite and memory stores: the hits
their searches return (seq, score, matched terms) and the blocks ``build_block`` lays out
from them (text, tokens, seqs), as digests.

Work on the speed of search and packing must leave both exactly as they were (the digests
were taken before it). A change that alters them changes what recall shows: measure it
with ``benchmarks/retention_recall.py`` (answer presence, held-out), then pin it again
here (``python tests/test_recall_pinned.py`` prints the digests)."""

from __future__ import annotations

import asyncio
import hashlib
import json
import random
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from contextfold import AsyncMemory, Message
from contextfold.messages import StoredMessage, ToolCall
from contextfold.policy import TokenBudget
from contextfold.recall import Recall, build_block, plan_spans, relevant, wanted_seqs
from contextfold.search_terms import refine_terms
from contextfold.stores import search
from contextfold.stores.base import Store
from contextfold.stores.search import clean_terms
from contextfold.tokens import get_counter

#: (hits, blocks) digests, taken before the speed work on recall: with the shipped
#: broad-term threshold, and with a low one.
PINNED = {
    "shipped": ("7170ec21f88f2c2a93899b1b94a0b53f2551b71f2279aa580a449168ff954f7d",
                "583c8653c43e8b97524330e994af1d2fc60b4bd991d2863795f6d4bf4727885a"),
    "low": ("e411a6f24f1f95547151a7177c5e35f74755e147ca9a2b36121f4c93c43dd7f4",
            "583c8653c43e8b97524330e994af1d2fc60b4bd991d2863795f6d4bf4727885a"),
}
START = datetime(2023, 1, 3, 9, 0, tzinfo=timezone.utc)
SID = "pinned"


def corpus(seed: int = 3) -> tuple[list[Message], list[str]]:
    """700 turns of two pairs of speakers over a 250-word vocabulary: questions, tool calls
    with long results, a few messages longer than a recalled line may be."""
    rng = random.Random(seed)
    vocab = ["".join(rng.choice("abcdefghijklmnoprstuvw") for _ in range(rng.randint(3, 9)))
             for _ in range(250)]
    names = ["Caroline", "Melanie", "Nate", "Joanna"]
    out: list[Message] = []
    for i in range(700):
        ts = START + timedelta(days=i // 6, minutes=i)
        words = " ".join(rng.choice(vocab) for _ in range(rng.randint(4, 30)))
        kind = rng.random()
        if kind < 0.05:  # a tool call and its result
            call = ToolCall(id=f"c{i}", name="lookup",
                            arguments=json.dumps({"q": rng.choice(vocab)}))
            out.append(Message(role="assistant", content="", tool_calls=(call,), timestamp=ts))
            out.append(Message(role="tool", content=(words + ". ") * rng.randint(1, 60),
                               tool_call_id=f"c{i}", name="lookup", timestamp=ts))
            continue
        text = words.capitalize() + ("?" if kind < 0.35 else ".")
        if kind > 0.97:
            text = (text + " ") * rng.randint(30, 90)
        out.append(Message(role="user" if i % 2 == 0 else "assistant", content=text,
                           name=names[(i // 2) % 2 + 2 * (i // 350)], timestamp=ts))
    return out, vocab


def queries(vocab: list[str], n: int = 30, seed: int = 4) -> list[str]:
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        words = " ".join(rng.choice(vocab) for _ in range(rng.randint(1, 6)))
        name = rng.choice(["", "Nate ", "Caroline "])
        out.append(f"What did {name}say about {words}?")
    return out


async def outputs(store: Store, vocab: list[str], messages: list[StoredMessage]
                  ) -> tuple[list[object], list[object]]:
    """The hits of every query (several ``min_matched``), and the blocks built from them
    (several rooms and options; a summary quoting every 5th message whole)."""
    counter = get_counter(None)
    summary = "\n".join(m.text for m in messages if m.seq % 5 == 0)
    hits_out: list[object] = []
    blocks: list[object] = []
    for q in queries(vocab):
        terms = refine_terms(clean_terms([q]))
        for min_matched in (1, 2, 3):
            found = await store.search(SID, terms, limit=40, folded=True,
                                       min_matched=min_matched)
            hits_out.append([(h.seq, repr(h.score), h.matched, h.folded) for h in found])
        found = await store.search(SID, terms, limit=40, folded=True, min_matched=2)
        for room, options, quoted in ((4000, Recall(), None), (4000, Recall(), summary),
                                      (600, Recall(max_message_tokens=40, framed=1), summary),
                                      (2000, Recall(neighbours=1, min_matched=1), None)):
            hits = relevant(found, len(terms), options, None)
            fetched = await store.fetch(SID, wanted_seqs(hits, options, None))
            by_seq = {m.seq: m for m in fetched if m.folded}
            block = build_block(plan_spans(hits, by_seq, options), by_seq, counter, room,
                                options, quoted)
            blocks.append(None if block is None else
                          [block.message.text, block.tokens, list(block.seqs)])
    return hits_out, blocks


def digests(url: str) -> tuple[str, str]:
    msgs, vocab = corpus()

    async def run() -> tuple[list[object], list[object]]:
        async with AsyncMemory(url, policy=TokenBudget(8000), fold="manual") as memory:
            await memory.add(SID, *msgs[:-30])
            await memory.fold(SID, force=True)
            await memory.add(SID, *msgs[-30:])
            return await outputs(memory.store, vocab, await memory.messages(SID))

    hits, blocks = asyncio.run(run())

    def digest(value: object) -> str:
        return hashlib.sha256(json.dumps(value).encode()).hexdigest()

    return digest(hits), digest(blocks)


@pytest.mark.parametrize("broad", [search.BROAD_MESSAGES, 25])
@pytest.mark.parametrize("store", ["memory", "sqlite"])
def test_hits_and_blocks_are_the_pinned_ones(store: str, broad: int, tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """The same hits and blocks as before: with the shipped broad-term threshold (no term
    of this corpus is broad) and with a low one (common words broad: the selective search
    first)."""
    pinned = PINNED["shipped" if broad == search.BROAD_MESSAGES else "low"]
    monkeypatch.setattr(search, "BROAD_MESSAGES", broad)
    url = "memory://" if store == "memory" else f"sqlite:///{tmp_path / 'pinned.db'}"
    assert digests(url) == pinned


if __name__ == "__main__":
    import sys
    import tempfile

    for name, broad in (("shipped", search.BROAD_MESSAGES), ("low", 25)):
        search.BROAD_MESSAGES = broad
        for url in ("memory://", f"sqlite:///{tempfile.mkdtemp()}/pinned.db"):
            print(name, url.split(":")[0], digests(url), file=sys.stdout)
