"""The fact check of LLM folds: which names, numbers, dates and ids of the previous summary vanished
from the new one.

A heuristic, deliberately cheap and language-agnostic: facts are e-mail addresses, URLs,
tokens mixing letters and digits (order ids, ticket numbers), numbers of two or more
characters (amounts, years, dates like 2025-03-01, times), and capitalised words that do
not start a sentence (names, places, products) or are acronyms. Pure code.
"""

from __future__ import annotations

import re

__all__ = ["extract_facts", "lost_facts"]

_EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
_URL = re.compile(r"https?://[^\s)>\]]+")
_ID = re.compile(r"\b(?=[\w-]*\d)(?=[\w-]*[^\W\d_])[\w]+(?:[-_/.][\w]+)*\b")
_NUMBER = re.compile(r"(?<![\w.])\d+(?:[.,:/-]\d+)*(?![\w])")
_WORD = re.compile(r"\b[^\W\d_][^\W_]*(?:['’-][^\W\d_]+)*\b")
_SENTENCE_END = re.compile(r"(?:^|[.!?:;\n•*#-])\s*$")


def extract_facts(text: str) -> list[str]:
    """The facts of ``text`` in order of first appearance, without duplicates."""
    found: dict[str, None] = {}

    def add(value: str) -> None:
        value = value.strip(".,;:")
        if value and value.casefold() not in {f.casefold() for f in found}:
            found[value] = None

    consumed = text
    for pattern in (_EMAIL, _URL):
        for match in pattern.finditer(text):
            add(match.group())
        consumed = pattern.sub(" ", consumed)
    for match in _ID.finditer(consumed):
        add(match.group())
    for match in _NUMBER.finditer(consumed):
        if len(match.group()) >= 2:
            add(match.group())
    for match in _WORD.finditer(consumed):
        word = match.group()
        if len(word) < 2 or not word[0].isupper():
            continue
        acronym = word.isupper()
        starts_sentence = bool(_SENTENCE_END.search(consumed[: match.start()]))
        if acronym or not starts_sentence:
            add(word)
    return list(found)


def lost_facts(previous: str, new: str) -> list[str]:
    """Facts of ``previous`` that ``new`` no longer mentions (case-insensitive; numbers
    also match with their separators removed, so ``1,200`` survives as ``1200``)."""
    haystack = new.casefold()
    digits = re.sub(r"[.,:/\s-]", "", haystack)
    lost = []
    for fact in extract_facts(previous):
        if fact.casefold() in haystack:
            continue
        if fact[0].isdigit() and re.sub(r"[.,:/-]", "", fact) in digits:
            continue
        lost.append(fact)
    return lost
