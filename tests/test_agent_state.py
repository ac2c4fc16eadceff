"""Agent state: generic key-fact extraction from JSON and text tool output, call records
de-duplicated with the newest value winning, and agent turns in the offline summary."""

from __future__ import annotations

import json
from datetime import datetime, timezone

from hypothesis import given, settings
from hypothesis import strategies as st

from contextfold import Message, ToolCall
from contextfold.messages import StoredMessage
from contextfold.summarizers.agent_records import agent_lines, observation_line
from contextfold.summarizers.agent_state import call_signature, is_failure, key_facts
from contextfold.summarizers.extractive import ExtractiveSummarizer
from contextfold.summarizers.facts import parse_summary
from contextfold.tokens import get_counter

T0 = datetime(2025, 3, 1, 9, 0, tzinfo=timezone.utc)


def test_json_facts_keep_ids_statuses_amounts_dates_and_errors() -> None:
    result = {
        "order": {"order_id": "ORD-88213", "status": "shipped", "total": 129.5,
                  "created_at": "2025-02-27T10:00:00Z", "notes": "x" * 500},
        "items": [{"sku": "A1-22", "qty": 2}, {"sku": "B7-01", "qty": 1}],
        "accounts": {"acct_7781": {"balance": 12}, "acct_9902": {"balance": 0}},
    }
    facts = " | ".join(key_facts(json.dumps(result)))
    for value in ("ORD-88213", "shipped", "129.5", "2025-02-27T10:00:00Z", "A1-22", "B7-01",
                  "acct_7781", "acct_9902"):
        assert value in facts, value
    assert "xxxx" not in facts
    failed = json.dumps({"ok": False, "error": "quota exceeded for key k-19"})
    assert is_failure(failed) and "quota exceeded" in key_facts(failed)[0]
    assert not is_failure(json.dumps(result))


def test_text_facts_keep_the_last_error_paths_and_ids() -> None:
    log = "\n".join(["collecting 42 items"]
                    + [f"tests/test_{i}.py::test_x PASSED" for i in range(300)]
                    + ['  File "src/app/config.py", line 88, in load',
                       "KeyError: 'max_tokens'", "1 failed, 300 passed in 2.10s"])
    facts = " | ".join(key_facts(log))
    assert "KeyError: 'max_tokens'" in facts and "src/app/config.py" in facts
    assert len(facts) < 700 and is_failure("Error: payment amount does not add up")


def test_call_signature_and_observation_line_are_one_compact_line() -> None:
    call = ToolCall("c1", "book", json.dumps({"user_id": "u_1", "flights": [
        {"flight_number": "HX101", "date": "2024-05-20"}], "insurance": False}))
    assert call_signature(call.name, call.arguments) == (
        "book(user_id=u_1, flights=[HX101, 2024-05-20], insurance=false)")
    line = observation_line(call, '{"reservation_id": "R9", "status": "confirmed"}')
    assert line.startswith("book(user_id=u_1") and "reservation_id: R9" in line
    assert "\n" not in line and ". " not in line


def _stored(messages: list[Message]) -> list[StoredMessage]:
    return [StoredMessage(i + 1, m, 10) for i, m in enumerate(messages)]


def _round(i: int, name: str, args: dict[str, str], result: str) -> list[Message]:
    return [Message(role="assistant", tool_calls=(ToolCall(f"c{i}", name, json.dumps(args)),)),
            Message(role="tool", tool_call_id=f"c{i}", content=result)]


def test_records_dedupe_with_the_newest_value_winning_and_failures_kept() -> None:
    msgs = [Message(role="user", content="Cancel order ORD-1.")]
    msgs += _round(1, "get_order", {"id": "ORD-1"}, '{"status": "open"}')
    msgs += _round(2, "cancel", {"id": "ORD-1"}, '{"error": "locked by job J-7"}')
    msgs += _round(3, "cancel", {"id": "ORD-1"}, '{"status": "cancelled"}')
    msgs += _round(4, "get_order", {"id": "ORD-1"}, '{"status": "cancelled"}')
    lines = [line.text for line in agent_lines(_stored(msgs))]
    assert len(lines) == 3
    assert lines[0].startswith("cancel(id=ORD-1) → FAILED") and "J-7" in lines[0]
    assert "cancelled" in lines[1] and lines[2].startswith("get_order(id=ORD-1) →")
    assert not any("open" in line for line in lines)


def test_folds_keep_agent_state_and_the_newest_value_across_folds() -> None:
    counter = get_counter()
    chat = [Message(role="user", content="Deploy build B-1 to staging, never to prod.",
                    timestamp=T0)]
    chat += _round(1, "deploy", {"build": "B-1", "env": "staging"},
                   '{"deployment_id": "D-100", "status": "pending"}')
    chat += [Message(role="assistant", content="Deployment started, I'll check it.")]
    summarizer = ExtractiveSummarizer()
    first = summarizer.fold("", _stored(chat), 300, counter)
    # the identifier in the record's core line, the (benign) status in its second line
    assert "deploy(build=B-1, env=staging) → deployment_id: D-100." in first
    assert "deploy(build=B-1, env=staging) (more) → status: pending." in first
    later = _round(2, "deploy", {"build": "B-1", "env": "staging"},
                   '{"deployment_id": "D-100", "status": "live"}')
    second = summarizer.fold(first, [StoredMessage(9 + i, m, 10) for i, m in enumerate(later)],
                             300, counter)
    records = [f.text for f in parse_summary(second) if f.speaker == "Tools"]
    assert len(records) == 2 and "status: live" in records[1] and "pending" not in second
    failed = _round(3, "deploy", {"build": "B-1", "env": "staging"},
                    '{"deployment_id": "D-100", "status": "failed"}')
    third = summarizer.fold(second, [StoredMessage(20 + i, m, 10) for i, m in enumerate(failed)],
                            300, counter)
    assert "→ FAILED status: failed; deployment_id: D-100." in third  # a failure: in the core


def test_a_users_correction_never_drops_what_a_tool_reported() -> None:
    """"Update the ticket" or "change my flight" is a correction cue for chat facts; it
    must not erase the records of earlier calls that share a word with it."""
    counter = get_counter()
    msgs = [Message(role="user", content="Find the bad host and restart it.", timestamp=T0)]
    msgs += _round(1, "host_status", {"host": "web-a31.prod"},
                   '{"host": "web-a31.prod", "state": "degraded", "pid": 4028}')
    msgs += _round(2, "restart", {"host": "web-a31.prod", "pid": 4028}, '{"ok": true}')
    msgs += [Message(role="user", content="Now update ticket INC8082 for the restarted host.")]
    summary = ExtractiveSummarizer().fold("", _stored(msgs), 400, counter)
    assert "host_status(host=web-a31.prod)" in summary
    assert "restart(host=web-a31.prod, pid=4028)" in summary


@settings(max_examples=40, deadline=None)
@given(st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=30),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner,
                                                                max_size=4),
    max_leaves=30,
))
def test_key_facts_never_fail_and_stay_within_their_room(value: object) -> None:
    text = json.dumps(value)
    facts = key_facts(text, 120)
    assert sum(len(f) for f in facts) <= 120 + 40 * len(facts)
    assert key_facts(text, 120) == facts  # deterministic


def test_a_record_keeps_its_core_and_second_line_when_the_summary_has_room() -> None:
    results = [{"id": f"doc_{i}", "url": f"https://example.org/guide/{i}",
                "title": f"guide part {i}", "score": i / 10} for i in range(12)]
    msgs = [Message(role="user", content="Find a guide.", timestamp=T0)]
    msgs += _round(1, "web_search", {"query": "guides"}, json.dumps({"results": results}))
    lines = agent_lines(_stored(msgs))
    assert len(lines) == 1 and lines[0].more  # too many values for one line
    summary = ExtractiveSummarizer().fold("", _stored(msgs), 2000, get_counter())
    records = [f.text for f in parse_summary(summary) if f.speaker == "Tools"]
    assert len(records) == 2  # neither line swallows the other, though they share words
    for i in range(12):
        assert f"doc_{i}" in summary and f"https://example.org/guide/{i}" in summary


def test_a_failure_reported_at_the_end_of_a_log_counts_and_code_naming_errors_does_not() -> None:
    log = "\n".join(["== test session starts =="] + [f"test_{i} PASSED" for i in range(900)]
                    + ["FAILED tests/test_cfg.py::test_limits - KeyError: 'limit'",
                       "== 1 failed, 900 passed =="])
    assert is_failure(log)
    code = "\n".join(["def load(cfg):", "    try:", "        return cfg['x']",
                      "    except KeyError:", "        raise ValueError('no x')"] * 50)
    assert not is_failure(code)


def test_records_write_each_value_once_newest_first_and_keep_failures_whole() -> None:
    from contextfold.summarizers.agent_records import compact_records
    from contextfold.summarizers.facts import Fact

    older = Fact("get_user(id=u_1) → orders: O-1, O-2, O-3; email: a@b.c.", "Tools", None,
                 (0, 0, 0))
    failed = Fact("pay(order=O-1) → FAILED error: card declined for O-2.", "Tools", None,
                  (0, 0, 1))
    newer = Fact("get_order(id=O-1) → status: shipped; items: SKU-9.", "Tools", None,
                 (1, 5, 1))
    chat = Fact("I need O-2 and O-3 refunded.", "User", None, (1, 6, 0))
    out = compact_records([older, failed, newer, chat])
    assert out[0].text == "get_user(id=u_1) → orders: O-2, O-3; email: a@b.c."
    assert out[1] == failed and out[2] == newer and out[3] == chat


def test_values_rank_by_shape_ids_first_and_placeholders_are_dropped() -> None:
    result = {"name": {"first_name": "Mia", "last_name": "Li"}, "email": "<EMAIL_1>",
              "dob": "1990-04-05", "membership": "gold", "city": "Austin",
              "payment_methods": {"credit_card_4421486": {"brand": "visa"}},
              "reservations": ["NO6JO3", "AIXC49"]}
    facts = key_facts(json.dumps(result), 90)
    text = " | ".join(facts)
    assert "credit_card_4421486" in text and "NO6JO3" in text and "AIXC49" in text
    assert "<EMAIL_1>" not in " ".join(key_facts(json.dumps(result), 2000))
    assert "Austin" not in text  # a plain word loses to identifiers when room is short
    ranked = key_facts(json.dumps(result), 2000)
    assert ranked[0].startswith(("payment_methods", "reservations"))


def test_a_failed_call_record_keeps_every_argument_for_the_retry() -> None:
    passengers = [{"first_name": f"P{i}", "last_name": f"L{i}", "dob": f"19{60 + i}-01-01"}
                  for i in range(6)]
    args = {"user_id": "u_9", "passengers": passengers, "payment": [{"id": "gift_1",
                                                                      "amount": 250}]}
    failed = agent_lines(_stored(_round(1, "book", args,
                                        "Error: payment amount does not add up")))[0]
    assert failed.failed and " → FAILED " in failed.text
    for p in passengers:
        assert p["first_name"] in failed.text and p["dob"] in failed.text
    assert "gift_1" in failed.text and "250" in failed.text
    ok = agent_lines(_stored(_round(1, "book", args, '{"reservation_id": "R1"}')))[0]
    assert "R1" in ok.text and all(p["dob"] in ok.text + ok.more for p in passengers)


def test_a_text_line_kept_whole_is_not_repeated_as_its_key_value_pair() -> None:
    out = "Change CHG6716893 updated: state=implemented (by platform-agent)"
    facts = key_facts(out, 2000)
    assert facts == ["ids: CHG6716893", f"output: {out}"]
    failed = 'error: secrets "db-credentials" not found in namespace ledger'
    text = " | ".join(key_facts(failed, 2000))
    assert text.count("not found in namespace ledger") == 1
    # a key: value line that is not kept whole still gives its pair
    assert "region: westeurope" in key_facts("deploy finished\nregion: westeurope", 2000)


@settings(max_examples=80, deadline=None)
@given(st.from_regex(r"[A-Za-z][a-z]{0,8}( [a-z]{1,6})?", fullmatch=True),
       st.from_regex(r"[a-z0-9.-]{1,12}( [a-z0-9.-]{1,12}){0,2}", fullmatch=True),
       st.lists(st.from_regex(r"[a-z]{1,8}: [a-z0-9-]{1,20}", fullmatch=True), max_size=5))
def test_a_first_line_shown_whole_is_not_shown_again_as_a_pair(key: str, value: str,
                                                               rest: list[str]) -> None:
    line = f"{key}: {value}"
    facts = key_facts("\n".join([line, *rest]), 4000)
    assert f"output: {line}" in facts
    assert line not in facts


def test_a_stand_in_shows_more_values_when_as_reusable_values_differ_in_length() -> None:
    results = [{"id": f"doc_{i}", "url": f"https://example.org/guides/{i}/page"}
               for i in range(10)]
    facts = key_facts(json.dumps({"results": results}), 130)
    text = " | ".join(facts)
    assert all(f"doc_{i}" in text for i in range(10))  # ten short ids, not five and 5 URLs
    assert facts[0].startswith("id: doc_0, doc_1")  # ties keep their order of appearance


@settings(max_examples=60, deadline=None)
@given(st.dictionaries(st.from_regex(r"[a-z]{1,6}[0-9]{1,4}[a-z/.]{0,30}", fullmatch=True),
                       st.sampled_from([2.0, 4.0, 10.0]), max_size=30),
       st.sets(st.integers(0, 29), max_size=5))
def test_ranked_values_are_every_value_once_best_first_then_shorter(
        scores: dict[str, float], skip_at: set[int]) -> None:
    from contextfold.summarizers.agent_state import ValueFacts

    facts = ValueFacts()
    for value, score in scores.items():
        facts.add("v", value, score)
    values = list(scores)
    skip = {values[i] for i in skip_at if i < len(values)}
    ranked = [v for _, v in facts.ranked(skip)]
    assert sorted(ranked) == sorted(set(values) - skip)
    keys = [(-scores[v], len(v)) for v in ranked]
    assert keys == sorted(keys)


def test_a_listings_odd_rows_rank_their_ids_first_even_from_its_middle() -> None:
    import hashlib

    from contextfold.summarizers.agent_state import extract
    from contextfold.summarizers.agent_text import outlier_rows

    names = [f"web-{hashlib.sha256(bytes([i])).hexdigest()[:9]}" for i in range(60)]
    rows = [f"{name}   1/1   Running   {i % 7}   {i}m" for i, name in enumerate(names)]
    rows[31] = f"{names[31]}   0/1   CrashLoopBackOff   9   31m"
    listing = "\n".join(["NAME   READY   STATUS   RESTARTS   AGE", *rows])
    assert outlier_rows(listing) == [rows[31]]
    facts = extract(listing, 1000)  # the view's scan does not reach row 31
    assert facts.ranked()[0] == ("ids", names[31])
    # nothing stands out when a third or more of the rows differ, or there is no table
    half = "\n".join(["NAME STATUS", *(f"j{i} {'done' if i % 2 else 'failed'}"
                                       for i in range(12))])
    assert outlier_rows(half) == []
    assert outlier_rows("a 1\nb 2\nc 3") == []
