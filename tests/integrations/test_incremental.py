"""The adapters' incremental paths: a model call converts and stores only what changed
since the last one, yet gives what a fresh conversion would — through edits and removals
of the framework's history, restarts over an existing store, and retried writes."""

from __future__ import annotations

import asyncio
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from langchain.agents import create_agent
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    RemoveMessage,
    SystemMessage,
    ToolMessage,
)
from langgraph.checkpoint.memory import InMemorySaver
from llama_index.core.base.llms.types import ChatMessage
from pydantic_ai import messages as pai

from contextfold import AsyncMemory, Memory, Message, TokenBudget, ToolCall
from contextfold.integrations.langchain import ContextFoldMiddleware
from contextfold.integrations.langchain_messages import LangChainView, to_langchain
from contextfold.integrations.langgraph import ContextFold
from contextfold.integrations.llamaindex import ContextFoldMemory
from contextfold.integrations.openai_agents import ContextFoldSession, to_items
from contextfold.integrations.pydantic_ai import ContextFoldCapability

from .checks import answer_text, user_text
from .test_langchain import BUDGET, SYSTEM, TOOLS, RecordingModel, config


def _shape(messages: list[BaseMessage]) -> list[tuple[Any, ...]]:
    return [(type(m).__name__, m.id, m.content, [c["id"] for c in getattr(m, "tool_calls", [])])
            for m in messages]


# -- LangChain: the per-session view ------------------------------------------------------------


def _pool(n: int) -> list[Message]:
    out: list[Message] = []
    for i in range(n):
        if i % 3 == 1:
            out.append(Message(role="assistant", content="", id=f"m{i}",
                               tool_calls=(ToolCall(id=f"c{i}", name="f", arguments="{}"),)))
        elif i % 3 == 2:
            out.append(Message(role="tool", content=f"result {i}", tool_call_id=f"c{i - 1}",
                               id=f"m{i}"))
        else:
            out.append(Message(role="user", content=f"question {i}", id=f"m{i}"))
    return out


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 11), st.integers(1, 12), st.sets(st.integers(0, 11)),
                          st.booleans()), min_size=1, max_size=12))
def test_langchain_view_gives_what_a_fresh_conversion_gives(
        calls: list[tuple[int, int, set[int], bool]]) -> None:
    """Each call shows a window of the conversation; some messages are shown changed (a
    stand-in: same id, new object, other text), the framework's copies are sometimes new
    objects (a checkpoint read back). The cached view equals a fresh conversion."""
    pool = _pool(12)
    originals = to_langchain(pool)
    view = LangChainView()
    for lo, width, changed, reload in calls:
        shown = [Message(role=m.role, content=f"[masked] {m.text}", id=m.id,
                         tool_calls=m.tool_calls, tool_call_id=m.tool_call_id)
                 if i in changed else m for i, m in enumerate(pool)][lo:lo + width]
        if reload:
            originals = [m.model_copy() for m in originals]
        assert _shape(view.to_langchain(shown, originals)) == _shape(
            to_langchain(shown, originals))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["append", "system", "remove", "replace", "reload"]),
                          st.integers(0, 30)), max_size=25))
def test_system_texts_seen_incrementally_equal_a_full_scan(ops: list[tuple[str, int]]) -> None:
    view = LangChainView()
    state: list[BaseMessage] = []
    for op, k in ops:
        if op == "append":
            state = [*state, HumanMessage(f"hi {k}")]
        elif op == "system":
            state = [*state, SystemMessage(f"rule {k}")]
        elif op == "remove" and state:
            state = [m for i, m in enumerate(state) if i != k % len(state)]
        elif op == "replace" and state:
            i = k % len(state)
            state = [*state[:i], SystemMessage(f"new rule {k}"), *state[i + 1:]]
        elif op == "reload":
            state = [m.model_copy() for m in state]
        full = [m.text for m in state if isinstance(m, SystemMessage) and m.text]
        assert view.system_texts(state) == full


def test_langchain_history_edited_by_the_framework_is_stored_once() -> None:
    """Messages removed from the agent state (the newest one too, which the middleware
    remembers as synced) are never stored twice or lost; every run's answer is stored
    when the run ends."""
    memory = Memory("memory://", policy=TokenBudget(BUDGET))
    agent = create_agent(RecordingModel(received=[]), TOOLS, system_prompt=SYSTEM,
                         checkpointer=InMemorySaver(),
                         middleware=[ContextFoldMiddleware(memory)])
    cfg: Any = config("e")
    for turn in range(1, 7):
        agent.invoke({"messages": [HumanMessage(user_text(turn))]}, cfg)
        assert memory.messages("e")[-1].text == answer_text(turn)  # stored when it came
        if turn in (2, 4):
            state = agent.get_state(cfg).values["messages"]
            gone = [state[-1].id, state[1].id]  # the synced watermark, and an older one
            agent.update_state(cfg, {"messages": [RemoveMessage(id=i) for i in gone]})
    stored = memory.messages("e")
    assert len(stored) == 6 * 4
    assert len({m.message.id for m in stored}) == len(stored)
    assert [m.seq for m in stored] == list(range(1, len(stored) + 1))
    memory.close()


# -- LangGraph: a reply that calls tools is stored with its results -----------------------------


def test_langgraph_held_reply_is_stored_with_its_results_in_order() -> None:
    memory = Memory("memory://", policy=TokenBudget(BUDGET))
    fold = ContextFold(memory, session_id="g")
    state: list[BaseMessage] = [HumanMessage("where is A-1?", id="u1")]
    fold.messages(state)
    call = AIMessage("", id="a1", tool_calls=[{"name": "lookup_order", "args": {"order": "A-1"},
                                               "id": "c1", "type": "tool_call"}])
    fold.record(call)
    assert [m.message.id for m in memory.messages("g")] == ["u1"]  # held for its results
    state += [call, ToolMessage("shipped", tool_call_id="c1", id="t1")]
    sent = fold.messages(state)
    assert [m.message.id for m in memory.messages("g")] == ["u1", "a1", "t1"]
    assert [m.id for m in sent if not isinstance(m, SystemMessage)] == ["u1", "a1", "t1"]
    assert sent[-2] is call  # the framework's own object, shown unchanged
    fold.record(AIMessage("It shipped.", id="a2"))
    assert memory.messages("g")[-1].message.id == "a2"  # a final answer: stored at once

    # A graph that does not put the reply in its state: the held reply still comes first.
    fold.record(AIMessage("", id="a3", tool_calls=[{"name": "lookup_order", "args": {},
                                                    "id": "c3", "type": "tool_call"}]))
    state += [AIMessage("It shipped.", id="a2"), ToolMessage("ok", tool_call_id="c3", id="t3")]
    fold.messages(state)
    assert [m.message.id for m in memory.messages("g")][-3:] == ["a2", "a3", "t3"]

    # A restart over the same store re-offers the whole state; nothing is stored twice.
    before = len(memory.messages("g"))
    again = ContextFold(memory, session_id="g")
    again.messages(state)
    assert len(memory.messages("g")) == before
    memory.close()


# -- pydantic-ai, OpenAI Agents SDK, LlamaIndex -------------------------------------------------


def test_pydantic_ai_message_changed_in_place_is_converted_again() -> None:
    async def main() -> None:
        memory = AsyncMemory("memory://", policy=TokenBudget(BUDGET))
        cap = ContextFoldCapability(memory, "p")
        processor = cap._processor
        request = pai.ModelRequest(parts=[pai.UserPromptPart("first")])
        await processor([request])
        await processor([request])  # the same object again: converted once, stored once
        parts: Any = request.parts
        parts.append(pai.UserPromptPart("second"))  # the framework edits it in place
        out = await processor([request])
        texts = [m.text for m in await memory.messages("p")]
        assert texts == ["first", "second"]
        assert [p.content for m in out for p in m.parts
                if isinstance(p, pai.UserPromptPart)] == ["first", "second"]
        # A restart: a new capability over the same store stores nothing twice.
        await ContextFoldCapability(memory, "p")._processor([request])
        assert len(await memory.messages("p")) == 2
        await memory.close()

    asyncio.run(main())


def test_agents_sdk_items_equal_a_fresh_conversion_and_are_copies() -> None:
    async def main() -> None:
        memory = AsyncMemory("memory://", policy=TokenBudget(BUDGET))
        session = ContextFoldSession("o", memory)
        for turn in range(1, 6):
            await session.add_items([
                {"role": "user", "content": user_text(turn)},
                {"type": "function_call", "call_id": f"c{turn}", "name": "lookup_order",
                 "arguments": "{}", "id": f"fc_{turn}"},
                {"type": "function_call_output", "call_id": f"c{turn}", "output": "shipped"},
                {"type": "message", "role": "assistant", "id": f"msg_{turn}",
                 "content": [{"type": "output_text", "text": answer_text(turn)}]}])
            items = await session.get_items()
            fresh = to_items((await memory.context("o")).messages)
            assert items == fresh
            items[-1]["id"] = "changed by the caller"
            assert await session.get_items() == fresh  # the caller got its own copies
        restarted = ContextFoldSession("o", memory)
        assert await restarted.get_items() == await session.get_items()
        await memory.close()

    asyncio.run(main())


def test_llamaindex_get_reuses_conversions_until_reset() -> None:
    async def main() -> None:
        memory = AsyncMemory("memory://", policy=TokenBudget(BUDGET))
        chat = ContextFoldMemory(memory, "l")
        put = [ChatMessage(role="user", content="hi"),
               ChatMessage(role="assistant", content="hello")]
        await chat.aput_messages(put)
        first = await chat.aget()
        assert first == put and all(a is b for a, b in zip(first, put, strict=True))
        await chat.aput(ChatMessage(role="user", content="again"))
        second = await chat.aget()
        assert [m.content for m in second] == ["hi", "hello", "again"]
        assert second[0] is first[0]
        await chat.areset()
        assert await chat.aget() == []
        await memory.close()

    asyncio.run(main())
