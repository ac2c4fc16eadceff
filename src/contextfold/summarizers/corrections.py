"""Corrections: when a later fact updates an earlier one, the newer value wins.

"The flight is at 16:10" followed days later by "Update: the flight moved to 17:40" must
not leave a summary holding both times as if both were true. A later fact *supersedes* an
earlier one, which is then dropped, when its sentence was marked as a correction (a
correction cue of the span's language in the sentence as said, before compression:
"actually", "moved", "eigentlich", "aslında", …) and either

- names the old value as negated ("actually it's Ljubljana, not Zagreb": the earlier fact
  holds "Zagreb"), or
- talks about the same thing (a shared content word that is not a value) and replaces a
  value of the same kind: a time for a time, a number for a number, a name for a name.

Both conditions are structural; the cue words are the language's general vocabulary of
correction (:mod:`.languages`), not a list fitted to any data. A fact is only ever
superseded by a *later* one, and a superseded fact's day is not lost: the correction
carries its own.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence

from .facts import Fact
from .languages import Language

__all__ = ["is_correction", "supersede"]

_TOKEN = re.compile(r"\d{1,2}[:.h]\d{2}|[^\W_]+(?:['’\-][^\W_]+)*")


def is_correction(sentence: str, lang: Language) -> bool:
    """True when ``sentence`` (as said) carries one of the language's correction cues."""
    return any(w.lower() in lang.correction_cues for w in _TOKEN.findall(sentence))

_MIN_SHARED = 1
_TIME = re.compile(r"^\d{1,2}[:.h]\d{2}$")


def _kind(token: str) -> str | None:
    if any(ch.isdigit() for ch in token):
        return "time" if _TIME.match(token) else "number"
    return "name" if token[:1].isupper() else None


def _analyse(
    text: str, lang: Language
) -> tuple[set[str], dict[str, set[str]], set[str], list[str]]:
    """(topic words, values by kind, all values, lower-cased words in order) of a fact."""
    topic: set[str] = set()
    values: dict[str, set[str]] = {}
    tokens = _TOKEN.findall(text)
    lowered = [t.lower() for t in tokens]
    for i, (tok, low) in enumerate(zip(tokens, lowered, strict=True)):
        kind = _kind(tok) if (i > 0 or not tok[:1].isalpha()) else None
        if kind is not None:
            values.setdefault(kind, set()).add(low)
        elif low not in lang.function_words and low not in lang.correction_cues:
            topic.add(low)
    every = set().union(*values.values()) if values else set()
    return topic, values, every, lowered


def _replaces(old: dict[str, set[str]], new: dict[str, set[str]]) -> bool:
    return any(old[k] - new.get(k, set()) and new.get(k, set()) - old[k] for k in old)


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


def supersede(
    facts: Sequence[Fact],
    lang: Language,
    corrective: Collection[tuple[int, int, int]],
    keep: Collection[str] = (),
) -> list[Fact]:
    """``facts`` without the ones a later fact corrects (order kept). ``corrective``
    holds the ``order`` of the facts whose sentence was a correction (:func:`is_correction`
    on the sentence before compression). Facts by a speaker in ``keep`` are never dropped
    (agent-state records: what a tool reported is replaced only by a newer result of the
    same call, never by a user's "update the ticket" or "change my flight")."""
    if not corrective:
        return list(facts)
    analysed = [_analyse(f.text, lang) for f in facts]
    order = sorted(range(len(facts)), key=lambda i: facts[i].order)
    dropped: set[int] = set()
    for pos, j in enumerate(order):
        if facts[j].order not in corrective:
            continue
        topic_j, kinds_j, _, words_j = analysed[j]
        negated = {
            words_j[k + 1]
            for k, w in enumerate(words_j[:-1])
            if w == lang.negation and words_j[k + 1] not in lang.function_words
        }
        for i in order[:pos]:
            if i in dropped or facts[i].speaker in keep:
                continue
            topic_i, kinds_i, values_i, words_i = analysed[i]
            if negated and _names_old_value(negated, values_i, facts[i].text, words_i):
                dropped.add(i)
                continue
            if len(topic_i & topic_j) >= _MIN_SHARED and _replaces(kinds_i, kinds_j):
                dropped.add(i)
    return [f for k, f in enumerate(facts) if k not in dropped]
