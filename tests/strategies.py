"""Hypothesis strategies shared by the property tests: random valid transcripts with
tool calls, parallel calls and calls still pending at the end."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from contextfold import Message, ToolCall

_words = st.lists(
    st.sampled_from(["alpha", "Bob", "met", "in", "Paris", "on", "3 May", "42", "the", "plan",
                     "ok", "🙂", "Привет", "tool", "error", "x" * 30]),
    min_size=0, max_size=40,
).map(" ".join)


@st.composite
def transcripts(draw: Any, max_turns: int = 40) -> list[Message]:
    """A valid message sequence: user/assistant turns, tool-call groups (1-3 parallel
    calls, results in any order), and possibly calls left pending at the very end."""
    out: list[Message] = []
    n = draw(st.integers(min_value=1, max_value=max_turns))
    call_no = 0
    for i in range(n):
        kind = draw(st.sampled_from(["user", "assistant", "tools", "user", "assistant"]))
        if kind != "tools":
            out.append(Message(role=kind, content=draw(_words)))
            continue
        k = draw(st.integers(min_value=1, max_value=3))
        calls = []
        for _ in range(k):
            call_no += 1
            calls.append(ToolCall(f"call_{call_no}", "lookup", '{"q": 1}'))
        out.append(Message(role="assistant", content=draw(_words), tool_calls=tuple(calls)))
        order = draw(st.permutations(calls))
        pending_ok = i == n - 1
        answered = draw(st.integers(min_value=0 if pending_ok else k, max_value=k))
        for call in order[:answered]:
            out.append(Message(role="tool", content=draw(_words), tool_call_id=call.id))
        if answered < k:
            break
    return out
