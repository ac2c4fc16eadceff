"""Stateful model test: random sequences of appends (with client ids and retries),
parallel tool calls and their results, folds that commit, folds that fail, appends that
land while a fold's summarizer is running, and reopening the store — checked after every
step against a plain reference model of what the session and its context must contain.
Runs on MemoryStore, SQLiteStore and PostgresStore (marked ``postgres``)."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from conftest import StoreFactory
from contextfold import AsyncMemory, Message, MessageCount, SummarizationError, ToolCall
from contextfold.context import BRIDGE_TEXT, SUMMARY_HEADER
from contextfold.stores.base import Retention, Store
from contextfold.summarizers.base import SummaryRequest, SummaryResult
from contextfold.testing import check_invariant
from contextfold.testing.provider_rules import check_provider_rules

KEEP_LAST = 2  # the policy's: a forced fold keeps them too
SID = "s"


class ScriptedSummarizer:
    """``seq:role`` tags of everything folded (like ConcatSummarizer, untrimmed); can be
    told to fail, or to hold inside the call until released."""

    name = "scripted"

    def __init__(self) -> None:
        self.fail = False
        self.entered: asyncio.Event | None = None
        self.release: asyncio.Event | None = None

    async def summarize(self, request: SummaryRequest) -> SummaryResult:
        if self.entered is not None and self.release is not None:
            self.entered.set()
            await self.release.wait()
        if self.fail:
            raise SummarizationError("scripted failure")
        tags = request.previous.split()[-20:] + [f"{m.seq}:{m.role}" for m in request.messages]
        return SummaryResult(" ".join(tags), calls=1)


@dataclass
class Model:
    """What must be true: every message ever accepted, in seq order; the fold cursor."""

    messages: list[Message] = field(default_factory=list)
    through: int = 0
    ids: dict[str, int] = field(default_factory=dict)
    next_call: int = 0

    @property
    def pending(self) -> list[str]:
        open_calls: list[str] = []
        for m in self.messages:
            if m.role == "tool":
                open_calls.remove(m.tool_call_id or "")
            elif m.tool_calls:
                open_calls = [c.id for c in m.tool_calls]
        return open_calls

    def last_safe_cut(self) -> int:
        """The seq a forced fold folds through: the last point with no call open that
        leaves the policy's newest ``KEEP_LAST`` messages live."""
        cut, open_calls = self.through, set[str]()
        for seq in range(self.through + 1, len(self.messages) + 1):
            m = self.messages[seq - 1]
            if m.role == "tool":
                open_calls.discard(m.tool_call_id or "")
            open_calls.update(c.id for c in m.tool_calls)
            if not open_calls and seq <= len(self.messages) - KEEP_LAST:
                cut = seq
        return cut

    def accept(self, msgs: list[Message]) -> tuple[int, ...]:
        seqs = []
        for m in msgs:
            if m.id is not None and m.id in self.ids:
                seqs.append(self.ids[m.id])
                continue
            self.messages.append(m)
            seqs.append(len(self.messages))
            if m.id is not None:
                self.ids[m.id] = len(self.messages)
        return tuple(seqs)


def _key(m: Message) -> tuple[Any, ...]:
    return (m.role, m.content, m.tool_calls, m.tool_call_id, m.id)


class MemoryMachine(RuleBasedStateMachine):
    factory: StoreFactory  # set by the test function
    retention: Retention = "archive"
    tally: ClassVar[Counter[str]] = Counter()

    def __init__(self) -> None:
        super().__init__()
        self.loop = asyncio.new_event_loop()
        self.key, store = self.factory.new(self.retention)
        self.summarizer = ScriptedSummarizer()
        self.memory = self._memory(store)
        self.model = Model()
        self.n = 0

    def _memory(self, store: Store) -> AsyncMemory:
        return AsyncMemory(store, summarizer=self.summarizer, fold="manual",
                           policy=MessageCount(6, keep_last=KEEP_LAST), tokenizer="approx")

    def run(self, coro: Any) -> Any:
        return self.loop.run_until_complete(coro)

    def teardown(self) -> None:
        self.run(self.memory.close())
        self.loop.close()

    # -- rules --------------------------------------------------------------------------------

    def _text(self, role: str, with_id: bool) -> Message:
        self.n += 1
        return Message(role=role, content=f"{role} says {self.n}",  # type: ignore[arg-type]
                       id=f"id{self.n}" if with_id else None)

    @precondition(lambda self: not self.model.pending)
    @rule(roles=st.lists(st.sampled_from(["user", "assistant"]), min_size=1, max_size=3),
          with_ids=st.booleans())
    def append(self, roles: list[str], with_ids: bool) -> None:
        msgs = [self._text(r, with_ids) for r in roles]
        assert self.run(self.memory.add(SID, *msgs)).seqs == self.model.accept(msgs)

    @precondition(lambda self: bool(self.model.ids))
    @rule(data=st.data())
    def retry_acknowledged_append(self, data: st.DataObject) -> None:
        mid = data.draw(st.sampled_from(sorted(self.model.ids)))
        original = self.model.messages[self.model.ids[mid] - 1]
        result = self.run(self.memory.add(SID, original))
        assert result.seqs == (self.model.ids[mid],) and result.duplicates == 1
        self.tally["retries not duplicated"] += 1

    @precondition(lambda self: not self.model.pending)
    @rule(k=st.integers(1, 3))
    def append_tool_calls(self, k: int) -> None:
        calls = []
        for _ in range(k):
            self.model.next_call += 1
            calls.append(ToolCall(f"call_{self.model.next_call}", "lookup", '{"q": 1}'))
        msg = Message(role="assistant", content="", tool_calls=tuple(calls))
        assert self.run(self.memory.add(SID, msg)).seqs == self.model.accept([msg])

    @precondition(lambda self: bool(self.model.pending))
    @rule(data=st.data())
    def tool_results(self, data: st.DataObject) -> None:
        pending = self.model.pending
        chosen = data.draw(st.lists(st.sampled_from(pending), min_size=1, unique=True))
        msgs = [Message(role="tool", content=f"result {c}", tool_call_id=c) for c in chosen]
        assert self.run(self.memory.add(SID, *msgs)).seqs == self.model.accept(msgs)

    @rule(force=st.booleans())
    def fold(self, force: bool) -> None:
        outcome = self.run(self.memory.fold(SID, force=force))
        if force:
            expected = self.model.last_safe_cut()
            assert outcome.status == ("committed" if expected > self.model.through else "skipped")
        if outcome.status == "committed":
            assert outcome.lo == self.model.through + 1
            assert self.model.through < outcome.hi <= self.model.last_safe_cut()
            self.model.through = outcome.hi
            self.tally["folds committed"] += 1

    @rule()
    def fold_that_fails(self) -> None:
        self.summarizer.fail = True
        try:
            outcome = self.run(self.memory.fold(SID, force=True))
        finally:
            self.summarizer.fail = False
        assert outcome.status in ("failed", "skipped")
        self.tally[f"failing folds {outcome.status}"] += 1

    @precondition(lambda self: not self.model.pending)
    @rule(roles=st.lists(st.sampled_from(["user", "assistant"]), min_size=1, max_size=3))
    def append_during_fold(self, roles: list[str]) -> None:
        planned = self.model.last_safe_cut()

        async def go() -> Any:
            self.summarizer.entered, self.summarizer.release = asyncio.Event(), asyncio.Event()
            try:
                task = asyncio.create_task(self.memory.fold(SID, force=True))
                entered = asyncio.create_task(self.summarizer.entered.wait())
                await asyncio.wait([task, entered], return_when=asyncio.FIRST_COMPLETED)
                entered.cancel()
                msgs = [self._text(r, True) for r in roles]
                assert (await self.memory.add(SID, *msgs)).seqs == self.model.accept(msgs)
                self.summarizer.release.set()
                return await task
            finally:
                self.summarizer.entered = self.summarizer.release = None

        outcome = self.run(go())
        if planned > self.model.through:
            assert outcome.status == "committed" and outcome.hi == planned, outcome
            self.model.through = planned
            self.tally["appends during a committed fold"] += 1
        else:
            assert outcome.status == "skipped"

    @precondition(lambda self: self.factory.kind != "memory")
    @rule()
    def reopen(self) -> None:
        self.run(self.memory.close())
        self.memory = self._memory(self.factory.reopen(self.key))
        self.tally["reopens"] += 1

    # -- the reference model ----------------------------------------------------------------

    @invariant()
    def agrees_with_the_model(self) -> None:
        self.run(self._check())

    async def _check(self) -> None:
        memory, model = self.memory, self.model
        self.tally["model checks"] += 1
        stats = await memory.stats(SID)
        if not model.messages:
            assert stats is None
            return
        assert stats is not None
        assert (stats.last_seq, stats.through_seq) == (len(model.messages), model.through)
        assert list(stats.pending_calls) == model.pending
        stored = await memory.messages(SID)
        kept = model.messages if self.retention == "archive" else model.messages[model.through:]
        first = len(model.messages) - len(kept) + 1
        assert [m.seq for m in stored] == list(range(first, len(model.messages) + 1))
        assert [_key(m.message) for m in stored] == [_key(m) for m in kept]
        assert [m.folded for m in stored] == [m.seq <= model.through for m in stored]
        await check_invariant(memory.store, SID)
        summary = await memory.summary(SID)
        if model.through:
            assert summary is not None and summary.through_seq == model.through
            last = model.messages[model.through - 1]
            assert summary.text.split()[-1] == f"{model.through}:{last.role}"
        else:
            assert summary is None
        # the context: summary block, then every live message verbatim (no budget here)
        ctx = await memory.context(SID)
        body = [m for m in ctx.messages if not (m.role == "user" and m.content == BRIDGE_TEXT)]
        live = model.messages[model.through:]
        if model.through:
            assert body[0].role == "system" and str(body[0].content).startswith(SUMMARY_HEADER)
            body = body[1:]
        assert [_key(m) for m in body] == [_key(m) for m in live]
        assert ctx.bridged == bool(model.through and live and live[0].role == "assistant")
        rules = [v for v in check_provider_rules(ctx) if v.rule != "empty"]
        if model.messages[0].role == "user" or model.through:
            assert not rules, rules
        else:  # the session itself opened with the assistant: only that may be reported
            assert {v.rule for v in rules} <= {"first_turn_not_user"}


@pytest.mark.parametrize("retention", ["archive", "delete"])
def test_memory_agrees_with_the_reference_model(
    stores: StoreFactory, retention: Retention, counts: Callable[[str, int, int], int]
) -> None:
    examples = counts(f"state machine runs ({stores.kind}, {retention})",
                      40 if stores.kind == "memory" else 20, 500)
    MemoryMachine.factory, MemoryMachine.retention = stores, retention
    run = MemoryMachine.TestCase
    run.settings = settings(max_examples=examples, stateful_step_count=30, deadline=None,
                            database=None, suppress_health_check=[HealthCheck.too_slow])
    MemoryMachine.tally = Counter()
    run().runTest()
    print(f"state machine on {stores.kind} ({retention}): {dict(MemoryMachine.tally)}")
    assert MemoryMachine.tally["appends during a committed fold"] > 0
    assert MemoryMachine.tally["failing folds failed"] > 0
