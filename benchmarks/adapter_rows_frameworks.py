"""Adapter benchmark rows (see ``bench_adapters.py``): pydantic-ai, the OpenAI Agents SDK
and LlamaIndex ``FunctionAgent``."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

from adapter_harness import (
    SYSTEM,
    Clock,
    Config,
    answer_text,
    atimed,
    memory_for,
    tool_result,
    turn_of,
    user_text,
)

from contextfold import AsyncMemory, Message

# -- pydantic-ai --------------------------------------------------------------------------------


def pydantic_ai_configs(budget: int) -> list[Config]:
    def play(store: str | None) -> Callable[[int, Path, Clock], None]:
        def run(turns: int, tmp: Path, clock: Clock) -> None:
            from pydantic_ai import Agent
            from pydantic_ai import messages as pai
            from pydantic_ai.models.function import AgentInfo, FunctionModel

            from contextfold.integrations.pydantic_ai import ContextFoldCapability

            def reply(messages: list[pai.ModelMessage], info: AgentInfo) -> pai.ModelResponse:
                clock.calls += 1
                last = messages[-1].parts[-1]
                if isinstance(last, pai.ToolReturnPart):
                    return pai.ModelResponse(parts=[pai.TextPart(answer_text(int(
                        last.tool_call_id.split("_")[1])))])
                t = turn_of(str(last.content))  # type: ignore[union-attr]
                return pai.ModelResponse(parts=[pai.ToolCallPart(
                    "lookup_order", {"order": f"A-{1000 + t}"}, f"call_{t}_a")])

            caps: list[Any] = []
            if store is not None:
                cap = ContextFoldCapability(memory_for(store, tmp, budget, AsyncMemory), "bench")
                cap.before_model_request = atimed(  # type: ignore[method-assign]
                    clock, cap.before_model_request)
                cap.after_model_request = atimed(  # type: ignore[method-assign]
                    clock, cap.after_model_request)
                caps.append(cap)
            agent = Agent(FunctionModel(reply), system_prompt=SYSTEM, capabilities=caps)

            @agent.tool_plain
            def lookup_order(order: str) -> str:
                """Look up an order by its id (A-1234)."""
                return tool_result(order)

            async def main() -> None:
                history: list[Any] = []
                for t in range(1, turns + 1):
                    result = await agent.run(user_text(t), message_history=history)
                    history = result.all_messages()

            asyncio.run(main())
        return run

    fw = "pydantic-ai"
    return [
        Config(fw, "no processor (full history)", "-", play(None), own=True),
        Config(fw, "ContextFoldCapability", "memory", play("memory")),
        Config(fw, "ContextFoldCapability", "sqlite", play("sqlite")),
    ]


# -- OpenAI Agents SDK --------------------------------------------------------------------------


#: The SDK session's item limit for the bounded comparison: about as many items as
#: contextfold's view shows at the 4,000-token budget, so both send requests of one size.
SDK_ITEMS = 140


def openai_agents_configs(budget: int) -> list[Config]:
    def play(kind: str, store: str, limit: int | None = None
             ) -> Callable[[int, Path, Clock], None]:
        def run(turns: int, tmp: Path, clock: Clock) -> None:
            from agents import (
                Agent,
                OpenAIResponsesModel,
                Runner,
                SQLiteSession,
                function_tool,
                set_tracing_disabled,
            )
            from openai import AsyncOpenAI

            from contextfold.integrations.openai_agents import ContextFoldSession
            from contextfold.testing.tool_server import OpenAIToolServer, ToolReply

            set_tracing_disabled(True)

            @function_tool
            def lookup_order(order: str) -> str:
                """Look up an order by its id (A-1234)."""
                return tool_result(order)

            def reply(request: Any) -> ToolReply:
                last = request.body["input"][-1]
                if last.get("type") == "function_call_output":
                    return ToolReply.say(answer_text(int(last["call_id"].split("_")[1])))
                content = last["content"]
                t = turn_of(content if isinstance(content, str) else content[0]["text"])
                return ToolReply.call(("lookup_order", {"order": f"A-{1000 + t}"},
                                       f"call_{t}_a"))

            with OpenAIToolServer(reply) as server:
                client = AsyncOpenAI(base_url=server.url, api_key="test", max_retries=0)
                agent = Agent(name="desk", instructions=SYSTEM, tools=[lookup_order],
                              model=OpenAIResponsesModel(model="gpt-4o-mini",
                                                         openai_client=client))
                options: dict[str, Any] = {}
                session: Any
                if kind == "contextfold":
                    session = ContextFoldSession("bench", memory_for(store, tmp, budget,
                                                                      AsyncMemory), system=SYSTEM)
                    session.input_filter = atimed(clock, session.input_filter)
                    options["run_config"] = session.run_config()
                else:
                    db = ":memory:" if store == "memory" else str(tmp / "sdk.db")
                    session = SQLiteSession("bench", db, session_settings={"limit": limit}
                                            if limit else None)
                for method in ("get_items", "add_items"):
                    setattr(session, method, atimed(clock, getattr(session, method)))

                async def main() -> None:
                    for t in range(1, turns + 1):
                        await Runner.run(agent, user_text(t), session=session, **options)
                    await client.close()

                asyncio.run(main())
                for r in server.requests:  # the prompt text, as one message: an estimate
                    clock.sent(r.prompt, lambda p: [Message(role="user", content=p)])
        return run

    fw = "OpenAI Agents SDK"
    return [
        Config(fw, "SQLiteSession (default: whole history)", "memory", play("sdk", "memory"),
               own=True, info=True),
        Config(fw, "SQLiteSession (default: whole history)", "sqlite", play("sdk", "sqlite"),
               own=True, info=True),
        Config(fw, f"SQLiteSession (last {SDK_ITEMS} items)", "memory",
               play("sdk", "memory", SDK_ITEMS), own=True),
        Config(fw, f"SQLiteSession (last {SDK_ITEMS} items)", "sqlite",
               play("sdk", "sqlite", SDK_ITEMS), own=True),
        Config(fw, "ContextFoldSession", "memory", play("contextfold", "memory")),
        Config(fw, "ContextFoldSession", "sqlite", play("contextfold", "sqlite")),
    ]


# -- LlamaIndex ---------------------------------------------------------------------------------


def llamaindex_configs(budget: int) -> list[Config]:
    def play(kind: str, store: str = "-") -> Callable[[int, Path, Clock], None]:
        def run(turns: int, tmp: Path, clock: Clock) -> None:
            import warnings

            from llama_index.core.agent.workflow import FunctionAgent
            from llama_index.core.base.llms.types import ChatMessage, MessageRole, ToolCallBlock
            from llama_index.core.llms.mock import MockFunctionCallingLLM
            from llama_index.core.memory import ChatMemoryBuffer
            from llama_index.core.memory import Memory as LlamaMemory
            from llama_index.core.tools import FunctionTool

            from contextfold.integrations.llamaindex import ContextFoldMemory, from_llamaindex

            warnings.simplefilter("ignore", DeprecationWarning)

            def reply(messages: Any, **kwargs: Any) -> ChatMessage:
                clock.sent(list(messages), lambda sent: [
                    from_llamaindex(m, str(i)) for i, m in enumerate(sent)])
                last = messages[-1]
                if last.role == MessageRole.TOOL:
                    t = int(str(last.additional_kwargs["tool_call_id"]).split("_")[1])
                    return ChatMessage(role=MessageRole.ASSISTANT, content=answer_text(t))
                t = turn_of(last.content or "")
                return ChatMessage(role=MessageRole.ASSISTANT, blocks=[ToolCallBlock(
                    tool_call_id=f"call_{t}_a", tool_name="lookup_order",
                    tool_kwargs={"order": f"A-{1000 + t}"})])

            memory: Any
            if kind == "contextfold":
                memory = ContextFoldMemory(memory_for(store, tmp, budget, AsyncMemory), "bench",
                                           system=SYSTEM)
            elif kind == "buffer":
                memory = ChatMemoryBuffer.from_defaults(token_limit=budget)
            else:
                memory = LlamaMemory.from_defaults(session_id="bench", token_limit=budget)
            for method in ("aget", "aput", "aput_messages"):
                object.__setattr__(memory, method, atimed(clock, getattr(memory, method)))
            agent = FunctionAgent(
                tools=[FunctionTool.from_defaults(tool_result, name="lookup_order")],
                llm=MockFunctionCallingLLM(response_generator=reply, is_chat_model=True),
                system_prompt=SYSTEM)

            async def main() -> None:
                for t in range(1, turns + 1):
                    await agent.run(user_msg=user_text(t), memory=memory)

            asyncio.run(main())
        return run

    fw = "LlamaIndex FunctionAgent"
    return [
        Config(fw, "ChatMemoryBuffer (truncation)", "-", play("buffer"), own=True),
        Config(fw, "Memory (truncation)", "-", play("memory"), own=True),
        Config(fw, "ContextFoldMemory", "memory", play("contextfold", "memory")),
        Config(fw, "ContextFoldMemory", "sqlite", play("contextfold", "sqlite")),
    ]
