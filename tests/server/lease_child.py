"""A fold worker process for the takeover tests: ``python lease_child.py URL OWNER TAKEOVER
DIR TAG``. Its summarizer, once it has a fold's input, creates ``DIR/folding-TAG`` and waits
while ``DIR/hold-TAG`` exists (the test pauses or kills it there); at the end the worker's
totals go to ``DIR/stats-TAG.json``."""

from __future__ import annotations

import asyncio
import json
import logging
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any

from contextfold.engine import AsyncMemory
from contextfold.policy import TokenBudget
from contextfold.summarizers.extractive import ExtractiveSummarizer
from contextfold.worker import Worker, run_worker

BUDGET = 300


class HeldSummarizer(ExtractiveSummarizer):
    def __init__(self, folder: Path, tag: str) -> None:
        super().__init__()
        self.folding, self.hold = folder / f"folding-{tag}", folder / f"hold-{tag}"

    async def summarize(self, request: Any) -> Any:
        self.folding.touch()
        while self.hold.exists():
            await asyncio.sleep(0.02)
        return await super().summarize(request)


async def main(url: str, owner: str, takeover: str, folder: Path, tag: str) -> None:
    memory = AsyncMemory(url, policy=TokenBudget(BUDGET), fold="deferred",
                         summarizer=HeldSummarizer(folder, tag))
    worker = Worker(memory, owner=owner, takeover=takeover or None, lease_seconds=30,
                    poll_interval=0.05, grace_seconds=30)
    try:
        stats = await run_worker(worker)
    finally:
        await memory.close()
    (folder / f"stats-{tag}.json").write_text(json.dumps(asdict(stats)))


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO)
    url, owner, takeover, folder, tag = sys.argv[1:6]
    asyncio.run(main(url, owner, takeover, Path(folder), tag))
