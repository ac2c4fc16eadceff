"""Shared by the reliability tests: random transcripts that obey the sequence rules, with
parallel tool calls, results arriving out of order and across appends, and pending calls."""

from __future__ import annotations

import random
from collections.abc import Iterator

from contextfold import MediaPart, Message, TextPart, ToolCall

_VOCAB = """alpha bravo calendar meeting invoice deploy error retry budget token summary tool
result weather paris tokyo 2026 42 Ada plan goal constraint decision failing test database
migration cache latency user asked assistant listed pending confirm"""
WORDS = tuple(_VOCAB.split())


def words(rng: random.Random, lo: int, hi: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(lo, hi)))


def text(rng: random.Random) -> str:
    roll = rng.random()
    if roll < 0.08:
        return words(rng, 150, 400)  # a long message: forces trimming and folds
    if roll < 0.3:
        return words(rng, 30, 100)
    return words(rng, 2, 25)


class Transcript:
    """Generates one valid conversation, message by message."""

    def __init__(self, rng: random.Random, *, media: bool = False) -> None:
        self.rng = rng
        self.media = media
        self.next_call = 0

    def _call_id(self) -> str:
        self.next_call += 1
        return f"call_{self.next_call}"

    def _user(self) -> Message:
        rng = self.rng
        if self.media and rng.random() < 0.1:
            parts = (TextPart(words(rng, 2, 10)), MediaPart("image", {
                "type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}))
            return Message(role="user", content=parts)
        if rng.random() < 0.03:  # pasted a document: over any small budget on its own
            return Message(role="user", content=words(rng, 1200, 2000))
        return Message(role="user", content=text(rng), name="Ada" if rng.random() < 0.1 else None)

    def _tool_round(self, pending: bool) -> Iterator[Message]:
        rng = self.rng
        calls = tuple(
            ToolCall(self._call_id(), rng.choice(["search", "lookup", "run_tests"]),
                     f'{{"q": "{words(rng, 1, 4)}"}}')
            for _ in range(rng.choice([1, 1, 2, 3]))
        )
        yield Message(role="assistant", content=words(rng, 0, 8) if rng.random() < 0.3 else "",
                      tool_calls=calls)
        order = list(calls)
        rng.shuffle(order)
        if pending:
            order = order[: rng.randint(0, len(order) - 1)]
        for call in order:
            yield Message(role="tool", content=text(rng), tool_call_id=call.id)

    def messages(
        self, turns: int, *, system: bool = False, end_pending: bool = False
    ) -> list[Message]:
        rng = self.rng
        out: list[Message] = []
        if system:
            prompt = "You are a careful assistant. " + words(rng, 2, 8)
            out.append(Message(role="system", content=prompt))
        for _ in range(turns):
            out.append(self._user())
            if rng.random() < 0.1:
                out.append(self._user())
            while rng.random() < 0.5:
                out.extend(self._tool_round(pending=False))
            if rng.random() < 0.85:
                out.append(Message(role="assistant", content=text(rng)))
                if rng.random() < 0.05:
                    out.append(Message(role="assistant", content=text(rng)))
        if end_pending:
            out.append(self._user())
            out.extend(self._tool_round(pending=True))
        return out


def chunks(rng: random.Random, messages: list[Message], most: int = 4) -> Iterator[list[Message]]:
    """Split into appends of 1..most messages (tool results may land in a later append)."""
    i = 0
    while i < len(messages):
        n = rng.randint(1, most)
        yield messages[i : i + n]
        i += n
