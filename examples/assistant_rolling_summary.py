# Install: pip install contextfold   # --model openai:…: pip install "contextfold[openai]"
"""A personal assistant session with a rolling summary.

The session folds when it holds more than 30 messages AND the oldest 20 of them hold more
than 15,000 tokens (both strictly greater), keeping the 10 most recent messages verbatim.
The summary (``conversation`` preset with a model: third person, topics, decisions, action
items, tone, under 500 words; the extractive summarizer offline) then travels in the
context as the earlier-conversation block. Every number is a flag.

    python examples/assistant_rolling_summary.py
    python examples/assistant_rolling_summary.py --messages 60 --min-tokens 8000
    python examples/assistant_rolling_summary.py --model openai:gpt-4o-mini
"""

from __future__ import annotations

import argparse
import tempfile
import textwrap
from pathlib import Path

from contextfold import Memory
from contextfold.rolling import RollingSummary

TOPICS = [
    ("Plan a week in Lisbon for our anniversary in May.",
     "Lisbon in May is mild, around 22°C. I suggest Alfama for the first nights."),
    ("Budget is 2,400 euros for both of us, flights included.",
     "Flights from Berlin are about 380 euros return for two; that leaves 2,020."),
    ("Book the hotel near the Miradouro, not the one by the airport.",
     "Decision noted: Hotel Memmo Alfama, 4 nights, 760 euros. Shall I hold it?"),
    ("Yes, hold it. Remind me to renew my passport before April 10.",
     "Action item: passport renewal before April 10. Hotel is on hold until Friday."),
    ("My partner is vegetarian; find two dinner places.",
     "Ao 26 Vegan Food Project and Prado; both take reservations for 20:00."),
    ("I'm stressed about work, keep the plan light.",
     "Understood: at most one activity per day, afternoons free."),
]

FILLER = ("Here is the forwarded email thread with all the details, prices, opening hours "
          "and notes I collected so far, pasted in full so you can check everything again. ")


def message(i: int, words: int) -> dict[str, str]:
    user_text, assistant_text = TOPICS[(i // 2) % len(TOPICS)]
    text = user_text if i % 2 == 0 else assistant_text
    body = f"{text} {FILLER * max(0, words // len(FILLER.split()))}".strip()
    return {"role": "user" if i % 2 == 0 else "assistant", "content": body, "id": f"m{i + 1}"}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=45, help="messages to send (45)")
    parser.add_argument("--words", type=int, default=700, help="words per message (700)")
    parser.add_argument("--max-messages", type=int, default=30)
    parser.add_argument("--fold-messages", type=int, default=20)
    parser.add_argument("--min-tokens", type=int, default=15_000)
    parser.add_argument("--keep-last", type=int, default=10)
    parser.add_argument("--max-output-tokens", type=int, default=1024)
    parser.add_argument("--model", help="summarizer model, e.g. openai:gpt-4o-mini "
                        "(default: offline extractive summarizer)")
    parser.add_argument("--db", help="store URL (default: a temporary SQLite file)")
    args = parser.parse_args(argv)
    recipe = RollingSummary(args.max_messages, args.fold_messages, args.min_tokens,
                            args.keep_last, args.max_output_tokens)
    with tempfile.TemporaryDirectory() as tmp:
        db = args.db or f"sqlite:///{Path(tmp) / 'assistant.db'}"
        with Memory(db, **recipe.options(model=args.model)) as memory:
            for i in range(args.messages):
                fold = memory.add("me", message(i, args.words)).fold
                if fold is None or fold.status == "skipped":
                    continue
                if fold.status != "committed" or fold.summary is None:
                    print(f"after message {i + 1}: fold failed ({fold.error!r}); "
                          "every message kept")
                    continue
                ids = fold.folded_ids
                print(f"after message {i + 1}: folded {fold.messages_folded} messages "
                      f"({ids[0]}..{ids[-1]}, {fold.tokens_folded:,} tokens)")
                print(textwrap.indent(textwrap.shorten(fold.summary.text, 400), "    "))
            context = memory.context("me")
            stats = memory.stats("me")
            assert stats is not None
            print(f"\ncontext: {len(context.messages)} messages, {context.tokens:,} tokens; "
                  f"summary block: {'yes' if context.summary_included else 'no'}; "
                  f"{stats.live_count} live messages kept verbatim of {stats.last_seq}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
