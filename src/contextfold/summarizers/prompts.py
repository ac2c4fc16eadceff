"""Summarizer prompts: Jinja2 templates shipped in ``contextfold/prompts`` and the pure
functions that render them.

The transcript is untrusted. It is rendered as ``[ROLE]: content`` lines (prefixed by a
UTC timestamp when the message has one), continuation lines are indented so only real
turns start a line, and any text shaped like one of our data delimiters
(``<transcript-…>``, ``<earlier-summary-…>``) is defanged before it is wrapped in
delimiters carrying a nonce. The previous summary goes only into a block labelled as a
summary of the earlier conversation, in the user message, never into the system prompt.

Everything here is deterministic: given the same arguments (including ``nonce``) the
prompt is the same. Without a ``nonce`` one is derived from the content, which a
transcript cannot predict because it is part of that content.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.resources
import re
import unicodedata
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal, Union

import jinja2
import jinja2.sandbox

from ..errors import ConfigError
from ..messages import Message, StoredMessage, coerce_message, render_text

__all__ = [
    "PRESETS",
    "Preset",
    "Prompt",
    "Turn",
    "build_agent_prompt",
    "build_character_prompt",
    "build_conversation_prompt",
    "build_prompt",
    "detect_script",
    "neutralise",
    "render_transcript",
]

Preset = Literal["conversation", "agent", "character"]
PRESETS: tuple[Preset, ...] = ("conversation", "agent", "character")
Turn = Union[Message, StoredMessage, Mapping[str, Any]]  # noqa: UP007 - runtime alias on 3.10

_FORGED_DELIMITER = re.compile(
    r"<(\s*/?\s*)(transcript|earlier[-_ ]?summary)([^<>\n]{0,80})>?", re.IGNORECASE
)
_ROLE_LABEL = {"system": "SYSTEM", "user": "USER", "assistant": "ASSISTANT", "tool": "TOOL"}
_INDENT = "    "
_SCRIPT_SAMPLE = 4000


@dataclass(frozen=True)
class Prompt:
    """A rendered prompt: instructions (system) and data (user), and the nonce of its
    data delimiters."""

    system: str
    user: str
    nonce: str

    def messages(self) -> list[Message]:
        return [
            Message(role="system", content=self.system),
            Message(role="user", content=self.user),
        ]

    @property
    def text(self) -> str:
        """Both parts as one text (for providers or logs that want a single prompt)."""
        return f"{self.system}\n\n{self.user}"

    def __str__(self) -> str:
        return self.text


def neutralise(text: str) -> str:
    """Defang anything shaped like our data delimiters (``<transcript-x>``,
    ``</earlier-summary-x>``, with any nonce): angle brackets become ‹ › so the text
    stays readable but can no longer close or open a data block."""
    return _FORGED_DELIMITER.sub(lambda m: f"‹{m.group(1)}{m.group(2)}{m.group(3)}›", text)


def _as_message(turn: Turn) -> Message:
    if isinstance(turn, StoredMessage):
        return turn.message
    return coerce_message(turn)


def render_transcript(turns: Sequence[Turn]) -> str:
    """``[ROLE]: content`` lines, oldest first; a UTC timestamp prefix when known; tool
    calls as ``name(args)``; continuation lines indented; forged delimiters defanged."""
    lines: list[str] = []
    for turn in turns:
        message = _as_message(turn)
        label = _ROLE_LABEL[message.role]
        if message.name:
            label = f"{label} {' '.join(message.name.split())}"
        head = f"[{label}]:"
        if message.timestamp is not None:
            head = f"[{_stamp(message.timestamp)}] {head}"
        body = neutralise(render_text(message)).splitlines() or [""]
        first, rest = body[0], body[1:]
        lines.append(f"{head} {first}".rstrip())
        lines.extend(f"{_INDENT}{line}" if line.strip() else "" for line in rest)
    return "\n".join(lines)


def _stamp(ts: datetime) -> str:
    return ts.strftime("%Y-%m-%d %H:%M UTC")


def detect_script(text: str) -> str | None:
    """The dominant writing system of ``text`` ("Cyrillic", "Latin", "Han", ...), or
    None when there are no letters. A hint for the model, not language identification."""
    counts: Counter[str] = Counter()
    seen = 0
    for ch in text:
        if not ch.isalpha():
            continue
        name = unicodedata.name(ch, "")
        if not name:
            continue
        word = name.split()[0]
        script = {"CJK": "Han", "HANGUL": "Hangul"}.get(word, word.title())
        counts[script] += 1
        seen += 1
        if seen >= _SCRIPT_SAMPLE:
            break
    if not counts:
        return None
    return counts.most_common(1)[0][0]


def _script_hint(previous: str, turns: Sequence[Turn]) -> str | None:
    """Name the script only when it is not Latin: that is where models drift to English."""
    texts = [previous, *(_as_message(t).text for t in turns)]
    script = detect_script("\n".join(texts))
    return None if script in (None, "Latin") else script


@functools.lru_cache(maxsize=1)
def _environment() -> jinja2.Environment:
    def load(name: str) -> str | None:
        path = importlib.resources.files("contextfold").joinpath("prompts").joinpath(name)
        return path.read_text(encoding="utf-8") if path.is_file() else None

    return jinja2.sandbox.SandboxedEnvironment(
        loader=jinja2.FunctionLoader(load),
        undefined=jinja2.StrictUndefined,
        autoescape=False,
        keep_trailing_newline=False,
    )


@functools.lru_cache(maxsize=32)
def _template(preset: str | None, source: str | None) -> jinja2.Template:
    env = _environment()
    if source is not None:
        try:
            template = env.from_string(source)
        except jinja2.TemplateSyntaxError as exc:
            raise ConfigError(f"custom prompt template is not valid Jinja2: {exc}") from exc
    elif preset in PRESETS:
        template = env.get_template(f"{preset}.j2")
    else:
        raise ConfigError(f"unknown preset {preset!r}; use one of {list(PRESETS)} or a template")
    return template


def build_prompt(
    turns: Sequence[Turn],
    task_context: str = "",
    *,
    preset: Preset = "conversation",
    previous: str = "",
    word_limit: int = 500,
    character: str | None = None,
    structured: bool = False,
    nonce: str | None = None,
    template: str | None = None,
    lost_facts: Sequence[str] = (),
) -> Prompt:
    """Render a summarizer prompt. Pure: no I/O beyond reading the packaged template.

    ``template`` is custom Jinja2 source defining the blocks ``system`` and ``user``
    (usually by extending a preset: ``{% extends "agent.j2" %}``); it replaces
    ``preset``. Templates see: ``transcript``, ``previous``, ``nonce``, ``word_limit``,
    ``language``, ``structured``, ``task_context``, ``character``, ``lost_facts``,
    ``has_timestamps``.
    """
    if word_limit < 1:
        raise ConfigError(f"word_limit must be >= 1, got {word_limit!r}")
    transcript = render_transcript(turns)
    previous = neutralise(previous.replace("\x00", "").strip())
    task_context = neutralise(task_context.replace("\x00", "").strip())
    if nonce is None:
        digest = hashlib.sha256(f"{previous}\x00{transcript}\x00{task_context}".encode())
        nonce = digest.hexdigest()[:16]
    elif not re.fullmatch(r"[A-Za-z0-9]{6,64}", nonce):
        raise ConfigError(f"nonce must be 6-64 letters or digits, got {nonce!r}")
    variables: dict[str, Any] = {
        "transcript": transcript,
        "previous": previous,
        "nonce": nonce,
        "word_limit": word_limit,
        "language": _script_hint(previous, turns),
        "structured": structured,
        "task_context": task_context,
        "character": " ".join(character.split()) if character else None,
        "lost_facts": list(lost_facts),
        "has_timestamps": any(_as_message(t).timestamp is not None for t in turns),
    }
    tmpl = _template(None if template is not None else preset, template)
    try:
        system, user = _render_blocks(tmpl, variables)
    except jinja2.TemplateError as exc:
        raise ConfigError(f"prompt template failed to render: {exc}") from exc
    return Prompt(system=system, user=user, nonce=nonce)


def _render_blocks(template: jinja2.Template, variables: dict[str, Any]) -> tuple[str, str]:
    """The most derived ``system`` and ``user`` blocks. Rendering the whole template once
    first lets ``{% extends %}`` register the parents' blocks in the context."""
    context = template.new_context(variables)
    for _ in template.root_render_func(context):
        pass
    missing = sorted({"system", "user"} - set(context.blocks))
    if missing:
        raise ConfigError(
            f"a prompt template must define the blocks 'system' and 'user' (missing "
            f"{missing}); extend a preset, e.g. {{% extends \"conversation.j2\" %}}"
        )
    parts = ("".join(context.blocks[name][0](context)) for name in ("system", "user"))
    system, user = (re.sub(r"\n{3,}", "\n\n", text).strip() for text in parts)
    return system, user


def build_conversation_prompt(turns: Sequence[Turn], previous: str = "", **options: Any) -> Prompt:
    """The ``conversation`` preset: third person, topics, decisions, action items, tone."""
    return build_prompt(turns, preset="conversation", previous=previous, **options)


def build_agent_prompt(
    turns: Sequence[Turn], task_context: str = "", previous: str = "", **options: Any
) -> Prompt:
    """The ``agent`` preset: plan and goal, latest failure, decisions, constraints;
    ``task_context`` follows the transcript under ``## Active Task Context``."""
    return build_prompt(turns, task_context, preset="agent", previous=previous, **options)


def build_character_prompt(
    turns: Sequence[Turn], previous: str = "", character: str | None = None, **options: Any
) -> Prompt:
    """The ``character`` preset: old summary + the memory cell being dropped, written
    from the character's point of view."""
    return build_prompt(
        turns, preset="character", previous=previous, character=character, **options
    )
