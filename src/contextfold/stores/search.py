"""What every store's full-text search shares: which text of a message is indexed, how
words are folded, how query terms are cleaned, and how a hit is described.

Every store indexes the *words* of a message, folded here in Python and joined by spaces,
rather than its raw text, so the three engines (SQLite FTS5, PostgreSQL ``tsvector``, the
memory store's in-process FTS5) agree on what a word is:

* folding: NFKD, combining accents of Latin, Greek and Cyrillic letters dropped, Unicode
  case folding (``ß`` → ``ss``), and the Turkish dotless ``ı`` / dotted ``İ`` both folded
  to ``i`` — so ``IŞIK``, ``ışık`` and ``isik`` are one word, as are ``café`` and ``cafe``;
* a word is a run of letters, digits and combining marks (underscores, punctuation and
  spaces separate words: ``ABC-123`` is ``abc`` and ``123``); words longer than
  :data:`MAX_WORD` characters (base64 blobs, hashes) are not indexed;
* the indexed text of a message: its text (media become placeholders such as
  ``[image]``) and its tool calls' names and arguments — the first
  :data:`MAX_INDEX_CHARS` characters of it. Not the speaker's name: it would match every
  message of that speaker (slow to rank, and no help to it).

A query term is folded and split the same way; terms of :data:`PREFIX_MIN` or more
characters also match words they begin (``versicherung`` finds ``versicherungen``,
``meet`` finds ``meeting``). The stores quote what they send to their engine, so no term
is ever read as query syntax.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from functools import lru_cache
from itertools import combinations

from ..errors import ValidationError
from ..messages import Message, Role, StoredMessage, render_text

__all__ = [
    "BROAD_MESSAGES",
    "MAX_GROUPS",
    "MAX_INDEX_CHARS",
    "MAX_LIMIT",
    "MAX_TERMS",
    "MAX_WORD",
    "PREFIX_MIN",
    "SearchHit",
    "SearchRequest",
    "SearchTurns",
    "broad_terms",
    "check_limit",
    "check_reach",
    "clean_terms",
    "fold",
    "index_text",
    "make_hit",
    "matched_terms",
    "reach_seqs",
    "selective_search",
    "snippet",
    "term_groups",
    "term_matches",
    "words",
]

#: Characters of a message's text that are indexed (the rest is stored, not searchable).
MAX_INDEX_CHARS = 100_000
#: Longest indexed word, in characters.
MAX_WORD = 64
#: Most query terms a search uses (the first ones, after cleaning).
MAX_TERMS = 32
#: Most hits one search returns.
MAX_LIMIT = 1000
#: Most term combinations a ``min_matched`` search sends (every pair of 32 terms fits).
MAX_GROUPS = 500
#: Terms at least this long also match as word prefixes.
PREFIX_MIN = 4
#: How many messages a search's *selective* terms may hold together: the rarest terms
#: up to this many messages are selective, the others broad (:func:`broad_terms`; the
#: stores count every session's messages, as BM25's term weights do). A search with broad
#: terms ranks first only the matches with a selective term (:func:`selective_search`);
#: when that finds ``limit`` hits they are the result, else every match is ranked as
#: usual. Ranking costs the engine per matched message (FTS5's BM25 some µs, PostgreSQL's
#: BM25 over the terms a message holds about as much), and two common words ("photo",
#: "support", a speaker's name) can match thousands of a long session's messages, which
#: mostly rank below the matches with a rare word of the query anyway.
BROAD_MESSAGES = 1000


@dataclass(frozen=True, slots=True)
class SearchHit:
    """One stored message that matched a search.

    ``score``: the engine's own relevance, higher is better — SQLite and the memory store
    give ``-bm25`` (FTS5's BM25, ≥ 0), PostgreSQL a BM25 of the query terms the message
    holds (weights from the column's statistics, see :mod:`.postgres_search`). Scores
    rank the hits of one search; they are not comparable across stores or queries. For a
    store-independent relevance gate use ``matched``: how many distinct (cleaned) query
    terms the message contains. ``snippet``: a short excerpt of the message's text around
    the first match (plain text, at most about 200 characters, ``…`` where cut), or ``""``
    when the search was asked for no snippets (``snippets=False``)."""

    seq: int
    score: float
    role: Role
    timestamp: datetime | None
    snippet: str
    folded: bool
    matched: int


@dataclass(frozen=True)
class SearchTurns:
    """A search's hits (best first) with stored messages around them, read in the same
    statement (``search_turns`` of a store that has it, see :mod:`.postgres_turns`):
    :meth:`get` finds every stored message of the seqs read (:meth:`covers`: at least those
    within the ``reach`` the search was asked for) as ``fetch`` would have returned it
    (None: not stored, or removed by ``delete`` retention)."""

    hits: list[SearchHit]
    covered: frozenset[int] = field(repr=False)
    _get: Callable[[int], StoredMessage | None] = field(repr=False)

    def covers(self, seq: int) -> bool:
        """Whether ``seq`` was read (then :meth:`get` knows it)."""
        return seq in self.covered

    def get(self, seq: int) -> StoredMessage | None:
        """The stored message ``seq`` (one :meth:`covers`), or None if none is stored."""
        return self._get(seq)


def reach_seqs(seqs: Iterable[int], reach: Sequence[tuple[int, int]]) -> set[int]:
    """The seqs within ``reach`` of hits ``seqs`` (best first; of equal scores the older
    first): (before, after) the best, the second best, …, the last pair for every hit
    after those."""
    last = len(reach) - 1
    out: set[int] = set()
    for i, seq in enumerate(seqs):
        before, after = reach[min(i, last)]
        out.update(range(max(1, seq - before), seq + after + 1))
    return out


_DIACRITICS = re.compile("[\u0300-\u036f]")  # combining accents of Latin/Greek/Cyrillic
_DOTLESS = str.maketrans({"ı": "i"})


@lru_cache(maxsize=1)
def _word_re() -> re.Pattern[str]:
    """A word: letters and digits (``\\w`` minus ``_``) with any combining marks (Mn, Mc,
    Me) — so Devanagari or Arabic words are not cut at their vowel signs."""
    marks = [  # planes 0-1 (60 ms once) and the variation selectors of plane 14
        chr(c)
        for c in (*range(0x20000), *range(0xE0100, 0xE01F0))
        if unicodedata.category(chr(c)) in ("Mn", "Mc", "Me")
    ]
    ranges: list[str] = []
    start = prev = None
    for ch in marks:
        c = ord(ch)
        if prev is not None and c == prev + 1:
            prev = c
            continue
        if start is not None and prev is not None:
            ranges.append(_range(start, prev))
        start = prev = c
    if start is not None and prev is not None:
        ranges.append(_range(start, prev))
    mark_class = "".join(ranges)
    return re.compile(f"[^\\W_]+(?:[{mark_class}]+[^\\W_]*)*")


def _range(lo: int, hi: int) -> str:
    return re.escape(chr(lo)) if lo == hi else f"{re.escape(chr(lo))}-{re.escape(chr(hi))}"


def fold(text: str) -> str:
    """``text`` case- and accent-folded as the index stores it (see the module doc)."""
    text = unicodedata.normalize("NFKD", text.translate(_DOTLESS))
    return unicodedata.normalize("NFC", _DIACRITICS.sub("", text).casefold())


_ASCII_WORD = re.compile(r"[^\W_]+", re.ASCII)


def words(text: str) -> list[str]:
    """The folded words of ``text`` (repeats kept, in order; over-long words dropped)."""
    ascii_only = text.isascii()  # no accents, no marks: the fast path (5x)
    found = _ASCII_WORD.findall(text.lower()) if ascii_only else _word_re().findall(fold(text))
    return [w for w in found if len(w) <= MAX_WORD]


def index_text(message: Message) -> str:
    """What a store indexes for ``message``: its folded words joined by single spaces."""
    parts = [message.text]
    for call in message.tool_calls:
        parts.append(call.name)
        parts.append(call.arguments)
    text = "\n".join(p for p in parts if p)
    return " ".join(words(text[:MAX_INDEX_CHARS]))


def clean_terms(terms: Iterable[str]) -> list[str]:
    """Query terms as a store searches them: each folded and split into words, NULs and
    punctuation gone, repeats dropped, at most :data:`MAX_TERMS`. Empty when nothing
    searchable is left (a store then returns no hits)."""
    out: list[str] = []
    seen: set[str] = set()
    for term in terms:
        if not isinstance(term, str):
            continue
        for word in words(term.replace("\x00", " ")[: MAX_WORD * MAX_TERMS]):
            if word not in seen:
                seen.add(word)
                out.append(word)
                if len(out) == MAX_TERMS:
                    return out
    return out


def term_matches(term: str, word: str) -> bool:
    """Whether a cleaned ``term`` matches an indexed ``word`` (equal, or a prefix of it
    when the term has :data:`PREFIX_MIN` characters or more)."""
    return word == term or (len(term) >= PREFIX_MIN and word.startswith(term))


def matched_terms(text: str, terms: Sequence[str]) -> int:
    """How many of the cleaned ``terms`` occur in the indexed ``text`` (words separated
    by single spaces, as :func:`index_text` joins them)."""
    padded = f" {text} "  # a word begins after a space: one substring scan per term
    return sum(
        (f" {term}" if len(term) >= PREFIX_MIN else f" {term} ") in padded for term in terms
    )


_SNIPPET_BEFORE = 60
_SNIPPET_AFTER = 140


@lru_cache(maxsize=256)
def _match_pattern(terms: tuple[str, ...]) -> re.Pattern[str] | None:
    """One regex for the words of an ASCII text that are a term, or begin with a long one
    (compiled once per search: every hit's snippet uses it)."""
    alternatives = [f"{re.escape(t)}(?![^\\W_])" for t in {t for t in terms if len(t) < PREFIX_MIN}]
    alternatives += [re.escape(t) for t in terms if len(t) >= PREFIX_MIN]
    if not alternatives:
        return None
    return re.compile(f"(?<![^\\W_])(?:{'|'.join(alternatives)})", re.IGNORECASE | re.ASCII)


def _first_match(text: str, terms: Sequence[str]) -> tuple[int, int] | None:
    """Where the first word of ``text`` matching a cleaned term is (start, end)."""
    if text.isascii():  # one scan in C
        pattern = _match_pattern(tuple(terms))
        m = pattern.search(text) if pattern is not None else None
        return (m.start(), m.end()) if m else None
    exact = {t for t in terms if len(t) < PREFIX_MIN}
    prefixes = tuple(t for t in terms if len(t) >= PREFIX_MIN)
    for m in _word_re().finditer(text):
        for w in words(m.group()):
            if w in exact or (prefixes and w.startswith(prefixes)):
                return m.start(), m.end()
    return None


def snippet(text: str, terms: Sequence[str]) -> str:
    """A short plain excerpt of ``text`` around the first word matching a cleaned term."""
    text = text[:MAX_INDEX_CHARS]
    at = _first_match(text, terms)
    if at is None:
        start, end = 0, _SNIPPET_BEFORE + _SNIPPET_AFTER
    else:
        start, end = max(0, at[0] - _SNIPPET_BEFORE), at[1] + _SNIPPET_AFTER
        if start > 0:  # begin on a word boundary
            space = text.find(" ", start, at[0])
            start = space + 1 if space != -1 else start
    cut = text[start:end]
    if end < len(text):
        space = cut.rfind(" ")
        cut = cut[:space] if space > len(cut) // 2 else cut
    cut = " ".join(cut.split())
    return ("…" if start > 0 else "") + cut + ("…" if end < len(text) else "")


def check_reach(reach: Sequence[tuple[int, int]]) -> tuple[tuple[int, int], ...]:
    """``search_turns``' ``reach``: one or more (before, after) pairs of ints >= 0 (else
    ``ValidationError``), as a tuple."""
    try:
        pairs = tuple((before, after) for before, after in reach)
    except (TypeError, ValueError):
        pairs = ()
    if not pairs or not all(isinstance(x, int) and not isinstance(x, bool) and x >= 0
                            for pair in pairs for x in pair):
        raise ValidationError(
            f"search_turns reach must be (before, after) pairs of ints >= 0, got {reach!r:.80}")
    return pairs


def check_limit(limit: int) -> int:
    """A search's ``limit``: an int from 1 to :data:`MAX_LIMIT` (else ``ValidationError``)."""
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise ValidationError(f"search limit must be an int from 1 to {MAX_LIMIT}, got {limit!r}")
    return limit


def make_hit(
    stored: StoredMessage,
    score: float,
    terms: Sequence[str],
    folded: bool,
    indexed: str | None = None,
    snippets: bool = True,
    matched: int | None = None,
) -> SearchHit:
    """The :class:`SearchHit` of a matched stored message; ``indexed``: its indexed words
    if the store has them at hand (else they are computed again). ``snippets=False``: the
    hit's snippet is ``""`` (a caller that reads the messages, not the excerpts).
    ``matched``: how many of ``terms`` the message holds, when the engine counted them
    (then its words are not read again)."""
    msg = stored.message
    if matched is None:
        matched = matched_terms(index_text(msg) if indexed is None else indexed, terms)
    return SearchHit(
        seq=stored.seq,
        score=float(score),
        role=msg.role,
        timestamp=msg.timestamp,
        snippet=snippet(render_text(msg), terms) if snippets else "",
        folded=folded,
        matched=matched,
    )


def term_groups(terms: Sequence[str], min_matched: int) -> list[tuple[str, ...]]:
    """What a search asks its engine for: any one of these groups of cleaned ``terms``, all
    terms of a group in one message. ``min_matched`` (capped at the number of terms): the
    groups are every combination of that many terms, so a message matching fewer is never
    even scored — the engine skips the many messages that share one common word with the
    query. Beyond :data:`MAX_GROUPS` combinations, pairs (the store then drops hits with
    fewer matches, and may return fewer than ``limit``)."""
    if isinstance(min_matched, bool) or not isinstance(min_matched, int) or min_matched < 1:
        raise ValidationError(f"min_matched must be an int >= 1, got {min_matched!r}")
    m = min(min_matched, len(terms))
    if m <= 1:
        return [(t,) for t in terms]
    groups: list[tuple[str, ...]] = list(combinations(terms, m))
    if len(groups) > MAX_GROUPS:
        groups = [tuple(g) for g in combinations(terms, 2)][:MAX_GROUPS]
    return groups


def broad_terms(counts: Mapping[str, int]) -> set[str]:
    """The broad terms of a search, from how many messages hold each term (``counts``,
    terms in query order; a count may stop just above :data:`BROAD_MESSAGES`): all but
    the rarest terms that together are in at most :data:`BROAD_MESSAGES` messages (the
    rarest one always counts as selective). Empty when the terms are rare enough."""
    order = sorted(counts, key=lambda t: counts[t])  # stable: ties in query order
    total = 0
    for i, term in enumerate(order):
        total += counts[term]
        if i and total > BROAD_MESSAGES:
            return set(order[i:])
    return set()


def selective_search(
    groups: Sequence[tuple[str, ...]], broad: Iterable[str]
) -> list[tuple[str, ...]] | None:
    """The term groups a store searches first when some terms are broad
    (:func:`broad_terms`): those of ``groups`` (see :func:`term_groups`) with a selective
    term — a broad term still weighs in a message's rank through its groups with
    selective terms. Single terms: the selective ones, and every pair with a broad term
    (so a message with two broad terms is searched too, and a broad term weighs in the
    rank of a message that has a selective one besides). None when nothing would be left
    out: no broad term, every term broad, or no group made of broad terms only."""
    wide = set(broad)
    terms = list(dict.fromkeys(t for g in groups for t in g))
    if not wide.intersection(terms) or wide.issuperset(terms):
        return None
    if len(groups[0]) == 1:
        singles = [g for g in groups if g[0] not in wide]
        pairs: list[tuple[str, ...]] = [g for g in combinations(terms, 2) if wide.intersection(g)]
        return singles + pairs if len(singles) + len(pairs) <= MAX_GROUPS else None
    kept = [g for g in groups if not wide.issuperset(g)]
    return kept if len(kept) < len(groups) else None


@dataclass(frozen=True)
class SearchRequest:
    """A store's search arguments, checked and prepared once for every store: the cleaned
    ``terms`` (empty: no hits), the engine's term ``groups``, the fewest terms a hit
    must match (``need``) and whether hits carry a snippet (``snippets``)."""

    terms: list[str]
    groups: list[tuple[str, ...]]
    need: int
    limit: int
    snippets: bool = True

    @classmethod
    def of(
        cls, terms: Iterable[str], limit: int, min_matched: int, snippets: bool = True
    ) -> SearchRequest:
        check_limit(limit)
        cleaned = clean_terms(terms)
        groups = term_groups(cleaned, min_matched)
        return cls(cleaned, groups, min(min_matched, len(cleaned)), limit, snippets)

    def keep(self, hits: Iterable[SearchHit]) -> list[SearchHit]:
        """The hits that match at least :attr:`need` terms."""
        return [h for h in hits if h.matched >= self.need]
