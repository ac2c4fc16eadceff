"""Adapter benchmark: each framework's agent loop with contextfold as its memory, against
the same loop with the framework's own memory piece.

One scripted tool-using conversation (each turn: a question, a tool call — two in parallel
every 10th turn on LangChain — its result, an answer; two model calls per turn) runs
through each framework with an instant scripted model. The figure that matters is the
**whole loop's CPU time per model call** (``time.process_time``: every thread of the
process, so work a framework does on a worker thread counts too), for:

* LangChain ``create_agent``: ``ContextFoldMiddleware`` vs LangChain's
  ``SummarizationMiddleware`` (trigger at the budget, keep 20 messages);
* a hand-built LangGraph loop: the ``ContextFold`` helper vs langmem's
  ``summarize_messages`` (``max_tokens`` = budget);
* pydantic-ai: ``ContextFoldCapability`` vs the loop without a processor (full history);
* OpenAI Agents SDK: ``ContextFoldSession`` vs the SDK's ``SQLiteSession`` (last 40 items;
  in memory beside contextfold's memory store, in a file beside its SQLite store);
* LlamaIndex ``FunctionAgent``: ``ContextFoldMemory`` vs ``ChatMemoryBuffer`` and its
  replacement ``Memory`` (token-limit truncation, no summary).

contextfold runs on its memory store and on SQLite (a file); "÷ own" is its CPU per call
over the framework's own piece (the cheapest own row of that framework for that store).
Every config is warmed up first (imports, first calls) and, with ``--repeat N``, run N
times in turn with the others, its fastest run reported. Also reported: the time spent
inside the memory hooks (process CPU, model call excluded), the largest request the model
received relative to the budget (contextfold's exact counter), and how often the newest
message was not sent. Every summarizer is a fake answering a fixed ~200-token summary at
once, so the figures are the memory machinery's cost, not an LLM's.

Usage: python benchmarks/bench_adapters.py [--turns 150] [--budget 4000] [--repeat 3]
       [--quick] [--only TEXT] [--profile]
Needs the framework extras plus langmem (benchmark only: pip install langmem).
Writes benchmarks/results/adapters.md (not with --only or --profile).
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import functools
import json
import os
import platform
import pstats
import re
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
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
    """Accumulates CPU time spent in memory hooks, minus the model calls nested in them,
    and records what the model received: kept as given during the loop, converted and
    counted after it (so the recording costs every row the same, next to nothing)."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.calls = 0
        self.newest_missing = 0  # requests whose newest message was not sent
        self._sent: list[tuple[Any, Callable[[Any], list[Message]]]] = []

    def sent(self, request: Any, convert: Callable[[Any], list[Message]]) -> None:
        self.calls += 1
        self._sent.append((request, convert))

    @property
    def max_tokens(self) -> int:
        return max((REPLY_PRIMING_TOKENS + sum(count_message(COUNTER, m) for m in convert(r))
                    for r, convert in self._sent), default=0)


def timed(clock: Clock, fn: Callable[..., Any]) -> Callable[..., Any]:
    def run(*args: Any, **kwargs: Any) -> Any:
        start = time.process_time()
        try:
            return fn(*args, **kwargs)
        finally:
            clock.seconds += time.process_time() - start
    return run


def atimed(clock: Clock, fn: Callable[..., Any]) -> Callable[..., Any]:
    async def run(*args: Any, **kwargs: Any) -> Any:
        start = time.process_time()
        try:
            return await fn(*args, **kwargs)
        finally:
            clock.seconds += time.process_time() - start
    return run


def memory_for(store: str, tmp: Path, budget: int, kind: type = Memory) -> Any:
    url = "memory://" if store == "memory" else f"sqlite:///{tmp / f'{kind.__name__}.db'}"
    return kind(url, policy=TokenBudget(budget), summarizer=FakeSummarizer())


# -- the harness --------------------------------------------------------------------------------


@dataclass
class Config:
    """One row: a framework's loop with one memory piece. ``play(turns, tmp, clock)`` runs
    the whole loop in a fresh directory; ``own`` marks the framework's own piece (the
    baseline); ``info`` rows are shown but never a baseline."""

    framework: str
    label: str
    store: str
    play: Callable[[int, Path, Clock], None]
    own: bool = False
    info: bool = False

    @property
    def name(self) -> str:
        return f"{self.framework} / {self.label} / {self.store}"


@dataclass
class Result:
    config: Config
    clock: Clock
    cpu: float
    wall: float

    def per_call(self, seconds: float) -> float:
        return seconds / max(self.clock.calls, 1)


def run_config(config: Config, turns: int, tmp: Path) -> Result:
    work = Path(tempfile.mkdtemp(dir=tmp))
    clock = Clock()
    cpu, wall = time.process_time(), time.perf_counter()
    config.play(turns, work, clock)
    return Result(config, clock, time.process_time() - cpu, time.perf_counter() - wall)


# -- LangChain ----------------------------------------------------------------------------------


@functools.lru_cache(maxsize=1)
def _langchain() -> Any:
    from langchain_core.language_models.chat_models import BaseChatModel
    from langchain_core.messages import AIMessage, ToolMessage, convert_to_openai_messages
    from langchain_core.outputs import ChatGeneration, ChatResult
    from langchain_core.tools import tool

    @tool
    def lookup_order(order: str) -> str:
        """Look up an order by its id (A-1234)."""
        return tool_result(order)

    class Model(BaseChatModel):
        """Scripted tool-calling model: records what it was sent (untimed by the hooks)."""

        clock: Any = None

        @property
        def _llm_type(self) -> str:
            return "bench"

        def bind_tools(self, tools: Any, **kwargs: Any) -> Any:  # type: ignore[override]
            return self

        def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None,
                      **kwargs: Any) -> ChatResult:
            self.clock.sent(list(messages), lambda sent: [
                Message.from_openai(d) for d in convert_to_openai_messages(sent)])
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

    return Model, lookup_order


def _timed_middleware(base: type, clock: Clock) -> type:
    """``base`` with the hooks it defines timed into ``clock`` (the model call nested in
    ``wrap_model_call`` excluded); hooks it does not define stay undefined."""
    from langchain.agents.middleware.types import AgentMiddleware

    def timed_hook(name: str) -> Callable[..., Any]:
        def hook(self: Any, state: Any, runtime: Any) -> Any:
            return timed(clock, getattr(super(timed_cls, self), name))(state, runtime)
        return hook

    def wrap_model_call(self: Any, request: Any, handler: Any) -> Any:
        inner = 0.0

        def call(req: Any) -> Any:
            nonlocal inner
            start = time.process_time()
            try:
                return handler(req)
            finally:
                inner += time.process_time() - start

        start = time.process_time()
        try:
            return super(timed_cls, self).wrap_model_call(request, call)
        finally:
            clock.seconds += time.process_time() - start - inner

    hooks: dict[str, Any] = {name: timed_hook(name)
                             for name in ("before_model", "after_model", "after_agent")
                             if getattr(base, name) is not getattr(AgentMiddleware, name)}
    if base.wrap_model_call is not AgentMiddleware.wrap_model_call:  # type: ignore[attr-defined]
        hooks["wrap_model_call"] = wrap_model_call
    timed_cls = type(f"Timed{base.__name__}", (base,), hooks)
    return timed_cls


def langchain_configs(budget: int) -> list[Config]:
    def play(kind: str, store: str = "-", **options: Any) -> Callable[[int, Path, Clock], None]:
        def run(turns: int, tmp: Path, clock: Clock) -> None:
            from langchain.agents import create_agent
            from langchain.agents.middleware import SummarizationMiddleware
            from langchain_core.language_models.fake_chat_models import FakeListChatModel
            from langchain_core.messages import HumanMessage
            from langgraph.checkpoint.memory import InMemorySaver

            from contextfold.integrations.langchain import ContextFoldMiddleware

            model_cls, lookup_order = _langchain()
            middleware: list[Any] = []
            if kind == "contextfold":
                middleware = [_timed_middleware(ContextFoldMiddleware, clock)(
                    memory_for(store, tmp, budget), **options)]
            elif kind == "summarization":
                middleware = [_timed_middleware(SummarizationMiddleware, clock)(
                    FakeListChatModel(responses=[SUMMARY]), trigger=("tokens", budget),
                    keep=("messages", 20))]
            agent = create_agent(model_cls(clock=clock), [lookup_order], system_prompt=SYSTEM,
                                 checkpointer=InMemorySaver(), middleware=middleware)
            cfg = {"configurable": {"thread_id": "bench"}}
            for t in range(1, turns + 1):
                agent.invoke({"messages": [HumanMessage(user_text(t))]}, cfg)
        return run

    fw = "LangChain create_agent"
    return [
        Config(fw, "none (full history)", "-", play("none"), info=True),
        Config(fw, "SummarizationMiddleware", "-", play("summarization"), own=True),
        Config(fw, "ContextFoldMiddleware", "memory", play("contextfold", "memory")),
        Config(fw, "ContextFoldMiddleware", "sqlite", play("contextfold", "sqlite")),
        Config(fw, "ContextFoldMiddleware(trim_state=False)", "memory",
               play("contextfold", "memory", trim_state=False), info=True),
        Config(fw, "ContextFoldMiddleware(trim_state=False)", "sqlite",
               play("contextfold", "sqlite", trim_state=False), info=True),
    ]


# -- LangGraph ----------------------------------------------------------------------------------


def langgraph_configs(budget: int) -> list[Config]:
    def play(kind: str, store: str = "-") -> Callable[[int, Path, Clock], None]:
        def run(turns: int, tmp: Path, clock: Clock) -> None:
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
                return AIMessage("", id=str(uuid.uuid4()), tool_calls=[{
                    "name": "lookup_order", "args": {"order": f"A-{1000 + t}"},
                    "id": f"call_{t}_a", "type": "tool_call"}])

            state: list[Any] = []
            fold = ContextFold(memory_for(store, tmp, budget), session_id="bench") \
                if kind == "contextfold" else None
            summarizer = FakeListChatModel(responses=[SUMMARY])
            running = None
            for t in range(1, turns + 1):
                state.append(HumanMessage(user_text(t), id=str(uuid.uuid4())))
                for _ in range(2):
                    begin = time.process_time()
                    if fold is not None:
                        sent = fold.messages(state, system=SYSTEM)
                    else:
                        result = summarize_messages(
                            state, running_summary=running, model=summarizer,
                            max_tokens=budget, max_summary_tokens=256)
                        running = result.running_summary
                        sent = [SystemMessage(SYSTEM), *result.messages]
                    clock.seconds += time.process_time() - begin
                    clock.sent(sent, lambda sent: [Message.from_openai(d) for d in
                                                   convert_to_openai_messages(sent)])
                    if sent[-1].content != state[-1].content:
                        clock.newest_missing += 1
                    ai = reply(state)
                    if fold is not None:
                        begin = time.process_time()
                        fold.record(ai)
                        clock.seconds += time.process_time() - begin
                    state.append(ai)
                    if ai.tool_calls:
                        state.append(ToolMessage(tool_result(ai.tool_calls[0]["args"]["order"]),
                                                 tool_call_id=ai.tool_calls[0]["id"],
                                                 id=str(uuid.uuid4())))
        return run

    fw = "LangGraph hand-built"
    return [
        Config(fw, "langmem summarize_messages", "-", play("langmem"), own=True),
        Config(fw, "ContextFold helper", "memory", play("contextfold", "memory")),
        Config(fw, "ContextFold helper", "sqlite", play("contextfold", "sqlite")),
    ]


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


# -- report -------------------------------------------------------------------------------------


def baseline(result: Result, results: list[Result]) -> Result | None:
    """The cheapest own row of ``result``'s framework for its store (None for own rows)."""
    config = result.config
    if config.own or config.info:
        return None
    owns = [r for r in results if r.config.own and not r.config.info
            and r.config.framework == config.framework and r.config.store in ("-", config.store)]
    return min(owns, key=lambda r: r.per_call(r.cpu), default=None)


def render(results: list[Result], args: argparse.Namespace, load: str) -> str:
    lines = [
        f"# Adapter overhead ({args.turns} user turns, budget {args.budget:,} tokens)",
        "",
        f"Python {platform.python_version()}, {platform.machine()}, {os.cpu_count()} CPUs; "
        f"load average {load} (start → end). CPU is `time.process_time` of the whole loop "
        "(all threads), divided by the model calls; "
        + (f"fastest of {args.repeat} runs per row, run in turn; " if args.repeat > 1 else "")
        + "each row warmed up first. Compare rows within one framework: the machine may be "
        "shared. Reproduce: `python benchmarks/bench_adapters.py"
        + (f" --repeat {args.repeat}" if args.repeat > 1 else "")
        + (f" --turns {args.turns}" if args.turns != TURNS else "") + "`.",
        "",
        "| framework | memory | store | model calls | loop CPU ms / call | ÷ own "
        "| memory hooks CPU µs / call | max request ÷ budget | newest message not sent |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        base = baseline(r, results)
        ratio = "-" if base is None else f"**{r.per_call(r.cpu) / base.per_call(base.cpu):.2f}**"
        c = r.clock
        top = c.max_tokens
        size = f"{top / args.budget:.2f}" if top else "-"
        hooks = "-" if (r.config.info and not r.config.own) or r.config.label.startswith("no ") \
            else f"{r.per_call(c.seconds) * 1e6:,.0f}"
        lines.append(f"| {r.config.framework} | {r.config.label} | {r.config.store} | "
                     f"{c.calls} | {r.per_call(r.cpu) * 1e3:.2f} | {ratio} | {hooks} | {size} | "
                     f"{c.newest_missing} |")
    return "\n".join(lines) + "\n"


TURNS = 150
SLOW_SECONDS = 20.0  # a row whose run takes longer is not repeated (--repeat)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=TURNS)
    parser.add_argument("--budget", type=int, default=4000)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--quick", action="store_true", help="40 turns, one run")
    parser.add_argument("--only", default="", help="rows whose name contains this text")
    parser.add_argument("--profile", action="store_true",
                        help="cProfile the chosen rows: contextfold's functions by own time")
    args = parser.parse_args(argv)
    if args.quick:
        args.turns, args.repeat = 40, 1
    configs = [c for part in (langchain_configs, langgraph_configs, pydantic_ai_configs,
                              openai_agents_configs, llamaindex_configs)
               for c in part(args.budget) if args.only.lower() in c.name.lower()]
    load = [os.getloadavg()[0]]
    best: dict[str, Result] = {}
    slow: set[str] = set()
    with tempfile.TemporaryDirectory() as tmp:
        for config in configs:  # imports and first calls, untimed
            config.play(3, Path(tempfile.mkdtemp(dir=tmp)), Clock())
        for _ in range(max(1, args.repeat)):
            for config in configs:
                if config.name in slow:
                    continue
                if args.profile:
                    profile = cProfile.Profile(time.thread_time)
                    profile.enable()
                result = run_config(config, args.turns, Path(tmp))
                if args.profile:
                    profile.disable()
                    print(f"== {config.name}: {result.per_call(result.cpu) * 1e3:.2f} ms/call")
                    stats = pstats.Stats(profile)
                    stats.sort_stats("tottime").print_stats("contextfold", 25)
                    stats.sort_stats("cumulative").print_stats("contextfold", 25)
                if result.wall > SLOW_SECONDS:
                    slow.add(config.name)  # noise is small next to its cost: run it once
                kept = best.get(config.name)
                if kept is None or result.cpu < kept.cpu:
                    best[config.name] = result
                print(f"{config.name}: {result.per_call(result.cpu) * 1e3:.2f} ms CPU / call",
                      flush=True)
    load.append(os.getloadavg()[0])
    report = render([best[c.name] for c in configs], args,
                    " → ".join(f"{x:.1f}" for x in load))
    print("\n" + report)
    if not (args.only or args.profile):
        RESULTS.mkdir(exist_ok=True)
        (RESULTS / "adapters.md").write_text(report, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
