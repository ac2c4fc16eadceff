"""Agent turns in the view: elision of oversized tool results and batches, observation
masking with stand-ins, and the incremental view (same context as a fresh build)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contextfold import Message, ToolCall
from contextfold.context import Context, LiveView, build_context
from contextfold.errors import ConfigError
from contextfold.masking import STAND_IN_PREFIX, Masking
from contextfold.messages import StoredMessage
from contextfold.testing.provider_rules import check_provider_rules
from contextfold.tokens import count_message, count_messages, get_counter

COUNTER = get_counter("o200k")


def stored(messages: list[Message], first: int = 1) -> list[StoredMessage]:
    return [StoredMessage(first + i, m, count_message(COUNTER, m)) for i, m in enumerate(messages)]


def call(cid: str, name: str = "run_tests", args: str = '{"path": "tests"}') -> ToolCall:
    return ToolCall(cid, name, args)


def log(lines: int, tag: str = "line") -> str:
    body = "\n".join(f"{tag} {i}: compiling module_{i}.py ok" for i in range(lines))
    return f"HEAD-MARK build started\n{body}\nKeyError: 'max_tokens' TAIL-MARK"


def check(ctx: Context) -> None:
    assert ctx.budget is None or ctx.tokens <= ctx.budget
    assert ctx.tokens == count_messages(COUNTER, ctx.messages)
    assert check_provider_rules(ctx) == []


# -- elision -------------------------------------------------------------------------------


def test_one_oversized_tool_result_is_elided_head_and_tail_not_raised() -> None:
    msgs = [
        Message(role="user", content="Run the tests."),
        Message(role="assistant", tool_calls=(call("c1"),)),
        Message(role="tool", tool_call_id="c1", content=log(3000)),
    ]
    live = stored(msgs)
    assert live[2].tokens > 20_000
    ctx = build_context(counter=COUNTER, live=live, summary_text=None, budget=1000)
    check(ctx)
    assert ctx.elided == (3,) and ctx.truncated
    result = ctx.messages[-1]
    assert result.role == "tool" and result.tool_call_id == "c1"
    assert result.text.startswith("HEAD-MARK") and result.text.endswith("TAIL-MARK")
    assert "elided by contextfold" in result.text and "stored as seq 3" in result.text
    assert ctx.messages[-2].tool_calls == (call("c1"),)  # the call is shown whole


def test_parallel_batch_over_budget_together_keeps_every_result_with_a_fair_share() -> None:
    calls = tuple(call(f"c{i}", "read_file", f'{{"path": "f{i}.py"}}') for i in range(4))
    msgs = [Message(role="user", content="Read the four files."),
            Message(role="assistant", tool_calls=calls)]
    msgs += [Message(role="tool", tool_call_id=f"c{i}", content=log(120, f"f{i}"))
             for i in range(4)]
    live = stored(msgs)
    assert sum(m.tokens for m in live[2:]) > 4000 and all(m.tokens < 1500 for m in live[2:])
    ctx = build_context(counter=COUNTER, live=live, summary_text=None, budget=1500)
    check(ctx)
    results = [m for m in ctx.messages if m.role == "tool"]
    assert [m.tool_call_id for m in results] == ["c0", "c1", "c2", "c3"]
    assert ctx.elided == (3, 4, 5, 6)
    sizes = [count_message(COUNTER, m) for m in results]
    assert max(sizes) - min(sizes) <= 30  # the same share each
    assert all(m.text.startswith("HEAD-MARK") and m.text.endswith("TAIL-MARK") for m in results)


def test_small_results_in_a_batch_stay_whole_while_the_large_one_is_cut() -> None:
    calls = (call("a", "status"), call("b", "dump"))
    msgs = [Message(role="user", content="go"), Message(role="assistant", tool_calls=calls),
            Message(role="tool", tool_call_id="b", content=log(2000)),
            Message(role="tool", tool_call_id="a", content='{"status": "green", "id": "B-17"}')]
    ctx = build_context(counter=COUNTER, live=stored(msgs), summary_text="earlier", budget=800)
    check(ctx)
    assert ctx.elided == (3,)
    assert ctx.messages[-1].text == '{"status": "green", "id": "B-17"}'


def test_newest_tool_result_stays_visible_when_chat_follows_it() -> None:
    msgs = [Message(role="user", content="check"),
            Message(role="assistant", tool_calls=(call("c1"),)),
            Message(role="tool", tool_call_id="c1", content=log(400)),
            Message(role="assistant", content="It failed with a KeyError."),
            Message(role="user", content="Fix it please, " + "really " * 50)]
    ctx = build_context(counter=COUNTER, live=stored(msgs), summary_text=None, budget=500)
    check(ctx)
    assert any(m.role == "tool" and m.tool_call_id == "c1" for m in ctx.messages)
    assert ctx.messages[-1].role == "user"


def test_long_chat_after_the_newest_result_keeps_it_visible_and_the_newest_turns() -> None:
    msgs = [Message(role="user", content="check order ORD-77"),
            Message(role="assistant", tool_calls=(call("c1", "get_order", '{"id": "ORD-77"}'),)),
            Message(role="tool", tool_call_id="c1",
                    content=json.dumps({"order_id": "ORD-77", "status": "shipped",
                                        "lines": [f"SKU-{i:04d}" for i in range(60)]}))]
    for i in range(30):  # a long chat after the result: it cannot all be shown
        msgs.append(Message(role="assistant" if i % 2 else "user",
                            content=f"turn {i}: " + "words of chat " * 12))
    summary = "Tools: get_order(id=ORD-77) → status: shipped."
    ctx = build_context(counter=COUNTER, live=stored(msgs), summary_text=summary, budget=400,
                        masking=Masking())
    check(ctx)
    assert ctx.summary_included
    shown = [m for m in ctx.messages if m.role == "tool"]
    assert [m.tool_call_id for m in shown] == ["c1"]
    assert ctx.messages[-1].text == msgs[-1].text  # the newest turns are shown
    left_out = len(msgs) - sum(1 for m in ctx.messages if m.role != "system") + int(ctx.bridged)
    assert ctx.omitted == left_out and ctx.omitted_seqs is not None
    assert ctx.omitted_seqs[0] == 1 and ctx.omitted_seqs[1] < len(msgs)


def test_the_newest_turn_stays_whole_when_cutting_the_others_is_enough() -> None:
    question = ("Which of these failures blocks the release, who owns module_7, and can the "
                "fix wait until the freeze on Friday? " * 4).strip()
    msgs = [Message(role="user", content="run the tests"),
            Message(role="assistant", tool_calls=(call("c1"),)),
            Message(role="tool", tool_call_id="c1", content=log(300)),
            Message(role="assistant", content="Summary of the run: " + "details " * 200),
            Message(role="user", content=question)]
    ctx = build_context(counter=COUNTER, live=stored(msgs), summary_text=None, budget=300)
    check(ctx)
    assert ctx.messages[-1].text == question
    assert set(ctx.elided) == {3, 4}


def test_the_summary_stays_and_the_newest_result_is_cut_instead() -> None:
    summary = ("Tools: get_user(id=u_77) → reservations: R-100, R-200, R-300; "
               "payment_methods: card_1, gift_2. " * 6)
    msgs = [Message(role="user", content="Look at R-300."),
            Message(role="assistant", tool_calls=(call("c9", "get_reservation",
                                                       '{"id": "R-300"}'),)),
            Message(role="tool", tool_call_id="c9", content=json.dumps(
                {"id": "R-300", "flights": [{"number": f"HX{i:03d}", "date": "2024-05-2"
                                             + str(i % 9)} for i in range(40)]}))]
    live = stored(msgs)
    whole = build_context(counter=COUNTER, live=live, summary_text=None).tokens
    ctx = build_context(counter=COUNTER, live=live, summary_text=summary, budget=whole + 10,
                        masking=Masking())
    check(ctx)
    # the live part alone would fit: the result is cut rather than the summary dropped
    assert ctx.summary_included and ctx.elided == (3,)
    assert "HX000" in ctx.messages[-1].text


def test_huge_call_arguments_are_elided_as_valid_json() -> None:
    content = "x = 1\n" * 6000
    big = ToolCall("w1", "write_file", json.dumps({"path": "a.py", "content": content}))
    msgs = [Message(role="user", content="write it"), Message(role="assistant", tool_calls=(big,)),
            Message(role="tool", tool_call_id="w1", content="ok: wrote a.py")]
    ctx = build_context(counter=COUNTER, live=stored(msgs), summary_text=None, budget=600)
    check(ctx)
    shown = ctx.messages[-2].tool_calls[0]
    assert "elided_by_contextfold" in json.loads(shown.arguments)
    assert ctx.messages[-1].text == "ok: wrote a.py"


def test_masking_starts_only_when_the_context_would_not_fit() -> None:
    live = stored(agent_run(6))
    whole = build_context(counter=COUNTER, live=live, summary_text=None).tokens
    roomy = build_context(counter=COUNTER, live=live, summary_text=None, budget=whole,
                          masking=Masking(keep=2))
    assert roomy.masked == 0 and roomy.tokens == whole
    tight = build_context(counter=COUNTER, live=live, summary_text=None, budget=whole - 1,
                          masking=Masking(keep=2))
    assert tight.masked == 4 and tight.omitted == 0


def test_elided_tool_result_marker_names_its_key_facts() -> None:
    rows = [{"order_id": f"ORD-{i:05d}", "status": "open"} for i in range(400)]
    body = json.dumps({"rows": rows})
    msgs = [Message(role="user", content="list orders"),
            Message(role="assistant", tool_calls=(call("c1", "list_orders", "{}"),)),
            Message(role="tool", tool_call_id="c1", content=body)]
    ctx = build_context(counter=COUNTER, live=stored(msgs), summary_text=None, budget=700)
    check(ctx)
    assert "its key facts: order_id: ORD-00000" in ctx.messages[-1].text


def test_system_prompt_over_budget_is_still_a_config_error() -> None:
    with pytest.raises(ConfigError):
        build_context(counter=COUNTER, live=[], summary_text=None, system="w " * 500, budget=50)


# -- masking ---------------------------------------------------------------------------------


def agent_run(rounds: int) -> list[Message]:
    out = [Message(role="user", content="Book the cheapest flight for user u_123.")]
    for i in range(rounds):
        args = json.dumps({"reservation_id": f"R{i:04d}X"})
        out.append(Message(role="assistant", tool_calls=(call(f"c{i}", "get_reservation", args),)))
        body = {"reservation_id": f"R{i:04d}X", "status": "confirmed" if i % 3 else "cancelled",
                "amount": 100 + i, "date": f"2024-05-{1 + i % 28:02d}",
                "notes": ["lorem ipsum dolor sit amet " * 8] * 4}
        out.append(Message(role="tool", tool_call_id=f"c{i}", content=json.dumps(body)))
        out.append(Message(role="assistant", content=f"Reservation {i} looked up."))
    return out


def test_older_results_become_stand_ins_with_key_facts_and_seq() -> None:
    live = stored(agent_run(6))
    ctx = build_context(counter=COUNTER, live=live, summary_text=None,
                        masking=Masking(keep=2, trigger_tokens=0))
    check(ctx)
    tools = [m for m in ctx.messages if m.role == "tool"]
    assert ctx.masked == 4
    for i, m in enumerate(tools[:4]):
        assert m.text.startswith(STAND_IN_PREFIX)
        assert "get_reservation" in m.text and f"2024-05-{1 + i:02d}" in m.text
        assert f"seq {3 + 3 * i}" in m.text and str(100 + i) in m.text
        # the id is in the call's arguments, shown right above: not repeated
        assert f"R{i:04d}X" not in m.text
    assert "lorem" in tools[4].text and "lorem" in tools[5].text
    assert ctx.tokens < 0.6 * build_context(counter=COUNTER, live=live, summary_text=None).tokens


def test_masking_options() -> None:
    msgs = agent_run(5)
    msgs[4] = Message(role="assistant", tool_calls=(call("c1", "get_policy", "{}"),))
    live = stored(msgs)
    plain = build_context(counter=COUNTER, live=live, summary_text=None,
                          masking=Masking(keep=1, exclude_tools=frozenset({"get_policy"}),
                                                  trigger_tokens=0))
    tools = [m for m in plain.messages if m.role == "tool"]
    assert [m.text.startswith(STAND_IN_PREFIX) for m in tools] == [True, False, True, True, False]
    assert plain.masked == 3
    no_args = build_context(counter=COUNTER, live=live, summary_text=None,
                            masking=Masking(keep=1, keep_call_args=False, trigger_tokens=0))
    check(no_args)
    first_call = next(m for m in no_args.messages if m.tool_calls)
    assert first_call.tool_calls[0].arguments == "{}"
    first_result = next(m for m in no_args.messages if m.role == "tool")
    assert "Called as get_reservation(reservation_id=R0000X)" in first_result.text
    last_call = [m for m in no_args.messages if m.tool_calls][-1]
    assert last_call.tool_calls[0].arguments != "{}"  # the kept result keeps its call's args
    total = sum(m.tokens for m in live)
    off = build_context(counter=COUNTER, live=live, summary_text=None,
                        masking=Masking(keep=1, trigger_tokens=total))
    assert off.masked == 0
    on = build_context(counter=COUNTER, live=live, summary_text=None,
                       masking=Masking(keep=1, trigger_tokens=total - 1))
    assert on.masked == 4
    keep0 = build_context(counter=COUNTER, live=live, summary_text=None,
                          masking=Masking(keep=0, trigger_tokens=0))
    assert keep0.masked == 5
    for bad in ({"keep": -1}, {"exclude_tools": "get_policy"}, {"trigger_tokens": -5},
                {"fact_chars": 3}):
        with pytest.raises(ConfigError):
            Masking(**bad)


def test_small_results_are_not_replaced_by_a_larger_stand_in() -> None:
    msgs = [Message(role="user", content="hi")]
    for i in range(4):
        msgs += [Message(role="assistant", tool_calls=(call(f"c{i}", "ping", "{}"),)),
                 Message(role="tool", tool_call_id=f"c{i}", content="ok")]
    ctx = build_context(counter=COUNTER, live=stored(msgs), summary_text=None,
                        masking=Masking(keep=1, trigger_tokens=0))
    assert ctx.masked == 0 and all(m.text == "ok" for m in ctx.messages if m.role == "tool")


def test_a_stand_in_is_byte_identical_on_every_later_turn() -> None:
    msgs = agent_run(12)
    view = LiveView(COUNTER, Masking(keep=2, trigger_tokens=0))
    seen: dict[str, str] = {}
    for n in range(1, len(msgs) + 1):
        view.sync(stored(msgs[:n]))
        ctx = view.build(summary_text=None, budget=None)
        for m in ctx.messages:
            if m.role == "tool" and m.text.startswith(STAND_IN_PREFIX):
                assert m.tool_call_id is not None
                assert seen.setdefault(m.tool_call_id, m.text) == m.text
    assert len(seen) == 10


# -- the incremental view and properties -----------------------------------------------------

_WORDS = ["alpha", "R-2031", "status", "ok", "error", "42", "2024-05-03", "path/to/x.py", "🙂"]


@st.composite
def agent_transcripts(draw: Any) -> list[Message]:
    """Random valid agent transcripts: chat turns, single and parallel calls, JSON and log
    results of very different sizes (some far over any budget), failing tools, and often a
    long chat after the last result."""
    out: list[Message] = [Message(role="user", content="goal: fix the build")]
    n = draw(st.integers(1, 20))
    cid = 0
    for _ in range(n):
        kind = draw(st.sampled_from(["user", "assistant", "tools", "tools"]))
        if kind != "tools":
            words = draw(st.lists(st.sampled_from(_WORDS), max_size=80))
            out.append(Message(role=kind, content=" ".join(words) or "ok"))
            continue
        k = draw(st.integers(1, 3))
        calls = []
        for _ in range(k):
            cid += 1
            calls.append(call(f"c{cid}", draw(st.sampled_from(["grep", "read", "test"]))))
        out.append(Message(role="assistant", tool_calls=tuple(calls)))
        for c in draw(st.permutations(calls)):
            size = draw(st.sampled_from([1, 5, 40, 300, 900]))
            if draw(st.booleans()):
                body = json.dumps({"id": f"X{cid}", "status": "failed", "rows": ["v"] * size})
            else:
                body = log(size)
            out.append(Message(role="tool", tool_call_id=c.id, content=body))
    for i in range(draw(st.integers(0, 14))):  # a chat that goes on after the last result
        words = draw(st.lists(st.sampled_from(_WORDS), min_size=10, max_size=80))
        out.append(Message(role="user" if i % 2 == 0 else "assistant", content=" ".join(words)))
    return out


@settings(max_examples=150, deadline=None)
@given(
    msgs=agent_transcripts(),
    budget=st.sampled_from([300, 600, 1200, 4000]),
    keep=st.sampled_from([None, 0, 1, 3]),
    summary=st.sampled_from([None, "they fixed the build; id R-2031"]),
)
def test_agent_views_fit_pair_and_show_the_newest_result(
    msgs: list[Message], budget: int, keep: int | None, summary: str | None
) -> None:
    masking = None if keep is None else Masking(keep=keep)
    view = LiveView(COUNTER, masking)
    everything = stored(msgs)
    for n in range(1, len(msgs) + 1):
        live = everything[:n]
        view.sync(live)
        ctx = view.build(summary_text=summary, budget=budget, system="You are an agent.")
        check(ctx)
        tool_ids = [m.tool_call_id for m in msgs[:n] if m.role == "tool"]
        if tool_ids:
            assert tool_ids[-1] in {m.tool_call_id for m in ctx.messages if m.role == "tool"}
        shown = [m for m in ctx.messages if m.role != "system"]
        assert ctx.omitted == n - len(shown) + int(ctx.bridged)  # every live message counted
        assert msgs[n - 1].role == shown[-1].role  # the newest message is there, maybe cut
        if msgs[n - 1].role == "tool":
            assert shown[-1].tool_call_id == msgs[n - 1].tool_call_id
        if n % 3 == 0 or n == len(msgs):  # the incremental view is exactly the fresh one
            fresh = build_context(counter=COUNTER, live=live, summary_text=summary,
                                  budget=budget, system="You are an agent.", masking=masking)
            assert fresh == ctx


def test_view_rebuilds_after_a_fold_and_reuses_stand_ins() -> None:
    msgs = agent_run(8)
    live = stored(msgs)
    view = LiveView(COUNTER, Masking(keep=2, trigger_tokens=0))
    view.sync(live)
    before = view.build(summary_text=None)
    folded = live[6:]  # a fold took the first six messages
    view.sync(folded)
    after = view.build(summary_text="s")
    assert after == build_context(counter=COUNTER, live=folded, summary_text="s",
                                  masking=Masking(keep=2, trigger_tokens=0))
    shared = {m.tool_call_id: m.text for m in before.messages if m.role == "tool"}
    for m in after.messages:
        if m.role == "tool":
            assert shared[m.tool_call_id] == m.text


def test_a_result_cut_in_full_and_later_as_its_stand_in_is_cut_anew() -> None:
    """A result elided while it is shown whole, then masked (its stand-in elided in turn):
    the view cut the stand-in's place with the old cut of the whole result (the cut-text
    cache did not know the form had changed), so the incremental view differed from a fresh
    one. Found by hypothesis (test above) on a saved example."""
    rows = json.dumps({"id": "X6", "status": "failed", "rows": ["v"] * 20})
    msgs = stored([
        Message(role="user", content="goal: fix the build"),
        Message(role="assistant", tool_calls=(call("c1", "grep"),)),
        Message(role="tool", tool_call_id="c1", content=log(1)),
        Message(role="user", content="ok"),
        Message(role="assistant", tool_calls=(call("c4", "grep"), call("c5", "grep"),
                                              call("c6", "grep"))),
        Message(role="tool", tool_call_id="c4", content=log(900)),
        Message(role="tool", tool_call_id="c5", content=rows),
        Message(role="tool", tool_call_id="c6",
                content=json.dumps({"id": "X6", "status": "failed", "rows": ["v"]})),
        Message(role="user", content="ok"),
    ])
    masking, summary = Masking(keep=0), "they fixed the build; id R-2031"
    view = LiveView(COUNTER, masking)
    for n in range(1, len(msgs) + 1):
        view.sync(msgs[:n])
        ctx = view.build(summary_text=summary, budget=270, system="s")
        check(ctx)
        fresh = build_context(counter=COUNTER, live=msgs[:n], summary_text=summary,
                              budget=270, system="s", masking=masking)
        assert ctx == fresh, n
