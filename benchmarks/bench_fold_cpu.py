"""The CPU a fold worker spends per fold, and the summaries it writes (their digest).

Replays conversations through the memory ``contextfold serve``'s fold workers fold with
(the service's default session settings, the threaded extractive summarizer, a SQLite
store, ``fold: deferred``), folding each session whenever its policy fires, as a fold
worker would right after the append that made it due:

- ``service``: the turns of ``bench_service_speed.py`` (8 sessions, 4 clients each,
  ``--rounds`` rounds, the clients' turns interleaved);
- ``locomo``: the first ``--conversations`` LoCoMo dev conversations (read at run time
  from ``../shared/data``; skipped when absent), their real speakers and dates.

Reported: folds committed, CPU milliseconds per fold (this process, every thread: the
summarizer runs in a worker thread) over ``--repeat`` replays (the best one: the least
disturbed by other work on the machine), and the SHA-256 of every summary text and its
token count in the order written. A change that only removes work must leave the digest
as it was: run the same command from another checkout (``PYTHONPATH=/other/src``) and
compare.

Usage: python benchmarks/bench_fold_cpu.py [--rounds 40] [--conversations 3] [--repeat 3]
    [--profile]
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import hashlib
import pstats
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))

from bench_service_speed import turn  # noqa: E402

from contextfold.messages import Message  # noqa: E402
from contextfold.server.catalog import open_catalog  # noqa: E402
from contextfold.server.config import ServerConfig  # noqa: E402
from contextfold.server.memories import SessionMemories, open_service_store  # noqa: E402


def service_turns(rounds: int, sessions: int = 8, clients: int = 32) -> Iterator[
    tuple[str, list[dict[str, str]]]
]:
    """The service benchmark's appends, clients interleaved round by round."""
    for r in range(rounds):
        for n in range(clients):
            yield f"bench/speed-{n % sessions}", turn(n, r)


def locomo_turns(count: int) -> Iterator[tuple[str, list[Message]]]:
    from retention_data import default_data, load

    path = default_data()
    if not path.exists():
        return
    for conv in load(path)[:count]:
        for message in conv.messages:
            yield f"locomo/{conv.sample_id}", [message]


async def replay(appends: list[tuple[str, list]], digest: hashlib._Hash) -> tuple[int, float]:
    """Append everything, folding each session when its policy fires; the folds
    committed and the CPU seconds the fold calls took."""
    forget_memos()
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{Path(tmp) / 'folds.db'}"
        config = ServerConfig()
        store = open_service_store(config, url)
        catalog = open_catalog(url)
        catalog.setup()
        try:
            memory = SessionMemories(config, store, catalog).memory(config.defaults)
            folds, cpu = 0, 0.0
            for sid, messages in appends:
                added = await memory.add(sid, *messages)
                assert added.stats is not None
                if not memory._wants_fold(added.stats):
                    continue
                started = time.process_time()
                outcome = await memory.fold(sid)
                cpu += time.process_time() - started
                if outcome.status == "committed":
                    assert outcome.summary is not None
                    folds += 1
                    digest.update(outcome.summary.text.encode())
                    digest.update(f"\x00{outcome.summary.tokens}\x00".encode())
            return folds, cpu
        finally:
            await store.close()
            catalog.close()


def forget_memos() -> None:
    """Empty the summarizer's per-process memos (when this checkout has them), so every
    replay starts as a fresh fold worker would."""
    try:
        from contextfold.summarizers import sentence_memo
    except ImportError:
        return
    getattr(sentence_memo, "forget", sentence_memo._MEMOS.clear)()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--conversations", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--profile", action="store_true",
                        help="print a cProfile of one replay of each (its times inflated)")
    parser.add_argument("--sort", default="tottime", help="the profile's order")
    args = parser.parse_args()
    loads = {
        "service": list(service_turns(args.rounds)),
        "locomo": list(locomo_turns(args.conversations)),
    }
    print("| replay | appends | folds committed | CPU ms per fold (best of "
          f"{args.repeat}) | summaries SHA-256 |")
    print("|---|---|---|---|---|")
    for name, appends in loads.items():
        if not appends:
            print(f"| {name} | 0 | – | – | (no data) |")
            continue
        best = float("inf")
        digests = set()
        folds = 0
        for _ in range(args.repeat):
            digest = hashlib.sha256()
            folds, cpu = asyncio.run(replay(appends, digest))
            best = min(best, cpu)
            digests.add(digest.hexdigest())
        if len(digests) != 1:
            raise SystemExit(f"{name}: the summaries differ between replays: {digests}")
        print(f"| {name} | {len(appends)} | {folds} | {best / max(1, folds) * 1000:.2f} "
              f"| {digests.pop()[:16]} |")
        if args.profile:  # the summarizer on this thread, where the profiler sees it
            from contextfold.server.memories import ThreadedExtractiveSummarizer
            from contextfold.summarizers.extractive import ExtractiveSummarizer

            ThreadedExtractiveSummarizer.summarize = ExtractiveSummarizer.summarize  # type: ignore[method-assign]
            profile = cProfile.Profile()
            profile.enable()
            asyncio.run(replay(appends, hashlib.sha256()))
            profile.disable()
            pstats.Stats(profile).sort_stats(args.sort).print_stats(40)


if __name__ == "__main__":
    main()
