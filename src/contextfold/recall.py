"""Recall: exact folded turns brought back into the context, next to the summary.

The store keeps every folded message (``archive`` retention) and indexes it with its
database's own full-text engine (``Store.search``). With recall on, ``context()`` searches
the *folded* messages for a query — by default the newest user message, for agents the
identifiers and words of the newest messages — and shows the best whole turns (a question
with its answer, and the neighbouring turns that share the query's words) with their dates
and speakers, in one labelled block (:data:`RECALL_HEADER`): data about earlier turns,
never instructions.

Contract (easy to break, tested in ``tests/test_recall*.py``):

- **Budget**: the block takes at most ``Recall.share`` of the budget and never more than
  the room the plain context leaves; the context with the block never exceeds the budget.
  With a ``TokenBudget`` policy the engine folds as if the budget were ``1 - share`` of
  it (:meth:`Recall.fold_policy`), so that room is there.
- **Plain path**: recall off, a query that finds nothing worth its tokens, or a closed
  gate: the context is exactly the one without recall.
- **Prompt cache**: the block is put just before the newest user message (a user turn of
  its own, which Anthropic and Gemini merge into that turn), after the byte-stable prefix
  — system prompt, summary, older turns — so that prefix is unchanged between folds.
- **Gate**: with the implicit query (the newest user message) the block is shown only
  when the message asks about the past (:func:`asks_about_past`); ordinary chat turns
  pay nothing for recall. An explicit ``query`` is always searched.
- Tool calls and results are never split: the block is one message put between whole
  turns, and recalled tool messages are rendered as text inside it.
- **Speakers**: a query that names a speaker (``Message.name``) counts that name as
  matched by every message the speaker said (:func:`speaker_bonus`); such a query asks
  the store for one matched term fewer and reads its hits before choosing.
- **Second tier**: when the hits that pass the relevance threshold leave room, the best
  matches of fewer of the query's terms fill it, after them (:func:`lesser_hits`) — never
  in their place, and never without them.
- Only folded messages are recalled (live ones are in the context already) and a message
  the summary already quotes whole is skipped. The block is view-only: it is never stored
  and never reaches the summarizer.

The pure parts (:func:`implicit_query`, :func:`plan_spans`, :func:`render_block`,
:func:`with_block`) take no store; :func:`recall_into` does the store reads (searches,
fetches) and is awaited by the engine.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from functools import lru_cache
from typing import TYPE_CHECKING, Literal, Protocol

from .errors import ConfigError
from .messages import StoredMessage
from .policy import Policy, TokenBudget
from .recall_block import (
    RECALL_HEADER,
    RECALL_METADATA,
    Packer,
    RecallBlock,
    _speaker,
    build_block,
    render_block,
)
from .recall_reads import RecallReads
from .search_terms import (
    Months,
    asks_about_past,
    date_words,
    query_months,
    refine_terms,
)
from .stores.search import clean_terms, index_text, matched_terms
from .summarizers.agent_state import call_signature
from .tokens import (
    TokenCounter,
)

if TYPE_CHECKING:
    from .context import Context
    from .stores.base import Store

__all__ = [
    "RECALL_HEADER",
    "RECALL_METADATA",
    "Recall",
    "RecallBlock",
    "SearchHitLike",
    "build_block",
    "implicit_query",
    "plan_spans",
    "recall_into",
    "render_block",
    "with_block",
]

Gate = Literal["past", "always"]


class SearchHitLike(Protocol):
    """What recall reads of a store's search hit (``contextfold.stores.base.SearchHit``)."""

    @property
    def seq(self) -> int: ...
    @property
    def score(self) -> float: ...
    @property
    def folded(self) -> bool: ...
    @property
    def matched(self) -> int: ...


@dataclass(frozen=True)
class Recall:
    """Options of recall (``Memory(recall=True)`` takes the defaults).

    ``share``: the most of the budget the recalled block may take (and, with a
    ``TokenBudget`` policy, the room folding keeps free for it). ``min_coverage``: a hit
    must match at least this share of the query's terms (and at least ``min_matched``
    distinct terms when the query has that many): the relevance threshold, the same on
    every store (scores are not comparable across engines). ``lesser``: when the hits
    that pass it leave room, matches of fewer terms fill it after them
    (:func:`lesser_hits`; one more search, of any one term, which costs more on a large
    store when the query's words are rare). ``limit``: hits searched (in each tier).
    ``neighbours``: how far on each side of a hit a turn may be shown with it — the turn
    that answers a hit (or the question it answers) always is; further ones only when they
    match the query too. ``gate``: ``"past"`` shows the block for the implicit query (the
    newest user message) only when it asks about the past; ``"always"`` searches every
    turn. ``max_message_tokens``: a longer recalled message (a tool result) is shown cut,
    head and tail, to this size. ``speakers``: a query word that is the name of a speaker
    of the live messages (``Message.name``, e.g. "Nate" in "What does Nate's turtle
    eat?") also matches the messages that speaker said — stores index what was said, not
    who said it. ``framed``: the best this many hits are shown with the turn before them
    and ``frame_after`` turns after them before any lesser hit is added (an answer often
    sits a turn or two away from the words that found it: what a turn brings up is often
    told in the turns that follow it).
    """

    share: float = 0.5
    min_coverage: float = 0.1
    min_matched: int = 2
    limit: int = 40
    neighbours: int = 4
    gate: Gate = "past"
    max_message_tokens: int = 400
    speakers: bool = True
    framed: int = 3
    frame_after: int = 2
    lesser: bool = True

    def __post_init__(self) -> None:
        share = self.share
        if isinstance(share, bool) or not isinstance(share, (int, float)) or not 0 < share < 1:
            raise ConfigError(f"Recall.share must be a number between 0 and 1, got {share!r}")
        cov = self.min_coverage
        if isinstance(cov, bool) or not isinstance(cov, (int, float)) or not 0 <= cov <= 1:
            raise ConfigError(f"Recall.min_coverage must be between 0 and 1, got {cov!r}")
        for name, low in (("min_matched", 1), ("limit", 1), ("neighbours", 0),
                          ("max_message_tokens", 16), ("framed", 0), ("frame_after", 1)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise ConfigError(f"Recall.{name} must be an int >= {low}, got {value!r}")
        for flag in ("speakers", "lesser"):
            if not isinstance(getattr(self, flag), bool):
                raise ConfigError(
                    f"Recall.{flag} must be True or False, got {getattr(self, flag)!r}")
        if self.gate not in ("past", "always"):
            raise ConfigError(f"Recall.gate must be 'past' or 'always', got {self.gate!r}")

    @classmethod
    def coerce(cls, value: Recall | bool | None) -> Recall | None:
        """``Memory(recall=…)``: a ``Recall``, ``True`` (defaults), ``False``/None (off)."""
        if value is None or value is False:
            return None
        if value is True:
            return cls()
        if isinstance(value, cls):
            return value
        raise ConfigError(f"recall must be a Recall, True/False or None, got {value!r:.80}")

    def room(self, budget: int) -> int:
        """The most tokens the block may take in a context of ``budget``."""
        return int(budget * self.share)

    def fold_policy(self, policy: Policy) -> Policy:
        """The policy folding runs with: a ``TokenBudget`` scaled to ``1 - share`` of its
        budget (an explicit summary cap likewise), so the plain context leaves the block
        its room; any other policy as it is (the block then takes what room the plain
        context leaves).

        The gap between the trigger and the target stays as many tokens as in the full
        budget (the target drops by it, but never to the summary cap): a fold folds as
        much as without recall, so folds — each one rewrites a provider's prompt cache
        from the summary on — come about as often. Scaling the target with the budget
        halved that gap and doubled the folds: on LoCoMo dev the cache rewrite falls from
        15.0 / 12.3 / 7.1% of the input tokens to 9.0 / 6.5 / 3.5% at 2,000 / 4,000 /
        8,000 tokens, the answers in the context with the default options from 92.9 /
        95.4 / 97.2% to 92.3 / 95.1 / 97.2% (``benchmarks/recall_bill.py``,
        ``retention_recall.py``, ``recall_fold_frontier.py``)."""
        if not isinstance(policy, TokenBudget):
            return policy
        keep = 1.0 - self.share
        assert policy.target is not None and policy.summary_max_tokens is not None
        explicit_cap = policy.summary_max_tokens != max(16, policy.max_tokens * 3 // 5)
        max_tokens = max(16, int(policy.max_tokens * keep))
        cap = max(8, int(policy.summary_max_tokens * keep)) if explicit_cap \
            else max(16, max_tokens * 3 // 5)
        target = max(cap + 1, max_tokens - (policy.max_tokens - policy.target))
        return TokenBudget(
            max_tokens,
            target=min(max_tokens, target),
            keep_last=policy.keep_last,
            summary_max_tokens=cap,
            min_fold_ratio=policy.min_fold_ratio,
        )


# -- the query ---------------------------------------------------------------------------


_IDENT = re.compile(r"\b(?=[A-Za-z0-9_-]*\d)[A-Za-z0-9][A-Za-z0-9_-]{2,}\b")


def implicit_query(live: Sequence[StoredMessage], agent: bool = False,
                   max_chars: int = 600) -> str | None:
    """The query when none is given: the newest user message's text; for agents (``agent``,
    masking on) the identifiers and words of the newest messages — the newest user message
    and the calls and results after it (the newest first, within ``max_chars``)."""
    if not live:
        return None
    if not agent:
        for item in reversed(live):
            if item.role == "user":
                return item.text[:max_chars] or None
        return None
    parts: list[str] = []
    used = 0
    for item in reversed(live):
        msg = item.message
        text = msg.text
        if msg.role == "tool":
            text = " ".join(dict.fromkeys(_IDENT.findall(text)))  # a result: its ids only
        for call in msg.tool_calls:
            text += " " + call_signature(call.name, call.arguments, 200)
        if text.strip():
            parts.append(text[: max_chars - used])
            used += len(parts[-1])
        if msg.role == "user" or used >= max_chars:
            break
    return " ".join(parts) or None


def _in_months(ts: datetime | None, months: Months) -> int:
    """2 when ``ts`` is on a day the query names, 1 in a month or year it names, else 0."""
    if ts is None:
        return 0
    best = 0
    for y, m, d in months:
        if (y is None or ts.year == y) and (m is None or ts.month == m):
            best = max(best, 2 if d is not None and ts.day == d else 1)
    return best


# -- choosing turns ----------------------------------------------------------------------


def relevant(hits: Iterable[SearchHitLike], n_terms: int, options: Recall,
             live_from: int | None, months: Months | None = None,
             bonus: Mapping[int, int] | None = None) -> list[SearchHitLike]:
    """The hits worth showing, best first: folded, older than the live messages, and
    matching enough of the query's ``n_terms`` terms; with ``months`` (the dates the
    query names) a hit from such a date counts one term more and comes first.
    ``bonus``: terms a hit matches besides its words (seq → count: the query names the
    hit's speaker, :func:`speaker_bonus`)."""
    need = max(min(options.min_matched, n_terms), options.min_coverage * n_terms)
    extra = bonus or {}

    def on(h: SearchHitLike) -> int:
        return _in_months(getattr(h, "timestamp", None), months) if months else 0

    out = [
        h for h in hits
        if h.folded and (live_from is None or h.seq < live_from)
        and h.matched + extra.get(h.seq, 0) + (on(h) > 0) >= need
    ]
    if months:
        out.sort(key=lambda h: (-on(h), -h.score, h.seq))
    else:
        out.sort(key=lambda h: (-h.score, h.seq))
    return out


#: Tokens the block must leave free for :func:`lesser_hits` to be searched (about two
#: recalled lines).
LESSER_ROOM = 64
#: The fewest second-tier hits whose turns one fetch reads (:func:`recall_into` reads
#: them a part at a time, as far as the room can take them).
LESSER_PART = 4


def lesser_hits(found: Iterable[SearchHitLike], hits: Sequence[SearchHitLike],
                live_from: int | None) -> list[SearchHitLike]:
    """The second tier: the hits of a search for any one of the query's terms (``found``,
    best first) that are not among ``hits`` (the ones that pass the gate), folded and
    older than the live messages. They are shown only in the room the first tier leaves
    (every hit that passes the gate, with its frame and neighbours, comes first), and only
    when some hit passes the gate, so a query that finds nothing worth its tokens still
    shows nothing. A question whose answer shares one word with it ("What area was hit
    by a flood?" — "… my old area, West County …") is found this way."""
    have = {h.seq for h in hits}
    return [h for h in found if h.folded and h.seq not in have
            and (live_from is None or h.seq < live_from)]


def turn_seqs(hits: Sequence[SearchHitLike], live_from: int | None) -> list[int]:
    """The seqs of ``hits`` and the message on each side of them (the turn each belongs
    to, :func:`plan_spans`), older than the live messages."""
    seqs: set[int] = set()
    for h in hits:
        hi = h.seq + 1 if live_from is None else min(h.seq + 1, live_from - 1)
        seqs.update(range(max(1, h.seq - 1), hi + 1))
    return sorted(seqs)


@lru_cache(maxsize=1024)
def _name_terms(name: str) -> tuple[str, ...]:
    """A speaker's name as query terms (folded as the index folds words)."""
    return tuple(clean_terms([name]))


def speaker_terms(terms: Sequence[str], speakers: Iterable[StoredMessage]) -> set[str]:
    """The query ``terms`` that name a speaker of ``speakers`` (a message's ``name``,
    folded as the index folds words): a store does not index who said a message."""
    names: set[str] = set()
    for item in speakers:
        if item.message.name:
            names.update(_name_terms(item.message.name))
    return {t for t in terms if t in names}


def speaker_bonus(messages: Iterable[StoredMessage], named: set[str]) -> dict[int, int]:
    """seq → 1 for each message said by a speaker the query names (``named``:
    :func:`speaker_terms`) whose words do not contain that name already (the store
    counted it then): the message matches that term too."""
    out: dict[int, int] = {}
    for item in messages:
        who = named.intersection(_name_terms(item.message.name)) if item.message.name \
            else set()
        if who and not matched_terms(index_text(item.message), sorted(who)):
            out[item.seq] = 1
    return out


def wanted_seqs(hits: Sequence[SearchHitLike], options: Recall,
                live_from: int | None) -> list[int]:
    """The seqs to fetch: every hit and its neighbours up to ``options.neighbours``; for
    the best ``options.framed`` hits (``hits`` come best first) their frame beyond that."""
    seqs: set[int] = set()
    for rank, h in enumerate(hits):
        near = max(1, options.neighbours)
        framed = rank < options.framed
        lo = max(1, h.seq - near - framed)
        hi = h.seq + near + framed * options.frame_after
        if live_from is not None:
            hi = min(hi, live_from - 1)
        seqs.update(range(lo, hi + 1))
    return sorted(seqs)


def plan_spans(hits: Sequence[SearchHitLike], messages: Mapping[int, StoredMessage],
               options: Recall, others: Iterable[int] = ()) -> list[tuple[int, list[int]]]:
    """Each hit as a whole turn, best hit first: the hit, the turn that answers it (the
    next message by another speaker, when the hit asks) or the question it answers (the
    previous message by another speaker, when that asks), and within ``neighbours`` the
    turns that match the query too (hits themselves, and the seqs of ``others``: hits of
    the same search planned apart) with the turns between. (hit seq, span of seqs oldest
    first); a span never crosses a message not fetched."""
    hit_seqs = {h.seq for h in hits}
    hit_seqs.update(others)
    spans: list[tuple[int, list[int]]] = []
    for h in hits:
        if h.seq not in messages:
            continue
        lo = hi = h.seq
        me = messages[h.seq]
        prev, nxt = messages.get(h.seq - 1), messages.get(h.seq + 1)
        if prev is not None and _speaker(prev) != _speaker(me) and (
            _asks(prev) or me.role == "tool" or prev.role == "user"
        ):
            lo = h.seq - 1
        if nxt is not None and _speaker(nxt) != _speaker(me) and (
            _asks(me) or nxt.role == "tool" or me.role == "user"
        ):
            hi = h.seq + 1
        for d in range(2, options.neighbours + 1):
            if h.seq - d in hit_seqs and all(s in messages for s in range(h.seq - d, lo)):
                lo = h.seq - d
            if h.seq + d in hit_seqs and all(s in messages for s in range(hi + 1, h.seq + d + 1)):
                hi = h.seq + d
        spans.append((h.seq, list(range(lo, hi + 1))))
    return spans


def _asks(item: StoredMessage) -> bool:
    return "?" in item.text


# -- into the context --------------------------------------------------------------------


def with_block(ctx: Context, block: RecallBlock) -> Context:
    """``ctx`` with the block put just before its newest user message (after the leading
    system messages when it has none): everything before that point is unchanged, so a
    provider's prompt cache of it keeps hitting."""
    msgs = ctx.messages
    at = None
    for i in range(len(msgs) - 1, -1, -1):
        if msgs[i].role == "user":
            at = i
            break
    if at is None:
        at = 0
        while at < len(msgs) and msgs[at].role == "system":
            at += 1
    return replace(
        ctx,
        messages=(*msgs[:at], block.message, *msgs[at:]),
        tokens=ctx.tokens + block.tokens,
        recalled=block.seqs,
    )


async def recall_into(
    store: Store,
    session_id: str,
    ctx: Context,
    live: Sequence[StoredMessage],
    *,
    options: Recall,
    counter: TokenCounter,
    query: str | None,
    agent: bool = False,
    summary_text: str | None = None,
) -> Context:
    """``ctx`` with the recalled block for ``query`` (None: the implicit query, behind the
    gate), or ``ctx`` itself when nothing is worth showing or there is no room. Reads the
    store: one search and one fetch of the hits and their neighbours (a fetch of the hits
    first when the query names a speaker); for the second tier, when the room left can
    take a line, one more search (none when the first was for any one term) and fetches
    of its turns, best first, a part at a time, only as far as the room can take them
    (:class:`~.recall_block.Packer` packs the block a tier at a time: the same block as
    :func:`build_block` of both tiers). A store with ``search_turns`` reads the turns a
    search's fetches want with the search itself (:class:`~.recall_reads.RecallReads`):
    one round trip a tier."""
    if ctx.budget is None:
        room = options.room(ctx.tokens * 4 or 4000)
    else:
        room = min(options.room(ctx.budget), ctx.budget - ctx.tokens)
    if room < 32:
        return ctx
    if query is None:
        query = implicit_query(live, agent)
        if query is None or (options.gate == "past" and not agent
                             and not asks_about_past(query)):
            return ctx
    months = query_months(query)
    days = date_words(query) if months else set()
    # the query's words with recall's own (English) stop and question words dropped: the
    # short words of the ISO lists query_terms drops include content words of another
    # language ("car" is French for "because"): on LoCoMo dev at 2,000 tokens answers in
    # the context fell from 282 to 275 of 324 with them
    terms = [t for t in refine_terms(clean_terms([query])) if t not in days]
    if not terms:
        return ctx
    live_from = live[0].seq if live else None
    # the store leaves out messages with fewer terms than the gate needs (a hit from a
    # date the query names counts one more, so it may have one fewer)
    need = math.ceil(max(min(options.min_matched, len(terms)),
                         options.min_coverage * len(terms)))
    # a hit said by a speaker the query names matches that name too (names are not
    # indexed): such a query searches for one term fewer, and the hits are fetched first
    named = speaker_terms(terms, live) if options.speakers else set()
    first_search = (options.limit * (2 if months else 1),
                    max(1, need - bool(months) - bool(named)))  # (limit, min_matched)
    reads = RecallReads(store, session_id)
    near = max(1, options.neighbours)  # how far wanted_seqs reaches around a hit, the
    # best (framed) ones further: they are the best found when no hit is left out or
    # moved up (by a date or a speaker the query names; else the rest is fetched after)
    reach = [(near + 1, near + options.frame_after)] * options.framed + [(near, near)]
    found = await reads.search(terms, limit=first_search[0], min_matched=first_search[1],
                               reach=reach)
    bonus: dict[int, int] = {}
    messages: dict[int, StoredMessage] = {}
    if named and found:
        first = await reads.fetch([h.seq for h in found])
        messages = {m.seq: m for m in first if m.folded}
        bonus = speaker_bonus(messages.values(), named)
    hits = relevant(found, len(terms), options, live_from, months, bonus)
    if not hits:
        return ctx
    wanted = [s for s in wanted_seqs(hits, options, live_from) if s not in messages]
    fetched = await reads.fetch(wanted) if wanted else []
    messages.update((m.seq, m) for m in fetched if m.folded)
    packer = Packer(messages, counter, room, options, summary_text)
    packer.add_spans(plan_spans(hits, messages, options))
    laid = packer.layout()
    if laid is None:
        return ctx
    if (options.lesser and len(hits) < options.limit
            and room - laid[1] >= LESSER_ROOM and not packer.full):
        # the hits that pass the gate (all the store has) leave room: the best matches
        # of fewer of the query's terms take what is left (:func:`lesser_hits`)
        # (the same search as the first one, when that asked for any one term: its hits)
        more = found if first_search == (options.limit, 1) else await reads.search(
            terms, limit=options.limit, min_matched=1, reach=[(1, 1)])  # (turn_seqs)
        lesser = lesser_hits(more, hits, live_from)
        if lesser:
            await _add_lesser(reads, packer, lesser, messages, live_from)
    block = packer.block()
    return ctx if block is None else with_block(ctx, block)


def _part_size(packer: Packer) -> int:
    """How many second-tier hits to fetch the turns of next: about as many as the room
    left can show (two lines each, at the size of the lines taken so far), and a few
    more; at least :data:`LESSER_PART`."""
    line = packer.used / len(packer.chosen) if packer.chosen else 32.0
    return max(LESSER_PART, math.ceil(packer.free / max(1.0, 2 * line)) + 2)


async def _add_lesser(reads: RecallReads, packer: Packer,
                      lesser: Sequence[SearchHitLike], messages: dict[int, StoredMessage],
                      live_from: int | None) -> None:
    """The second tier into ``packer``'s room, best first, its turns fetched a part at a
    time — only as far as the room can still take a line. The same block as fetching
    every lesser hit's turn first: a part fetches the turns of its hits and of the lesser
    hits near enough for a span to reach (``neighbours + 1``), so each span is planned on
    the messages it would have been planned on."""
    options = packer.options
    seqs = [h.seq for h in lesser]
    reach = options.neighbours + 1
    done = 0
    while done < len(lesser) and not packer.full:
        part = lesser[done:done + _part_size(packer)]
        done += len(part)
        if done >= len(lesser):
            near = lesser
        else:
            window = {p.seq + d for p in part for d in range(-reach, reach + 1)}
            near = [h for h in lesser if h.seq in window]
        wanted = [s for s in turn_seqs(near, live_from) if s not in messages]
        fetched = await reads.fetch(wanted) if wanted else []
        messages.update((m.seq, m) for m in fetched if m.folded)
        packer.add_lesser(plan_spans(part, messages, options, others=seqs))
