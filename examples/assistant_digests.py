# Install: pip install contextfold   # --model openai:…: pip install "contextfold[openai]"
"""A privacy-first assistant that remembers turn digests, never the transcript.

Every exchange becomes one digest line (turn, what the user wanted, what the assistant did,
pending items, time). Personal data is replaced by typed placeholders before anything is
digested or stored; the digests stay under a 500-token window; the next model call gets the
last five as a DIALOG_SUMMARY block in its system prompt. The raw chat is never stored.

    python examples/assistant_digests.py                       # offline, rule-based digests
    python examples/assistant_digests.py --lang tr             # a Turkish conversation
    python examples/assistant_digests.py --model openai:gpt-4o-mini

With ``--lang tr`` the user gives a T.C. kimlik number, a phone number in the Turkish format
and a home address ("Atatürk Caddesi No:12"); the store and every prompt hold
``<TR_TCKN_1>``, ``<PHONE_1>`` and ``<ADDRESS_1>`` instead (``DigestMemory(locales=["tr"])``).
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
from pathlib import Path
from typing import Any

from contextfold.digests import Digester, DigestMemory, LLMDigester
from contextfold.messages import Message

SYSTEM = "You are a concise personal assistant. Use the dialog summary for continuity."

#: (user says, what the offline assistant answers)
SCRIPT: list[tuple[str, str]] = [
    ("What's on my calendar tomorrow?",
     "You have a dentist appointment at 10:00 and lunch with Sam at 12:30."),
    ("Move the dentist to Friday. My email is jane.doe@example.com if they need it.",
     "I can move it to Friday 9:00. Shall I confirm with the clinic?"),
    ("Yes. Also my new phone number is +1 415 555 0132.",
     "Confirmed for Friday 9:00; I'll use +1 415 555 0132 for reminders."),
    ("Pay the clinic with my card 4111 1111 1111 1111.",
     "Payment prepared. Please confirm the amount of $80 before I send it."),
    ("Confirmed. Send the receipt to 1600 Pennsylvania Avenue NW.",
     "Paid. The receipt will be mailed to 1600 Pennsylvania Avenue NW."),
    ("Remind me what we changed today.",
     "We moved the dentist to Friday 9:00 and paid the clinic $80."),
    ("Book a table for two at 19:00 near the office.",
     "Which restaurant would you like: Luigi's or Sakura?"),
    ("Sakura.", "Booked Sakura for two at 19:00. Do you want a reminder at 18:30?"),
]
#: The personal data of SCRIPT, checked against the store at the end.
SCRIPT_PII = ("jane.doe@example.com", "415 555 0132", "4111 1111", "1600 Pennsylvania")

SCRIPT_TR: list[tuple[str, str]] = [
    ("Yarın takvimimde ne var?",
     "Yarın saat 10:00'da diş hekimi randevunuz ve 12:30'da Selin ile öğle yemeğiniz var."),
    ("Diş hekimini cumaya al. Klinik kimlik isterse T.C. numaram 62601815964.",
     "Cuma 09:00'a alabilirim. Klinikle onaylayayım mı?"),
    ("Evet. Yeni telefon numaram 0532 123 45 67, hatırlatmaları oraya gönder.",
     "Cuma 09:00 onaylandı; hatırlatmalar 0532 123 45 67 numarasına gidecek."),
    ("Faturayı Atatürk Caddesi No:12 Kadıköy/İstanbul adresine yolla.",
     "Tamam, fatura Atatürk Caddesi No:12 adresine gönderilecek."),
    ("Bugün neleri değiştirdik?",
     "Diş hekimini cuma 09:00'a aldık ve fatura adresini güncelledik."),
]
SCRIPT_TR_PII = ("62601815964", "0532 123 45 67", "Atatürk Caddesi No:12")


async def chat(args: argparse.Namespace) -> None:
    model: Any = None
    digester: Digester | None = None
    if args.model:
        from contextfold.llm import resolve_model

        model = resolve_model(args.model)
        digester = LLMDigester(model)
    script, pii = (SCRIPT_TR, SCRIPT_TR_PII) if args.lang == "tr" else (SCRIPT, SCRIPT_PII)
    async with DigestMemory(
        args.db, digester=digester, max_tokens=args.max_tokens, locales=[args.lang]
    ) as memory:
        for user, canned in script:
            system = await memory.system_prompt("me", SYSTEM)
            if model is not None:
                reply = await model.complete(
                    [Message(role="system", content=system), Message(role="user", content=user)],
                    max_tokens=200, temperature=0.3)
                assistant = reply.text.strip() or canned
            else:
                assistant = canned
            digest = await memory.record("me", user, assistant)
            print(digest.render())
        print(f"\nwindow: {len(await memory.digests('me'))} digests, "
              f"{await memory.window_tokens('me')} tokens (cap {args.max_tokens})\n")
        print("system prompt of the next call:\n")
        print(await memory.system_prompt("me", SYSTEM))
        stored = " ".join(m.text for m in await memory.memory.messages("me"))
        leaked = [v for v in pii if v in stored]
        print(f"\nPII in the store: {leaked or 'none'}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", help="model for replies and digests, e.g. "
                        "openai:gpt-4o-mini (default: offline, rule-based)")
    parser.add_argument("--lang", choices=("en", "tr"), default="en",
                        help="conversation language and redaction locale (en)")
    parser.add_argument("--max-tokens", type=int, default=500, help="digest window cap (500)")
    parser.add_argument("--db", help="store URL (default: a temporary SQLite file)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        args.db = args.db or f"sqlite:///{Path(tmp) / 'digests.db'}"
        asyncio.run(chat(args))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
