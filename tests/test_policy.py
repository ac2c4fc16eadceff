"""Policies are pure: properties over random transcripts, exact thresholds."""

from __future__ import annotations

import dataclasses
from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from contextfold import (
    ConfigError,
    FixedCells,
    Idle,
    Message,
    MessageCount,
    ReportedUsage,
    SessionStats,
    TokenBudget,
    all_of,
    any_of,
)
from contextfold.messages import StoredMessage
from contextfold.policy import advance, evolve, safe_cuts

from .strategies import transcripts

NOW = datetime(2026, 1, 1, tzinfo=timezone.utc)


def stored(messages: list[Message], tokens: int = 10) -> list[StoredMessage]:
    return [StoredMessage(i + 1, m, tokens) for i, m in enumerate(messages)]


def stats_for(live: list[StoredMessage], **kw: object) -> SessionStats:
    return SessionStats(
        session_id="s",
        last_seq=len(live),
        live_count=len(live),
        live_tokens=sum(m.tokens for m in live),
        **kw,
    )  # type: ignore[arg-type]


def open_after(live: list[StoredMessage], cut: int) -> set[str]:
    pending: set[str] = set()
    for m in live[:cut]:
        if m.message.tool_call_id:
            pending.discard(m.message.tool_call_id)
        pending.update(c.id for c in m.message.tool_calls)
    return pending


@given(transcripts(), st.integers(min_value=60, max_value=600), st.integers(0, 4))
def test_token_budget_plans_are_safe_prefixes(
    messages: list[Message], budget: int, keep: int
) -> None:
    live = stored(messages)
    policy = TokenBudget(budget, keep_last=keep, summary_max_tokens=budget // 4)
    stats = stats_for(live)
    plan = policy.plan(stats, live, NOW)
    if plan is None:
        return
    assert policy.triggered(stats, NOW)
    cut = plan.hi  # seqs are 1..n, so hi is the number folded
    assert plan.lo == 1 and 1 <= cut <= len(live) - keep
    assert cut in safe_cuts(live) and not open_after(live, cut)


@given(transcripts(), st.integers(1, 10), st.integers(0, 3))
def test_message_count_and_fixed_cells_plans_are_safe(
    messages: list[Message], n: int, keep: int
) -> None:
    live = stored(messages)
    for policy in (MessageCount(n, keep_last=min(keep, n)), FixedCells(n)):
        plan = policy.plan(stats_for(live), live, NOW)
        if plan is not None:
            assert plan.hi in safe_cuts(live) and not open_after(live, plan.hi)
        elif len(live) > n and isinstance(policy, FixedCells):
            # only a tool group open from the first message on can stop FixedCells
            assert safe_cuts(live) == [0]


def test_message_count_thresholds_are_strict() -> None:
    policy = MessageCount(30, fold=20, keep_last=10, min_tokens=15_000)
    # the candidates are all but the newest keep_last: 21 of 31 messages
    for count, per_msg, fires in ((30, 800, False), (31, 714, False), (31, 715, True)):
        live = stored([Message(role="user", content="x")] * count, per_msg)
        plan = policy.plan(stats_for(live), live, NOW)
        assert (plan is not None) == fires, (count, per_msg)
        if plan:
            assert (plan.lo, plan.hi) == (1, 20)


def test_fixed_cells_folds_exactly_the_overflow() -> None:
    live = stored([Message(role="user", content=str(i)) for i in range(7)])
    plan = FixedCells(5).plan(stats_for(live), live, NOW)
    assert plan is not None and (plan.lo, plan.hi) == (1, 2)
    assert FixedCells(7).plan(stats_for(live), live, NOW) is None


def test_reported_usage_keeps_the_last_exchange() -> None:
    msgs = [Message(role=r, content="x") for r in ("user", "assistant") * 3]
    live = stored(msgs)
    policy = ReportedUsage(1000)
    assert policy.plan(stats_for(live, reported_input_tokens=1000), live, NOW) is None
    plan = policy.plan(stats_for(live, reported_input_tokens=1001), live, NOW)
    assert plan is not None and plan.hi == 4


def test_idle_folds_then_clears() -> None:
    live = stored([Message(role="user", content="x")] * 3)
    policy = Idle(fold_after=60, clear_after=120)
    busy = stats_for(live, last_activity=NOW)
    assert not policy.triggered(busy, NOW + timedelta(seconds=59))
    plan = policy.plan(busy, live, NOW + timedelta(seconds=60))
    assert plan is not None and plan.action == "fold" and plan.hi == 3
    folded = SessionStats(
        session_id="s", last_seq=3, through_seq=3, summary_version=1, last_activity=NOW
    )
    assert policy.plan(folded, [], NOW + timedelta(seconds=179)) is None
    clear = policy.plan(folded, [], NOW + timedelta(seconds=180))
    assert clear is not None and clear.action == "clear"


def test_combinators() -> None:
    live = stored([Message(role="user", content="x")] * 10, 100)
    stats = stats_for(live)
    wide = any_of(FixedCells(8), FixedCells(4)).plan(stats, live, NOW)
    narrow = all_of(FixedCells(8), FixedCells(4)).plan(stats, live, NOW)
    assert wide is not None and wide.hi == 6
    assert narrow is not None and narrow.hi == 2
    assert all_of(FixedCells(8), FixedCells(20)).plan(stats, live, NOW) is None


@pytest.mark.parametrize(
    "make",
    [
        lambda: TokenBudget(10),
        lambda: TokenBudget(1000, target=2000),
        lambda: TokenBudget(1000, summary_max_tokens=900),
        lambda: MessageCount(0),
        lambda: MessageCount(5, keep_last=6),
        lambda: FixedCells(-1),
        lambda: ReportedUsage(0),
        lambda: Idle(0),
        lambda: any_of(),
        lambda: TokenBudget(True),  # type: ignore[arg-type]
    ],
)
def test_bad_numbers_are_config_errors(make: object) -> None:
    with pytest.raises(ConfigError):
        make()  # type: ignore[operator]


@given(
    transcripts(),
    st.integers(min_value=200, max_value=2000),
    st.integers(0, 3),
    st.integers(0, 600),
    st.one_of(st.none(), st.integers(0, 3000)),
    st.integers(0, 50),
)
def test_token_budget_plans_with_the_expected_summary(
    messages: list[Message],
    budget: int,
    keep: int,
    summary_tokens: int,
    expected: int | None,
    reserved: int,
) -> None:
    """Planning with a smaller expected summary keeps more verbatim but never plans the
    context over ``target``, gives the summarizer at least ``min_fold_ratio`` × the
    re-read summary when it folds less than cap planning would, and is cap planning when
    nothing smaller is expected."""
    live = stored(messages, 25)
    policy = TokenBudget(budget, keep_last=keep)
    assert policy.target is not None and policy.summary_max_tokens is not None
    base = stats_for(live, summary_tokens=summary_tokens, summary_version=1,
                     reserved_tokens=reserved)
    stats = SessionStats(**{**{f: getattr(base, f) for f in base.__slots__},
                            "expected_summary_tokens": expected})
    capped = SessionStats(**{**{f: getattr(base, f) for f in base.__slots__},
                             "expected_summary_tokens": None})
    planned = policy.planned_summary(stats)
    assert 0 <= planned <= policy.summary_max_tokens
    allowance = policy.live_allowance(stats)
    cap_allowance = policy.live_allowance(capped)
    assert allowance >= cap_allowance
    assert reserved + planned + allowance + 3 <= policy.target  # 3: reply priming
    if expected is None or expected >= policy.summary_max_tokens:
        assert policy.plan(stats, live, NOW) == policy.plan(capped, live, NOW)
    plan, cap_plan = policy.plan(stats, live, NOW), policy.plan(capped, live, NOW)
    if plan is not None and cap_plan is not None:
        assert plan.hi <= cap_plan.hi  # never folds more than cap planning
        if plan.hi < cap_plan.hi:  # it stopped early: the summarizer still gets enough
            given = sum(m.tokens - 3 for m in live if plan.lo <= m.seq <= plan.hi)
            assert given >= policy.min_fold_ratio * summary_tokens


def test_token_budget_expected_summary_worked_example() -> None:
    """4,000 tokens, a 250-token summary expected: give the summarizer ≥ 5 × 250 (each
    25-token message gives it 22, its framing aside), barely more, and keep the rest."""
    live = stored([Message(role=("user", "assistant")[i % 2], content="x") for i in range(160)],
                  25)
    policy = TokenBudget(4000)
    stats = stats_for(live, summary_tokens=250, summary_version=1, expected_summary_tokens=250)
    plan = policy.plan(stats, live, NOW)
    capped = policy.plan(stats_for(live, summary_tokens=250, summary_version=1), live, NOW)
    assert plan is not None and capped is not None
    given = plan.count * 22
    assert 5 * 250 <= given < 5 * 250 + 2 * 22  # one message over, or two to a user turn
    assert capped.count * 25 > 4000 - 1000  # with the cap (2,400) it keeps ~1,000 only
    with pytest.raises(ConfigError):
        TokenBudget(4000, min_fold_ratio=-1)


@given(
    st.builds(
        SessionStats,
        session_id=st.text(min_size=1, max_size=5),
        last_seq=st.integers(0, 99),
        through_seq=st.integers(0, 99),
        summary_version=st.integers(0, 9),
        summary_tokens=st.integers(0, 999),
        reported_input_tokens=st.none() | st.integers(0, 999),
        reserved_tokens=st.integers(0, 99),
        expected_summary_tokens=st.none() | st.integers(0, 99),
        summary_reread_tokens=st.none() | st.integers(0, 99),
    ),
    st.integers(0, 99),
    st.tuples(st.text(max_size=3)),
)
def test_advance_is_evolve_with_the_fields_an_append_changes(
    stats: SessionStats, n: int, pending: tuple[str, ...]
) -> None:
    now = datetime(2026, 1, 1, tzinfo=timezone.utc)
    assert advance(stats, n + 1, n + 2, n + 3, pending, now) == evolve(
        stats, last_seq=n + 1, live_count=n + 2, live_tokens=n + 3, pending_calls=pending,
        last_activity=now,
    )


@given(
    st.builds(
        SessionStats,
        session_id=st.text(min_size=1, max_size=5),
        last_seq=st.integers(0, 99),
        live_count=st.integers(0, 99),
        live_tokens=st.integers(0, 999),
        through_seq=st.integers(0, 99),
        summary_version=st.integers(0, 9),
        summary_tokens=st.integers(0, 999),
        pending_calls=st.tuples(st.text(max_size=3)),
        last_activity=st.none() | st.just(datetime(2026, 1, 1, tzinfo=timezone.utc)),
        reported_input_tokens=st.none() | st.integers(0, 999),
        reserved_tokens=st.integers(0, 99),
        expected_summary_tokens=st.none() | st.integers(0, 99),
        summary_reread_tokens=st.none() | st.integers(0, 99),
    ),
    st.integers(1000, 2000),
)
def test_evolved_stats_are_the_dataclass_built_anew(stats: SessionStats, n: int) -> None:
    """evolve and advance build SessionStats without its constructor: every field lands
    where the constructor puts it, and the result is as frozen, equal and hashable."""
    assert evolve(stats) == stats and hash(evolve(stats)) == hash(stats)
    assert repr(evolve(stats)) == repr(stats)
    names = [f.name for f in dataclasses.fields(SessionStats)]
    for i, name in enumerate(names):  # each field on its own: a swapped pair shows
        value: object = f"s{n + i}" if name == "session_id" else n + i
        assert evolve(stats, **{name: value}) == dataclasses.replace(stats, **{name: value})
    with pytest.raises(dataclasses.FrozenInstanceError):
        evolve(stats).last_seq = 1  # type: ignore[misc]


@given(st.integers(200, 5000), st.integers(0, 6000), st.integers(0, 900), st.integers(0, 300))
def test_a_token_budget_fires_exactly_above_its_live_limit(
    budget: int, live: int, summary: int, reserved: int
) -> None:
    policy = TokenBudget(budget)
    stats = SessionStats("s", live_tokens=live, summary_tokens=summary, reserved_tokens=reserved)
    now = datetime(2026, 1, 1, tzinfo=timezone.utc)
    assert policy.triggered(stats, now) == (live > policy.live_limit(stats))
