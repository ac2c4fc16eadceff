# Install: pip install contextfold   # --model openai:…: pip install "contextfold[openai]"
"""Simulation characters that remember: K memory cells each, newest first, plus a summary.

Each tick every character may get one new memory. A character with K cells first folds its
oldest cell into its summary (the ``character`` preset with a model, the extractive
summarizer offline), all full characters in one bounded-concurrency batch; a character whose
fold fails keeps its memory and retries the pending memory next tick.

    python examples/simulation_memory.py                      # offline
    python examples/simulation_memory.py --k 3 --ticks 8
    python examples/simulation_memory.py --model openai:gpt-4o-mini
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import tempfile
from pathlib import Path

from contextfold.cells import MemoryCells
from contextfold.summarizers.base import Summarizer

#: Who lives in the world, and what happens to them tick by tick ("" is a quiet tick).
WORLD: dict[str, list[str]] = {
    "mira": [
        "I opened the bakery at dawn and sold the first loaf to Tomas.",
        "Tomas said the mill upstream has stopped turning.",
        "I promised the mayor forty loaves for the harvest feast.",
        "Flour is running low; I must ask Anya for rye.",
        "",
        "The miller's daughter came asking for work.",
        "I burned a whole tray because I was thinking about the mill.",
        "The mayor paid half in advance.",
    ],
    "tomas": [
        "I found tracks near the mill that were not a wolf's.",
        "I bought bread from Mira and told her about the mill.",
        "The mill's wheel was jammed with a carved branch: someone did it on purpose.",
        "I followed the tracks to the old quarry.",
        "I saw a lantern at the quarry at night.",
        "The mayor told me to stop asking questions.",
        "I told Anya what I saw; she believed me.",
        "I decided to watch the quarry tonight.",
    ],
    "anya": [
        "Я собрала рожь на восточном поле.",
        "Мира попросила у меня рожь для праздника.",
        "Томас рассказал мне о фонаре в каменоломне.",
        "Я поверила Томасу, хотя староста злится.",
        "Я спрятала мешок ржи для Миры в амбаре.",
        "",
        "Ночью я слышала шаги у амбара.",
        "Я решила пойти с Томасом к каменоломне.",
    ],
}


def make_summarizer(model: str | None) -> Summarizer | None:
    if model is None:
        return None  # MemoryCells' default: the offline extractive summarizer
    from contextfold.summarizers.llm import LLMSummarizer

    return LLMSummarizer(model, preset="character", word_limit=120)


async def simulate(args: argparse.Namespace) -> None:
    names = {"mira": "Mira the baker", "tomas": "Tomas the hunter", "anya": "Anya the farmer"}
    async with MemoryCells(args.db, k=args.k, summarizer=make_summarizer(args.model),
                           names=names, concurrency=args.concurrency) as world:
        for tick in range(args.ticks):
            memories = {cid: events[tick % len(events)] for cid, events in WORLD.items()
                        if events[tick % len(events)] or tick % 2 == 0}
            result = await world.tick(memories)
            folded = ", ".join(result.folded) or "nobody"
            failed = ", ".join(f"{c} ({e})" for c, e in result.failed.items())
            print(f"tick {tick + 1}: {len(result.added)} new memories; folded: {folded}; "
                  f"model requests: {result.requests}; tokens: {result.total_tokens}"
                  + (f"; failed, retried next tick: {failed}" if failed else ""))
        print()
        for cid in WORLD:
            memory = await world.recall(cid)
            print(f"== {names[cid]} ({cid}) ==")
            print(f"summary: {memory.summary or '(none yet)'}")
            for i, cell in enumerate(memory.cells, 1):
                print(f"  cell {i} (newest first): {cell or '(an empty memory)'}")
            for text in memory.pending:
                print(f"  pending: {text}")
        keys = sorted({e.key or "" for e in await world.memory.ledger(limit=None)})
        print(f"\nledger keys: {', '.join(keys) or '(no folds)'}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--k", type=int, default=5, help="memory cells per character (5)")
    parser.add_argument("--ticks", type=int, default=8, help="ticks to simulate (8)")
    parser.add_argument("--concurrency", type=int, default=4, help="folds in flight (4)")
    parser.add_argument("--model", help="summarizer model, e.g. openai:gpt-4o-mini "
                        "(default: offline extractive summarizer)")
    parser.add_argument("--db", help="store URL (default: a temporary SQLite file)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    with tempfile.TemporaryDirectory() as tmp:
        args.db = args.db or f"sqlite:///{Path(tmp) / 'world.db'}"
        asyncio.run(simulate(args))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
