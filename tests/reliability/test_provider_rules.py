"""Provider-rule replay: every context the engine builds, across thousands of random
transcripts with parallel, out-of-order and pending tool calls, folds that commit and
folds that fail, obeys the rules OpenAI and Anthropic enforce, and stays within budget."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable

import pytest
from _support import Transcript, chunks

from contextfold import (
    AsyncMemory,
    FixedCells,
    Message,
    MessageCount,
    Policy,
    ReportedUsage,
    StoredMessage,
    SummarizationError,
    TokenBudget,
    ToolCall,
    ValidationError,
    any_of,
    get_counter,
)
from contextfold.context import BRIDGE_TEXT, Context, build_context
from contextfold.errors import ConfigError
from contextfold.stores import MemoryStore
from contextfold.testing import ConcatSummarizer
from contextfold.testing.provider_rules import (
    anthropic_violations,
    assert_provider_rules,
    check_provider_rules,
    openai_violations,
)
from contextfold.tokens import count_message, count_messages


def _rules(msgs: list[Message], provider: str, **kw: bool) -> list[str]:
    fn = openai_violations if provider == "openai" else anthropic_violations
    return [v.rule for v in fn(msgs, **kw)]


U = Message(role="user", content="hi")
A = Message(role="assistant", content="hello")
S = Message(role="system", content="be brief")


def _call(*ids: str) -> Message:
    return Message(role="assistant", content="", tool_calls=tuple(ToolCall(i, "f") for i in ids))


def _res(cid: str) -> Message:
    return Message(role="tool", content="ok", tool_call_id=cid)


# -- the validator itself: each rule fires on its own bad case --------------------------------


def test_valid_sequences_pass_both_providers() -> None:
    for msgs in (
        [S, U, A],
        [S, S, U, U, A, A, U],
        [U, _call("a", "b"), _res("b"), _res("a"), A, U],
        [U, _call("a"), _res("a"), _call("b"), _res("b"), A],
        [U, _call("a", "b"), _res("a")],  # pending at the end is allowed by default
    ):
        assert check_provider_rules(msgs) == [], msgs
        assert_provider_rules([m.to_openai() for m in msgs])


@pytest.mark.parametrize(
    ("msgs", "openai", "anthropic"),
    [
        ([], ["empty"], ["empty"]),
        ([S], [], ["empty"]),
        ([U, _res("x")], ["orphan_tool_result"], ["orphan_tool_result", "tool_result_not_first"]),
        ([U, _call("a"), _res("a"), _res("a")], ["duplicate_tool_result"], ["orphan_tool_result"]),
        ([U, _call("a", "b"), _res("a"), U], ["unanswered_tool_call"], ["unanswered_tool_call"]),
        # Anthropic merges the two assistant messages into one turn: valid there
        ([U, _call("a"), A, _res("a")], ["unanswered_tool_call", "orphan_tool_result"], []),
        ([U, _call("a"), U, _res("a")], ["unanswered_tool_call", "orphan_tool_result"],
         ["tool_result_not_first"]),
        ([A, U], [], ["first_turn_not_user"]),
        ([U, S, A], [], ["system_placement"]),
        ([U, _call("a"), _res("a"), U, _call("a"), _res("a")], ["duplicate_tool_call_id"], []),
        ([U, Message(role="user", content="  "), A, Message(role="user", content=" "), A],
         [], ["empty_content"]),
    ],
)
def test_each_rule_detects_its_violation(msgs: list[Message], openai: list[str],
                                         anthropic: list[str]) -> None:
    assert _rules(msgs, "openai") == openai
    assert _rules(msgs, "anthropic") == anthropic
    if openai or anthropic:
        with pytest.raises(AssertionError, match="provider rules broken"):
            assert_provider_rules(msgs)


def test_pending_calls_only_when_allowed() -> None:
    msgs = [U, _call("a", "b"), _res("a")]
    assert _rules(msgs, "openai", allow_pending=False) == ["pending_tool_call"]
    assert _rules(msgs, "anthropic", allow_pending=False) == ["unanswered_tool_call"]


def test_unknown_provider_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="nope"):
        check_provider_rules([U], ["nope"])  # type: ignore[list-item]


# -- the engine fix the replay found: a fold or a trimmed view opening with the assistant --


def _stored(*msgs: Message, tokens: int = 10) -> list[StoredMessage]:
    return [StoredMessage(seq=i + 1, message=m, tokens=tokens) for i, m in enumerate(msgs)]


def test_context_after_a_fold_that_kept_an_assistant_turn_is_bridged() -> None:
    counter = get_counter("o200k")
    live = _stored(A, U, A)
    ctx = build_context(counter=counter, live=live, summary_text="they talked", system="sys")
    assert ctx.bridged and [m.role for m in ctx.messages] == ["system", "system", "user",
                                                              "assistant", "user", "assistant"]
    assert ctx.messages[2].content == BRIDGE_TEXT
    assert check_provider_rules(ctx) == []
    # the bridge is paid for: a budget that fits everything but the bridge trims instead
    tight = build_context(counter=counter, live=live, summary_text="they talked", system="sys",
                          budget=ctx.tokens - 1)
    assert tight.tokens <= ctx.tokens - 1 and check_provider_rules(tight) == []


def test_a_session_that_opens_with_a_greeting_is_left_alone() -> None:
    ctx = build_context(counter=get_counter("o200k"), live=_stored(A, U), summary_text=None)
    assert not ctx.bridged and [m.role for m in ctx.messages] == ["assistant", "user"]


def test_truncated_newest_assistant_turn_is_bridged_within_budget() -> None:
    counter = get_counter("o200k")
    big = Message(role="assistant", content="word " * 3000)
    live = [*_stored(U), StoredMessage(2, big, count_message(counter, big))]
    ctx = build_context(counter=counter, live=live, summary_text="s", budget=400)
    assert ctx.truncated and ctx.bridged and ctx.tokens <= 400
    # the tiny summary stays; the bridge comes before the cut assistant turn
    assert [m.role for m in ctx.messages if m.role != "system"] == ["user", "assistant"]
    assert check_provider_rules(ctx) == []


# -- the replay -------------------------------------------------------------------------------


def _policy(rng: random.Random) -> tuple[Policy, int | None]:
    """A random policy and the context budget to ask for (None: the policy's)."""
    kind = rng.choice(["tokens", "tokens", "count", "cells", "usage", "any"])
    if kind == "tokens":
        return TokenBudget(rng.choice([500, 900, 2000]), keep_last=rng.choice([0, 1, 2, 4])), None
    if kind == "any":
        return any_of(TokenBudget(900, keep_last=1), MessageCount(8, keep_last=2)), 900
    if kind == "usage":
        return ReportedUsage(rng.choice([300, 600])), rng.choice([None, 1500])
    budget = rng.choice([None, 700, 1500])
    if kind == "count":
        return MessageCount(rng.randint(3, 12), keep_last=rng.randint(0, 3),
                            fold=rng.choice([None, 2, 5])), budget
    return FixedCells(rng.randint(0, 6)), budget


ELISION_WORDS = "elided by contextfold"


def _text(m: Message) -> str:
    return m.text + "".join(c.arguments for c in m.tool_calls)


def _shift(cut: list[int], ctx: Context, head: int) -> set[int]:
    """Positions in the bridge-free verbatim list of the messages at ``cut``."""
    body = ctx.messages[head:]
    out = set()
    for i in cut:
        out.add(i - sum(1 for m in body[:i] if m.content == BRIDGE_TEXT))
    return out


def _key(m: Message) -> tuple[object, ...]:
    return (m.role, m.content, m.tool_calls, m.tool_call_id)


async def _replay(seed: int, tally: dict[str, int]) -> None:
    rng = random.Random(seed)
    policy, budget = _policy(rng)
    summarizer = ConcatSummarizer()
    system = "You are terse." if rng.random() < 0.5 else None
    memory = AsyncMemory(MemoryStore(), summarizer=summarizer, policy=policy, system=system,
                         tokenizer="o200k")
    gen = Transcript(rng, media=True)
    msgs = gen.messages(rng.randint(2, 14), system=rng.random() < 0.3,
                        end_pending=rng.random() < 0.3)
    sent: list[Message] = []
    for chunk in chunks(rng, msgs):
        summarizer.fail_with = SummarizationError("down") if rng.random() < 0.25 else None
        await memory.add("s", *chunk)
        sent.extend(chunk)
        try:
            ctx = await memory.context("s", max_tokens=budget)
        except ValidationError:
            tally["newest group over budget (documented ValidationError)"] += 1
            continue
        tally["contexts"] += 1
        if isinstance(policy, ReportedUsage):  # as if the model call reported its input size
            await memory.record_usage("s", ctx.tokens)
        tally["trimmed views"] += ctx.omitted > 0
        tally["truncated views"] += ctx.truncated
        tally["with summary"] += ctx.summary_included
        problems = check_provider_rules(ctx)
        if not any(m.role != "system" for m in await memory.messages("s", include_folded=False)):
            # nothing live but system messages (all folded, or only a system message sent
            # yet): an empty conversation is the caller's to complete, not a broken one
            problems = [p for p in problems if p.rule != "empty"]
        assert not problems, (seed, [str(p) for p in problems])
        # the reported size is the real size (recounted), and within the budget
        if tally["contexts"] % 4 == 0:  # recounting every context doubles the run time
            assert ctx.tokens == count_messages(memory.counter, ctx.messages), seed
        if ctx.budget is not None:
            assert ctx.tokens <= ctx.budget, (seed, ctx.tokens, ctx.budget)
        # after the head (system prompt, summary) the view is the newest messages, in order
        head = (system is not None) + ctx.summary_included
        verbatim = [_key(m) for m in ctx.messages[head:] if m.content != BRIDGE_TEXT]
        assert ctx.bridged == (len(verbatim) < len(ctx.messages) - head), seed
        tally["bridged views"] += ctx.bridged
        expected = [_key(m) for m in sent[len(sent) - len(verbatim):]]
        # messages cut in the view (elided) carry the marker and are listed in ctx.elided;
        # every other message is shown exactly as sent
        cut = [i for i, m in enumerate(ctx.messages[head:])
               if m.content != BRIDGE_TEXT and ELISION_WORDS in _text(m)]
        assert len(cut) == len(ctx.elided) and ctx.truncated == bool(cut), seed
        verbatim = [k for i, k in enumerate(verbatim) if i not in _shift(cut, ctx, head)]
        expected = [k for i, k in enumerate(expected) if i not in _shift(cut, ctx, head)]
        assert verbatim == expected, seed
    stats = await memory.stats("s")
    assert stats is not None and stats.last_seq == len(sent)
    tally["transcripts"] += 1
    tally["messages"] += len(sent)


@pytest.mark.slow
def test_every_engine_context_obeys_provider_rules(counts: Callable[[str, int, int], int]) -> None:
    n = counts("transcripts", 2000, 20000)
    tally: dict[str, int] = dict.fromkeys(
        ["transcripts", "messages", "contexts", "trimmed views", "truncated views", "bridged views",
         "with summary", "newest group over budget (documented ValidationError)"], 0)

    async def main() -> None:
        for seed in range(n):
            await _replay(seed, tally)

    asyncio.run(main())
    print("provider-rule replay:", tally)
    assert tally["contexts"] > n * 3
    assert tally["trimmed views"] > 0 and tally["with summary"] > 0
    assert tally["truncated views"] > 0 and tally["bridged views"] > 0
