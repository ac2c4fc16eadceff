"""A Turkish conversation end to end: its T.C. kimlik number, phone and home address never
reach the stored digests, the summary, or a model request — only placeholders do."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import sqlite3
from pathlib import Path

import pytest

from contextfold import Memory, Message
from contextfold.digests import DigestMemory, LLMDigester
from contextfold.llm.openai import OpenAIChat
from contextfold.privacy import PLACEHOLDER
from contextfold.stores.sqlite import SQLiteStore
from contextfold.summarizers.llm import LLMSummarizer
from contextfold.testing import OpenAIServer

TCKN = "62601815964"
PHONE = "0532 123 45 67"
ADDRESS = "Atatürk Caddesi No:12"
RAW = (TCKN, PHONE, ADDRESS, "Atatürk Caddesi", "5321234567")

TURNS: list[tuple[str, str]] = [
    (
        f"Merhaba, kargo adresimi güncellemek istiyorum: {ADDRESS} Kadıköy/İstanbul.",
        "Tabii, adresinizi güncelledim. Kimlik doğrulaması için T.C. numaranızı alabilir miyim?",
    ),
    (
        f"T.C. kimlik numaram {TCKN}.",
        "Teşekkürler, doğrulandı. Teslimat için bir telefon numarası ister misiniz?",
    ),
    (
        f"Evet, beni {PHONE} numarasından arayabilirler.",
        f"Kaydettim: kurye {PHONE} numarasını arayacak. Başka bir isteğiniz var mı?",
    ),
    ("Hayır, teşekkürler.", "Rica ederim, iyi günler!"),
]


def leaks(text: str) -> list[str]:
    squeezed = text.replace(" ", "")
    return [v for v in RAW if v in text or v.replace(" ", "") in squeezed]


def test_turkish_digests_hold_placeholders_in_the_store_and_in_every_model_request(
    tmp_path: Path,
) -> None:
    db = tmp_path / "d.db"

    async def main() -> tuple[str, str]:
        with OpenAIServer() as server:
            digester = LLMDigester(OpenAIChat("gpt-4o-mini", api_key="k", base_url=server.url))
            async with DigestMemory(
                SQLiteStore(db, retention="delete"), digester=digester, locales=["tr"]
            ) as memory:
                for user, assistant in TURNS:
                    await memory.record("ayse", user, assistant)
                stored = " ".join(m.text for m in await memory.memory.messages("ayse"))
                block = await memory.block("ayse")
            requests = [json.dumps(r.body, ensure_ascii=False) for r in server.requests]
        assert len(requests) == len(TURNS)
        for body in requests:
            assert leaks(body) == [], body
        joined = " ".join(requests)
        assert {"<TR_TCKN_1>", "<PHONE_1>", "<ADDRESS_1>"} <= {
            m.group() for m in PLACEHOLDER.finditer(joined)
        }
        return stored, block

    stored, block = asyncio.run(main())
    assert leaks(stored) == [] and leaks(block) == []
    with sqlite3.connect(db) as conn:
        dump = json.dumps(
            [conn.execute(f"SELECT * FROM {t}").fetchall() for t in ("messages", "sessions")],
            ensure_ascii=False,
            default=str,
        )
    assert leaks(dump) == []


def test_turkish_summary_and_summarizer_request_hold_placeholders(tmp_path: Path) -> None:
    with OpenAIServer() as server:
        chat = OpenAIChat("gpt-4o-mini", api_key="k", base_url=server.url)
        summarizer = LLMSummarizer(chat, extractive_fallback=False, fact_check=False)
        # Default locales: Turkish is on without asking.
        mem = Memory(SQLiteStore(tmp_path / "m.db"), summarizer=summarizer, fold="manual")
        try:
            for user, assistant in TURNS:
                mem.add("ayse", Message(role="user", content=user))
                mem.add("ayse", Message(role="assistant", content=assistant))
            outcome = mem.fold("ayse", force=True)
            assert outcome.status == "committed", outcome
            summary = mem.summary("ayse")
        finally:
            mem.close()
        requests = [json.dumps(r.body, ensure_ascii=False) for r in server.requests]
    assert requests
    for body in requests:
        assert leaks(body) == [], body
    assert {"<TR_TCKN_1>", "<PHONE_1>", "<ADDRESS_1>"} <= {
        m.group() for m in PLACEHOLDER.finditer(requests[0])
    }
    assert summary is not None and leaks(summary.text) == []


def test_the_digests_example_in_turkish_stores_no_personal_data(
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = Path(__file__).resolve().parents[1] / "examples" / "assistant_digests.py"
    spec = importlib.util.spec_from_file_location("example_assistant_digests_tr", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.main(["--lang", "tr"]) == 0
    out = capsys.readouterr().out
    assert "PII in the store: none" in out
    assert "<TR_TCKN_1>" in out and "<PHONE_1>" in out and "<ADDRESS_1>" in out
    assert "62601815964" not in out and "0532 123 45 67" not in out
