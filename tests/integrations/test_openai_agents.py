"""OpenAI Agents SDK with ContextFoldSession, end to end: the real SDK (Responses API, its
default) talks to contextfold's local fake OpenAI server, which records every request."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from agents import Agent, OpenAIResponsesModel, Runner, function_tool, set_tracing_disabled
from openai import AsyncOpenAI

from contextfold import AsyncMemory, Memory, Message, ReportedUsage, TokenBudget, ToolCall
from contextfold.integrations.openai_agents import ContextFoldSession
from contextfold.testing.provider_servers import ReceivedRequest
from contextfold.testing.tool_server import OpenAIToolServer, ToolReply

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

set_tracing_disabled(True)


@function_tool
def lookup_order(order: str) -> str:
    """Look up an order by its id (A-1234)."""
    return tool_result(order)


def play(request: ReceivedRequest) -> ToolReply:
    """A question gets a lookup (two in parallel every 10th turn), a tool output an answer."""
    last = request.body["input"][-1]
    if last.get("type") == "function_call_output":
        return ToolReply.say(answer_text(int(last["call_id"].split("_")[1])))
    text = last["content"] if isinstance(last["content"], str) else last["content"][0]["text"]
    turn = int(text.split(":")[0].split()[1])
    calls = [("lookup_order", {"order": f"A-{1000 + turn}"}, f"call_{turn}_a")]
    if turn % 10 == 0:
        calls.append(("lookup_order", {"order": f"A-{999 + turn}"}, f"call_{turn}_b"))
    return ToolReply.call(*calls)


def received(body: dict[str, Any]) -> list[Message]:
    """What the model received, as chat messages (instructions first)."""
    out = [Message(role="system", content=body["instructions"])] if body.get("instructions") \
        else []
    for item in body["input"]:
        kind = item.get("type", "message")
        if kind == "function_call":
            call = ToolCall(item["call_id"], item["name"], item["arguments"])
            if out and out[-1].role == "assistant" and not any(
                    m.role == "tool" for m in out[-1:]):
                prev = out.pop()
                out.append(Message(role="assistant", content=prev.content,
                                   tool_calls=(*prev.tool_calls, call)))
            else:
                out.append(Message(role="assistant", tool_calls=(call,)))
        elif kind == "function_call_output":
            out.append(Message(role="tool", content=item["output"], tool_call_id=item["call_id"]))
        else:
            content = item["content"]
            text = content if isinstance(content, str) else "".join(
                p.get("text", "") for p in content)
            role = "system" if item["role"] in ("system", "developer") else item["role"]
            out.append(Message(role=role, content=text))
    return out


def make_agent(server: OpenAIToolServer) -> Agent[Any]:
    client = AsyncOpenAI(base_url=server.url, api_key="test", max_retries=0)
    return Agent(name="desk", instructions=SYSTEM, tools=[lookup_order],
                 model=OpenAIResponsesModel(model="gpt-4o-mini", openai_client=client))


def tool_schemas(server: OpenAIToolServer) -> list[dict[str, Any]]:
    return [{"type": "function", "function": {k: v for k, v in t.items() if k != "type"}}
            for t in server.requests[0].body.get("tools", [])]


def test_two_hundred_turn_tool_agent_is_bounded_and_survives_a_restart(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'memory.db'}"

    async def main() -> None:
        memory = Memory(db, policy=TokenBudget(BUDGET))
        with OpenAIToolServer(play) as server:
            agent = make_agent(server)
            session = ContextFoldSession("shop", memory, system=SYSTEM)
            folded = False
            checked = 0
            for turn in range(1, TURNS + 1):
                result = await Runner.run(agent, user_text(turn), session=session,
                                          run_config=session.run_config())
                assert result.final_output == answer_text(turn)
                if session.tools is None:  # count the SDK's own tool schemas from now on
                    session.tools = tool_schemas(server)
                for request in server.requests[checked:]:
                    check_received(received(request.body), budget=BUDGET,
                                   counter=memory.engine.counter, tools=session.tools,
                                   summary_expected=folded)
                checked = len(server.requests)
                folded = folded or memory.summary("shop") is not None
            assert folded and checked == 2 * TURNS
        stored = memory.messages("shop")
        assert len(stored) == TURNS * 4 + TURNS // 10
        assert len({m.message.id for m in stored}) == len(stored)
        memory.close()

        # A new process: the reopened store continues the conversation.
        memory = Memory(db, policy=TokenBudget(BUDGET))
        with OpenAIToolServer(play) as server:
            session = ContextFoldSession("shop", memory, system=SYSTEM)
            result = await Runner.run(make_agent(server), user_text(TURNS + 1), session=session,
                                      run_config=session.run_config())
            assert result.final_output == answer_text(TURNS + 1)
            first = received(server.requests[0].body)
            check_received(first, budget=BUDGET, counter=memory.engine.counter,
                           summary_expected=True)
            assert first[0].text == SYSTEM and user_text(TURNS + 1) in first[-1].text
        assert len(memory.messages("shop")) == TURNS * 4 + TURNS // 10 + 4
        memory.close()

    asyncio.run(main())


def test_items_round_trip_exactly_and_usage_hooks_fold() -> None:
    async def main() -> None:
        memory = AsyncMemory("memory://", policy=ReportedUsage(250))
        with OpenAIToolServer(play) as server:
            agent = make_agent(server)
            session = ContextFoldSession("u", memory, max_tokens=BUDGET)
            for turn in range(1, 4):
                await Runner.run(agent, user_text(turn), session=session)
            # Before any fold the session hands back the very items the SDK stored.
            items = await session.get_items()
            assert items[1]["type"] == "function_call" and items[1]["id"] == "fc_call_1_a"
            assert items[-1]["type"] == "message" and items[-1]["id"].startswith("msg_")
            assert await session.get_items(limit=2) == items[-2:]
            before = len(await memory.messages("u"))
            await session.add_items(items[-2:])  # a retried write stores nothing twice
            assert len(await memory.messages("u")) == before
            for turn in range(4, 15):
                await Runner.run(agent, user_text(turn), session=session,
                                 hooks=session.usage_hooks())
            assert any(e.outcome == "committed" for e in await memory.ledger("u"))
            items = await session.get_items()
            assert items[0]["role"] == "system" and "Summary" in items[0]["content"]
            with pytest.raises(NotImplementedError, match="clear_session"):
                await session.pop_item()
            await session.clear_session()
            assert await session.get_items() == []
        await memory.close()

    asyncio.run(main())


def test_reasoning_items_are_kept_with_their_message() -> None:
    async def main() -> None:
        memory = AsyncMemory("memory://")
        session = ContextFoldSession("r", memory)
        items = [
            {"role": "user", "content": "hi"},
            {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "x" * 50},
            {"type": "function_call", "id": "fc_1", "call_id": "c1", "name": "f",
             "arguments": json.dumps({"a": 1})},
            {"type": "function_call_output", "call_id": "c1", "output": "ok"},
            {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
             "content": [{"type": "output_text", "text": "done", "annotations": []}]},
        ]
        await session.add_items(items)
        assert await session.get_items() == items
        stored = await memory.messages("r")
        assert [m.role for m in stored] == ["user", "assistant", "tool", "assistant"]
        await memory.close()

    asyncio.run(main())


def test_recall_brings_a_folded_fact_back_to_the_model() -> None:
    async def main() -> None:
        memory = Memory("memory://", policy=TokenBudget(BUDGET), recall=True)
        with OpenAIToolServer(play) as server:
            agent = make_agent(server)
            session = ContextFoldSession("shop", memory, system=SYSTEM)
            for turn in range(1, RECALL_TURNS + 1):
                first = len(server.requests)
                await Runner.run(agent, recall_user_text(turn), session=session,
                                 run_config=session.run_config())
            last = received(server.requests[first].body)
        check_received(last, budget=BUDGET, counter=memory.engine.counter,
                       summary_expected=True)
        check_recalled(last)
        memory.close()

    asyncio.run(main())
