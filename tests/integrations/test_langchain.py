"""LangChain 1.x ``create_agent`` with ContextFoldMiddleware, end to end on a real agent
graph with a scripted chat model that records what it received."""

from __future__ import annotations

import asyncio
import re
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
    convert_to_openai_messages,
)
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool
from langchain_core.utils.function_calling import convert_to_openai_tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from pydantic import ConfigDict, Field

from contextfold import AsyncMemory, ConfigError, Memory, Message, ReportedUsage, TokenBudget
from contextfold.integrations.langchain import ContextFoldMiddleware
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

SYSTEM = "You are the order desk of a small shop. Use lookup_order for every order question."
BUDGET = 1500


@tool
def lookup_order(order: str) -> str:
    """Look up an order by its id (A-1234)."""
    return tool_result(order)


TOOLS = [lookup_order]
SCHEMAS = [convert_to_openai_tool(lookup_order)]


def reply_to(messages: list[BaseMessage]) -> AIMessage:
    """The scripted model: a question gets a lookup (two in parallel every 10th turn), a
    tool result gets an answer. Reports its input size like a provider would."""
    last = messages[-1]
    size = sum(len(str(m.content)) for m in messages) // 4
    usage = {"input_tokens": size, "output_tokens": 12, "total_tokens": size + 12}
    if isinstance(last, HumanMessage):
        turn = int(re.search(r"Turn (\d+)", str(last.content)).group(1))  # type: ignore[union-attr]
        calls = [{"name": "lookup_order", "args": {"order": f"A-{1000 + turn}"},
                  "id": f"call_{turn}_a", "type": "tool_call"}]
        if turn % 10 == 0:
            calls.append({"name": "lookup_order", "args": {"order": f"A-{999 + turn}"},
                          "id": f"call_{turn}_b", "type": "tool_call"})
        return AIMessage(content="", tool_calls=calls, usage_metadata=usage)
    assert isinstance(last, ToolMessage), f"model called after {type(last).__name__}"
    turn = int(last.tool_call_id.split("_")[1])
    return AIMessage(content=answer_text(turn), usage_metadata=usage)


class RecordingModel(BaseChatModel):
    """A chat model that records every request (system message included)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)
    received: list[list[BaseMessage]] = Field(default_factory=list)
    respond: Callable[[list[BaseMessage]], AIMessage] = reply_to

    @property
    def _llm_type(self) -> str:
        return "recording"

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None,
                  **kwargs: Any) -> ChatResult:
        self.received.append(list(messages))
        return ChatResult(generations=[ChatGeneration(message=self.respond(messages))])

    def bind_tools(self, tools: Any, **kwargs: Any) -> RecordingModel:  # type: ignore[override]
        return self


def as_contextfold(messages: list[BaseMessage]) -> list[Message]:
    """What the model received, through LangChain's own OpenAI conversion."""
    return [Message.from_openai(d) for d in convert_to_openai_messages(messages)]


def config(thread: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread}}


def test_two_hundred_turn_tool_agent_is_bounded_and_survives_a_restart(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    checkpoints = sqlite3.connect(tmp_path / "checkpoints.db", check_same_thread=False)
    memory = Memory(f"sqlite:///{db}", policy=TokenBudget(BUDGET))
    model = RecordingModel(received=[])
    agent = create_agent(model, TOOLS, system_prompt=SYSTEM, checkpointer=SqliteSaver(checkpoints),
                         middleware=[ContextFoldMiddleware(memory)])
    checked = 0
    folded_at: int | None = None
    for turn in range(1, TURNS + 1):
        result = agent.invoke({"messages": [HumanMessage(user_text(turn))]}, config("shop"))
        assert result["messages"][-1].content == answer_text(turn)
        for received in model.received[checked:]:
            check_received(as_contextfold(received), budget=BUDGET,
                           counter=memory.engine.counter, tools=SCHEMAS,
                           summary_expected=folded_at is not None)
        checked = len(model.received)
        if folded_at is None and memory.summary("shop") is not None:
            folded_at = turn
    assert folded_at is not None and folded_at < TURNS // 2
    assert checked == 2 * TURNS
    # Nothing lost, nothing duplicated: every turn is stored once, in order.
    stored = memory.messages("shop")
    parallel = TURNS // 10
    assert len(stored) == TURNS * 4 + parallel
    assert [m.seq for m in stored] == list(range(1, len(stored) + 1))
    assert len({m.message.id for m in stored}) == len(stored)
    assert memory.engine.counter.count(stored[0].text) > 0 and "Turn 1:" in stored[0].text
    summary = memory.summary("shop")
    memory.close()
    checkpoints.close()

    # A new process: reopen both stores; the thread continues from the summary.
    memory = Memory(f"sqlite:///{db}", policy=TokenBudget(BUDGET))
    checkpoints = sqlite3.connect(tmp_path / "checkpoints.db", check_same_thread=False)
    model = RecordingModel(received=[])
    agent = create_agent(model, TOOLS, system_prompt=SYSTEM, checkpointer=SqliteSaver(checkpoints),
                         middleware=[ContextFoldMiddleware(memory)])
    agent.invoke({"messages": [HumanMessage(user_text(TURNS + 1))]}, config("shop"))
    assert summary is not None and memory.summary("shop") is not None
    first = as_contextfold(model.received[0])
    check_received(first, budget=BUDGET, counter=memory.engine.counter, tools=SCHEMAS,
                   summary_expected=True)
    assert first[0].text.startswith(SYSTEM)
    assert user_text(TURNS + 1) in first[-1].text
    assert len(memory.messages("shop")) == TURNS * 4 + parallel + 4  # nothing re-appended
    memory.close()
    checkpoints.close()


def test_async_agent_with_async_memory_and_reported_usage(tmp_path: Path) -> None:
    async def main() -> None:
        memory = AsyncMemory(f"sqlite:///{tmp_path / 'm.db'}", policy=ReportedUsage(400))
        model = RecordingModel(received=[])
        agent = create_agent(model, TOOLS, system_prompt=SYSTEM, checkpointer=InMemorySaver(),
                             middleware=[ContextFoldMiddleware(memory, max_tokens=BUDGET)])
        for turn in range(1, 31):
            await agent.ainvoke({"messages": [HumanMessage(user_text(turn))]}, config("a"))
        folds = [e for e in await memory.ledger("a") if e.outcome == "committed"]
        assert folds and all(e.reason for e in folds)  # the reported tokens made it fold
        stats = await memory.stats("a")
        assert stats is not None and stats.reported_input_tokens is not None
        assert len(await memory.messages("a")) == 30 * 4 + 3
        last = as_contextfold(model.received[-1])
        check_received(last, budget=BUDGET, counter=memory.counter, tools=SCHEMAS,
                       summary_expected=True)
        await memory.close()

    asyncio.run(main())


def test_failing_folds_lose_nothing_and_the_view_stays_in_budget(tmp_path: Path) -> None:
    def broken(request: Any) -> str:
        raise RuntimeError("summarizer down")

    memory = Memory(f"sqlite:///{tmp_path / 'm.db'}", policy=TokenBudget(BUDGET),
                    summarizer=FunctionSummarizer(broken))
    model = RecordingModel(received=[])
    agent = create_agent(model, TOOLS, system_prompt=SYSTEM, checkpointer=InMemorySaver(),
                         middleware=[ContextFoldMiddleware(memory)])
    for turn in range(1, 41):
        agent.invoke({"messages": [HumanMessage(user_text(turn))]}, config("f"))
    for received in model.received:
        check_received(as_contextfold(received), budget=BUDGET, counter=memory.engine.counter,
                       tools=SCHEMAS)
    assert memory.summary("f") is None
    assert len(memory.messages("f")) == 40 * 4 + 4
    assert any(e.outcome == "failed" for e in memory.ledger("f"))
    memory.close()


def test_the_state_keeps_the_unfolded_messages_by_default(tmp_path: Path) -> None:
    memory = Memory("memory://", policy=TokenBudget(BUDGET))
    saver = InMemorySaver()
    model = RecordingModel(received=[])
    agent = create_agent(model, TOOLS, system_prompt=SYSTEM, checkpointer=saver,
                         middleware=[ContextFoldMiddleware(memory)])
    # no graph step of its own: the hooks ride on the model node
    assert not any("ContextFold" in node for node in agent.get_graph().nodes)
    for turn in range(1, 61):
        state = agent.invoke({"messages": [HumanMessage(user_text(turn))]}, config("t"))
    live = memory.messages("t", include_folded=False)
    assert len(memory.messages("t")) == 60 * 4 + 6
    assert memory.summary("t") is not None
    # The state holds at most the live messages (plus the newest turn, synced next step).
    assert len(state["messages"]) <= len(live) + 4 < 60
    assert {m.id for m in state["messages"]} <= {m.message.id for m in live} | {
        m.id for m in state["messages"][-4:]}
    assert state["messages"][-1].content == answer_text(60)
    for received in model.received:
        check_received(as_contextfold(received), budget=BUDGET, counter=memory.engine.counter,
                       tools=SCHEMAS)
    memory.close()


def test_trim_state_off_keeps_the_whole_transcript_in_the_state() -> None:
    memory = Memory("memory://", policy=TokenBudget(BUDGET))
    model = RecordingModel(received=[])
    agent = create_agent(model, TOOLS, system_prompt=SYSTEM, checkpointer=InMemorySaver(),
                         middleware=[ContextFoldMiddleware(memory, trim_state=False)])
    for turn in range(1, 31):
        state = agent.invoke({"messages": [HumanMessage(user_text(turn))]}, config("w"))
    assert memory.summary("w") is not None
    stored = memory.messages("w")
    assert [m.id for m in state["messages"]] == [m.message.id for m in stored]
    for received in model.received:
        check_received(as_contextfold(received), budget=BUDGET, counter=memory.engine.counter,
                       tools=SCHEMAS)
    memory.close()


def test_replayed_steps_append_nothing_twice() -> None:
    memory = Memory("memory://", policy=TokenBudget(BUDGET))
    mw = ContextFoldMiddleware(memory, session_id="s")
    msgs: list[BaseMessage] = [HumanMessage("hi", id="h1"), AIMessage("hello", id="a1")]
    state = mw._sessions.sync("s", msgs)
    assert state.synced == "a1"
    fresh = ContextFoldMiddleware(memory, session_id="s")  # a new process: no watermark
    fresh._sessions.sync("s", msgs)  # the store drops both
    # at the watermark already: nothing to append
    calls: list[Any] = []
    mw.bridge.add = lambda *a: calls.append(a)  # type: ignore[method-assign, assignment]
    mw._sessions.sync("s", msgs)
    assert calls == []
    assert [m.message.id for m in memory.messages("s")] == ["h1", "a1"]
    memory.close()


def test_sync_run_with_async_memory_names_the_right_class() -> None:
    async def make() -> AsyncMemory:
        return AsyncMemory("memory://")

    memory = asyncio.run(make())
    mw = ContextFoldMiddleware(memory, session_id="s")
    with pytest.raises(ConfigError, match=r"contextfold\.Memory"):
        mw._sessions.sync("s", [HumanMessage("hi", id="h")])


def test_no_session_is_a_config_error() -> None:
    memory = Memory("memory://")
    with pytest.raises(ConfigError, match="thread_id"):
        ContextFoldMiddleware(memory).session(None)
    memory.close()


def test_a_system_message_in_the_state_is_the_prompt_and_never_folded() -> None:
    memory = Memory("memory://", policy=TokenBudget(BUDGET))
    model = RecordingModel(received=[])
    agent = create_agent(model, TOOLS, checkpointer=InMemorySaver(),
                         middleware=[ContextFoldMiddleware(memory)])
    agent.invoke({"messages": [SystemMessage(SYSTEM), HumanMessage(user_text(1))]}, config("p"))
    for turn in range(2, 41):
        agent.invoke({"messages": [HumanMessage(user_text(turn))]}, config("p"))
    assert memory.summary("p") is not None
    assert all(m.role != "system" for m in memory.messages("p"))
    last = as_contextfold(model.received[-1])
    assert last[0].role == "system" and last[0].text.startswith(SYSTEM)
    check_received(last, budget=BUDGET, counter=memory.engine.counter, tools=SCHEMAS,
                   summary_expected=True)
    memory.close()


def test_recall_brings_a_folded_fact_back_to_the_model(tmp_path: Path) -> None:
    memory = Memory(f"sqlite:///{tmp_path / 'memory.db'}", policy=TokenBudget(BUDGET),
                    recall=True)
    model = RecordingModel(received=[])
    agent = create_agent(model, TOOLS, system_prompt=SYSTEM, checkpointer=InMemorySaver(),
                         middleware=[ContextFoldMiddleware(memory)])
    for turn in range(1, RECALL_TURNS + 1):
        agent.invoke({"messages": [HumanMessage(recall_user_text(turn))]}, config("shop"))
    last = as_contextfold(model.received[-2])  # the request that answered the question
    check_received(last, budget=BUDGET, counter=memory.engine.counter, tools=SCHEMAS,
                   summary_expected=True)
    check_recalled(last)
    memory.close()
