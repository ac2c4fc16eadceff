"""What every adapter test asserts on what a model actually received."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from contextfold import Message
from contextfold.context import SUMMARY_HEADER
from contextfold.testing import check_provider_rules
from contextfold.tokens import REPLY_PRIMING_TOKENS, TokenCounter, count_message, count_tools

#: A shop-assistant script: each turn asks about one order; the model looks it up (a tool
#: call, sometimes two in parallel), then answers. Numbers make the summary worth checking.
TURNS = 200


def user_text(turn: int) -> str:
    return (f"Turn {turn}: what is the status of order A-{1000 + turn}? It was placed for "
            f"customer {turn % 17} and should ship to warehouse W{turn % 5}.")


def tool_result(order: str) -> str:
    n = int(order.split("-")[1])
    return (f'{{"order": "{order}", "status": "{["packed", "shipped", "delayed"][n % 3]}", '
            f'"items": {n % 7 + 1}, "total_eur": {n * 3 % 997}.50}}')


def answer_text(turn: int) -> str:
    return f"Order A-{1000 + turn} is being handled; I will keep you posted about it."


def check_received(
    messages: Sequence[Message],
    *,
    budget: int,
    counter: TokenCounter,
    tools: Sequence[Mapping[str, Any]] | None = None,
    summary_expected: bool = False,
) -> None:
    """Within budget, every provider rule (tool pairs intact, user first), summary shown."""
    tokens = REPLY_PRIMING_TOKENS + count_tools(counter, tools) + sum(
        count_message(counter, m) for m in messages)
    assert tokens <= budget, f"model received {tokens} tokens, budget {budget}"
    problems = check_provider_rules(list(messages), allow_pending=False)
    assert not problems, "\n".join(map(str, problems))
    if summary_expected:
        assert any(m.role == "system" and SUMMARY_HEADER in m.text for m in messages), \
            "a fold committed but the model did not receive the summary"


#: Recall through an adapter: a fact said on the first turn, asked about on the last.
RECALL_FACT = "my parking spot at the warehouse is P-77 on level minus two, lol"
RECALL_TURNS = 40


def recall_user_text(turn: int) -> str:
    """:func:`user_text`, with the fact on turn 1 and a question about it on the last."""
    if turn == 1:
        return f"{user_text(1)} By the way, {RECALL_FACT}."
    if turn == RECALL_TURNS:
        return (f"Turn {turn}: do you remember where my parking spot at the warehouse was? "
                f"And what is the status of order A-{1000 + turn}?")
    return user_text(turn)


def check_recalled(messages: Sequence[Message]) -> None:
    """The model received the folded fact in the recalled block."""
    from contextfold.recall import RECALL_HEADER

    blocks = [m.text for m in messages if RECALL_HEADER in m.text]
    assert blocks, "recall on, a question about the past, but no recalled block"
    assert RECALL_FACT in blocks[0], blocks[0]
