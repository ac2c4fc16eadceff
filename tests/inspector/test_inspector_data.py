"""The inspector's pure computations against brute force (hypothesis)."""

from __future__ import annotations

import itertools

from hypothesis import given
from hypothesis import strategies as st

from contextfold.server.inspector_data import (
    context_series,
    covering_version,
    fold_markers,
    needed_from,
    word_diff,
)
from contextfold.stores.base import SummaryVersion


@st.composite
def sessions(draw: st.DrawFn) -> tuple[dict[int, int], list[SummaryVersion]]:
    """Message tokens 1..n and a valid fold history over them."""
    n = draw(st.integers(1, 60))
    tokens = {s: draw(st.integers(0, 50)) for s in range(1, n + 1)}
    versions: list[SummaryVersion] = []
    through, at = 0, 1
    while through < n and draw(st.booleans()):
        at = draw(st.integers(max(at, through + 1), n))
        hi = draw(st.integers(through + 1, at))
        live = sum(tokens[s] for s in range(hi + 1, at + 1))
        versions.append(SummaryVersion("s", len(versions) + 1, through + 1, hi, at,
                                       draw(st.integers(1, 40)), live, None))
        through = hi
    return tokens, versions


def brute(tokens: dict[int, int], versions: list[SummaryVersion], seq: int) -> int:
    active = [v for v in versions if v.at_seq <= seq]
    through = active[-1].through_seq if active else 0
    summary = active[-1].tokens if active else 0
    return summary + sum(tokens[s] for s in range(through + 1, seq + 1))


@given(sessions(), st.data())
def test_series_is_the_brute_force_context(session: tuple[dict[int, int], list[SummaryVersion]],
                                           data: st.DataObject) -> None:
    tokens, versions = session
    n = max(tokens)
    first = data.draw(st.integers(1, n))
    start = needed_from(versions, first)
    window = {s: t for s, t in tokens.items() if s >= start}  # what the route fetches
    points = context_series(window, versions, list(range(first, n + 1)))
    assert [p.context_tokens for p in points] == [brute(tokens, versions, s)
                                                  for s in range(first, n + 1)]
    assert [p.stored_tokens for p in points] == [p.context_tokens for p in points]
    # a deleted message makes the points that need it unknown, never wrong
    if len(window) > 1:
        gone = data.draw(st.sampled_from(sorted(window)))
        partial = {s: t for s, t in window.items() if s != gone}
        for p in context_series(partial, versions, list(range(first, n + 1))):
            assert p.context_tokens in (None, brute(tokens, versions, p.seq))


def brute_received(tokens: dict[int, int], versions: list[SummaryVersion], seq: int,
                   budget: int) -> int:
    """The summary and the newest whole live messages that fit the budget."""
    active = [v for v in versions if v.at_seq <= seq]
    through = active[-1].through_seq if active else 0
    total = active[-1].tokens if active else 0
    if total > budget:
        return budget
    for s in range(seq, through, -1):
        if total + tokens[s] > budget:
            break
        total += tokens[s]
    return total


@given(sessions(), st.integers(1, 400), st.data())
def test_received_context_is_never_over_the_budget(
        session: tuple[dict[int, int], list[SummaryVersion]], budget: int,
        data: st.DataObject) -> None:
    """What the model received is the summary and the newest live messages that fit the
    budget; what was stored is everything, over the budget while messages wait to fold."""
    tokens, versions = session
    n = max(tokens)
    first = data.draw(st.integers(1, n))
    window = {s: t for s, t in tokens.items() if s >= needed_from(versions, first)}
    for p in context_series(window, versions, list(range(first, n + 1)), budget):
        assert p.stored_tokens == brute(tokens, versions, p.seq)
        assert p.context_tokens == brute_received(tokens, versions, p.seq, budget)
        assert p.context_tokens is not None and p.context_tokens <= budget
        assert p.context_tokens <= p.stored_tokens


@given(sessions())
def test_markers_and_covering_versions(session: tuple[dict[int, int], list[SummaryVersion]]
                                       ) -> None:
    tokens, versions = session
    for v, m in zip(versions, fold_markers(tokens, versions), strict=True):
        previous = [w for w in versions if w.version < v.version]
        prev_through = previous[-1].through_seq if previous else 0
        prev_tokens = previous[-1].tokens if previous else 0
        assert m.before_tokens == prev_tokens + sum(
            tokens[s] for s in range(prev_through + 1, v.at_seq + 1))
        assert m.after_tokens == brute(tokens, [*previous, v], v.at_seq)
    for seq in tokens:
        version = covering_version(versions, seq)
        expected = next((v.version for v in versions if v.lo <= seq <= v.through_seq), None)
        assert version == expected


@given(st.text(), st.text())
def test_word_diff_rebuilds_both_sides(before: str, after: str) -> None:
    ops = word_diff(before, after)
    assert "".join(o.text for o in ops if o.op != "insert") == before
    assert "".join(o.text for o in ops if o.op != "delete") == after
    assert all(a.op != b.op for a, b in itertools.pairwise(ops))
