"""Recall in the context: ``Memory(recall=…)`` and ``context(query=…)`` (contextfold.recall).

Every test runs on the three stores with their own search engines (SQLite FTS5,
PostgreSQL full-text search, the memory store's in-process index)."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta, timezone

import pytest

from contextfold import Memory, Message
from contextfold.context import Context
from contextfold.errors import ConfigError
from contextfold.messages import StoredMessage, ToolCall
from contextfold.policy import MessageCount, TokenBudget
from contextfold.recall import RECALL_HEADER, Recall, implicit_query
from contextfold.search_terms import asks_about_past
from contextfold.summarizers.base import SummaryRequest, SummaryResult
from contextfold.tokens import REPLY_PRIMING_TOKENS, count_message, get_counter

START = datetime(2023, 5, 7, 13, 56, tzinfo=timezone.utc)


class Terse:
    """A summary that keeps the gist and none of the details (as many LLM summaries do):
    the offline summarizer quotes whole sentences, and recall leaves out what the summary
    already quotes, so these tests would otherwise measure the summarizer."""

    name = "terse"

    async def summarize(self, request: SummaryRequest) -> SummaryResult:
        return SummaryResult(text="Caroline and Melanie caught up about their weeks.")
FILLER = [
    "I spent the afternoon repainting the fence in the back yard.",
    "Sounds tiring! Did the weather hold up for you?",
    "Mostly, a bit of drizzle near the end but nothing serious.",
    "We should grab coffee next week and catch up properly.",
]


@pytest.fixture
def sid() -> str:
    """A session id of its own per test (the PostgreSQL database is shared by the module)."""
    return f"s-{uuid.uuid4().hex[:12]}"


def chat(n_filler: int = 60) -> list[Message]:
    """A planted fact on the first day, then ``n_filler`` turns of filler on later days."""
    out = [
        Message(role="user", name="Caroline", content="Oh guess what, I adopted a greyhound "
                "called Biscuit from the shelter in Portland lol!", timestamp=START),
        Message(role="assistant", name="Melanie", content="No way, that is wonderful news. "
                "How old is Biscuit?", timestamp=START),
        Message(role="user", name="Caroline", content="She is four, very calm.",
                timestamp=START),
    ]
    for i in range(n_filler):
        out.append(Message(role="user" if i % 2 == 0 else "assistant",
                           name="Caroline" if i % 2 == 0 else "Melanie",
                           content=f"{FILLER[i % 4]} (day {i})",
                           timestamp=START + timedelta(days=1 + i // 4)))
    return out


def recount(ctx: Context, reserved: int = 0) -> int:
    counter = get_counter(None)
    return REPLY_PRIMING_TOKENS + reserved + sum(count_message(counter, m) for m in ctx.messages)


def test_options_are_checked() -> None:
    for bad in ({"share": 0}, {"share": 1.5}, {"min_coverage": 2}, {"limit": 0},
                {"neighbours": -1}, {"gate": "sometimes"}, {"share": True},
                {"speakers": 1}, {"framed": -1}, {"frame_after": 0}):
        with pytest.raises(ConfigError):
            Recall(**bad)  # type: ignore[arg-type]
    with pytest.raises(ConfigError):
        Memory("memory://", recall="yes")  # type: ignore[arg-type]
    assert Recall.coerce(True) == Recall() and Recall.coerce(False) is None


def test_fold_policy_leaves_the_share_free() -> None:
    policy = Recall(share=0.25).fold_policy(TokenBudget(4000))
    assert isinstance(policy, TokenBudget)
    # the fold gap stays 600 tokens, as in the full budget (4000 - 3400)
    assert policy.max_tokens == 3000 and policy.target == 2400
    assert policy.summary_max_tokens == 1800  # the default cap, of the smaller budget


def test_fold_policy_keeps_the_gap_in_tokens_above_the_summary_cap() -> None:
    policy = Recall().fold_policy(TokenBudget(2000))
    assert isinstance(policy, TokenBudget)
    assert (policy.max_tokens, policy.target, policy.summary_max_tokens) == (1000, 700, 600)
    # an explicit cap is scaled; a gap wider than the room above the cap stops at the cap
    wide = Recall().fold_policy(TokenBudget(4000, target=2500, summary_max_tokens=2000))
    assert isinstance(wide, TokenBudget)
    assert (wide.max_tokens, wide.summary_max_tokens, wide.target) == (2000, 1000, 1001)
    narrow = Recall().fold_policy(TokenBudget(4000, target=3990))
    assert isinstance(narrow, TokenBudget) and narrow.target == 1990
    assert Recall().fold_policy(MessageCount(10)) == MessageCount(10)  # other policies: as is


def test_the_gate_opens_for_questions_about_the_past() -> None:
    for text in ("When did Caroline adopt the dog?", "what was the name of that shelter?",
                 "Do you remember the book I mentioned?", "Where did we go last summer"):
        assert asks_about_past(text), text
    for text in ("Hey! Good to see you.", "I went hiking yesterday.", "How are you today?",
                 "Thanks, that sounds great"):
        assert not asks_about_past(text), text


def test_implicit_query_is_the_newest_user_message_or_the_agent_ids() -> None:
    live = [
        StoredMessage(1, Message(role="user", content="book flight for order ORD-5521"), 5),
        StoredMessage(2, Message(role="assistant", content="", tool_calls=(
            ToolCall("c1", "get_order", '{"order_id": "ORD-5521"}'),)), 5),
        StoredMessage(3, Message(role="tool", tool_call_id="c1",
                                 content='{"status": "paid", "res": "RES9X2"}'), 5),
    ]
    assert implicit_query(live) == "book flight for order ORD-5521"
    agent = implicit_query(live, agent=True)
    assert agent is not None
    assert "RES9X2" in agent and "get_order" in agent and "ORD-5521" in agent
    assert implicit_query([]) is None


def test_recalled_fact_comes_back_within_budget(store_url: str, sid: str) -> None:
    budget = 600
    with Memory(store_url, policy=TokenBudget(budget), recall=True, summarizer=Terse()) as mem:
        mem.add(sid, *chat())
        plain = mem.context(sid)
        assert mem.stats(sid).through_seq > 3  # type: ignore[union-attr]
        ctx = mem.context(sid, query="What is the name of the greyhound Caroline adopted?")
        assert ctx.tokens <= budget and ctx.tokens == recount(ctx)
        assert 1 in ctx.recalled and max(ctx.recalled) <= mem.stats(sid).through_seq  # type: ignore[union-attr]
        block = [m for m in ctx.messages if m.text.startswith(RECALL_HEADER)]
        assert len(block) == 1 and block[0].role == "user"
        assert "Biscuit" in block[0].text and "7 May 2023" in block[0].text
        assert "Caroline: Oh guess what, I adopted a greyhound called Biscuit" in block[0].text
        # the block sits just before the newest user message; before it: the plain prefix
        at = ctx.messages.index(block[0])
        assert ctx.messages[at + 1:] == plain.messages[at:]
        assert ctx.messages[:at] == plain.messages[:at]
        assert ctx.messages[at + 1].role == "user"


def test_no_match_and_recall_off_give_the_plain_context(store_url: str, sid: str) -> None:
    with Memory(store_url, policy=TokenBudget(600), summarizer=Terse()) as mem:
        mem.add(sid, *chat())
        plain = mem.context(sid)
        miss = mem.context(sid, query="quantum chromodynamics lecture")
        assert miss == plain and miss.recalled == ()
        hit = mem.context(sid, query="greyhound adopted Biscuit")
        assert hit.recalled and hit.tokens <= 600


def test_the_gate_keeps_ordinary_turns_plain(store_url: str, sid: str) -> None:
    with Memory(store_url, policy=TokenBudget(600), recall=True, summarizer=Terse()) as mem:
        mem.add(sid, *chat(), Message(role="user", content="I adopted a new plant today, "
                                      "greyhound-grey leaves!"))
        assert mem.context(sid).recalled == ()
        mem.add(sid, Message(role="assistant", content="Nice."),
                Message(role="user", content="Which greyhound did Caroline adopt?"))
        assert mem.context(sid).recalled


def test_live_messages_are_never_recalled(store_url: str, sid: str) -> None:
    with Memory(store_url, policy=TokenBudget(100_000), recall=True) as mem:
        mem.add(sid, *chat(4))
        ctx = mem.context(sid, query="greyhound Biscuit adopted")
        assert ctx.recalled == ()  # nothing folded: all of it is in the context already


def test_redacted_sessions_recall_redacted_text_and_the_summarizer_never_sees_the_block(
        store_url: str, sid: str) -> None:
    seen: list[str] = []

    def summarize(request: object) -> str:
        from contextfold.summarizers.base import SummaryRequest

        assert isinstance(request, SummaryRequest)
        seen.extend(m.text for m in request.messages)
        return "Earlier: small talk."

    from contextfold.testing import FunctionSummarizer

    with Memory(store_url, policy=TokenBudget(400), recall=True, redact_messages=True,
                summarizer=FunctionSummarizer(summarize)) as mem:
        mem.add(sid, Message(role="user", content="Write to me at jane.doe@example.com about "
                             "the greyhound adoption papers."), *chat(30)[3:])
        ctx = mem.context(sid, query="greyhound adoption papers email")
        block = [m.text for m in ctx.messages if m.text.startswith(RECALL_HEADER)]
        assert block and "greyhound adoption papers" in block[0]
        assert "jane.doe@example.com" not in block[0] and "<EMAIL_1>" in block[0]
        before = len(seen)
        mem.add(sid, *chat(30)[3:])  # more folds after a recall: only new messages go in
        assert not any(RECALL_HEADER in t for t in seen[before:])


def test_the_summary_cap_follows_the_scaled_policy() -> None:
    """The summarizer writes to the policy's cap of the scaled budget: a cap of the full
    budget would make every summary overflow the scaled policy and fold on every add."""
    mem = Memory("memory://", policy=TokenBudget(4000), recall=Recall(share=0.5))
    assert isinstance(mem.engine.policy, TokenBudget)
    assert mem.engine.summary_max_tokens == mem.engine.policy.summary_max_tokens == 1200
    assert mem.engine.max_tokens == 4000
    agent = Memory("memory://", policy=TokenBudget(4000), recall=True, masking=True)
    assert agent.engine.policy == TokenBudget(4000)  # agents: the block takes free room only
    mem.close()
    agent.close()


def test_question_processing_stems_and_reads_dates() -> None:
    from contextfold.search_terms import date_words, query_months, query_terms, refine_terms

    q = "What did Mel and her kids paint in their latest project in July 2023?"
    assert refine_terms(query_terms(q)) == ["mel", "kids", "paint", "project"]
    assert query_months(q) == {(2023, 7, None)}
    q = "What dish did Nate make on 9 November, 2022?"
    assert query_months(q) == {(2022, 11, 9)} and date_words(q) == {"9"}
    assert refine_terms(["watching", "shoes", "painted", "kids", "class"]) == [
        "watch", "shoe", "paint", "kids", "class"]
    assert query_months("may I ask about 2022") == {(2022, None, None)}
    assert refine_terms(["room", "4", "b"]) == ["room", "4"]  # digits are facts


def test_a_named_speaker_matches_what_that_speaker_said(store_url: str, sid: str) -> None:
    """"What does Nate feed his turtles?": the answer, said by Nate, never writes "Nate"
    (stores index what was said, not who said it); one word and the speaker match. (The
    second tier, which shows one-word matches in the room left, is off here: this is
    about what passes the gate.)"""
    fact = Message(role="assistant", name="Nate", timestamp=START,
                   content="They eat lettuce, berries and the odd cricket.")
    other = Message(role="user", name="Joanna", timestamp=START,
                    content="My neighbour's turtles only eat pellets, Nate.")
    talk = [Message(role="user" if i % 2 == 0 else "assistant",
                    name="Joanna" if i % 2 == 0 else "Nate", timestamp=START,
                    content=f"{FILLER[i % 4]} (day {i})") for i in range(60)]
    question = "What do Nate's turtles eat?"
    for speakers in (True, False):
        with Memory(store_url, policy=TokenBudget(600), summarizer=Terse(),
                    recall=Recall(speakers=speakers, lesser=False)) as mem:
            s = f"{sid}-{speakers}"
            mem.add(s, fact, *talk[:10], other, *talk[10:])  # apart: not neighbours
            ctx = mem.context(s, query=question)
            assert ctx.tokens <= 600
            shown = " ".join(m.text for m in ctx.messages if m.text.startswith(RECALL_HEADER))
            assert ("Nate: They eat lettuce" in shown) is speakers, (speakers, shown)
            # a message naming the speaker in its words is matched by the store already
            assert "only eat pellets" in shown


def test_the_best_hits_come_framed_by_the_turns_around_them() -> None:
    """``framed``: the best hits are shown with the turn before and ``frame_after`` turns
    after them (where an answer often is) before lesser hits; without it, only the hits
    (``neighbours=0``)."""
    from contextfold.recall import build_block, plan_spans, wanted_seqs
    from contextfold.stores.search import SearchHit

    names = ["Jon", "Gina"]
    messages = {
        seq: StoredMessage(seq, Message(role="assistant", name=names[seq % 2],
                                        content=f"line {seq} about the dance studio",
                                        timestamp=START), 8, folded=True)
        for seq in range(1, 21)
    }
    hits = [SearchHit(seq, 10.0 - seq, "assistant", START, "", True, 2) for seq in (5, 15)]
    counter = get_counter(None)
    for framed, after, shown in ((0, 1, (5, 15)), (0, 2, (5, 15)), (1, 1, (4, 5, 6, 15)),
                                 (2, 1, (4, 5, 6, 14, 15, 16)), (1, 2, (4, 5, 6, 7, 15)),
                                 (2, 2, (4, 5, 6, 7, 14, 15, 16, 17))):
        options = Recall(neighbours=0, framed=framed, frame_after=after)
        block = build_block(plan_spans(hits, messages, options), messages, counter, 1000,
                            options)
        assert block is not None and block.seqs == shown, (framed, after)
    # the frame is fetched with the hits
    assert wanted_seqs(hits, Recall(neighbours=1, framed=1, frame_after=2), None) == [
        3, 4, 5, 6, 7, 8, 14, 15, 16]
    # room for the best hit only: it comes, without its frame
    options = Recall(neighbours=0, framed=2)
    bare = Recall(neighbours=0, framed=0)
    alone = build_block(plan_spans(hits[:1], messages, bare), messages, counter, 1000, bare)
    assert alone is not None
    small = build_block(plan_spans(hits, messages, options), messages, counter,
                        alone.tokens + 3, options)
    assert small is not None and small.seqs == (5,) and small.tokens <= alone.tokens + 3
