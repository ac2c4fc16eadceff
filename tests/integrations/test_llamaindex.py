"""LlamaIndex FunctionAgent with ContextFoldMemory, end to end with MockFunctionCallingLLM
(a generator function plays the model and sees exactly what it would receive)."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

import pytest
from llama_index.core.agent.workflow import FunctionAgent
from llama_index.core.base.llms.types import ChatMessage, MessageRole, ToolCallBlock
from llama_index.core.llms.mock import MockFunctionCallingLLM
from llama_index.core.tools import FunctionTool

from contextfold import AsyncMemory, Memory, Message, TokenBudget
from contextfold.integrations.llamaindex import ContextFoldMemory, from_llamaindex
from contextfold.testing import FunctionSummarizer

from .checks import (
    RECALL_TURNS,
    TURNS,
    answer_text,
    check_recalled,
    check_received,
    recall_user_text,
    tool_result,
    user_text,
)

# LlamaIndex's workflow runtime inspects objects through pydantic's deprecated attributes.
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

SYSTEM = "You are the order desk of a small shop. Use lookup_order for every order question."
BUDGET = 1500


def lookup_order(order: str) -> str:
    """Look up an order by its id (A-1234)."""
    return tool_result(order)


class Script:
    """The model: a question gets a lookup (two in parallel every 10th turn), tool results
    get an answer. Records every request."""

    def __init__(self) -> None:
        self.received: list[list[ChatMessage]] = []

    def __call__(self, messages: Any, **kwargs: Any) -> ChatMessage:
        self.received.append(list(messages))
        last = messages[-1]
        if last.role == MessageRole.TOOL:
            turn = int(str(last.additional_kwargs["tool_call_id"]).split("_")[1])
            return ChatMessage(role=MessageRole.ASSISTANT, content=answer_text(turn))
        turn = int(re.search(r"Turn (\d+)", last.content or "").group(1))  # type: ignore[union-attr]
        blocks = [ToolCallBlock(tool_call_id=f"call_{turn}_a", tool_name="lookup_order",
                                tool_kwargs={"order": f"A-{1000 + turn}"})]
        if turn % 10 == 0:
            blocks.append(ToolCallBlock(tool_call_id=f"call_{turn}_b", tool_name="lookup_order",
                                        tool_kwargs={"order": f"A-{999 + turn}"}))
        return ChatMessage(role=MessageRole.ASSISTANT, blocks=blocks)


def as_messages(received: list[ChatMessage]) -> list[Message]:
    return [from_llamaindex(m, f"m{i}") for i, m in enumerate(received)]


def make_agent(script: Script) -> FunctionAgent:
    llm = MockFunctionCallingLLM(response_generator=script, is_chat_model=True)
    return FunctionAgent(tools=[FunctionTool.from_defaults(lookup_order)], llm=llm,
                         system_prompt=SYSTEM)


def check_run(requests: list[list[ChatMessage]], counter: Any, summary: bool) -> None:
    """The first call of a run gets the bounded memory view; later calls add this run's
    own scratchpad (the turn's tool calls and results, stored when the run ends)."""
    for i, request in enumerate(requests):
        msgs = as_messages(request)
        assert msgs[0].text == SYSTEM
        check_received(msgs, budget=BUDGET + (0 if i == 0 else 200), counter=counter,
                       summary_expected=summary)
        if i == 0:
            check_received(msgs, budget=BUDGET, counter=counter, summary_expected=summary)


def test_two_hundred_turn_tool_agent_is_bounded_and_survives_a_restart(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'memory.db'}"

    async def main() -> None:
        memory = Memory(db, policy=TokenBudget(BUDGET))
        script = Script()
        agent = make_agent(script)
        chat_memory = ContextFoldMemory.from_defaults(memory=memory, session_id="shop",
                                                      system=SYSTEM)
        folded = False
        checked = 0
        for turn in range(1, TURNS + 1):
            response = await agent.run(user_msg=user_text(turn), memory=chat_memory)
            assert str(response) == answer_text(turn)
            check_run(script.received[checked:], memory.engine.counter, folded)
            checked = len(script.received)
            folded = folded or memory.summary("shop") is not None
        assert folded and checked == 2 * TURNS
        stored = memory.messages("shop")
        assert len(stored) == TURNS * 4 + TURNS // 10
        assert len({m.message.id for m in stored}) == len(stored)
        assert len(chat_memory.get_all()) == len(stored)
        memory.close()

        memory = Memory(db, policy=TokenBudget(BUDGET))
        script = Script()
        chat_memory = ContextFoldMemory.from_defaults(memory=memory, session_id="shop",
                                                      system=SYSTEM)
        response = await make_agent(script).run(user_msg=user_text(TURNS + 1), memory=chat_memory)
        assert str(response) == answer_text(TURNS + 1)
        check_run(script.received, memory.engine.counter, True)
        assert user_text(TURNS + 1) in script.received[0][-1].content  # type: ignore[operator]
        assert len(memory.messages("shop")) == TURNS * 4 + TURNS // 10 + 4
        memory.close()

    asyncio.run(main())


def test_async_memory_failing_folds_set_and_reset() -> None:
    def broken(request: Any) -> str:
        raise RuntimeError("summarizer down")

    async def main() -> None:
        memory = AsyncMemory("memory://", policy=TokenBudget(BUDGET),
                             summarizer=FunctionSummarizer(broken))
        script = Script()
        chat_memory = ContextFoldMemory(memory, "f")
        agent = make_agent(script)
        for turn in range(1, 31):
            await agent.run(user_msg=user_text(turn), memory=chat_memory)
        assert len(await memory.messages("f")) == 30 * 4 + 3
        assert (await memory.summary("f")) is None
        view = await chat_memory.aget()
        check_received(as_messages(view), budget=BUDGET, counter=memory.counter)
        # The view hands back the very objects that were put, while they are unchanged.
        assert any(m.additional_kwargs.get("tool_call_id") for m in view)
        await chat_memory.aset([ChatMessage(role="user", content="start over")])
        assert [m.content for m in await chat_memory.aget()] == ["start over"]
        await chat_memory.areset()
        assert await chat_memory.aget() == []
        await memory.close()

    asyncio.run(main())


def test_recall_brings_a_folded_fact_back_to_the_model() -> None:
    async def main() -> None:
        memory = Memory("memory://", policy=TokenBudget(BUDGET), recall=True)
        script = Script()
        agent = make_agent(script)
        chat_memory = ContextFoldMemory.from_defaults(memory=memory, session_id="shop",
                                                      system=SYSTEM)
        for turn in range(1, RECALL_TURNS + 1):
            first = len(script.received)
            await agent.run(user_msg=recall_user_text(turn), memory=chat_memory)
        last = as_messages(script.received[first])  # the memory view of the last run
        check_received(last, budget=BUDGET, counter=memory.engine.counter,
                       summary_expected=True)
        check_recalled(last)
        memory.close()

    asyncio.run(main())
