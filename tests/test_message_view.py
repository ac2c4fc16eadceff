"""``Context.messages`` is read in place (no per-turn copy) yet behaves as the tuple it was,
and a context handed out never changes when the session moves on (appends, folds)."""

from __future__ import annotations

import copy
import operator
import pickle

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contextfold import Memory, Message, MessageCount, TokenBudget, ValidationError
from contextfold.message_view import MessageView


def test_view_behaves_as_a_tuple() -> None:
    m = [Message(role="user", content=str(i)) for i in range(13)]
    body = m[:10]
    head = (m[11], m[12])
    view = MessageView(head, body, 3, 7)
    body.append(m[10])  # the list grows after the view was made: the view does not
    same = (m[11], m[12], m[3], m[4], m[5], m[6])
    assert len(view) == 6 and tuple(view) == same and list(view) == list(same)
    assert view == same and same == view and view == MessageView(same, [])
    assert view != same[:-1] and view != list(same) and list(same) != view
    assert view[0] is m[11] and view[2] is m[3] and view[-1] is m[6] and view[-6] is m[11]
    assert view[1:4] == (m[12], m[3], m[4]) and isinstance(view[1:4], tuple)
    assert view[::-2] == same[::-2] and view[4:100] == (m[5], m[6])
    assert list(reversed(view)) == list(reversed(same))
    assert m[4] in view and m[7] not in view and view.index(m[5]) == 4 and view.count(m[3]) == 1
    assert operator.add(view, (m[7],)) == (*same, m[7])
    assert operator.add((m[0],), view) == (m[0], *same)
    assert repr(view) == repr(same)
    with pytest.raises(TypeError):  # as the tuple: messages are not hashable
        hash(view)
    for clone in (pickle.loads(pickle.dumps(view)), copy.deepcopy(view), copy.copy(view)):
        assert clone == same and type(clone) is tuple
    for bad in (6, -7):
        with pytest.raises(IndexError):
            view[bad]
    assert not hasattr(view, "append")
    with pytest.raises(TypeError):
        view[0] = m[0]  # type: ignore[index]


def test_context_equals_its_tuple_and_pickles() -> None:
    memory = Memory("memory://", policy=TokenBudget(4000))
    for i in range(5):
        memory.add("s", {"role": "user", "content": f"question {i}"},
                   {"role": "assistant", "content": f"answer {i}"})
    ctx = memory.context("s", system="be brief")
    assert [m.text for m in ctx.messages][:2] == ["be brief", "question 0"]
    assert ctx.messages == tuple(ctx.messages) and len(ctx) == 11
    back = pickle.loads(pickle.dumps(ctx))
    assert back == ctx and back.messages == ctx.messages and type(back.messages) is tuple
    assert repr(back) == repr(ctx)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["user", "assistant"]), st.integers(1, 60)),
                min_size=1, max_size=60),
       st.integers(0, 2), st.booleans())
def test_contexts_handed_out_never_change(turns: list[tuple[str, int]], policy: int,
                                          system: bool) -> None:
    """Every context, re-read after the session moved on (more turns, folds, smaller
    budgets that trim the view, a bridge turn), still shows exactly what it showed."""
    policies = [TokenBudget(300), MessageCount(8, fold=3), TokenBudget(10_000)]
    memory = Memory("memory://", policy=policies[policy])
    handed: list[tuple[object, tuple[object, ...]]] = []
    for i, (role, words) in enumerate(turns):
        memory.add("s", {"role": role, "content": " ".join(f"w{i}x{j}" for j in range(words))})
        for budget in (None, 120):
            try:
                ctx = memory.context("s", system="sys" if system else None, max_tokens=budget)
            except ValidationError:  # a message too large for 120 tokens
                continue
            handed.append((ctx.messages, tuple(ctx.messages)))
    for view, snapshot in handed:
        assert view == snapshot and list(view) == list(snapshot) and len(view) == len(snapshot)
        assert [view[i] for i in range(len(view))] == list(snapshot)
