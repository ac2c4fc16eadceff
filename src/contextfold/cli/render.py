"""Rich rendering of contexts and sessions for the terminal."""

from __future__ import annotations

from rich.panel import Panel
from rich.text import Text

from ..context import SUMMARY_HEADER, Context
from ..messages import Message
from .common import console

_STYLE = {"system": "magenta", "user": "cyan", "assistant": "green", "tool": "yellow"}


def message_line(message: Message, seq: int | None = None, width: int = 240) -> Text:
    label = message.role if not message.name else f"{message.role}:{message.name}"
    text = " ".join(message.text.split())
    if message.tool_calls:
        text += " " + " ".join(f"→{c.name}({c.arguments})" for c in message.tool_calls)
    if len(text) > width:
        text = text[: width - 1] + "…"
    out = Text()
    if seq is not None:
        out.append(f"{seq:>5} ", style="dim")
    out.append(f"[{label}] ", style=_STYLE.get(message.role, ""))
    out.append(text)
    return out


def print_context(ctx: Context) -> None:
    for message in ctx.messages:
        if message.role == "system" and message.text.startswith(SUMMARY_HEADER):
            console.print(Panel(message.text, title="summary", border_style="magenta"))
        else:
            console.print(message_line(message))
    if ctx.omitted:
        console.print(
            f"[yellow]{ctx.omitted} oldest live messages left out of this view "
            "to fit the budget (still stored)[/]"
        )
