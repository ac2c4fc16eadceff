"""The LangGraph helper in a hand-built StateGraph with checkpointers (memory and SQLite),
and the LangGraph example."""

from __future__ import annotations

import asyncio
import importlib.util
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

from contextfold import AsyncMemory, Memory, ReportedUsage, TokenBudget
from contextfold.integrations.langgraph import ContextFold
from contextfold.testing import OpenAIServer

from .checks import (
    RECALL_TURNS,
    answer_text,
    check_recalled,
    check_received,
    recall_user_text,
    user_text,
)
from .test_langchain import (
    BUDGET,
    SCHEMAS,
    SYSTEM,
    TOOLS,
    RecordingModel,
    as_contextfold,
    config,
)

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "langgraph_agent.py"
TURNS = 60


def build(fold: ContextFold, model: RecordingModel, checkpointer: Any) -> Any:
    def agent(state: MessagesState, config: RunnableConfig) -> dict[str, Any]:
        messages = fold.messages(state["messages"], config, system=SYSTEM, tools=TOOLS)
        response = model.invoke(messages)
        fold.record(response, config)
        return {"messages": [response]}

    builder = StateGraph(MessagesState)
    builder.add_node("agent", agent)
    builder.add_node("tools", ToolNode(TOOLS))
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", tools_condition)
    builder.add_edge("tools", "agent")
    return builder.compile(checkpointer=checkpointer)


def test_hand_built_graph_with_sqlite_checkpoints_survives_a_restart(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'memory.db'}"
    conn = sqlite3.connect(tmp_path / "checkpoints.db", check_same_thread=False)
    memory = Memory(db, policy=TokenBudget(BUDGET))
    model = RecordingModel(received=[])
    graph = build(ContextFold(memory), model, SqliteSaver(conn))
    folded = False
    for turn in range(1, TURNS + 1):
        before = len(model.received)
        state = graph.invoke({"messages": [HumanMessage(user_text(turn))]}, config("g"))
        assert state["messages"][-1].content == answer_text(turn)
        for received in model.received[before:]:
            check_received(as_contextfold(received), budget=BUDGET,
                           counter=memory.engine.counter, tools=SCHEMAS,
                           summary_expected=folded)
        folded = folded or memory.summary("g") is not None
    assert folded
    count = TURNS * 4 + TURNS // 10
    assert len(memory.messages("g")) == count
    memory.close()
    conn.close()

    # A new process: the first call re-offers the whole checkpointed state; nothing doubles.
    conn = sqlite3.connect(tmp_path / "checkpoints.db", check_same_thread=False)
    memory = Memory(db, policy=TokenBudget(BUDGET))
    model = RecordingModel(received=[])
    graph = build(ContextFold(memory), model, SqliteSaver(conn))
    graph.invoke({"messages": [HumanMessage(user_text(TURNS + 1))]}, config("g"))
    check_received(as_contextfold(model.received[0]), budget=BUDGET,
                   counter=memory.engine.counter, tools=SCHEMAS, summary_expected=True)
    assert len(memory.messages("g")) == count + 4
    # trim: the folded part of the state can be dropped from the checkpoint.
    removals = ContextFold(memory).trim(graph.get_state(config("g")).values["messages"],
                                        config("g"))
    assert len(removals) >= count - len(memory.messages("g", include_folded=False))
    memory.close()
    conn.close()


def test_async_graph_records_usage_and_folds() -> None:
    async def main() -> None:
        memory = AsyncMemory("memory://", policy=ReportedUsage(300))
        model = RecordingModel(received=[])
        fold = ContextFold(memory, max_tokens=BUDGET)

        async def agent(state: MessagesState, config: RunnableConfig) -> dict[str, Any]:
            messages = await fold.amessages(state["messages"], config, system=SYSTEM,
                                            tools=TOOLS)
            response = await model.ainvoke(messages)
            await fold.arecord(response, config)
            return {"messages": [response]}

        builder = StateGraph(MessagesState)
        builder.add_node("agent", agent)
        builder.add_node("tools", ToolNode(TOOLS))
        builder.add_edge(START, "agent")
        builder.add_conditional_edges("agent", tools_condition)
        builder.add_edge("tools", "agent")
        graph = builder.compile(checkpointer=InMemorySaver())
        for turn in range(1, 21):
            await graph.ainvoke({"messages": [HumanMessage(user_text(turn))]}, config("a"))
        assert any(e.outcome == "committed" for e in await memory.ledger("a"))
        assert len(await memory.messages("a")) == 20 * 4 + 2
        check_received(as_contextfold(model.received[-1]), budget=BUDGET,
                       counter=memory.counter, tools=SCHEMAS, summary_expected=True)
        await memory.close()

    asyncio.run(main())


def _example() -> Any:
    spec = importlib.util.spec_from_file_location("example_langgraph_agent", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.main


def test_example_runs_offline(capsys: pytest.CaptureFixture[str]) -> None:
    assert _example()([]) == 0
    out = capsys.readouterr().out
    for text in ["over 400: folded, kept the last exchange", "summary the model now receives",
                 "cancelled", "idle 3600 s more: cleared",
                 "session exists: False; checkpointed messages: 0"]:
        assert text in out, f"{text!r} missing from:\n{out}"


def test_example_summarizes_with_a_model_on_the_fake_server(
        capsys: pytest.CaptureFixture[str]) -> None:
    with OpenAIServer() as server:
        assert _example()(["--model", f"openai-compatible:fake-model@{server.url}"]) == 0
        assert server.requests and all(r.path.endswith("/chat/completions")
                                       for r in server.requests)
    assert "cleared" in capsys.readouterr().out


def test_recall_brings_a_folded_fact_back_to_the_model() -> None:
    memory = Memory("memory://", policy=TokenBudget(BUDGET), recall=True)
    model = RecordingModel(received=[])
    graph = build(ContextFold(memory), model, InMemorySaver())
    for turn in range(1, RECALL_TURNS + 1):
        graph.invoke({"messages": [HumanMessage(recall_user_text(turn))]}, config("r"))
    last = as_contextfold(model.received[-2])
    check_received(last, budget=BUDGET, counter=memory.engine.counter, tools=SCHEMAS,
                   summary_expected=True)
    check_recalled(last)
    memory.close()
