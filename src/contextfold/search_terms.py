"""Query processing for search and recall: a question becomes the plain words a store
searches for. Pure: no I/O, deterministic.

``query_terms("When did Caroline go to the LGBTQ support group?")`` →
``["caroline", "lgbtq", "support", "group"]``: the words of the text (folded as the stores
index them, see :mod:`contextfold.stores.search`), stop words dropped, as are one-letter
words (not digits), each word once, in the order they first appear, at most
``max_terms``, from the first :data:`MAX_QUERY_CHARS` characters.

For recall (:mod:`contextfold.recall`) a question is processed further: the gate
(:func:`asks_about_past`), question words and English inflections (:func:`refine_terms`),
and the dates it names (:func:`query_months`, :func:`date_words`).

Stop words: the words of at most four characters in the ISO stop word lists (package
``stopwordsiso``) of English, German, Spanish, French, Italian, Portuguese, Dutch, Turkish
and Russian. The full lists hold content words too ("group", "state", "information"):
searching the LoCoMo dev conversations with each question, the evidence turn was in the
top 5 hits for 49.1% of 759 questions with every word, 49.1% with the full lists, and
52.7% with their short words only.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache

from .errors import ConfigError
from .stores.search import MAX_TERMS, fold, words

__all__ = [
    "MAX_QUERY_CHARS",
    "STOPWORD_LANGUAGES",
    "Months",
    "asks_about_past",
    "date_words",
    "is_stopword",
    "query_months",
    "query_terms",
    "refine_terms",
    "search_terms",
]

#: Characters of a text that are read for terms.
MAX_QUERY_CHARS = 20_000
#: The languages whose stop words :func:`query_terms` drops (ISO 639-1).
STOPWORD_LANGUAGES = ("en", "de", "es", "fr", "it", "pt", "nl", "tr", "ru")


@lru_cache(maxsize=1)
def _stopwords() -> frozenset[str]:
    import stopwordsiso  # loads its JSON lists: only when a query is first processed

    out: set[str] = set()
    for word in stopwordsiso.stopwords(list(STOPWORD_LANGUAGES)):
        folded = words(word)  # folded alike: "für" -> "fur"
        if len(folded) == 1 and len(folded[0]) <= 4 and not folded[0].isdigit():
            out.add(folded[0])  # ("don't" would make "don" a stop word; numbers are facts)
    return frozenset(out)


def is_stopword(word: str) -> bool:
    """Whether the (folded) ``word`` is a stop word :func:`query_terms` drops."""
    return fold(word) in _stopwords()


def query_terms(text: str, *, max_terms: int = MAX_TERMS) -> list[str]:
    """The search terms of ``text`` (see the module doc); ``[]`` if none is left."""
    if isinstance(max_terms, bool) or not isinstance(max_terms, int) or max_terms < 1:
        raise ConfigError(f"max_terms must be an int >= 1, got {max_terms!r}")
    stop = _stopwords()
    out: list[str] = []
    seen: set[str] = set()
    for word in words(text[:MAX_QUERY_CHARS]):
        if word in seen or word in stop or (len(word) == 1 and not word.isdigit()):
            continue
        seen.add(word)
        out.append(word)
        if len(out) == max_terms:
            break
    return out


def search_terms(text: str) -> list[str]:
    """The terms of a history search someone typed: :func:`query_terms`, or — when
    ``text`` is only stop words ("the who") — all its words, so it is still searched."""
    return query_terms(text) or list(dict.fromkeys(words(text[:MAX_QUERY_CHARS])))[:MAX_TERMS]


# -- recall's question processing ------------------------------------------------------


def _words_of(text: str) -> list[str]:
    return text.split()


def _wordset(text: str) -> frozenset[str]:
    return frozenset(_words_of(text))

_PAST_WORDS = _wordset(
    """remember recall remind reminded earlier before ago last previous previously
    mentioned mention told tell said say again back then once already originally
    first did was were had went got made been used"""
)
_QUESTION_START = re.compile(
    r"^\s*(when|what|where|who|whom|which|why|how|did|do|does|was|were|had|have|has|is|are|"
    r"can|could|would|will)\b",
    re.IGNORECASE,
)
_WORD = re.compile(r"[^\W_]+", re.UNICODE)

def asks_about_past(text: str) -> bool:
    """True when ``text`` is a question about something said or done before: a question
    (``?`` or a question word first) with a past cue (``did``, ``was``, ``last``,
    ``remember``, ``ago``…). Ordinary chat turns — greetings, news, a question about now —
    keep the gate closed, so they pay nothing for recall."""
    clauses = [c for c in re.split(r"(?<=[.!?])\s+", text) if c.strip()]
    for clause in clauses:
        if not (clause.rstrip().endswith("?") or _QUESTION_START.match(clause)):
            continue
        words = {w.lower() for w in _WORD.findall(clause)}
        if words & _PAST_WORDS:
            return True
    return False


_MONTHS = {m: i + 1 for i, m in enumerate(_words_of(
    "january february march april may june july august september october november december"))}
_MONTHS.update({m[:3]: i for m, i in list(_MONTHS.items())})
_YEAR = re.compile(r"^(19|20)\d\d$")
_QUESTION_NOISE = _wordset(
    """a an the and or but of to in on at for with is are was were be been am i you he she
    it we they my your his her its our their me him us them this that these those what when
    where who whom whose which how why did do does have has had not no yes so if then than
    as by can will shall any some all each every very too more most own same other such only
    just don doesn didn isn wasn aren weren hasn haven hadn won wouldn couldn shouldn let
    many much long times both while kind type sort likely would could should might ever
    also still yet else something anything thing things one ones get got make made new
    recently currently current latest usually often there here about into from after before
    during since recent last first next ago again remember recall mention mentioned tell told
    said say know think way ways well really just like"""
)


def refine_terms(terms: Sequence[str]) -> list[str]:
    """Query terms for recall (``terms``: the query's cleaned words,
    :func:`~contextfold.stores.search.clean_terms`): English stop words and the
    words a question is made of but an answer rarely repeats (``many``, ``times``,
    ``latest``…), one-letter words (not digits: "room 4" keeps ``4``) and month names and
    years (dates are matched on the messages' timestamps instead, :func:`query_months`)
    dropped; English
    inflections trimmed to a stem of four or more letters, which the stores match as a
    prefix (``painted`` → ``paint``, ``watching`` → ``watch``, ``shoes`` → ``shoe``)."""
    out: list[str] = []
    for term in terms:
        if ((len(term) < 2 and not term.isdigit()) or term in _QUESTION_NOISE
                or term in _MONTHS or _YEAR.match(term)):
            continue
        stem = term
        for suffix in ("ing", "ies", "ed", "es", "s"):
            if term.endswith(suffix) and len(term) - len(suffix) >= 4 and not term.endswith(
                    "ss"):
                stem = term[: -len(suffix)]
                break
        if stem not in out:
            out.append(stem)
    return out


Months = set[tuple[int | None, int | None, int | None]]


def query_months(text: str) -> Months:
    """The dates a query names, as (year, month, day) with None for a part not named
    (``July 2023``, ``in May``, ``9 November, 2022``, ``2022``): hits from those dates
    are preferred, and count as matching one more term."""
    words = [w.lower() for w in _WORD.findall(text)]
    out: Months = set()
    for i, w in enumerate(words):
        month = _MONTHS.get(w)
        if month is not None and (w != "may" or (i and words[i - 1] in ("in", "of", "last",
                                                                       "early", "late"))
                                  or (i + 1 < len(words) and words[i + 1].isdigit())
                                  or (i and words[i - 1].isdigit())):
            year = next((int(x) for x in words[i + 1:i + 4] if _YEAR.match(x)), None)
            day = next((int(x) for x in (words[i - 1] if i else "", *words[i + 1:i + 2])
                        if x.isdigit() and 1 <= int(x) <= 31), None)
            out.add((year, month, day))
        elif _YEAR.match(w):
            out.add((int(w), None, None))
    months = {(y, m) for y, m, _ in out if m is not None}
    return {(y, m, d) for y, m, d in out if m is not None or not any(
        y2 == y for y2, _ in months)}


def date_words(text: str) -> set[str]:
    """The day numbers of the dates in ``text`` (dropped from the terms with the month)."""
    words = [w.lower() for w in _WORD.findall(text)]
    out: set[str] = set()
    for i, w in enumerate(words):
        if w in _MONTHS:
            out.update(x for x in (words[i - 1] if i else "", *words[i + 1:i + 2])
                       if x.isdigit() and len(x) <= 2)
    return out
