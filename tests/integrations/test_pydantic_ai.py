"""pydantic-ai agents with ContextFoldCapability, end to end with FunctionModel (a
function plays the model and sees exactly what the model would receive)."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

from pydantic_ai import Agent
from pydantic_ai import messages as pai
from pydantic_ai.capabilities import ProcessHistory
from pydantic_ai.models.function import AgentInfo, FunctionModel

from contextfold import AsyncMemory, Memory, Message, ReportedUsage, TokenBudget, ToolCall
from contextfold.integrations.pydantic_ai import ContextFoldCapability, history_processor
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


def as_messages(history: list[pai.ModelMessage]) -> list[Message]:
    """What the model received, one contextfold message per turn, as a provider would."""
    out: list[Message] = []
    for m in history:
        if isinstance(m, pai.ModelResponse):
            text = "".join(p.content for p in m.parts if isinstance(p, pai.TextPart))
            calls = tuple(ToolCall(p.tool_call_id, p.tool_name, p.args_as_json_str())
                          for p in m.parts if isinstance(p, pai.ToolCallPart))
            out.append(Message(role="assistant", content=text, tool_calls=calls))
            continue
        for p in m.parts:
            if isinstance(p, pai.SystemPromptPart):
                out.append(Message(role="system", content=p.content))
            elif isinstance(p, pai.UserPromptPart):
                assert isinstance(p.content, str)
                out.append(Message(role="user", content=p.content))
            elif isinstance(p, (pai.ToolReturnPart, pai.RetryPromptPart)):
                text = p.model_response_str() if isinstance(p, pai.ToolReturnPart) \
                    else p.model_response()
                out.append(Message(role="tool", content=text, tool_call_id=p.tool_call_id))
    return out


class Script:
    """The model: a question gets a lookup (two in parallel every 10th turn), a tool
    return gets an answer. Every request is recorded."""

    def __init__(self) -> None:
        self.received: list[list[pai.ModelMessage]] = []

    def __call__(self, messages: list[pai.ModelMessage], info: AgentInfo) -> pai.ModelResponse:
        self.received.append(list(messages))
        last = messages[-1].parts[-1]
        if isinstance(last, pai.UserPromptPart):
            turn = int(re.search(r"Turn (\d+)", str(last.content)).group(1))  # type: ignore[union-attr]
            calls = [pai.ToolCallPart("lookup_order", {"order": f"A-{1000 + turn}"},
                                      f"call_{turn}_a")]
            if turn % 10 == 0:
                calls.append(pai.ToolCallPart("lookup_order", {"order": f"A-{999 + turn}"},
                                              f"call_{turn}_b"))
            return pai.ModelResponse(parts=calls)
        assert isinstance(last, pai.ToolReturnPart), type(last)
        return pai.ModelResponse(parts=[pai.TextPart(answer_text(int(
            last.tool_call_id.split("_")[1])))])


def make_agent(script: Script, *capabilities: Any) -> Agent[None, str]:
    agent = Agent(FunctionModel(script), system_prompt=SYSTEM, capabilities=list(capabilities))

    @agent.tool_plain
    def lookup_order(order: str) -> str:
        """Look up an order by its id (A-1234)."""
        return tool_result(order)

    return agent


def test_two_hundred_turn_tool_agent_is_bounded_and_survives_a_restart(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'memory.db'}"
    memory = Memory(db, policy=TokenBudget(BUDGET))
    script = Script()
    agent = make_agent(script, ContextFoldCapability(memory, "shop"))
    history: list[pai.ModelMessage] = []
    checked = 0
    folded = False
    for turn in range(1, TURNS + 1):
        result = agent.run_sync(user_text(turn), message_history=history)
        assert result.output == answer_text(turn)
        history = result.all_messages()
        for received in script.received[checked:]:
            msgs = as_messages(received)
            assert msgs[0].role == "system" and msgs[0].text == SYSTEM
            check_received(msgs, budget=BUDGET, counter=memory.engine.counter,
                           summary_expected=folded)
        checked = len(script.received)
        folded = folded or memory.summary("shop") is not None
    assert folded and checked == 2 * TURNS
    stored = memory.messages("shop")
    assert len(stored) == TURNS * 4 + TURNS // 10
    assert len({m.message.id for m in stored}) == len(stored)
    assert [m.role for m in stored[:4]] == ["user", "assistant", "tool", "assistant"]
    assert len(history) < 40  # the run's own history is the bounded one
    saved = pai.ModelMessagesTypeAdapter.dump_json(history)
    memory.close()

    # A new process: the saved history and the reopened store continue the conversation.
    memory = Memory(db, policy=TokenBudget(BUDGET))
    script = Script()
    agent = make_agent(script, ContextFoldCapability(memory, "shop"))
    result = agent.run_sync(user_text(TURNS + 1),
                            message_history=pai.ModelMessagesTypeAdapter.validate_json(saved))
    assert result.output == answer_text(TURNS + 1)
    first = as_messages(script.received[0])
    assert first[0].text == SYSTEM
    check_received(first, budget=BUDGET, counter=memory.engine.counter, summary_expected=True)
    assert len(memory.messages("shop")) == TURNS * 4 + TURNS // 10 + 4  # nothing re-stored
    memory.close()


def test_no_history_passed_contextfold_is_the_memory() -> None:
    async def main() -> None:
        memory = AsyncMemory("memory://", policy=ReportedUsage(300))
        script = Script()
        agent = make_agent(script, ContextFoldCapability(memory, "s", max_tokens=BUDGET))
        for turn in range(1, 21):
            result = await agent.run(user_text(turn))  # no message_history
            assert result.output == answer_text(turn)
        stored = await memory.messages("s")
        assert len(stored) == 20 * 4 + 2
        assert (await memory.stats("s")).reported_input_tokens  # type: ignore[union-attr]
        assert any(e.outcome == "committed" for e in await memory.ledger("s"))
        last = as_messages(script.received[-1])
        check_received(last, budget=BUDGET, counter=memory.counter, summary_expected=True)
        assert user_text(20) in [m.text for m in last]
        await memory.close()

    asyncio.run(main())


def test_plain_history_processor_and_failing_folds(tmp_path: Path) -> None:
    def broken(request: Any) -> str:
        raise RuntimeError("summarizer down")

    memory = Memory("memory://", policy=TokenBudget(BUDGET), summarizer=FunctionSummarizer(broken))
    script = Script()
    agent = make_agent(script, ProcessHistory(history_processor(memory, "p")))
    history: list[pai.ModelMessage] = []
    for turn in range(1, 31):
        history = agent.run_sync(user_text(turn), message_history=history).all_messages()
    for received in script.received:
        check_received(as_messages(received), budget=BUDGET, counter=memory.engine.counter)
    # The processor cannot see the run's last answer: it is stored on the next run.
    assert len(memory.messages("p")) == 30 * 4 + 3 - 1
    assert memory.summary("p") is None
    assert any(e.outcome == "failed" for e in memory.ledger("p"))
    memory.close()


def test_what_pydantic_ais_openai_model_sends_obeys_the_provider_rules() -> None:
    """Through pydantic-ai's own OpenAI mapping and the real SDK, on the wire."""
    from openai import AsyncOpenAI
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    from contextfold.testing.provider_servers import ReceivedRequest
    from contextfold.testing.tool_server import OpenAIToolServer, ToolReply

    def play(request: ReceivedRequest) -> ToolReply:
        last = request.body["messages"][-1]
        if last["role"] == "tool":
            return ToolReply.say(answer_text(int(last["tool_call_id"].split("_")[1])))
        turn = int(re.search(r"Turn (\d+)", str(last["content"])).group(1))  # type: ignore[union-attr]
        return ToolReply.call(("lookup_order", {"order": f"A-{1000 + turn}"}, f"call_{turn}_a"))

    async def main() -> None:
        memory = AsyncMemory("memory://", policy=TokenBudget(BUDGET))
        with OpenAIToolServer(play) as server:
            client = AsyncOpenAI(base_url=server.url, api_key="test", max_retries=0)
            model = OpenAIChatModel("gpt-4o-mini", provider=OpenAIProvider(openai_client=client))
            agent = Agent(model, system_prompt=SYSTEM,
                          capabilities=[ContextFoldCapability(memory, "wire")])

            @agent.tool_plain
            def lookup_order(order: str) -> str:
                """Look up an order by its id (A-1234)."""
                return tool_result(order)

            history: list[pai.ModelMessage] = []
            for turn in range(1, 41):
                result = await agent.run(user_text(turn), message_history=history)
                assert result.output == answer_text(turn)
                history = result.all_messages()
            await client.close()
            assert await memory.summary("wire") is not None
            tools = [{k: v for k, v in t.items()} for t in server.requests[0].body["tools"]]
            for request in server.requests[-20:]:
                sent = [Message.from_openai(m) for m in request.body["messages"]]
                check_received(sent, budget=BUDGET, counter=memory.counter, tools=tools,
                               summary_expected=True)
        await memory.close()

    asyncio.run(main())


def test_recall_brings_a_folded_fact_back_to_the_model() -> None:
    memory = Memory("memory://", policy=TokenBudget(BUDGET), recall=True)
    script = Script()
    agent = make_agent(script, ContextFoldCapability(memory, "shop"))
    history: list[pai.ModelMessage] = []
    for turn in range(1, RECALL_TURNS + 1):
        history = agent.run_sync(recall_user_text(turn), message_history=history).all_messages()
    last = as_messages(script.received[-2])
    check_received(last, budget=BUDGET, counter=memory.engine.counter, summary_expected=True)
    check_recalled(last)
    memory.close()
