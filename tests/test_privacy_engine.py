"""PII redaction wired into the engine: end to end through the fake OpenAI server."""

from __future__ import annotations

import json
import logging
import re
import sqlite3
from pathlib import Path

import pytest

from contextfold import Memory, Message, TokenBudget
from contextfold.errors import ConfigError
from contextfold.llm.openai import OpenAIChat
from contextfold.privacy import PLACEHOLDER, Redactor
from contextfold.stores import MemoryStore
from contextfold.stores.sqlite import SQLiteStore
from contextfold.summarizers.extractive import ExtractiveSummarizer
from contextfold.summarizers.llm import LLMSummarizer
from contextfold.testing import FunctionSummarizer, OpenAIServer, ServerReply

#: A forced fold keeps the policy's keep_last; these tests fold every message.
ALL = TokenBudget(4000, keep_last=0)

EMAIL = "jane.doe@example.com"
PHONE = "+44 20 7946 0958"
CARD = "4111 1111 1111 1111"
IBAN = "DE89 3704 0044 0532 0130 00"
SSN = "123-45-6789"
IP = "192.168.1.20"
SECRET = "sk-proj-4fT9kLmN2pQrS7uVwX1yZ3aB5cD8eF0g"
ADDRESS = "221B Baker Street"
ALL_PII = (EMAIL, PHONE, CARD, IBAN, SSN, IP, SECRET, ADDRESS)

FIRST = [
    Message(role="user", content=f"Hi, I'm Jane. Mail me at {EMAIL} or call {PHONE}."),
    Message(role="assistant", content="Noted. What can I help with?"),
    Message(role="user", content=f"Pay the invoice with card {CARD}; my SSN is {SSN}."),
    Message(role="assistant", content="I can't store card numbers, but I noted the request."),
    Message(role="user", content=f"Ship to {ADDRESS}. The server at {IP} uses key {SECRET}."),
    Message(role="assistant", content="Understood, shipping address and server noted."),
]
SECOND = [
    Message(role="user", content=f"Refunds go to {IBAN}, and confirm to {EMAIL} again."),
    Message(role="assistant", content=f"Will do: refund to the IBAN, confirmation to {EMAIL}."),
    Message(role="user", content=f"Also text {PHONE} when it's done."),
    Message(role="assistant", content="Sure."),
]


def leaks(text: str) -> list[str]:
    return [value for value in ALL_PII if value in text]


def placeholders(text: str) -> set[str]:
    return {m.group() for m in PLACEHOLDER.finditer(text)}


def test_no_raw_pii_reaches_the_provider_the_summary_the_ledger_or_the_logs(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    provider_error = f"invalid request: account {EMAIL} ({SSN}) is suspended"
    with OpenAIServer() as server:
        chat = OpenAIChat("gpt-4o-mini", api_key="k", base_url=server.url)
        summarizer = LLMSummarizer(chat, extractive_fallback=False, fact_check=False)
        mem = Memory(SQLiteStore(tmp_path / "m.db"), summarizer=summarizer, fold="manual",
                     policy=ALL)
        try:
            sid = "jane"
            mem.add(sid, *FIRST)
            first = mem.fold(sid, force=True)
            assert first.status == "committed", first
            # A failed fold whose provider error quotes personal data.
            server.script(ServerReply.error(400, message=provider_error))
            mem.add(sid, *SECOND)
            failed = mem.fold(sid, force=True)
            assert failed.status == "failed"
            second = mem.fold(sid, force=True)
            assert second.status == "committed", second
            summary = mem.summary(sid)
            ledger = mem.ledger(sid)
        finally:
            mem.close()

    requests = [r.prompt or json.dumps(r.body) for r in server.requests]
    assert len(requests) >= 3
    for prompt in requests:
        assert leaks(prompt) == [], prompt
        assert leaks(json.dumps(server.requests[0].body)) == []
    assert summary is not None and leaks(summary.text) == []
    assert [e.outcome for e in ledger].count("failed") == 1
    for entry in ledger:
        assert leaks(f"{entry.error} {entry.error_class} {entry.reason}") == []
    assert leaks(caplog.text) == []
    # The raw database holds no PII outside the messages table (stored verbatim: default)
    # and the vault beside it (the values the context's summary is shown with, deleted
    # with the session; empty with restore_context=False: test_restore_view.py).
    with sqlite3.connect(tmp_path / "m.db") as db:
        for table in ("sessions", "ledger"):
            rows = json.dumps(db.execute(f"SELECT * FROM {table}").fetchall(), default=str)
            assert leaks(rows) == [], table

    # Placeholders are consistent across folds: the email and phone of fold 1 are the same
    # placeholders when they come back in fold 2's transcript.
    fold1, fold2 = requests[0], requests[-1]
    assert {"<EMAIL_1>", "<PHONE_1>", "<CARD_1>", "<SSN_1>", "<ADDRESS_1>", "<IP_1>"} <= (
        placeholders(fold1)
    )
    assert {"<EMAIL_1>", "<PHONE_1>", "<IBAN_1>"} <= placeholders(fold2)
    assert "<EMAIL_2>" not in fold2 and "<PHONE_2>" not in fold2


def test_privacy_first_mode_stores_no_raw_pii_and_restores_in_the_app(tmp_path: Path) -> None:
    summarizer = FunctionSummarizer(lambda req: " ".join(m.text for m in req.messages)[:400])
    db = tmp_path / "p.db"
    mem = Memory(
        SQLiteStore(db, retention="delete"),
        summarizer=summarizer,
        fold="manual", policy=ALL,
        redact_messages=True,
        reversible=True,
    )
    try:
        mem.add("s", *FIRST)
        stored = " ".join(m.text for m in mem.messages("s"))
        assert leaks(stored) == []
        assert "<EMAIL_1>" in stored and "<CARD_1>" in stored
        assert mem.fold("s", force=True).status == "committed"
        summary = mem.summary("s")
        assert summary is not None and leaks(summary.text) == []
        restored = mem.restore("s", summary.text)
        assert EMAIL in restored and CARD in restored
        with sqlite3.connect(db) as conn:
            vault = dict(conn.execute("SELECT placeholder, value FROM pii_vault").fetchall())
        assert vault["<EMAIL_1>"] == EMAIL
    finally:
        mem.close()
    # A new process (new Memory on the same file) keeps numbering and restores.
    again = Memory(
        SQLiteStore(db, retention="delete"),
        summarizer=summarizer,
        fold="manual", policy=ALL,
        redact_messages=True,
        reversible=True,
    )
    try:
        again.add("s", Message(role="user", content=f"new mail bob@example.com, old {EMAIL}"))
        last = again.messages("s")[-1].text
        assert last == "new mail <EMAIL_2>, old <EMAIL_1>"
        assert again.restore("s", last) == f"new mail bob@example.com, old {EMAIL}"
        assert again.delete("s")
        with sqlite3.connect(db) as conn:
            assert conn.execute("SELECT count(*) FROM pii_vault").fetchone()[0] == 0
        assert again.restore("s", "<EMAIL_1>") == "<EMAIL_1>"
    finally:
        again.close()


def test_tool_call_arguments_stay_valid_json_when_redacted() -> None:
    mem = Memory(MemoryStore(), fold="manual", policy=ALL, redact_messages=True)
    try:
        call = {
            "id": "c1",
            "type": "function",
            "function": {
                "name": "pay",
                "arguments": json.dumps({"card": 4111111111111111, "email": EMAIL, "amount": 12}),
            },
        }
        mem.add(
            "t",
            {"role": "assistant", "content": "", "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "c1", "content": f"charged, receipt to {EMAIL}"},
        )
        stored = mem.messages("t")
        args = json.loads(stored[0].message.tool_calls[0].arguments)
        assert args == {"card": "<CARD_1>", "email": "<EMAIL_1>", "amount": 12}
        assert stored[1].text == "charged, receipt to <EMAIL_1>"
    finally:
        mem.close()


def test_defaults_depend_on_whether_the_summarizer_may_send_text_away() -> None:
    seen: list[str] = []

    def record(req: object) -> str:
        seen.append(" ".join(m.text for m in req.messages))  # type: ignore[attr-defined]
        return "The user shared contact details."

    remote = FunctionSummarizer(record)  # no needs_redaction: treated as a remote model
    with Memory(MemoryStore(), summarizer=remote, fold="manual", policy=ALL) as mem:
        mem.add("a", Message(role="user", content=f"mail {EMAIL}"))
        mem.fold("a", force=True)
    assert seen == ["mail <EMAIL_1>"]

    local = ExtractiveSummarizer()
    with Memory(MemoryStore(), summarizer=local, fold="manual", policy=ALL) as mem:
        assert not mem.engine.privacy.summarizer_input and mem.engine.privacy.summary
        mem.add("b", Message(role="user", content=f"Please mail the contract to {EMAIL} today."))
        mem.fold("b", force=True)
        summary = mem.summary("b")
        assert summary is not None and EMAIL not in summary.text

    seen.clear()
    with Memory(MemoryStore(), summarizer=remote, fold="manual", policy=ALL,
                redactor=False) as mem:
        mem.add("c", Message(role="user", content=f"mail {EMAIL}"))
        mem.fold("c", force=True)
        summary = mem.summary("c")
    assert seen == [f"mail {EMAIL}"]


def test_user_redactor_and_bad_combinations() -> None:
    seen: list[str] = []

    def first_text(req: object) -> str:
        seen.append(req.messages[0].text)  # type: ignore[attr-defined]
        return "ok"

    fn = FunctionSummarizer(first_text)
    redactor = Redactor(email=False, patterns={"TICKET": r"\bT-\d{5}\b"})
    with Memory(MemoryStore(), summarizer=fn, fold="manual", policy=ALL,
                redactor=redactor) as mem:
        mem.add("u", Message(role="user", content=f"{EMAIL} about T-12345"))
        mem.fold("u", force=True)
    assert seen == [f"{EMAIL} about <TICKET_1>"]
    with pytest.raises(ConfigError):
        Memory(MemoryStore(), redactor=False, reversible=True)
    with pytest.raises(ConfigError, match="restore"), Memory(MemoryStore()) as mem:
        mem.restore("x", "<EMAIL_1>")


def test_placeholders_never_grow_on_refold() -> None:
    """The summary is redacted, fed back as the previous summary and redacted again:
    idempotence keeps it byte-identical, so folds never inflate placeholders."""
    fn = FunctionSummarizer(lambda req: (req.previous + " " + req.messages[0].text).strip())
    with Memory(MemoryStore(), summarizer=fn, fold="manual", policy=ALL) as mem:
        mem.add("r", Message(role="user", content=f"a {EMAIL}"))
        mem.fold("r", force=True)
        mem.add("r", Message(role="user", content=f"b {EMAIL} {PHONE}"))
        mem.fold("r", force=True)
        summary = mem.summary("r")
    assert summary is not None
    assert summary.text == "a <EMAIL_1> b <EMAIL_1> <PHONE_1>"
    assert not re.search(r"<[A-Z]+_\d+>[^ ]", summary.text)


def test_ledger_error_text_is_always_redacted(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)

    def boom(req: object) -> str:
        raise RuntimeError(f"upstream rejected {EMAIL} with card {CARD}")

    with Memory(
        MemoryStore(), summarizer=FunctionSummarizer(boom), fold="manual", policy=ALL,
        redactor=False
    ) as mem:
        mem.add("e", Message(role="user", content="hello"))
        outcome = mem.fold("e", force=True)
        entry = mem.ledger("e")[0]
    assert outcome.status == "failed"
    assert (
        entry.error
        == "SummarizationError: RuntimeError: upstream rejected <EMAIL_1> with card <CARD_1>"
    )
    assert leaks(caplog.text) == []
