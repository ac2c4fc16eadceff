"""Adapter benchmark: what each framework adapter adds to every model call.

One scripted tool-using conversation (each turn: a question, a tool call — two in parallel
every 10th turn — its result, an answer; two model calls per turn) runs through each
framework with an instant fake model. The memory layer's own time is measured inside its
hooks (conversion + add + context, and folds when they run), excluding the model call,
and divided by the number of model calls. Peers run the same conversation in the same
process, so their numbers are comparable despite a shared machine:

* LangChain ``create_agent``: ``ContextFoldMiddleware`` vs LangChain's own
  ``SummarizationMiddleware`` (trigger at the budget, keep 20 messages);
* a hand-built LangGraph graph: the ``ContextFold`` helper vs langmem's
  ``summarize_messages`` (``max_tokens`` = budget);
* pydantic-ai: ``ContextFoldCapability``; OpenAI Agents SDK: ``ContextFoldSession`` vs the
  SDK's ``SQLiteSession`` (in memory, unbounded); LlamaIndex: ``ContextFoldMemory`` vs
  ``ChatMemoryBuffer`` (token-limit truncation, no summary).

Every summarizer (contextfold's and the peers') is a fake that answers a fixed ~200-token
summary at once, so the figures are the memory machinery's cost, not an LLM's. Also
reported: the largest request the model received, counted with contextfold's exact
counter, relative to the budget (peers that count approximately can exceed it).

Usage: python benchmarks/bench_adapters.py [--turns 200] [--budget 4000]
Needs the framework extras plus langmem (benchmark only: pip install langmem).
Writes benchmarks/results/adapters.md.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import re
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from contextfold import AsyncMemory, Memory, Message, TokenBudget
from contextfold.summarizers.base import SummaryRequest, SummaryResult
from contextfold.tokens import REPLY_PRIMING_TOKENS, count_message, get_counter

RESULTS = Path(__file__).parent / "results"
SUMMARY = " ".join(f"Order A-{1000 + i} shipped to warehouse W{i % 5}." for i in range(25))
SYSTEM = "You are the order desk of a small shop. Use lookup_order for every order question."
COUNTER = get_counter()


def user_text(turn: int) -> str:
    return (f"Turn {turn}: what is the status of order A-{1000 + turn}? It was placed for "
            f"customer {turn % 17} and should ship to warehouse W{turn % 5}.")


def tool_result(order: str) -> str:
    n = int(order.split("-")[1])
    return json.dumps({"order": order, "status": ["packed", "shipped", "delayed"][n % 3],
                       "items": n % 7 + 1, "total_eur": n * 3 % 997 + 0.5})


def answer_text(turn: int) -> str:
    return f"Order A-{1000 + turn} is being handled; I will keep you posted about it."


def turn_of(text: str) -> int:
    return int(re.search(r"Turn (\d+)", text).group(1))  # type: ignore[union-attr]


class FakeSummarizer:
    """contextfold summarizer double: the fixed ~200-token summary, at once."""

    name = "fake-200"
    needs_redaction = False

    async def summarize(self, request: SummaryRequest) -> SummaryResult:
        return SummaryResult(SUMMARY)


class Clock:
    """Accumulates time spent in memory hooks, minus the model calls nested in them."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.calls = 0
        self.max_tokens = 0
        self.newest_missing = 0  # requests whose newest message was not sent

    def sent(self, messages: list[Message]) -> None:
        self.calls += 1
        tokens = REPLY_PRIMING_TOKENS + sum(count_message(COUNTER, m) for m in messages)
        self.max_tokens = max(self.max_tokens, tokens)


def timed(clock: Clock, fn: Callable[..., Any]) -> Callable[..., Any]:
    def run(*args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            clock.seconds += time.perf_counter() - start
    return run


def atimed(clock: Clock, fn: Callable[..., Any]) -> Callable[..., Any]:
    async def run(*args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return await fn(*args, **kwargs)
        finally:
            clock.seconds += time.perf_counter() - start
    return run


def memory_for(store: str, tmp: Path, budget: int, kind: type = Memory) -> Any:
    url = "memory://" if store == "memory" else f"sqlite:///{tmp / f'{kind.__name__}.db'}"
    return kind(url, policy=TokenBudget(budget), summarizer=FakeSummarizer())


# -- LangChain / LangGraph ----------------------------------------------------------------------


def langchain_rows(turns: int, budget: int, tmp: Path) -> list[dict[str, Any]]:
    from langchain.agents import create_agent
    from langchain.agents.middleware import SummarizationMiddleware
    from langchain_core.language_models.chat_models import BaseChatModel
    from langchain_core.language_models.fake_chat_models import FakeListChatModel
    from langchain_core.messages import (
        AIMessage,
        HumanMessage,
        ToolMessage,
        convert_to_openai_messages,
    )
    from langchain_core.outputs import ChatGeneration, ChatResult
    from langchain_core.tools import tool
    from langgraph.checkpoint.memory import InMemorySaver

    from contextfold.integrations.langchain import ContextFoldMiddleware

    @tool
    def lookup_order(order: str) -> str:
        """Look up an order by its id (A-1234)."""
        return tool_result(order)

    class Model(BaseChatModel):
        clock: Any = None

        @property
        def _llm_type(self) -> str:
            return "bench"

        def bind_tools(self, tools: Any, **kwargs: Any) -> Any:  # type: ignore[override]
            return self

        def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None,
                      **kwargs: Any) -> ChatResult:
            self.clock.sent([Message.from_openai(d)
                             for d in convert_to_openai_messages(messages)])
            last = messages[-1]
            usage = {"input_tokens": 10, "output_tokens": 10, "total_tokens": 20}
            if isinstance(last, ToolMessage):
                msg = AIMessage(answer_text(int(last.tool_call_id.split("_")[1])),
                                usage_metadata=usage)
            else:
                t = turn_of(str(last.content))
                calls = [{"name": "lookup_order", "args": {"order": f"A-{1000 + t}"},
                          "id": f"call_{t}_a", "type": "tool_call"}]
                if t % 10 == 0:
                    calls.append({"name": "lookup_order", "args": {"order": f"A-{999 + t}"},
                                  "id": f"call_{t}_b", "type": "tool_call"})
                msg = AIMessage("", tool_calls=calls, usage_metadata=usage)
            return ChatResult(generations=[ChatGeneration(message=msg)])

    def timed_middleware(base: type, clock: Clock) -> type:
        class Timed(base):  # type: ignore[valid-type, misc]
            def before_model(self, state: Any, runtime: Any) -> Any:
                return timed(clock, super().before_model)(state, runtime)

            def after_model(self, state: Any, runtime: Any) -> Any:
                return timed(clock, super().after_model)(state, runtime)

            def wrap_model_call(self, request: Any, handler: Any) -> Any:
                inner = 0.0

                def call(req: Any) -> Any:
                    nonlocal inner
                    start = time.perf_counter()
                    try:
                        return handler(req)
                    finally:
                        inner += time.perf_counter() - start

                start = time.perf_counter()
                try:
                    return super().wrap_model_call(request, call)
                finally:
                    clock.seconds += time.perf_counter() - start - inner

        if base is ContextFoldMiddleware:
            def after_agent(self: Any, state: Any, runtime: Any) -> Any:
                return timed(clock, ContextFoldMiddleware.after_agent)(self, state, runtime)
            Timed.after_agent = after_agent  # type: ignore[attr-defined]
        else:
            del Timed.after_model, Timed.wrap_model_call  # the peer only has before_model
        return Timed

    rows = []
    configs: list[tuple[str, str, Callable[[Clock], list[Any]]]] = [
        ("none (full history)", "-", lambda c: []),
        ("ContextFoldMiddleware", "memory", lambda c: [timed_middleware(
            ContextFoldMiddleware, c)(memory_for("memory", tmp, budget))]),
        ("ContextFoldMiddleware", "sqlite", lambda c: [timed_middleware(
            ContextFoldMiddleware, c)(memory_for("sqlite", tmp, budget))]),
        ("SummarizationMiddleware", "state", lambda c: [timed_middleware(
            SummarizationMiddleware, c)(FakeListChatModel(responses=[SUMMARY]),
                                         trigger=("tokens", budget), keep=("messages", 20))]),
    ]
    for name, store, middleware in configs:
        clock = Clock()
        model = Model(clock=clock)
        agent = create_agent(model, [lookup_order], system_prompt=SYSTEM,
                             checkpointer=InMemorySaver(), middleware=middleware(clock))
        cfg = {"configurable": {"thread_id": "bench"}}
        start = time.perf_counter()
        for t in range(1, turns + 1):
            agent.invoke({"messages": [HumanMessage(user_text(t))]}, cfg)
        rows.append(row("LangChain create_agent", name, store, clock,
                        time.perf_counter() - start, budget))
    return rows


def langgraph_rows(turns: int, budget: int, tmp: Path) -> list[dict[str, Any]]:
    from langchain_core.language_models.fake_chat_models import FakeListChatModel
    from langchain_core.messages import (
        AIMessage,
        HumanMessage,
        SystemMessage,
        ToolMessage,
        convert_to_openai_messages,
    )
    from langmem.short_term import summarize_messages

    from contextfold.integrations.langgraph import ContextFold

    def reply(messages: list[Any]) -> AIMessage:
        last = messages[-1]
        if isinstance(last, ToolMessage):
            return AIMessage(answer_text(int(last.tool_call_id.split("_")[1])),
                             id=str(uuid.uuid4()))
        t = turn_of(str(last.content))
        return AIMessage("", id=str(uuid.uuid4()), tool_calls=[{"name": "lookup_order", "args": {
            "order": f"A-{1000 + t}"}, "id": f"call_{t}_a", "type": "tool_call"}])

    rows = []
    for name in ("ContextFold helper", "langmem summarize_messages"):
        clock = Clock()
        state: list[Any] = []
        fold = ContextFold(memory_for("memory", tmp, budget), session_id="bench")
        summarizer = FakeListChatModel(responses=[SUMMARY])
        running = None
        start = time.perf_counter()
        for t in range(1, turns + 1):
            state.append(HumanMessage(user_text(t), id=str(uuid.uuid4())))
            for _ in range(2):
                begin = time.perf_counter()
                if name.startswith("ContextFold"):
                    sent = fold.messages(state, system=SYSTEM)
                else:
                    result = summarize_messages(state, running_summary=running, model=summarizer,
                                                max_tokens=budget, max_summary_tokens=256)
                    running = result.running_summary
                    sent = [SystemMessage(SYSTEM), *result.messages]
                clock.seconds += time.perf_counter() - begin
                clock.sent([Message.from_openai(d) for d in convert_to_openai_messages(sent)])
                if sent[-1].content != state[-1].content:
                    clock.newest_missing += 1
                ai = reply(state)
                if name.startswith("ContextFold"):
                    clock.seconds += _secs(lambda ai=ai, fold=fold: fold.record(ai))
                state.append(ai)
                if ai.tool_calls:
                    state.append(ToolMessage(tool_result(ai.tool_calls[0]["args"]["order"]),
                                             tool_call_id=ai.tool_calls[0]["id"],
                                             id=str(uuid.uuid4())))
        rows.append(row("LangGraph hand-built", name, "memory", clock,
                        time.perf_counter() - start, budget))
    return rows


def _secs(fn: Callable[[], Any]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


# -- pydantic-ai, OpenAI Agents, LlamaIndex -----------------------------------------------------


def pydantic_ai_rows(turns: int, budget: int, tmp: Path) -> list[dict[str, Any]]:
    from pydantic_ai import Agent
    from pydantic_ai import messages as pai
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    from contextfold.integrations.pydantic_ai import ContextFoldCapability

    rows = []
    for store in ("none", "memory", "sqlite"):
        clock = Clock()

        def play(messages: list[pai.ModelMessage], info: AgentInfo,
                 clock: Clock = clock) -> pai.ModelResponse:
            clock.calls += 1
            last = messages[-1].parts[-1]
            if isinstance(last, pai.ToolReturnPart):
                return pai.ModelResponse(parts=[pai.TextPart(answer_text(int(
                    last.tool_call_id.split("_")[1])))])
            t = turn_of(str(last.content))  # type: ignore[union-attr]
            return pai.ModelResponse(parts=[pai.ToolCallPart(
                "lookup_order", {"order": f"A-{1000 + t}"}, f"call_{t}_a")])

        caps: list[Any] = []
        if store != "none":
            cap = ContextFoldCapability(memory_for(store, tmp, budget, AsyncMemory), "bench")
            cap.before_model_request = atimed(clock, cap.before_model_request)  # type: ignore[method-assign]
            cap.after_model_request = atimed(clock, cap.after_model_request)  # type: ignore[method-assign]
            caps.append(cap)
        agent = Agent(FunctionModel(play), system_prompt=SYSTEM, capabilities=caps)

        @agent.tool_plain
        def lookup_order(order: str) -> str:
            """Look up an order by its id (A-1234)."""
            return tool_result(order)

        async def run(agent: Any = agent) -> None:
            history: list[Any] = []
            for t in range(1, turns + 1):
                history = (await agent.run(user_text(t), message_history=history)).all_messages()

        start = time.perf_counter()
        asyncio.run(run())
        rows.append(row("pydantic-ai", "ContextFoldCapability" if caps else
                        "none (full history)", store if caps else "-", clock,
                        time.perf_counter() - start, budget, measured=False))
    return rows


def openai_agents_rows(turns: int, budget: int, tmp: Path) -> list[dict[str, Any]]:
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

    def play(request: Any) -> ToolReply:
        last = request.body["input"][-1]
        if last.get("type") == "function_call_output":
            return ToolReply.say(answer_text(int(last["call_id"].split("_")[1])))
        content = last["content"]
        t = turn_of(content if isinstance(content, str) else content[0]["text"])
        return ToolReply.call(("lookup_order", {"order": f"A-{1000 + t}"}, f"call_{t}_a"))

    rows = []
    for name in ("SQLiteSession (last 40 items)", "ContextFoldSession"):
        clock = Clock()
        with OpenAIToolServer(play) as server:
            client = AsyncOpenAI(base_url=server.url, api_key="test", max_retries=0)
            agent = Agent(name="desk", instructions=SYSTEM, tools=[lookup_order],
                          model=OpenAIResponsesModel(model="gpt-4o-mini", openai_client=client))
            options: dict[str, Any] = {}
            session: Any
            if name.startswith("ContextFold"):
                session = ContextFoldSession("bench", memory_for("memory", tmp, budget,
                                                                  AsyncMemory), system=SYSTEM)
                session.input_filter = atimed(clock, session.input_filter)
                options["run_config"] = session.run_config()
            else:
                session = SQLiteSession("bench", session_settings={"limit": 40})
            for method in ("get_items", "add_items"):
                setattr(session, method, atimed(clock, getattr(session, method)))

            async def run(session: Any = session, agent: Any = agent,
                          options: dict[str, Any] = options, client: Any = client) -> None:
                for t in range(1, turns + 1):
                    await Runner.run(agent, user_text(t), session=session, **options)
                await client.close()

            start = time.perf_counter()
            asyncio.run(run())
            elapsed = time.perf_counter() - start
            for r in server.requests:  # the prompt text, as one message: an estimate
                clock.sent([Message(role="user", content=r.prompt)])
        rows.append(row("OpenAI Agents SDK", name, "memory", clock, elapsed, budget))
    return rows


def llamaindex_rows(turns: int, budget: int, tmp: Path) -> list[dict[str, Any]]:
    import warnings

    from llama_index.core.agent.workflow import FunctionAgent
    from llama_index.core.base.llms.types import ChatMessage, MessageRole, ToolCallBlock
    from llama_index.core.llms.mock import MockFunctionCallingLLM
    from llama_index.core.memory import ChatMemoryBuffer
    from llama_index.core.tools import FunctionTool

    from contextfold.integrations.llamaindex import ContextFoldMemory, from_llamaindex

    warnings.simplefilter("ignore", DeprecationWarning)
    rows = []
    for name in ("ChatMemoryBuffer (truncation)", "ContextFoldMemory"):
        clock = Clock()

        def play(messages: Any, clock: Clock = clock, **kwargs: Any) -> ChatMessage:
            clock.sent([from_llamaindex(m, str(i)) for i, m in enumerate(messages)])
            last = messages[-1]
            if last.role == MessageRole.TOOL:
                t = int(str(last.additional_kwargs["tool_call_id"]).split("_")[1])
                return ChatMessage(role=MessageRole.ASSISTANT, content=answer_text(t))
            t = turn_of(last.content or "")
            return ChatMessage(role=MessageRole.ASSISTANT, blocks=[ToolCallBlock(
                tool_call_id=f"call_{t}_a", tool_name="lookup_order",
                tool_kwargs={"order": f"A-{1000 + t}"})])

        memory: Any
        if name.startswith("ContextFold"):
            memory = ContextFoldMemory(memory_for("memory", tmp, budget, AsyncMemory), "bench",
                                       system=SYSTEM)
        else:
            memory = ChatMemoryBuffer.from_defaults(token_limit=budget)
        for method in ("aget", "aput", "aput_messages"):
            object.__setattr__(memory, method, atimed(clock, getattr(memory, method)))
        agent = FunctionAgent(tools=[FunctionTool.from_defaults(tool_result,
                                                                 name="lookup_order")],
                              llm=MockFunctionCallingLLM(response_generator=play,
                                                         is_chat_model=True),
                              system_prompt=SYSTEM)

        async def run(agent: Any = agent, memory: Any = memory) -> None:
            for t in range(1, turns + 1):
                await agent.run(user_msg=user_text(t), memory=memory)

        start = time.perf_counter()
        asyncio.run(run())
        rows.append(row("LlamaIndex FunctionAgent", name, "memory", clock,
                        time.perf_counter() - start, budget))
    return rows


# -- report -------------------------------------------------------------------------------------


def row(framework: str, adapter: str, store: str, clock: Clock, elapsed: float, budget: int,
        measured: bool = True) -> dict[str, Any]:
    calls = max(clock.calls, 1)
    return {"framework": framework, "adapter": adapter, "store": store, "calls": clock.calls,
            "memory_us": clock.seconds / calls * 1e6,
            "loop_ms": elapsed / calls * 1e3,
            "max_ratio": clock.max_tokens / budget if measured and clock.max_tokens else None,
            "newest_missing": clock.newest_missing}


def render(rows: list[dict[str, Any]], args: argparse.Namespace) -> str:
    lines = [
        f"# Adapter overhead ({args.turns} turns, budget {args.budget:,} tokens)",
        "",
        f"Python {platform.python_version()}, {platform.machine()}; a 2-core machine shared "
        "with other jobs, so absolute times are noisy: compare rows within one framework.",
        "",
        "| framework | memory | store | model calls | memory µs / call | whole loop ms / call "
        "| max request ÷ budget | newest message not sent |",
        "|---|---|---|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        ratio = "-" if r["max_ratio"] is None else f"{r['max_ratio']:.2f}"
        mem = "-" if r["adapter"].startswith("none") else f"{r['memory_us']:,.0f}"
        lines.append(f"| {r['framework']} | {r['adapter']} | {r['store']} | {r['calls']} | "
                     f"{mem} | {r['loop_ms']:.2f} | {ratio} | {r['newest_missing']} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--budget", type=int, default=4000)
    args = parser.parse_args(argv)
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        for part in (langchain_rows, langgraph_rows, pydantic_ai_rows, openai_agents_rows,
                     llamaindex_rows):
            rows += part(args.turns, args.budget, Path(tmp))
            print(render(rows, args).splitlines()[-1], flush=True)
    report = render(rows, args)
    print("\n" + report)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "adapters.md").write_text(report, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
