"""A session's view after a fold (ViewCache drops the folded messages in place) is the
view a fresh rebuild from the live messages gives: same contexts for every budget."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from contextfold.context import LiveView, build_context
from contextfold.messages import Message, StoredMessage
from contextfold.tokens import count_message, get_counter
from contextfold.view_cache import ViewCache

from .strategies import transcripts

COUNTER = get_counter("approx")


def stored(messages: list[Message], first: int = 1) -> list[StoredMessage]:
    return [StoredMessage(first + i, m, count_message(COUNTER, m)) for i, m in enumerate(messages)]


@settings(max_examples=200, deadline=None)
@given(transcripts(max_turns=30), st.data())
def test_a_view_after_a_fold_builds_what_a_rebuild_builds(
    messages: list[Message], data: Any
) -> None:
    live = stored(messages)
    seen = data.draw(st.integers(1, len(live)))  # the view was built on live[:seen]
    cache = ViewCache(COUNTER, None)
    cache.build("s", live[:seen], summary_text=None)
    view = cache._get("s")
    assert view is not None
    k = data.draw(st.sampled_from(view[1]._cuts) | st.integers(0, seen))  # folded: live[:k]
    after_fold = live[k:]  # what the store returns next: maybe with new messages
    summary = data.draw(st.none() | st.just("earlier turns, summarised"))
    for budget in (None, 60, 200, 1000):
        try:
            want: object = build_context(counter=COUNTER, live=after_fold, summary_text=summary,
                                         budget=budget)
        except Exception as exc:  # the same error either way
            want = type(exc)
        try:
            got: object = cache.build("s", after_fold, summary_text=summary, budget=budget)
        except Exception as exc:
            got = type(exc)
        assert got == want
    fresh = LiveView(COUNTER)
    fresh.sync(after_fold)
    mine = view[1]
    for name in ("_full", "_cuts", "_user_cuts", "_group", "_calls", "_call_for", "_last_tool",
                 "_open", "_orig"):
        assert getattr(mine, name) == getattr(fresh, name), name
    assert mine.items == fresh.items


def test_the_fast_context_constructor_makes_what_the_dataclass_makes() -> None:
    from dataclasses import fields

    from contextfold.context import Context, _new_context

    values = {f.name: i for i, f in enumerate(fields(Context))}
    fast, slow = _new_context(**values), Context(**values)  # type: ignore[arg-type]
    assert fast == slow and repr(fast) == repr(slow) and vars(fast) == vars(slow)
    assert not hasattr(Context, "__post_init__")  # nothing the fast path would skip
