"""Query processing for search and recall: a question becomes the plain words a store
searches for. Pure: no I/O, deterministic.

``query_terms("When did Caroline go to the LGBTQ support group?")`` →
``["caroline", "lgbtq", "support", "group"]``: the words of the text (folded as the stores
index them, see :mod:`contextfold.stores.search`), stop words dropped, as are one-letter
words (not digits), each word once, in the order they first appear, at most
``max_terms``, from the first :data:`MAX_QUERY_CHARS` characters.

Stop words: the words of at most four characters in the ISO stop word lists (package
``stopwordsiso``) of English, German, Spanish, French, Italian, Portuguese, Dutch, Turkish
and Russian. The full lists hold content words too ("group", "state", "information"):
searching the LoCoMo dev conversations with each question, the evidence turn was in the
top 5 hits for 49.1% of 759 questions with every word, 49.1% with the full lists, and
52.7% with their short words only.
"""

from __future__ import annotations

from functools import lru_cache

from .errors import ConfigError
from .stores.search import MAX_TERMS, fold, words

__all__ = ["MAX_QUERY_CHARS", "STOPWORD_LANGUAGES", "is_stopword", "query_terms", "search_terms"]

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
