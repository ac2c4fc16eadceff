"""A context in the request shape of each provider: OpenAI, Anthropic, Gemini.

Pure functions of the context's messages. The system prompt and the summary block (system
messages) become Anthropic's top-level ``system`` and Gemini's ``system_instruction`` text;
assistant tool calls become ``tool_use`` / ``functionCall`` parts and tool results
``tool_result`` / ``functionResponse`` parts, and consecutive same-role turns are merged
(Anthropic and Gemini want alternating turns). Media parts pass through only in the OpenAI
form; elsewhere they become their text placeholder (``[image]``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Literal

from ..messages import Message, TextPart

__all__ = ["ContextFormat", "render"]

ContextFormat = Literal["openai", "anthropic", "gemini"]


def render(
    messages: Sequence[Message], fmt: ContextFormat
) -> tuple[str | None, list[dict[str, Any]]]:
    """(system text or None, provider messages) for ``fmt``. For ``openai`` the system
    messages stay in the list and the first item is None."""
    if fmt == "openai":
        return None, [m.to_openai() for m in messages]
    system = "\n\n".join(m.text for m in messages if m.role == "system") or None
    turns = [m for m in messages if m.role != "system"]
    if fmt == "anthropic":
        return system, _merge([_anthropic(m) for m in turns], "content")
    return system, _merge([_gemini(m, turns) for m in turns], "parts")


def _text_of(message: Message) -> str:
    if isinstance(message.content, str):
        return message.content
    return "".join(p.text if isinstance(p, TextPart) else p.placeholder() for p in message.content)


def _arguments(raw: object) -> Any:
    if isinstance(raw, str):
        try:
            return json.loads(raw)
        except json.JSONDecodeError:
            return {"arguments": raw}
    return raw


def _anthropic(m: Message) -> dict[str, Any]:
    if m.role == "tool":
        return {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": m.tool_call_id, "content": _text_of(m)}
            ],
        }
    blocks: list[dict[str, Any]] = []
    text = _text_of(m)
    if text:
        blocks.append({"type": "text", "text": text})
    for call in m.tool_calls:
        blocks.append(
            {
                "type": "tool_use",
                "id": call.id,
                "name": call.name,
                "input": _arguments(call.arguments),
            }
        )
    return {"role": "assistant" if m.role == "assistant" else "user", "content": blocks}


def _gemini(m: Message, turns: Sequence[Message]) -> dict[str, Any]:
    if m.role == "tool":
        name = next((c.name for t in turns for c in t.tool_calls if c.id == m.tool_call_id), "tool")
        result = _arguments(_text_of(m))
        return {
            "role": "user",
            "parts": [
                {
                    "functionResponse": {
                        "name": name,
                        "response": result if isinstance(result, dict) else {"result": result},
                    }
                }
            ],
        }
    parts: list[dict[str, Any]] = []
    text = _text_of(m)
    if text:
        parts.append({"text": text})
    for call in m.tool_calls:
        args = _arguments(call.arguments)
        parts.append(
            {
                "functionCall": {
                    "name": call.name,
                    "args": args if isinstance(args, dict) else {"value": args},
                }
            }
        )
    return {"role": "model" if m.role == "assistant" else "user", "parts": parts}


def _merge(items: list[dict[str, Any]], key: str) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for item in items:
        if not item[key]:
            continue
        if out and out[-1]["role"] == item["role"]:
            out[-1] = {"role": item["role"], key: [*out[-1][key], *item[key]]}
        else:
            out.append(item)
    return out
