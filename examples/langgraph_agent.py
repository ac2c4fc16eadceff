# Install: pip install "contextfold[langchain]"
"""A hand-built LangGraph agent whose memory folds at the context limit and when idle.

The same use case as ``agent_autofold.py``, on real LangGraph: a ``StateGraph`` with an
agent node and a ``ToolNode``, a checkpointer, and contextfold's ``ContextFold`` helper
between the graph state and the model. Settings come from a YAML file
(``examples/langgraph_agent.yaml``). After every model response the provider-reported
``usage_metadata`` input tokens are recorded: over ``context_limit_tokens`` everything but
the last exchange is folded. Idle for ``timeout_summarize_seconds``: everything is folded;
still idle ``timeout_clear_seconds`` later: the session is cleared — and the thread is
deleted from the checkpointer with it. New activity cancels the clear.

Offline by default: the agent is a scripted chat model that calls a tool, then answers,
and reports usage like a provider. Use your own model by replacing ``ScriptedModel()``
with e.g. ``init_chat_model("openai:gpt-4o-mini")``; ``--model`` picks the summarizer.
The idle timers run on simulated time (an hour passes in a moment)::

    python examples/langgraph_agent.py
    python examples/langgraph_agent.py --settings my.yaml --model openai:gpt-4o-mini
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

try:
    from langchain_core.language_models.chat_models import BaseChatModel
    from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
    from langchain_core.outputs import ChatGeneration, ChatResult
    from langchain_core.runnables import RunnableConfig
    from langchain_core.tools import tool
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.graph import START, MessagesState, StateGraph
    from langgraph.prebuilt import ToolNode, tools_condition
except ImportError:  # the one line to act on, not a traceback
    raise SystemExit('this example needs LangGraph: pip install "contextfold[langchain]"'
                     ) from None

from contextfold import AsyncMemory, FoldOutcome
from contextfold.idle import IdleScheduler
from contextfold.integrations.langgraph import ContextFold
from contextfold.settings import AgentSettings
from contextfold.testing import FakeClock

HERE = Path(__file__).resolve().parent
THREAD = "build-agent"
SYSTEM = "You are a build-fixing agent. Inspect jobs with inspect_job before answering."
STEPS = [
    ("Check why the nightly build failed.", 1182),
    ("Look at the test log of the integration job.", 1183),
    ("Retry the flaky integration test with more memory.", 1184),
    ("Compare the Docker image sizes of the last two builds.", 1185),
    ("Draft a fix for the out-of-memory error in the packer step.", 1186),
    ("Open a pull request with the fix.", 1187),
]


@tool
def inspect_job(job: int) -> str:
    """Inspect a CI job: status, peak memory, duration and image size."""
    return json.dumps({"job": job, "status": "failed" if job % 2 == 0 else "passed",
                       "peak_memory_gb": 7.8, "limit_gb": 8, "duration_s": 600,
                       "image_gb": 1.9, "log_tail": "packer: killed (out of memory)"})


class ScriptedModel(BaseChatModel):
    """Offline stand-in for a chat model: asks for ``inspect_job``, then answers; reports
    ``usage_metadata`` (input tokens ≈ characters / 4) as a provider would."""

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(self, tools: Any, **kwargs: Any) -> ScriptedModel:  # type: ignore[override]
        return self

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None,
                  **kwargs: Any) -> ChatResult:
        size = sum(len(str(m.content)) for m in messages) // 4
        usage = {"input_tokens": size, "output_tokens": 40, "total_tokens": size + 40}
        last = messages[-1]
        if isinstance(last, ToolMessage):
            data = json.loads(str(last.content))
            reply = AIMessage(
                content=f"Job {data['job']} {data['status']}: peak memory {data['peak_memory_gb']}"
                        f" GB of {data['limit_gb']} GB, {data['duration_s']} s, image "
                        f"{data['image_gb']} GB. Next I will keep the plan and report back.",
                usage_metadata=usage)
        else:
            job = next((j for s, j in STEPS if s == last.content), 1188)
            reply = AIMessage(content="", usage_metadata=usage, tool_calls=[
                {"name": "inspect_job", "args": {"job": job}, "id": f"call_{job}",
                 "type": "tool_call"}])
        return ChatResult(generations=[ChatGeneration(message=reply)])


def build_graph(fold: ContextFold, model: BaseChatModel, checkpointer: Any) -> Any:
    tools = [inspect_job]
    bound = model.bind_tools(tools)

    async def agent(state: MessagesState, config: RunnableConfig) -> dict[str, Any]:
        messages = await fold.amessages(state["messages"], config, system=SYSTEM, tools=tools)
        response = await bound.ainvoke(messages)
        await fold.arecord(response, config)  # stores it, feeds usage_metadata
        return {"messages": [response]}

    builder = StateGraph(MessagesState)
    builder.add_node("agent", agent)
    builder.add_node("tools", ToolNode(tools))
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", tools_condition)
    builder.add_edge("tools", "agent")
    return builder.compile(checkpointer=checkpointer)


async def demo(args: argparse.Namespace, settings: AgentSettings) -> None:
    clock = FakeClock(datetime.now(timezone.utc))
    memory = AsyncMemory(args.db, clock=clock.now, **settings.options(model=args.model))
    checkpointer = InMemorySaver()

    def on_outcome(outcome: FoldOutcome) -> None:
        if outcome.status == "cleared":  # the thread goes with the session
            checkpointer.delete_thread(outcome.session_id)

    timers = IdleScheduler(memory, sleep=clock.sleep, on_outcome=on_outcome)
    fold = ContextFold(memory)
    graph = build_graph(fold, ScriptedModel(), checkpointer)
    config = {"configurable": {"thread_id": THREAD}}
    print(f"settings: {settings}\n")
    try:
        for step, _ in STEPS:
            folds = (await memory.usage(THREAD)).folds
            state = await graph.ainvoke({"messages": [HumanMessage(step)]}, config)
            await timers.touch(THREAD)  # activity: (re)arm the idle timers
            reported = state["messages"][-1].usage_metadata["input_tokens"]
            note = ""
            if (await memory.usage(THREAD)).folds > folds:
                note = f" -> over {settings.context_limit_tokens}: folded, kept the last exchange"
            stats = await memory.stats(THREAD)
            print(f"step: {step!r}: provider reported {reported} input tokens; "
                  f"{stats.live_count if stats else 0} live messages{note}")
            clock.advance(60)
        summary = await memory.summary(THREAD)
        print(f"\nsummary the model now receives:\n{summary.text if summary else '(none)'}\n")

        print(f"next idle timer: {timers.due(THREAD):%H:%M:%S} (simulated clock)")
        clock.advance(settings.timeout_summarize_seconds)
        for outcome in await timers.run_due():
            print(f"idle {settings.timeout_summarize_seconds:g} s: {outcome.status}, "
                  f"{outcome.messages_folded} messages folded")
        clock.advance(settings.timeout_clear_seconds / 2)
        await graph.ainvoke({"messages": [HumanMessage("Any news on the PR?")]}, config)
        await timers.touch(THREAD)
        print(f"new activity: the pending clear is cancelled; next timer "
              f"{timers.due(THREAD):%H:%M:%S}")
        clock.advance(settings.timeout_summarize_seconds)
        for outcome in await timers.run_due():
            print(f"idle again: {outcome.status}")
        clock.advance(settings.timeout_clear_seconds)
        for outcome in await timers.run_due():
            print(f"idle {settings.timeout_clear_seconds:g} s more: {outcome.status}")
        left = await graph.aget_state(config)
        print(f"session exists: {await memory.stats(THREAD) is not None}; "
              f"checkpointed messages: {len(left.values.get('messages', []))}")
    finally:
        await timers.stop()
        await memory.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--settings", type=Path, default=HERE / "langgraph_agent.yaml",
                        help="YAML settings file (default: examples/langgraph_agent.yaml)")
    parser.add_argument("--model", help="summarizer model, e.g. openai:gpt-4o-mini "
                        "(default: the settings' model, else the offline summarizer)")
    parser.add_argument("--db", help="store URL (default: a temporary SQLite file)")
    args = parser.parse_args(argv)
    settings = AgentSettings.load(args.settings)
    args.model = args.model or settings.model
    with tempfile.TemporaryDirectory() as tmp:
        args.db = args.db or f"sqlite:///{Path(tmp) / 'agent.db'}"
        asyncio.run(demo(args, settings))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
