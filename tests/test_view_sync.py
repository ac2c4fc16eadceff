"""A session's view after a fold (ViewCache drops the folded messages in place) is the
view a fresh rebuild from the live messages gives: same contexts for every budget."""

from __future__ import annotations

import json
from contextlib import suppress
from dataclasses import replace
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from contextfold.context import LiveView, build_context
from contextfold.errors import ValidationError
from contextfold.masking import Masking
from contextfold.messages import Message, StoredMessage
from contextfold.policy import SessionStats
from contextfold.tokens import count_message, get_counter
from contextfold.view_cache import ViewCache, shown_sizes

from .strategies import transcripts

COUNTER = get_counter("approx")


def stored(messages: list[Message], first: int = 1) -> list[StoredMessage]:
    return [StoredMessage(first + i, m, count_message(COUNTER, m)) for i, m in enumerate(messages)]


_MASKINGS = st.none() | st.builds(
    Masking, keep=st.integers(0, 3), keep_call_args=st.booleans(),
    trigger_tokens=st.none() | st.integers(0, 300), fact_chars=st.sampled_from([40, 320]),
)


@settings(max_examples=200, deadline=None)
@given(transcripts(max_turns=30), _MASKINGS, st.data())
def test_a_view_after_a_fold_builds_what_a_rebuild_builds(
    messages: list[Message], masking: Masking | None, data: Any
) -> None:
    if masking is not None and data.draw(st.booleans()):  # results large enough to mask
        messages = [replace(m, content=json.dumps({"id": f"R-{i}", "rows": ["v"] * 80}))
                    if m.role == "tool" else m for i, m in enumerate(messages)]
    live = stored(messages)
    seen = data.draw(st.integers(1, len(live)))  # the view was built on live[:seen]
    cache = ViewCache(COUNTER, masking)
    # with masking, the view shown before the fold made stand-ins (settled) up to here
    with suppress(ValidationError):  # a newest call too large to show: settled all the same
        cache.build("s", live[:seen], summary_text=None, budget=data.draw(st.sampled_from(
            [None, 60, 200, 1000])) if masking is not None else None)
    view = cache._get("s")
    assert view is not None
    # folded: live[:k]. A fold cuts where no call is open; with masking only there (a
    # stand-in made while its call was live names the call's tool, a rebuild without the
    # call cannot: the engine never folds a call and keeps its result)
    cuts = st.sampled_from(view[1]._cuts)
    k = data.draw(cuts if masking is not None else cuts | st.integers(0, seen))
    after_fold = live[k:]  # what the store returns next: maybe with new messages
    summary = data.draw(st.none() | st.just("earlier turns, summarised"))
    for budget in (None, 60, 200, 1000):
        try:
            want: object = build_context(counter=COUNTER, live=after_fold, summary_text=summary,
                                         budget=budget, masking=masking)
        except Exception as exc:  # the same error either way
            want = type(exc)
        try:
            got: object = cache.build("s", after_fold, summary_text=summary, budget=budget)
        except Exception as exc:
            got = type(exc)
        assert got == want
    if after_fold:  # the fold check sees the masked size a rebuild would give
        want_tokens = sum(m.tokens for m in after_fold) if masking is None else _masked(
            after_fold, masking)
        assert cache.masked_stats("s", _stats(after_fold)).live_tokens == want_tokens
    fresh = LiveView(COUNTER, masking)
    fresh.sync(after_fold)
    mine = view[1]
    for name in ("_full", "_cuts", "_user_cuts", "_group", "_calls", "_call_for", "_last_tool",
                 "_open", "_orig", "_tools"):
        assert getattr(mine, name) == getattr(fresh, name), name
    assert mine.items == fresh.items
    assert cache.masked_plan_input("s", _stats(after_fold), after_fold)[1] == (
        ViewCache(COUNTER, masking).masked_plan_input("s", _stats(after_fold), after_fold)[1])
    n = len(mine._shown)  # the forms settled before the fold, re-based: as a rebuild makes them
    fresh._boundary()
    while len(fresh._shown) < n:
        fresh._settle(len(fresh._shown))
    assert mine._shown == fresh._shown[:n]
    assert mine._view == fresh._view[: n + 1] and mine._nmask == fresh._nmask[: n + 1]


def _stats(live: list[StoredMessage]) -> SessionStats:
    return SessionStats(session_id="s", last_seq=live[-1].seq if live else 0,
                        through_seq=live[0].seq - 1 if live else 0,
                        live_tokens=sum(m.tokens for m in live), live_count=len(live))


def _masked(live: list[StoredMessage], masking: Masking) -> int:
    fresh = LiveView(COUNTER, masking)
    fresh.sync(live)
    return shown_sizes(fresh, None)[3]


def test_the_fast_context_constructor_makes_what_the_dataclass_makes() -> None:
    from dataclasses import fields

    from contextfold.context import Context, _new_context

    values = {f.name: i for i, f in enumerate(fields(Context))}
    fast, slow = _new_context(**values), Context(**values)  # type: ignore[arg-type]
    assert fast == slow and repr(fast) == repr(slow) and vars(fast) == vars(slow)
    assert not hasattr(Context, "__post_init__")  # nothing the fast path would skip
