"""The context's summary shown with its placeholders' values (privacy/restore_view.py):
never over budget, never fed to the summarizer, never for redact_messages sessions, gone
with the session."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Mapping
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from contextfold import Idle, Memory, Message, TokenBudget
from contextfold.errors import ConfigError
from contextfold.privacy import PLACEHOLDER, InMemoryVault, Redactor
from contextfold.privacy.restore_view import restore_within
from contextfold.stores import MemoryStore
from contextfold.stores.sqlite import SQLiteStore
from contextfold.summarizers.base import SummaryRequest
from contextfold.testing import FunctionSummarizer
from contextfold.tokens import count_message, count_messages, get_counter

EMAIL = "jane.doe@example.com"
PHONE = "+44 20 7946 0958"
COUNTER = get_counter("o200k")


#: a forced fold folds everything (the default TokenBudget keeps the newest 2 verbatim)
ALL = TokenBudget(4000, keep_last=0)


def concat(req: SummaryRequest) -> str:
    """A summarizer that keeps everything it reads (so values reach the summary)."""
    return " ".join([req.previous, *(m.text for m in req.messages)]).strip()


def remote() -> FunctionSummarizer:
    """Takes itself for a third-party model: its input is redacted (no needs_redaction)."""
    return FunctionSummarizer(concat)


def seen_by(summarizer: FunctionSummarizer) -> str:
    return "\n".join(
        "\n".join([r.previous, *(m.text for m in r.messages)]) for r in summarizer.requests
    )


def fold_some(mem: Memory, sid: str, *texts: str) -> None:
    for text in texts:
        mem.add(sid, Message(role="user", content=text),
                Message(role="assistant", content="noted"))
        outcome = mem.fold(sid, force=True)
        assert outcome.status == "committed", outcome


def summary_shown(mem: Memory, sid: str) -> str:
    ctx = mem.context(sid)
    assert ctx.summary_included
    return ctx.messages[0].text


def test_the_context_shows_values_the_store_and_the_summarizer_never_get() -> None:
    fn = remote()
    with Memory(MemoryStore(), summarizer=fn, fold="manual", policy=ALL) as mem:
        fold_some(mem, "s", f"invite {EMAIL} to the review", f"and call {PHONE} first")
        stored = mem.summary("s")
        assert stored is not None
        assert stored.text == "invite <EMAIL_1> to the review noted and call <PHONE_1> first noted"
        shown = summary_shown(mem, "s")
        assert f"invite {EMAIL} to the review" in shown and f"call {PHONE} first" in shown
        assert not PLACEHOLDER.search(shown)
        # a third fold after the context was shown restored: the summarizer still reads
        # the stored (redacted) summary
        fold_some(mem, "s", "one more turn")
        assert mem.summary("s").text.startswith("invite <EMAIL_1>")  # type: ignore[union-attr]
    assert len(fn.requests) == 3
    assert EMAIL not in seen_by(fn) and PHONE not in seen_by(fn)
    assert "<EMAIL_1>" in fn.requests[-1].previous


def test_summary_tokens_are_counted_restored_and_the_policy_sees_that_size() -> None:
    with Memory(MemoryStore(), summarizer=remote(), fold="manual", policy=ALL) as mem:
        fold_some(mem, "s", f"write to {EMAIL}, {EMAIL.replace('jane', 'joe')} and "
                            f"{EMAIL.replace('jane', 'ann')}")
        ctx = mem.context("s")
        assert ctx.tokens == count_messages(COUNTER, ctx.messages)
        stored = mem.summary("s")
        assert stored is not None
        restored = count_message(COUNTER, ctx.messages[0])
        assert restored > stored.tokens
        stats = mem.stats("s")
        assert stats is not None
        seen = mem._async._with_reserved(stats)  # what the policy is asked with
        assert seen.summary_tokens == restored


def test_restore_once_per_summary_version_not_per_turn() -> None:
    class Counting(MemoryStore):
        reads = 0

        async def vault_get(self, session_id: str) -> dict[str, str]:
            Counting.reads += 1
            return await super().vault_get(session_id)

    with Memory(Counting(), summarizer=remote(), fold="manual", policy=ALL) as mem:
        fold_some(mem, "s", f"mail {EMAIL}")
        before = Counting.reads
        for i in range(5):
            mem.add("s", Message(role="user", content=f"turn {i}"))
            assert EMAIL in summary_shown(mem, "s")
        assert Counting.reads == before + 1
        fold_some(mem, "s", f"call {PHONE}")  # a new version: read again, once
        before = Counting.reads
        for _ in range(3):
            assert PHONE in summary_shown(mem, "s")
        assert Counting.reads == before + 1


def test_redact_messages_sessions_are_never_restored() -> None:
    with Memory(MemoryStore(), summarizer=remote(), fold="manual", policy=ALL, redact_messages=True,
                reversible=True) as mem:
        fold_some(mem, "p", f"mail {EMAIL}")
        mem.add("p", Message(role="user", content=f"again {EMAIL}"))
        ctx = mem.context("p")
        text = "\n".join(m.text for m in ctx.messages)
        assert EMAIL not in text and "<EMAIL_1>" in text
        assert mem.restore("p", "<EMAIL_1>") == EMAIL  # the app can, the context does not
    with pytest.raises(ConfigError, match="redact_messages"):
        Memory(MemoryStore(), redact_messages=True, restore_context=True)
    with pytest.raises(ConfigError, match="restore_context"):
        Memory(MemoryStore(), redactor=False, restore_context=True)
    with pytest.raises(ConfigError, match="restore_context"):
        Memory(MemoryStore(), restore_context="yes")


def test_opting_out_keeps_no_values_and_shows_placeholders(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    with Memory(SQLiteStore(db), summarizer=remote(), fold="manual", policy=ALL,
                restore_context=False) as mem:
        fold_some(mem, "s", f"mail {EMAIL}")
        assert "<EMAIL_1>" in summary_shown(mem, "s")
        with pytest.raises(ConfigError, match="reversible"):
            mem.restore("s", "<EMAIL_1>")
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT count(*) FROM pii_vault").fetchone()[0] == 0


def test_delete_retention_restores_only_when_asked(tmp_path: Path) -> None:
    with Memory(SQLiteStore(tmp_path / "d.db", retention="delete"), summarizer=remote(),
                fold="manual", policy=ALL) as mem:
        fold_some(mem, "s", f"mail {EMAIL}")
        assert "<EMAIL_1>" in summary_shown(mem, "s")
    with Memory(SQLiteStore(tmp_path / "e.db", retention="delete"), summarizer=remote(),
                fold="manual", policy=ALL, restore_context=True) as mem:
        fold_some(mem, "s", f"mail {EMAIL}")
        assert EMAIL in summary_shown(mem, "s")


def test_a_new_process_restores_from_the_stored_vault_and_delete_removes_it(
    tmp_path: Path,
) -> None:
    db = tmp_path / "m.db"
    with Memory(SQLiteStore(db), summarizer=remote(), fold="manual", policy=ALL) as mem:
        fold_some(mem, "s", f"mail {EMAIL}")
        fold_some(mem, "t", f"call {PHONE}")
    with Memory(SQLiteStore(db), summarizer=remote(), fold="manual", policy=ALL) as again:
        assert EMAIL in summary_shown(again, "s")
        assert again.delete("s")
        with sqlite3.connect(db) as conn:
            rows = conn.execute("SELECT session_id FROM pii_vault").fetchall()
        assert rows == [("t",)]  # the deleted session's values are gone, the other's kept
        # the same id again: a new session, its own numbering, never the old values
        fold_some(again, "s", f"mail {EMAIL.replace('jane', 'max')}")
        shown = summary_shown(again, "s")
        assert EMAIL not in shown and EMAIL.replace("jane", "max") in shown


def test_an_idle_clear_forgets_the_restored_summary_and_the_vault() -> None:
    now = [datetime(2026, 1, 1, tzinfo=timezone.utc)]
    store = MemoryStore()
    with Memory(store, summarizer=remote(), fold="manual", clock=lambda: now[0],
                policy=Idle(fold_after=60, clear_after=60)) as mem:
        mem.add("s", Message(role="user", content=f"mail {EMAIL}"),
                Message(role="assistant", content="ok"))
        now[0] += timedelta(seconds=61)
        assert mem.fold("s").status == "committed"
        assert EMAIL in summary_shown(mem, "s")
        restorer = mem._async._restorer
        assert restorer is not None and restorer._hit("s", 1) is not None
        now[0] += timedelta(seconds=121)
        assert mem.fold("s").status == "cleared"
        assert restorer._hit("s", 1) is None
        assert asyncio.run(store.vault_get("s")) == {}
        assert mem.context("s").messages == ()


def test_a_callers_own_reversible_redactor_is_used_for_the_view() -> None:
    vault = InMemoryVault()
    with Memory(MemoryStore(), summarizer=remote(), fold="manual", policy=ALL,
                redactor=Redactor(vault=vault)) as mem:
        fold_some(mem, "s", f"mail {EMAIL}")
        assert EMAIL in summary_shown(mem, "s")
        mem.delete("s")
    assert vault.get("s") == {}


# -- never over budget, whatever the values' length ------------------------------------------

_WORDS = st.text(alphabet="abcdefghij", min_size=1, max_size=400)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    values=st.lists(_WORDS, min_size=1, max_size=4, unique=True),
    budget=st.integers(min_value=120, max_value=900),
    extra=st.integers(min_value=0, max_value=6),
)
def test_the_context_never_exceeds_the_budget_with_restored_values(
    values: list[str], budget: int, extra: int
) -> None:
    redactor = Redactor(patterns={"CODE": r"\bZQ[a-j]+QZ\b"})
    policy = TokenBudget(budget)
    with Memory(MemoryStore(), summarizer=remote(), policy=policy, redactor=redactor,
                tokenizer=COUNTER) as mem:
        for v in values:
            mem.add("s", Message(role="user", content=f"use ZQ{v}QZ next"),
                    Message(role="assistant", content="ok"))
        mem.fold("s", force=True)
        for i in range(extra):
            mem.add("s", Message(role="user", content=f"turn {i} with ZQ{values[0]}QZ"))
        for cap in (budget, budget // 2, budget * 2):
            try:
                ctx = mem.context("s", max_tokens=cap)
            except ConfigError:
                continue
            assert count_messages(COUNTER, ctx.messages) == ctx.tokens <= cap


@settings(max_examples=60, deadline=None)
@given(
    values=st.dictionaries(st.integers(1, 5).map(lambda i: f"<EMAIL_{i}>"), _WORDS,
                           min_size=1, max_size=5),
    limit=st.integers(min_value=10, max_value=400),
)
def test_restore_within_keeps_to_its_limit(values: Mapping[str, str], limit: int) -> None:
    text = "mail " + " and ".join(values) + " <EMAIL_9> soon"
    stored_tokens = count_message(COUNTER, Message(role="system", content=text))
    out, tokens = restore_within(text, dict(values), COUNTER, limit)
    from contextfold.context import render_summary

    assert tokens == count_message(COUNTER, render_summary(out))
    assert tokens <= limit or out == text
    assert "<EMAIL_9>" in out  # unknown placeholders stay
    if out == text:
        assert stored_tokens > 0
    for placeholder, value in values.items():
        assert placeholder in out or value in out


def test_values_never_cost_the_summary_its_place() -> None:
    redactor = Redactor(patterns={"CODE": r"\bZQ[a-j]+QZ\b"})
    value = "ZQ" + "abcdefghij" * 30 + "QZ"
    with Memory(MemoryStore(), summarizer=remote(), fold="manual", policy=ALL, redactor=redactor,
                tokenizer=COUNTER) as mem:
        fold_some(mem, "s", f"use {value} later")
        mem.add("s", Message(role="user", content="what next?"),
                Message(role="assistant", content="the report, then the review"))
        roomy = mem.context("s")
        assert value in roomy.messages[0].text and roomy.omitted == 0
        stored = mem.summary("s")
        assert stored is not None
        restored_tokens = count_message(COUNTER, roomy.messages[0])
        fits_stored = roomy.tokens - restored_tokens + stored.tokens
        tight = mem.context("s", max_tokens=fits_stored)
        # restored, the summary would leave the newest messages too little room and be
        # dropped: the stored one is shown instead
        assert tight.omitted == 0 and tight.summary_included
        assert "<CODE_1>" in tight.messages[0].text and value not in tight.messages[0].text
        assert tight.tokens == count_messages(COUNTER, tight.messages) <= fits_stored


def test_on_postgres_a_second_memory_restores_and_delete_removes_the_values(
    pg_database: str,
) -> None:
    from contextfold.stores.postgres import PostgresStore

    with Memory(PostgresStore(pg_database, pool_size=1), summarizer=remote(),
                fold="manual", policy=ALL) as mem:
        fold_some(mem, "s", f"mail {EMAIL} and call {PHONE}")
        assert mem.summary("s").text == "mail <EMAIL_1> and call <PHONE_1> noted"  # type: ignore[union-attr]
    with Memory(PostgresStore(pg_database, pool_size=1), summarizer=remote(),
                fold="manual", policy=ALL) as again:
        shown = summary_shown(again, "s")
        assert EMAIL in shown and PHONE in shown
        assert again.delete("s")
    with Memory(PostgresStore(pg_database, pool_size=1), fold="manual", policy=ALL,
                reversible=True) as third:
        assert third.restore("s", "<EMAIL_1> <PHONE_1>") == "<EMAIL_1> <PHONE_1>"  # gone
