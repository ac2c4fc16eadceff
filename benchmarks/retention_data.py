"""Data and scoring shared by the retention benchmarks: LoCoMo loading, plain truncation,
replay through the real engine, and the answer-kept metric.

LoCoMo is read from ``../shared/data/locomo`` beside the checkout (or ``--data``) at run
time; it is never
copied into this repository.
"""

from __future__ import annotations

import asyncio
import json
import re
import string
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from contextfold.memory import AsyncMemory
from contextfold.messages import Message
from contextfold.policy import TokenBudget
from contextfold.summarizers.extractive import ExtractiveSummarizer
from contextfold.tokens import TokenCounter, count_message

ROOT = Path(__file__).resolve().parent.parent
DATA_CANDIDATES = (
    ROOT.parent / "shared" / "data" / "locomo" / "locomo_dev.json",
    ROOT.parent.parent / "shared" / "data" / "locomo" / "locomo_dev.json",
)
CATEGORIES = (1, 2, 3, 4)
_PUNCT = set(string.punctuation) | {"’", "‘", "“", "”", "—", "–", "…"}
_ARTICLES = re.compile(r"\b(a|an|the|and)\b")
_EVIDENCE = re.compile(r"D\d+:\d+")


def publish(lines: Sequence[str], path: Path, *, write: bool = True) -> str:
    """Print a benchmark's report (its lines joined) and, unless ``write`` is false, write
    it to ``path`` under ``benchmarks/results/``; returns the report."""
    report = "\n".join(lines)
    print(report)
    if write:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(report, encoding="utf-8")
    return report


def default_data() -> Path:
    """The dev set beside the checkout (``../shared`` or ``../../shared``)."""
    for path in DATA_CANDIDATES:
        if path.exists():
            return path
    return DATA_CANDIDATES[0]


# -- data --------------------------------------------------------------------------------


@dataclass
class Conversation:
    sample_id: str
    messages: list[Message]
    answers: list[str]
    dates: list[str] = field(default_factory=list)
    questions: list[str] = field(default_factory=list)  # one per answer
    categories: list[int] = field(default_factory=list)  # LoCoMo category, one per answer
    #: the indices (into ``messages``) of each question's evidence turns (may be empty)
    evidence: list[list[int]] = field(default_factory=list)


def load(path: Path) -> list[Conversation]:
    """LoCoMo → provider-neutral messages: speaker A is ``user``, speaker B ``assistant``,
    both named; a shared photo is appended as ``[shares <caption>]``; the timestamp is the
    session's date and time."""
    raw = json.loads(path.read_text(encoding="utf-8"))
    out = []
    for sample in raw:
        conv = sample["conversation"]
        messages: list[Message] = []
        dates: list[str] = []
        dia: dict[str, int] = {}
        i = 1
        while f"session_{i}" in conv:
            stamp = datetime.strptime(conv[f"session_{i}_date_time"], "%I:%M %p on %d %B, %Y")
            stamp = stamp.replace(tzinfo=timezone.utc)
            dates.append(f"{stamp.day} {stamp:%B %Y}")
            for turn in conv[f"session_{i}"]:
                dia[str(turn.get("dia_id", ""))] = len(messages)
                text = turn["text"]
                if turn.get("blip_caption"):
                    text = f"{text} [shares {turn['blip_caption']}]"
                role = "user" if turn["speaker"] == conv["speaker_a"] else "assistant"
                messages.append(
                    Message(role=role, name=turn["speaker"], content=text, timestamp=stamp)
                )
            i += 1
        qa = [q for q in sample["qa"] if q.get("category") in CATEGORIES]
        answers = [str(q["answer"]) for q in qa]
        questions = [str(q["question"]) for q in qa]
        categories = [int(q["category"]) for q in qa]
        evidence = [
            [dia[e] for e in _EVIDENCE.findall(" ".join(map(str, q.get("evidence", []))))
             if e in dia]
            for q in qa
        ]
        out.append(Conversation(sample["sample_id"], messages, answers, dates, questions,
                                categories, evidence))
    return out


def normalize(text: str) -> str:
    """SQuAD-style: lower case, punctuation to spaces, no articles, single spaces."""
    text = "".join(" " if ch in _PUNCT else ch for ch in text.lower())
    return " " + " ".join(_ARTICLES.sub(" ", text).split()) + " "


def context_text(messages: Sequence[Message]) -> str:
    return "\n".join(f"{m.name or m.role}: {m.text}" for m in messages)


# -- replay ------------------------------------------------------------------------------


@dataclass
class Run:
    context: str
    tokens: int
    folds: int = 0
    fold_seconds: list[float] = field(default_factory=list)


def truncate(conv: Conversation, budget: int, counter: TokenCounter) -> Run:
    """The newest messages that fit in ``budget`` (reply priming counted)."""
    used, kept = 3, 0
    for msg in reversed(conv.messages):
        cost = count_message(counter, msg)
        if used + cost > budget:
            break
        used += cost
        kept += 1
    tail = conv.messages[len(conv.messages) - kept :]
    return Run(context_text(tail), used)


def replay(
    conv: Conversation,
    policy: TokenBudget,
    summarizer: ExtractiveSummarizer,
    counter: TokenCounter,
) -> Run:
    """Stream the conversation through the real engine (``AsyncMemory`` on the in-memory
    store, inline folds) and take its final context."""
    return asyncio.run(_replay(conv, policy, summarizer, counter))


async def _replay(
    conv: Conversation,
    policy: TokenBudget,
    summarizer: ExtractiveSummarizer,
    counter: TokenCounter,
) -> Run:
    run = Run("", 0)
    async with AsyncMemory(
        "memory://", summarizer=summarizer, policy=policy, tokenizer=counter,
        raise_errors=True,
    ) as memory:
        for message in conv.messages:
            added = await memory.add(conv.sample_id, message)
            if added.fold is not None and added.fold.status == "committed":
                run.folds += 1
                run.fold_seconds.append(added.fold.latency_ms / 1000)
        context = await memory.context(conv.sample_id)
    run.context = context_text(context.messages)
    run.tokens = context.tokens
    return run


# -- scoring -----------------------------------------------------------------------------


def retention(conv: Conversation, run: Run) -> tuple[int, int]:
    """(answers kept, answers present in the full conversation)."""
    full = normalize(context_text(conv.messages) + "\n" + "\n".join(conv.dates))
    ctx = normalize(run.context)
    present = kept = 0
    for answer in conv.answers:
        needle = normalize(answer)
        if needle.strip() and needle in full:
            present += 1
            kept += needle in ctx
    return kept, present




# -- the low-overlap subset --------------------------------------------------------------

#: A question is *low-overlap* when at most this share of its content words occur, as the
#: same word, in its evidence turns. Stands in for real human chats, whose questions share
#: fewer words with the answer than LoCoMo's. Fixed before any recall result was read.
LOW_OVERLAP = 1 / 3


def content_words(text: str) -> set[str]:
    """Lower-cased words of three or more letters that are not English stop words (the
    full ISO list), unstemmed: ``painted`` and ``paint`` are different words."""
    import stopwordsiso

    stop = stopwordsiso.stopwords("en")
    return {w for w in re.findall(r"[a-z0-9]+", text.lower()) if len(w) >= 3 and w not in stop}


def word_overlap(conv: Conversation, i: int) -> float | None:
    """The share of question ``i``'s content words found in its evidence turns (None: the
    question has no evidence turns or no content words)."""
    asked = content_words(conv.questions[i])
    if not conv.evidence[i] or not asked:
        return None
    said: set[str] = set()
    for at in conv.evidence[i]:
        said |= content_words(conv.messages[at].text)
    return len(asked & said) / len(asked)


def low_overlap(conv: Conversation, i: int) -> bool:
    """Whether question ``i`` is in the low-overlap subset (see :data:`LOW_OVERLAP`)."""
    share = word_overlap(conv, i)
    return share is not None and share <= LOW_OVERLAP
