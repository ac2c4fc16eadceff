"""The offline summarizer: keeps the most informative sentences, dated and attributed.

:class:`ExtractiveSummarizer` needs no model, no network and no download. A fold works on
*facts* (sentences with a speaker and a day, see :mod:`.facts`):

1. **Parse** the previous summary back into facts. Detect the span's language
   (:mod:`.languages`). Turn the folded messages into *utterances*: consecutive short
   messages by one speaker (a burst of chat lines) are one utterance, and speaker names
   are canonical across case and short forms ("jess", "Jess" and "Jessica" are one
   person, see :class:`Speakers`). Split utterances into sentences attributed to the
   speaker and dated by the message timestamp.
2. **Filter** each sentence: one left with nothing once greetings, interjections,
   intensifiers and hedges are set aside is chit-chat and goes; every other is kept word
   for word — the summary never rewords what someone said. A relative date ("yesterday",
   "next Friday", "dün") gets its absolute date in parentheses right after the phrase
   (:mod:`.dates`), the only text a summary adds to a sentence.
3. **De-duplicate**: a sentence repeated, or whose content words are all contained in
   another sentence of the same speaker, is merged into the earliest fuller one. A fact
   a later one corrects is dropped (:mod:`.corrections`).
4. **Score** (:mod:`.salience`): content words weighted by rarity in the span, raised for
   names, places, numbers and dates, lowered for tone words; a bonus for life events,
   plans and preferences; questions count less than statements.
5. **Select** greedily by marginal gain per token: a word already covered by a chosen fact
   adds nothing again (so near-repeats lose), and the first fact of a day also keeps that
   day on the timeline. When the summary is full, the least salient facts are the ones
   left out, old or new alike.
6. **Render** in time order, count with the request's counter, and drop the weakest fact
   until the text fits: the result is never over ``request.max_tokens``.

With ``extend=True`` a fold keeps the previous summary text verbatim and appends the span's
best facts while there is room (:mod:`.extension`), so a provider's prompt cache keeps the
old summary; when it is full the fold compacts (the steps above, to a lower fill).

Each step except parsing and rendering can be switched off (constructor flags), which is
how ``benchmarks/retention.py`` measures what each one contributes; every weight and
threshold is a field of :class:`~.weights.Weights`, chosen by cross-validation.

Tool traffic: an assistant message with ``tool_calls`` and a ``tool`` message are never
merged into a burst; each is one utterance of its own, whose facts :meth:`_unit_facts`
makes; with tool traffic in the span, :mod:`.agent_records` makes them instead: one line
per call and result (``name(args) → key facts``), the newest value winning.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from ..errors import ConfigError, SummarizationError
from ..messages import Message, StoredMessage, render_text
from ..summary_block import SEGMENT_BREAK
from ..summary_tokens import count_summary
from ..tokens import TokenCounter
from .agent_records import (
    AGENT_SPEAKER,
    agent_facts,
    agent_records,
    compact_records,
    drop_superseded,
    record_bonus,
    user_value_bonus,
)
from .base import SummaryRequest, SummaryResult
from .corrections import is_correction, supersede
from .dates import DateResolver, dates_available, resolver_for
from .extension import extended_text, fair_share, known_to
from .facts import (
    Fact,
    day_of,
    parse_summary,
    render_summary_text,
)
from .languages import Language, detect_language, get_language
from .salience import compress, split_sentences, words
from .sentence_memo import fact_tokens, memo_content_words, memo_features
from .speakers import Speakers
from .weights import DEFAULT_WEIGHTS, Weights

__all__ = ["BURST_JOINER", "NO_FACTS", "ExtractiveSummarizer", "Speakers", "Utterance"]

#: The summary written when nothing informative has been said yet (never parsed as a fact).
NO_FACTS = "(no facts recorded yet)"
#: Longest sentence kept whole, in characters; longer ones (pasted logs, tool output) are cut.
MAX_FACT_CHARS = 320
#: A burst stops growing at this many words (it is one utterance, not a monologue).
MAX_BURST_WORDS = 60
#: Between two lines of a burst when the first ended without punctuation ("i got the job"
#: / "at google"): a visible line break, so each line stays exactly as it was written.
BURST_JOINER = " / "
_TERMINAL = (".", "!", "?", "…", "。", "！", "？")
#: With ``extend``: the fill of a summary written whole, as a share of the cap, and the
#: multiple of a span's fair share an extension may add (:mod:`.extension`); chosen on
#: LoCoMo dev, cross-validated (``benchmarks/results/summary_extension.md``).
COMPACT_TO = 0.9
EXTEND_SHARE = 2.0


@dataclass(frozen=True, slots=True)
class Utterance:
    """What one speaker said in one go: a message, or a burst of short ones. ``seq`` is
    the first message's; ``timestamp`` the first message's time."""

    seq: int
    message: Message
    speaker: str | None
    text: str
    timestamp: datetime | None


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
    #: Grows its summary to the cap (more facts kept): ``TokenBudget`` plans with the cap.
    fills_cap = True

    def __init__(
        self,
        *,
        compress: bool = True,
        dedupe: bool = True,
        salience: bool = True,
        coverage: bool = True,
        dates: bool = True,
        bursts: bool = True,
        corrections: bool = True,
        resolve_dates: bool | None = None,
        language: str | None = None,
        weights: Weights = DEFAULT_WEIGHTS,
        extend: bool = False,
        compact_to: float = COMPACT_TO,
        extend_share: float = EXTEND_SHARE,
    ) -> None:
        """``resolve_dates``: append absolute dates to relative ones; ``None`` (default)
        does when the ``dates`` extra (dateparser) is installed, ``True`` requires it.
        ``language``: ISO 639-1 code of the conversation; ``None`` detects it per fold.
        ``extend``: keep the previous summary verbatim and append to it while it has room,
        so a provider's prompt cache keeps it (:mod:`.extension`); a summary written whole
        (the first fold, a compaction) then fills ``compact_to`` of the cap, and each
        extension adds at most ``extend_share`` × the span's fair share of the cap. Off by
        default: the room it leaves costs answers kept (``benchmarks/summary_extension.py``)."""
        if not (0 < compact_to <= 1) or isinstance(compact_to, bool):
            raise ConfigError(f"compact_to must be in (0, 1], got {compact_to!r}")
        if not extend_share > 0 or isinstance(extend_share, bool):
            raise ConfigError(f"extend_share must be > 0, got {extend_share!r}")
        if resolve_dates and not dates_available():
            raise ImportError(
                "resolving relative dates needs dateparser: pip install \"contextfold[dates]\""
            )
        self.compress = compress
        self.dedupe = dedupe
        self.salience = salience
        self.coverage = coverage
        self.dates = dates
        self.bursts = bursts
        self.corrections = corrections
        self.resolve_dates = dates_available() if resolve_dates is None else resolve_dates
        self.language = language
        self.weights = weights
        self.extend = extend
        self.compact_to = compact_to
        self.extend_share = extend_share

    @property
    def name(self) -> str:
        return "extractive"

    def __repr__(self) -> str:
        off = [k for k in _TECHNIQUES if not getattr(self, k)]
        args = [f"off={off!r}"] if off else []
        if self.extend:
            args.append(f"extend=True, compact_to={self.compact_to!r}, "
                        f"extend_share={self.extend_share!r}")
        return f"ExtractiveSummarizer({', '.join(args)})"

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
        old = [f for f in parse_summary(previous) if f.text != NO_FACTS]
        facts = list(old)
        agent = agent_records(messages)  # tool traffic: one state line per call
        if agent:
            facts = drop_superseded(facts, agent.values())
        names = [f.speaker for f in facts if f.speaker]
        names += [m.message.name for m in messages if m.message.name]
        speakers = Speakers(names)
        lang = (
            get_language(self.language)
            if self.language
            else detect_language(render_text(m.message) for m in messages)
        )
        resolver = resolver_for(lang.code) if self.resolve_dates and self.dates else None
        lowered = speakers.lowered()
        corrective: set[tuple[int, int, int]] = set()
        for unit in self._utterances(messages, speakers):
            if agent and (unit.message.role == "tool" or unit.message.tool_calls):
                day = day_of(unit.timestamp) if self.dates else None
                facts.extend(agent_facts(unit.seq, unit.message, agent, day))
                continue
            facts.extend(self._unit_facts(unit, lowered, lang, resolver, corrective))
        if self.corrections:
            facts = supersede(facts, lang, corrective, keep=(AGENT_SPEAKER,))
        cap = max_tokens
        if self.extend and not agent and not any(f.speaker == AGENT_SPEAKER for f in old):
            if old and set(old) <= set(facts):  # no old fact corrected
                new = [f for f in facts if f.order[0] != 0]
                text = self._extended(previous, old, new, speakers, lang, messages,
                                      max_tokens, counter)
                if text is not None:
                    return text
            cap = max(1, int(max_tokens * self.compact_to))  # compact: room to extend
        facts = compact_records(facts)  # agent records: each value written once
        if self.dedupe:  # agent records are one per call already: a core line and its
            # second line share most words, and neither may swallow the other
            records = [f for f in facts if f.speaker == AGENT_SPEAKER]
            facts = _dedupe([f for f in facts if f.speaker != AGENT_SPEAKER], lang) + records
        # in an agent fold, the user's sentences that state values rank with the records
        users: frozenset[str] = frozenset()
        if agent or any(f.speaker == AGENT_SPEAKER for f in facts):
            users = frozenset({"User"} | {
                name for m in messages if m.message.role == "user"
                and (name := speakers.canonical(m.message.name or "User")) is not None})
        candidates = self._score(facts, {f.speaker for f in facts if f.speaker}, lang, counter,
                                 users)
        chosen = self._select(candidates, cap, counter)
        return _fit(chosen, candidates, cap, counter)

    def _extended(
        self,
        previous: str,
        old: list[Fact],
        new: list[Fact],
        speakers: Speakers,
        lang: Language,
        messages: Sequence[StoredMessage],
        max_tokens: int,
        counter: TokenCounter,
    ) -> str | None:
        """``previous`` verbatim with the span's best new facts appended, within its fair
        share of the cap (:mod:`.extension`); None when the share does not fit (compact)."""
        if self.dedupe:
            new = known_to(old, _dedupe(new, lang), lang)
        last = max((f.day for f in old if f.day is not None), default=None)
        if last is not None and any(f.day is not None and f.day < last for f in new):
            return None  # appended text would break the time order: compact
        candidates = self._score(old + new, {f.speaker for f in old + new if f.speaker},
                                 lang, counter)
        covered: set[str] = set()
        for c in candidates[: len(old)]:
            covered.update(c.terms)
        fresh = candidates[len(old):]
        best = self._select(fresh, max_tokens, counter, set(covered))[:1]
        # the span's fair share, or at least its best fact, must fit: else compact
        share = max(fair_share(max_tokens, messages, self.extend_share),
                    best[0].tokens + _line_cost(best[0].fact, counter) if best else 0)
        if max_tokens - counter.count(previous + SEGMENT_BREAK) < share:
            return None
        chosen = sorted(self._select(fresh, share, counter, covered), key=lambda c: c.gain)
        while chosen:
            text = extended_text(previous, render_summary_text([c.fact for c in chosen]))
            if count_summary(counter, text) <= max_tokens:
                return text
            chosen.pop(0)
        return previous

    # -- steps ------------------------------------------------------------------------

    def _utterances(
        self, messages: Sequence[StoredMessage], speakers: Speakers
    ) -> list[Utterance]:
        """One utterance per message, except that a burst (consecutive short messages by
        one speaker, close in time) is one. Tool calls and results are never merged."""
        out: list[Utterance] = []
        open_words = 0
        last_time: datetime | None = None
        w = self.weights
        for item in messages:
            message = item.message
            speaker = speakers.canonical(message.name or message.role.capitalize())
            text = render_text(message)
            n = len(words(text))
            tool = message.role == "tool" or bool(message.tool_calls)
            short = not tool and 0 < n <= w.burst_words
            if self.bursts and short and out and open_words:
                last = out[-1]
                gap = _gap(last_time, message.timestamp)
                if (
                    last.speaker == speaker
                    and last.message.role == message.role
                    and gap is not None
                    and gap <= w.burst_seconds
                    and open_words + n <= MAX_BURST_WORDS
                ):
                    # lines run on as written; one that ended without punctuation is
                    # marked off (BURST_JOINER), never glued with words nobody said
                    joiner = " " if last.text.rstrip().endswith(_TERMINAL) else BURST_JOINER
                    out[-1] = Utterance(last.seq, last.message, speaker,
                                        last.text.rstrip() + joiner + text.strip(),
                                        last.timestamp)
                    open_words += n
                    last_time = message.timestamp
                    continue
            out.append(Utterance(item.seq, message, speaker, text, message.timestamp))
            open_words = n if short else 0
            last_time = message.timestamp
        return out

    def _unit_facts(
        self,
        unit: Utterance,
        names: list[str],
        lang: Language,
        resolver: DateResolver | None,
        corrective: set[tuple[int, int, int]],
    ) -> list[Fact]:
        """The facts of one utterance: its informative sentences, word for word, relative
        dates made absolute; the ``order`` of each fact that corrects an earlier one is added to
        ``corrective``. (Agent-state extraction for tool calls/results hooks in here.)"""
        day = day_of(unit.timestamp) if self.dates else None
        english = lang.code == "en"
        out: list[Fact] = []
        for k, sentence in enumerate(split_sentences(unit.text)):
            # kept word for word, or left out: compressing only tells chit-chat (a
            # greeting, thanks, an exclamation) from a sentence that states something
            if self.compress and not compress(sentence, names,
                                              None if english else lang.function_words):
                continue
            text = sentence
            if resolver is not None and day is not None:
                text = resolver.annotate(text, day)
            if len(text) > MAX_FACT_CHARS:
                text = text[:MAX_FACT_CHARS].rsplit(" ", 1)[0].rstrip(" ,;:") + "…"
            if self.corrections and is_correction(sentence, lang):
                corrective.add((1, unit.seq, k))
            out.append(Fact(text, unit.speaker, day, (1, unit.seq, k)))
        return out

    def _score(
        self,
        facts: list[Fact],
        speakers: set[str],
        lang: Language,
        counter: TokenCounter,
        users: frozenset[str] = frozenset(),
    ) -> list[_Candidate]:
        w = self.weights
        fw = None if lang.code == "en" else lang.function_words
        analysed = memo_features([f.text for f in facts], speakers, w, fw)
        df: dict[str, int] = {}
        for feats in analysed:
            for term in feats.terms:
                df[term] = df.get(term, 0) + 1
        norm = math.log(1 + max(1, len(facts)))
        out: list[_Candidate] = []
        for fact, feats in zip(facts, analysed, strict=True):
            terms = {
                t: (m if self.salience else 1.0)
                * (math.log(1 + len(facts) / df[t]) / norm) ** w.rarity
                for t, m in feats.terms.items()
            }
            if self.dates and fact.day is not None:
                terms[f"\x00day:{fact.day.isoformat()}"] = w.day
            bonus, factor = 0.0, 1.0
            if self.salience:
                bonus = w.cue * min(feats.cues, w.max_cues)
                bonus += w.first_person if feats.first_person else 0.0
                factor = w.question if feats.question else 1.0
                factor *= w.reaction if feats.reaction else 1.0
                if not (feats.cues or feats.entities or feats.numbers or feats.dates):
                    factor *= w.generic
            tokens = fact_tokens(counter, fact.text)
            if fact.speaker == AGENT_SPEAKER:  # agent state: what the next call needs
                bonus, factor = bonus + record_bonus(fact, tokens), 1.0
            elif fact.speaker in users and (extra := user_value_bonus(fact, tokens)):
                bonus, factor = bonus + extra, 1.0
            out.append(_Candidate(fact, terms, bonus, factor, max(1, tokens)))
        return out

    def _select(
        self,
        candidates: list[_Candidate],
        max_tokens: int,
        counter: TokenCounter,
        covered: set[str] | None = None,
    ) -> list[_Candidate]:
        """Greedy by marginal gain per token (lazy evaluation: a candidate's gain only
        falls as others are chosen, so a stale heap entry is an upper bound). ``covered``:
        terms a kept text already holds (worth nothing again)."""
        covered = set() if covered is None else covered
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
        fact_cost = self.weights.fact_cost
        heap = [(-gain(c) / (cost(c) + fact_cost), i) for i, c in enumerate(candidates)]
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
            ratio = g / (k + fact_cost)
            if heap and ratio < -heap[0][0] - 1e-12:
                heapq.heappush(heap, (-ratio, i))
                continue
            done.add(i)
            if g < self.weights.min_gain and chosen:
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
                            heap, (-gain(candidates[j]) / (cost(candidates[j]) + fact_cost), j)
                        )
        return chosen


_TECHNIQUES = ("compress", "dedupe", "salience", "coverage", "dates", "bursts", "corrections")


def _gap(last: datetime | None, when: datetime | None) -> float | None:
    """Seconds between two messages; 0 when neither is timed, None when one is."""
    if last is None and when is None:
        return 0.0
    if last is None or when is None:
        return None
    return abs((when - last).total_seconds())


def _line_cost(fact: Fact, counter: TokenCounter) -> int:
    """Tokens a fact's line header costs (its date and speaker) and the line break."""
    return counter.count(render_summary_text([Fact("x", fact.speaker, fact.day, fact.order)])) + 1


def _dedupe(facts: list[Fact], lang: Language) -> list[Fact]:
    """Drop exact repeats and facts whose content words are contained in another fact of
    the same speaker. The kept fact is the fuller one, at the earliest position either
    held (a fact repeated later keeps the day it was first said)."""
    fw = None if lang.code == "en" else lang.function_words
    keys = memo_content_words([f.text for f in facts], fw)
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
        if count_summary(counter, text) <= max_tokens:  # (the fold counts it again)
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
