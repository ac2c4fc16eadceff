"""One process of the inline-folders test
(``python -m tests.inline_folders URL SID W N OUT [LEASE_SECONDS]``):
appends ``N`` messages to one session through the sync ``Memory`` folding inline, writes
each acknowledged message id, then a JSON line with its fold outcomes."""

from __future__ import annotations

import json
import sys
from collections import Counter

from contextfold import Memory, MessageCount
from contextfold.testing import ConcatSummarizer


def main(url: str, sid: str, writer: int, n: int, out_path: str, lease: float) -> None:
    memory = Memory(
        url,
        policy=MessageCount(8, keep_last=2),
        summarizer=ConcatSummarizer(delay=0.03),
        fold_lease_seconds=lease,
    )
    outcomes: Counter[str] = Counter()
    with open(out_path, "a", buffering=1) as out:
        for i in range(n):
            mid = f"w{writer}-{i}"
            result = memory.add(sid, {"role": "user", "content": f"note {mid}", "id": mid})
            out.write(f"ack {mid}\n")
            if result.fold is not None:
                outcomes[result.fold.status] += 1
        out.write("outcomes " + json.dumps(dict(outcomes)) + "\n")
    memory.close()


if __name__ == "__main__":
    lease = float(sys.argv[6]) if len(sys.argv) > 6 else 120.0  # 0: no lease (to compare)
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5], lease)
