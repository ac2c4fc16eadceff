"""The offline summarizer: keeps the most informative sentences, dated and attributed.

:class:`ExtractiveSummarizer` needs no model, no network and no download. A fold works on
*facts* (sentences with a speaker and a day, see :mod:`.facts`):

1. **Parse** the previous summary back into facts, and split the folded messages into
   sentences attributed to ``message.name`` (else the role) and dated by the message
   timestamp.
2. **Compress** each sentence: drop greetings, interjections, intensifiers and hedges;
   a sentence left with nothing is chit-chat and goes.
3. **De-duplicate**: a sentence repeated, or whose content words are all contained in
   another sentence of the same speaker, is merged into the earliest fuller one.
4. **Score** (:mod:`.salience`): content words weighted by rarity in the span, raised for
   names, places, numbers and dates, lowered for tone words; a bonus for life events,
   plans and preferences; questions count less than statements.
5. **Select** greedily by marginal gain per token: a word already covered by a chosen fact
   adds nothing again (so near-repeats lose), and the first fact of a day also keeps that
   day on the timeline. When the summary is full, the least salient facts are the ones
   left out, old or new alike.
6. **Render** in time order, count with the request's counter, and drop the weakest fact
   until the text fits: the result is never over ``request.max_tokens``.

Each step except parsing and rendering can be switched off (constructor flags), which is
how ``benchmarks/retention.py`` measures what each one contributes.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Sequence
from dataclasses import dataclass

from ..errors import SummarizationError
from ..messages import StoredMessage, render_text
from ..tokens import TokenCounter
from .base import SummaryRequest, SummaryResult
from .facts import (
    Fact,
    clean_speaker,
    day_of,
    parse_summary,
    render_summary_text,
    sentence_text,
)
from .salience import compress, content_words, features, split_sentences

__all__ = ["NO_FACTS", "ExtractiveSummarizer"]

#: The summary written when nothing informative has been said yet (never parsed as a fact).
NO_FACTS = "(no facts recorded yet)"
#: Longest sentence kept whole, in characters; longer ones (pasted logs, tool output) are cut.
MAX_FACT_CHARS = 320
_DAY_WEIGHT = 3.0
_CUE_WEIGHT = 0.5
_MAX_CUES = 3
_FIRST_PERSON_BONUS = 0.3
_QUESTION_FACTOR = 0.5
_REACTION_FACTOR = 0.5
_GENERIC_FACTOR = 0.6
_FACT_COST = 3
_MIN_GAIN = 0.25
_RARITY_POWER = 1.0


@dataclass(slots=True)
class _Candidate:
    fact: Fact
    terms: dict[str, float]
    bonus: float
    factor: float
    tokens: int
    gain: float = 0.0


class ExtractiveSummarizer:
    """Offline, deterministic summarizer: previous summary + folded messages → the most
    salient facts as dated, attributed sentences, within ``request.max_tokens``.

    The keyword flags switch single techniques off for ablation studies; the defaults
    (all on) are what contextfold ships. Pure: the same request gives the same text.
    """

    #: Runs locally and sends nothing anywhere: its input need not be redacted.
    needs_redaction = False
    #: Never waits on I/O: the sync ``Memory`` runs it in the caller's thread.
    runs_inline = True

    def __init__(
        self,
        *,
        compress: bool = True,
        dedupe: bool = True,
        salience: bool = True,
        coverage: bool = True,
        dates: bool = True,
    ) -> None:
        self.compress = compress
        self.dedupe = dedupe
        self.salience = salience
        self.coverage = coverage
        self.dates = dates

    @property
    def name(self) -> str:
        return "extractive"

    def __repr__(self) -> str:
        off = [k for k in ("compress", "dedupe", "salience", "coverage", "dates")
               if not getattr(self, k)]
        return "ExtractiveSummarizer()" if not off else f"ExtractiveSummarizer(off={off!r})"

    async def summarize(self, request: SummaryRequest) -> SummaryResult:
        try:
            text = self.fold(request.previous, request.messages, request.max_tokens,
                             request.counter)
        except SummarizationError:
            raise
        except Exception as exc:  # a bug here must not look like a provider failure
            raise SummarizationError(f"extractive summarizer failed: {exc!r}") from exc
        return SummaryResult(text=text, model=self.name)

    def fold(
        self,
        previous: str,
        messages: Sequence[StoredMessage],
        max_tokens: int,
        counter: TokenCounter,
    ) -> str:
        """The new summary text for ``previous`` + ``messages``, at most ``max_tokens``
        tokens by ``counter``. Raises ``SummarizationError`` only when even one word
        cannot fit."""
        facts = [f for f in parse_summary(previous) if f.text != NO_FACTS]
        names = {f.speaker for f in facts if f.speaker}
        names.update(m.message.name for m in messages if m.message.name)
        for item in messages:
            facts.extend(self._message_facts(item, names))
        if self.dedupe:
            facts = _dedupe(facts)
        speakers = {f.speaker for f in facts if f.speaker}
        candidates = self._score(facts, speakers, counter)
        chosen = self._select(candidates, max_tokens, counter)
        return _fit(chosen, candidates, max_tokens, counter)

    # -- steps ------------------------------------------------------------------------

    def _message_facts(self, item: StoredMessage, names: set[str]) -> list[Fact]:
        message = item.message
        speaker = clean_speaker(message.name or message.role.capitalize())
        day = day_of(message.timestamp) if self.dates else None
        out: list[Fact] = []
        for k, sentence in enumerate(split_sentences(render_text(message))):
            text = compress(sentence, names) if self.compress else sentence
            if not text:
                continue
            if len(text) > MAX_FACT_CHARS:
                text = text[:MAX_FACT_CHARS].rsplit(" ", 1)[0].rstrip(" ,;:") + "…"
            out.append(Fact(text, speaker, day, (1, item.seq, k)))
        return out

    def _score(
        self, facts: list[Fact], speakers: set[str], counter: TokenCounter
    ) -> list[_Candidate]:
        analysed = [features(f.text, speakers) for f in facts]
        df: dict[str, int] = {}
        for feats in analysed:
            for term in feats.terms:
                df[term] = df.get(term, 0) + 1
        norm = math.log(1 + max(1, len(facts)))
        out: list[_Candidate] = []
        for fact, feats in zip(facts, analysed, strict=True):
            terms = {
                t: (m if self.salience else 1.0)
                * (math.log(1 + len(facts) / df[t]) / norm) ** _RARITY_POWER
                for t, m in feats.terms.items()
            }
            if self.dates and fact.day is not None:
                terms[f"\x00day:{fact.day.isoformat()}"] = _DAY_WEIGHT
            bonus, factor = 0.0, 1.0
            if self.salience:
                bonus = _CUE_WEIGHT * min(feats.cues, _MAX_CUES)
                bonus += _FIRST_PERSON_BONUS if feats.first_person else 0.0
                factor = _QUESTION_FACTOR if feats.question else 1.0
                factor *= _REACTION_FACTOR if feats.reaction else 1.0
                if not (feats.cues or feats.entities or feats.numbers or feats.dates):
                    factor *= _GENERIC_FACTOR
            tokens = counter.count(" " + sentence_text(fact.text))
            out.append(_Candidate(fact, terms, bonus, factor, max(1, tokens)))
        return out

    def _select(
        self, candidates: list[_Candidate], max_tokens: int, counter: TokenCounter
    ) -> list[_Candidate]:
        """Greedy by marginal gain per token (lazy evaluation: a candidate's gain only
        falls as others are chosen, so a stale heap entry is an upper bound)."""
        covered: set[str] = set()
        opened: set[tuple[object, object]] = set()
        header_cost: dict[tuple[object, object], int] = {}
        used = 0
        chosen: list[_Candidate] = []

        def gain(c: _Candidate) -> float:
            if self.coverage:
                value = sum(w for t, w in c.terms.items() if t not in covered)
            else:
                value = sum(c.terms.values())
            return (value + c.bonus) * c.factor

        def cost(c: _Candidate) -> int:
            key = (c.fact.day, c.fact.speaker)
            if key in opened:
                return c.tokens
            if key not in header_cost:
                probe = Fact("x", c.fact.speaker, c.fact.day, c.fact.order)
                header_cost[key] = counter.count(render_summary_text([probe])) + 1
            return c.tokens + header_cost[key]

        groups: dict[tuple[object, object], list[int]] = {}
        for i, c in enumerate(candidates):
            groups.setdefault((c.fact.day, c.fact.speaker), []).append(i)
        done: set[int] = set()
        heap = [(-gain(c) / (cost(c) + _FACT_COST), i) for i, c in enumerate(candidates)]
        heapq.heapify(heap)
        while heap:
            _, i = heapq.heappop(heap)
            if i in done:
                continue
            c = candidates[i]
            g = gain(c)
            k = cost(c)
            if used + k > max_tokens:
                continue
            ratio = g / (k + _FACT_COST)
            if heap and ratio < -heap[0][0] - 1e-12:
                heapq.heappush(heap, (-ratio, i))
                continue
            done.add(i)
            if g < _MIN_GAIN and chosen:
                continue
            c.gain = g
            chosen.append(c)
            used += k
            covered.update(c.terms)
            key = (c.fact.day, c.fact.speaker)
            if key not in opened:
                # the line's header is paid: its other facts just got cheaper
                opened.add(key)
                for j in groups[key]:
                    if j not in done:
                        heapq.heappush(
                            heap, (-gain(candidates[j]) / (cost(candidates[j]) + _FACT_COST), j)
                        )
        return chosen


def _dedupe(facts: list[Fact]) -> list[Fact]:
    """Drop exact repeats and facts whose content words are contained in another fact of
    the same speaker. The kept fact is the fuller one, at the earliest position either
    held (a fact repeated later keeps the day it was first said)."""
    keys = [frozenset(content_words(f.text)) for f in facts]
    alive = [True] * len(facts)
    seen: dict[tuple[str | None, frozenset[str]], int] = {}
    result = list(facts)
    for i, key in enumerate(keys):
        if not key:
            continue
        ident = (facts[i].speaker, key)
        if ident in seen:
            alive[i] = False
            continue
        seen[ident] = i
    by_speaker: dict[str | None, list[int]] = {}
    for i, key in enumerate(keys):
        if alive[i] and key:
            by_speaker.setdefault(facts[i].speaker, []).append(i)
    for indices in by_speaker.values():
        indices.sort(key=lambda i: len(keys[i]))
        for pos, i in enumerate(indices):
            if len(keys[i]) < 2:
                continue
            for j in indices[pos + 1 :]:
                if alive[j] and len(keys[j]) > len(keys[i]) and keys[i] <= keys[j]:
                    alive[i] = False
                    if facts[i].order < result[j].order:
                        fuller = result[j]
                        result[j] = Fact(fuller.text, fuller.speaker, facts[i].day,
                                         facts[i].order)
                    break
    return [f for f, keep in zip(result, alive, strict=True) if keep]


def _fit(
    chosen: list[_Candidate],
    candidates: list[_Candidate],
    max_tokens: int,
    counter: TokenCounter,
) -> str:
    """Render ``chosen``; drop the weakest until the exact count fits. With nothing
    chosen, cut the best candidate down to the words that fit."""
    kept = sorted(chosen, key=lambda c: c.gain)
    while kept:
        text = render_summary_text([c.fact for c in kept])
        if counter.count(text) <= max_tokens:
            return text
        kept.pop(0)
    if not candidates:
        if counter.count(NO_FACTS) <= max_tokens:
            return NO_FACTS
        return _tiny(max_tokens, counter)
    best = max(candidates, key=lambda c: (sum(c.terms.values()) + c.bonus) * c.factor)
    for fact in (best.fact, Fact(best.fact.text, None, None, best.fact.order)):
        words = fact.text.split()
        lo, hi = 0, len(words)
        while lo < hi:  # the most words that fit
            mid = (lo + hi + 1) // 2
            trial = Fact(" ".join(words[:mid]) + "…", fact.speaker, fact.day, fact.order)
            if counter.count(render_summary_text([trial])) <= max_tokens:
                lo = mid
            else:
                hi = mid - 1
        if lo:
            short = Fact(" ".join(words[:lo]) + "…", fact.speaker, fact.day, fact.order)
            return render_summary_text([short])
    return _tiny(max_tokens, counter)


def _tiny(max_tokens: int, counter: TokenCounter) -> str:
    for text in ("…", ".", "-"):
        if counter.count(text) <= max_tokens:
            return text
    raise SummarizationError(
        f"a summary cap of {max_tokens} tokens cannot hold even one character; "
        "raise summary_max_tokens"
    )
