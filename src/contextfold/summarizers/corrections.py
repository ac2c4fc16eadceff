"""Corrections: when a later fact updates an earlier one, the newer value wins.

"The flight is at 16:10" followed days later by "Update: the flight moved to 17:40" must
not leave a summary holding both times as if both were true. A later fact *supersedes* an
earlier one, which is then dropped, when it is marked as a correction (a correction cue of
the span's language: "actually", "moved", "eigentlich", "aslında", …) and either

- names the old value as negated ("actually it's Ljubljana, not Zagreb": the earlier fact
  holds "Zagreb"), or
- talks about the same thing (at least two shared content words that are not values) and
  replaces a value: each holds a value (number, time, name) the other lacks.

Both conditions are structural; the cue words are the language's general vocabulary of
correction (:mod:`.languages`), not a list fitted to any data. A fact is only ever
superseded by a *later* one, and a superseded fact's day is not lost: the correction
carries its own.
"""

from __future__ import annotations

from collections.abc import Sequence

from .facts import Fact
from .languages import Language
from .salience import words

__all__ = ["supersede"]

_MIN_SHARED = 2


def _analyse(text: str, lang: Language) -> tuple[set[str], set[str], list[str]]:
    """(topic words, value words, lower-cased words in order) of one fact."""
    topic: set[str] = set()
    values: set[str] = set()
    tokens = words(text)
    lowered = [t.lower() for t in tokens]
    for i, (tok, low) in enumerate(zip(tokens, lowered, strict=True)):
        if any(ch.isdigit() for ch in tok) or (i > 0 and tok[:1].isupper()):
            values.add(low)
        elif low not in lang.function_words and low not in lang.correction_cues:
            topic.add(low)
    return topic, values, lowered


def _names_old_value(
    negated: set[str], values: set[str], text: str, lowered: list[str]
) -> bool:
    """True when a negated word is a value of the earlier fact: a name or number, or, in
    a fact written all in lower case, any word of four letters or more."""
    if negated & values:
        return True
    if text != text.lower():
        return False
    return any(len(w) >= 4 and w in lowered for w in negated)


def supersede(facts: Sequence[Fact], lang: Language) -> list[Fact]:
    """``facts`` without the ones a later fact corrects (order kept)."""
    if not lang.correction_cues:
        return list(facts)
    analysed = [_analyse(f.text, lang) for f in facts]
    order = sorted(range(len(facts)), key=lambda i: facts[i].order)
    dropped: set[int] = set()
    for pos, j in enumerate(order):
        topic_j, values_j, words_j = analysed[j]
        if not lang.correction_cues.intersection(words_j):
            continue
        negated = {
            words_j[k + 1]
            for k, w in enumerate(words_j[:-1])
            if w == lang.negation and words_j[k + 1] not in lang.function_words
        }
        for i in order[:pos]:
            if i in dropped:
                continue
            topic_i, values_i, words_i = analysed[i]
            if negated and _names_old_value(negated, values_i, facts[i].text, words_i):
                dropped.add(i)
                continue
            if (
                len(topic_i & topic_j) >= _MIN_SHARED
                and values_i - values_j
                and values_j - values_i
            ):
                dropped.add(i)
    return [f for k, f in enumerate(facts) if k not in dropped]
