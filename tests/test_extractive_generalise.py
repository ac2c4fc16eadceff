"""The extractive summarizer beyond tidy English transcripts: relative dates, bursts,
nicknamed and lower-case speakers, corrections, other languages, and readable fragments."""

from __future__ import annotations

import asyncio
import re
import sys
from collections.abc import Sequence
from datetime import date, datetime, timedelta, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contextfold.memory import AsyncMemory
from contextfold.messages import Message, StoredMessage, ToolCall
from contextfold.policy import TokenBudget
from contextfold.summarizers import dates as dates_module
from contextfold.summarizers.dates import resolver_for
from contextfold.summarizers.extractive import ExtractiveSummarizer, Speakers
from contextfold.summarizers.facts import parse_summary, sentence_text
from contextfold.summarizers.languages import LANGUAGES, detect_language, get_language
from contextfold.summarizers.salience import compress, split_sentences, words
from contextfold.summarizers.weights import DEFAULT_WEIGHTS
from contextfold.testing.messy_chats import messy_chat
from contextfold.testing.planted import PlantedChat, score
from contextfold.testing.planted_languages import LANGUAGE_CODES, language_chat
from contextfold.tokens import count_message, get_counter

O200K = get_counter("o200k")
MONDAY = datetime(2023, 5, 8, 13, 0, tzinfo=timezone.utc)


def fold(messages: Sequence[Message], cap: int = 400, previous: str = "",
         summarizer: ExtractiveSummarizer | None = None) -> str:
    stored = [StoredMessage(i + 1, m, 0) for i, m in enumerate(messages)]
    return (summarizer or ExtractiveSummarizer()).fold(previous, stored, cap, O200K)


def say(name: str, text: str, when: datetime = MONDAY, role: str = "user") -> Message:
    return Message(role=role, name=name, content=text, timestamp=when)  # type: ignore[arg-type]


# -- relative dates ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("lang", "sentence", "expected"),
    [
        ("en", "I went to the concert yesterday with my mom.", "yesterday (7 May 2023)"),
        ("en", "We fly to Lisbon next friday.", "next friday (12 May 2023)"),
        ("en", "The race is in two weeks.", "in two weeks (22 May 2023)"),
        ("en", "Next month I start at Acme.", "Next month (June 2023)"),
        ("en", "I moved here 3 years ago.", "3 years ago (2020)"),
        ("en", "Last week was rough.", "Last week (week of 1 May 2023)"),
        ("tr", "Dün akşam sinemaya gittik.", "Dün (7 May 2023)"),
        ("de", "Gestern war ich im Kino.", "Gestern (7 May 2023)"),
        ("es", "Ayer fui al cine.", "Ayer (7 May 2023)"),
        ("fr", "Hier je suis allé au cinéma.", "Hier (7 May 2023)"),
        ("ru", "Вчера я ходил в кино.", "Вчера (7 May 2023)"),
    ],
)
def test_relative_dates_resolved_against_the_message_day(
    lang: str, sentence: str, expected: str
) -> None:
    resolver = resolver_for(lang)
    assert resolver is not None
    out = resolver.annotate(sentence, MONDAY.date())
    assert expected in out
    assert resolver.annotate(out, MONDAY.date()) == out  # annotating twice changes nothing


def test_same_day_words_and_plain_sentences_are_left_alone() -> None:
    resolver = resolver_for("en")
    assert resolver is not None
    for text in ("See you tonight!", "Today was long.", "I'm in a band.", "We met at 5."):
        assert resolver.annotate(text, MONDAY.date()) == text


def test_a_fact_folded_weeks_later_keeps_its_absolute_date() -> None:
    first = fold([say("Caroline", "I adopted a puppy called Rex yesterday.")])
    later = MONDAY + timedelta(days=40)
    second = fold([say("Melanie", "I started pottery classes in Leeds.", later)],
                  previous=first)
    assert "yesterday (7 May 2023)" in second
    assert "8 May 2023 — Caroline:" in second


def test_resolve_dates_true_without_dateparser_names_the_extra(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    dates_module.dates_available.cache_clear()
    monkeypatch.setitem(sys.modules, "dateparser", None)
    try:
        with pytest.raises(ImportError, match=r"contextfold\[dates\]"):
            ExtractiveSummarizer(resolve_dates=True)
        assert ExtractiveSummarizer().resolve_dates is False  # default: degrade, not fail
    finally:
        dates_module.dates_available.cache_clear()


# -- speakers and bursts -------------------------------------------------------------------


def test_speakers_canonical_across_case_and_short_forms() -> None:
    speakers = Speakers(["jess", "Jessica", "tom", "Tommy", "al", "Alan", "Alice", "bob"])
    assert speakers.canonical("jess") == "Jessica"
    assert speakers.canonical("JESS") == "Jessica"
    assert speakers.canonical("tom") == "Tommy"
    assert speakers.canonical("bob") == "Bob"  # lower case is capitalised
    assert speakers.canonical("al") == "Al"  # too short / ambiguous: stays itself
    assert speakers.canonical(None) is None


def test_attribution_survives_lower_case_and_nicknames() -> None:
    t = MONDAY
    text = fold([
        say("jess", "i got the job at Brightwell Labs", t),
        say("Tom", "Our dog Biscuit is sick.", t + timedelta(hours=1)),
        say("Jessica", "My sister Priya visits in June.", t + timedelta(hours=2)),
        say("tommy", "I booked Casa Verde for Friday.", t + timedelta(hours=3)),
    ])
    speakers = {f.speaker for f in parse_summary(text)}
    assert speakers == {"Jessica", "Tommy"}
    assert "Brightwell Labs" in text and "Casa Verde" in text


def test_a_burst_of_short_lines_is_one_utterance() -> None:
    t = MONDAY
    burst = ["omg", "i got the job", "at Brightwell Labs", "start in june"]
    messages = [say("jess", line, t + timedelta(seconds=20 * i)) for i, line in enumerate(burst)]
    facts = parse_summary(fold(messages))
    assert len(facts) == 1
    # each line as written, marked off where it ended without punctuation
    assert "i got the job / at Brightwell Labs / start in june" in facts[0].text


def test_bursts_stop_at_speaker_change_time_gap_and_tool_traffic() -> None:
    t = MONDAY
    call = ToolCall(id="c1", name="lookup", arguments={"q": "x"})
    messages = [
        say("jess", "moving to Porto", t),
        say("tom", "wait really", t + timedelta(seconds=10)),
        say("tom", "since when", t + timedelta(seconds=20)),
        say("tom", "we got tickets to Riga", t + timedelta(hours=2)),
        Message(role="assistant", tool_calls=[call], timestamp=t + timedelta(hours=3)),
        Message(role="tool", tool_call_id="c1", content="ok Riga found",
                timestamp=t + timedelta(hours=3, seconds=5)),
    ]
    summarizer = ExtractiveSummarizer()
    stored = [StoredMessage(i + 1, m, 0) for i, m in enumerate(messages)]
    units = summarizer._utterances(stored, Speakers(["jess", "tom"]))
    assert [u.text for u in units] == [
        "moving to Porto", "wait really / since when", "we got tickets to Riga",
        units[3].text, "ok Riga found",
    ]
    assert ExtractiveSummarizer(bursts=False)._utterances(stored, Speakers([]))[1].text == (
        "wait really")


# -- corrections ---------------------------------------------------------------------------


def test_a_moved_time_keeps_only_the_newer_value() -> None:
    text = fold([
        say("Tom", "My flight is at 16:10 on Friday."),
        say("Tom", "I love the window seat.", MONDAY + timedelta(hours=1)),
        say("Tom", "Update: the flight moved to 17:40.", MONDAY + timedelta(days=2)),
    ])
    assert "17:40" in text and "16:10" not in text
    assert "window seat" in text


def test_not_the_old_value_drops_the_older_fact() -> None:
    text = fold([
        say("jess", "we're moving to Zagreb in the summer"),
        say("jess", "my sister Priya is visiting", MONDAY + timedelta(hours=1)),
        say("jess", "actually its Ljubljana not Zagreb", MONDAY + timedelta(days=1)),
    ])
    lines = [ln for ln in text.splitlines() if "Zagreb" in ln]
    assert all("Ljubljana" in ln for ln in lines)
    assert "Priya" in text


def test_new_facts_without_a_correction_cue_are_not_corrections() -> None:
    text = fold([
        say("Tom", "My flight to Oslo is at 16:10."),
        say("Tom", "My train to Bergen is at 09:30.", MONDAY + timedelta(days=1)),
    ])
    assert "16:10" in text and "09:30" in text


# -- languages -----------------------------------------------------------------------------


def test_function_words_ship_as_package_data() -> None:
    for code in LANGUAGES:
        lang = get_language(code)
        assert len(lang.function_words) > 100, code
        assert lang.correction_cues and lang.negation
    assert "und" in get_language("de").function_words
    assert "ve" in get_language("tr").function_words
    assert get_language("xx").function_words == frozenset()


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ("I think we should go to the beach on Sunday with the kids.", "en"),
        ("Bu hafta sonu çocuklarla birlikte sahile gitmek istiyoruz ama hava çok soğuk.",
         "tr"),
        ("Ich glaube, wir sollten am Sonntag mit den Kindern an den Strand fahren.", "de"),
        ("Creo que deberíamos ir a la playa el domingo con los niños.", "es"),
        ("Je pense que nous devrions aller à la plage dimanche avec les enfants.", "fr"),
        ("Я думаю, что в воскресенье нам стоит поехать на пляж с детьми.", "ru"),
    ],
)
def test_detects_the_language(text: str, code: str) -> None:
    assert detect_language([text]).code == code


def test_script_aware_sentence_splitting() -> None:
    assert split_sentences("我们明天去北京。你呢？好的！") == [
        "我们明天去北京。", "你呢？", "好的！"]
    assert split_sentences("Wir fliegen am 14. März nach Wien. Z.B. mit LH.") == [
        "Wir fliegen am 14. März nach Wien.", "Z.B. mit LH."]
    assert split_sentences("¿Vienes mañana? ¡Claro que sí!") == ["¿Vienes mañana?",
                                                               "¡Claro que sí!"]
    assert split_sentences("Мы живём на ул. Ленина. Приходи завтра.") == [
        "Мы живём на ул. Ленина.", "Приходи завтра."]


@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from(
    ["Hallo.", "am 14.", "März", "你好。", "¿Qué?", "Dr.", "ok!", "вчера", " ", "\n", "9:30",
     "Mr.", "end."]), max_size=12))
def test_sentence_splitting_is_stable(parts: list[str]) -> None:
    """A summary renders each fact with :func:`sentence_text` and parses it back with
    :func:`split_sentences`: that round trip must give the same sentences."""
    once = [sentence_text(x) for x in split_sentences(" ".join(parts))]
    assert [sentence_text(x) for x in split_sentences(" ".join(once))] == once


@pytest.mark.parametrize("code", LANGUAGE_CODES)
def test_planted_facts_survive_in_every_language(code: str) -> None:
    chat = language_chat(code, rounds=5)
    budget = 1500
    ours = score(chat, asyncio.run(_context(chat, budget)))
    trunc = score(chat, _truncated(chat, budget))
    assert ours.kept >= max(2 * trunc.kept, 12), (code, ours.kept, trunc.kept)
    assert ours.attributed == ours.kept


# -- readability ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("sentence", "expected"),
    [
        ("Oh wow, I actually just signed up for a pottery class last week, you know?",
         "I signed up for a pottery class last week."),
        ("Haha, we went to the beach in Lisbon and it was really fun, but we got sunburned.",
         "We went to the beach in Lisbon, but we got sunburned."),
        ("I'm so excited - my new job at Acme starts Monday.",
         "My new job at Acme starts Monday."),
        ("So basically I kind of want to move to Berlin next year.",
         "I want to move to Berlin next year."),
        ("I went to a LGBTQ support group yesterday and it was so powerful.",
         "I went to a LGBTQ support group yesterday."),
        ("Yeah, I totally agree, and it was so special.", ""),
        ("Thanks, Caroline!", ""),
    ],
)
def test_compressed_sentences_are_grammatical_fragments(sentence: str, expected: str) -> None:
    assert compress(sentence, ["caroline"]) == expected


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(
    ["Oh", "wow,", "I", "really", "just", "moved", "to", "Porto", "and", "it", "was", "so",
     "fun,", "but", "we", "got", "lost", "-", "you", "know?", "kind", "of", "Mel!", "like,",
     "the", "flight", "is", "at", "9:30."]), min_size=1, max_size=16))
def test_compression_only_deletes_words_never_reorders_or_invents(tokens: list[str]) -> None:
    sentence = " ".join(tokens)
    original = [w.lower() for w in words(sentence)]
    kept = iter(original)
    assert all(w.lower() in kept for w in words(compress(sentence, ["melanie"])))


# -- messy chats ---------------------------------------------------------------------------


def test_a_messy_chat_keeps_planted_facts_attributed_and_corrected() -> None:
    chat = messy_chat(0)
    budget = 2000
    ours = score(chat, asyncio.run(_context(chat, budget)))
    trunc = score(chat, _truncated(chat, budget))
    assert ours.kept >= 2 * trunc.kept
    assert ours.attributed == ours.kept
    assert ours.stale_alone == 0


def test_weights_reject_unknown_names() -> None:
    with pytest.raises(TypeError, match="unknown weight"):
        DEFAULT_WEIGHTS.with_(dya=2.0)
    assert DEFAULT_WEIGHTS.with_(day=1.5).day == 1.5


def test_renders_parse_back_with_dates_and_corrections() -> None:
    text = fold([say("ana", "I moved to Riga 3 years ago."),
                 say("ana", "My flight is at 16:10.", MONDAY + timedelta(days=1)),
                 say("ana", "Update: flight moved to 17:40.", MONDAY + timedelta(days=2))])
    facts = parse_summary(text)
    assert {f.speaker for f in facts} == {"Ana"}
    assert any(re.search(r"\(2020\)", f.text) for f in facts)
    assert {f.day for f in facts} <= {date(2023, 5, 8), date(2023, 5, 10)}


# -- helpers -------------------------------------------------------------------------------


async def _context(chat: PlantedChat, budget: int) -> list[Message]:
    async with AsyncMemory("memory://", policy=TokenBudget(budget), tokenizer=O200K,
                           raise_errors=True) as memory:
        for message in chat.messages:
            await memory.add(chat.name, message)
        context = await memory.context(chat.name)
    assert context.tokens <= budget
    return list(context.messages)


def _truncated(chat: PlantedChat, budget: int) -> list[Message]:
    used, kept = 3, 0
    for msg in reversed(chat.messages):
        cost = count_message(O200K, msg)
        if used + cost > budget:
            break
        used += cost
        kept += 1
    return chat.messages[len(chat.messages) - kept :]
