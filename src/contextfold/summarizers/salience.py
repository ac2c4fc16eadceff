"""Sentence-level text analysis for the extractive summarizer: splitting, filler
compression and salience features.

Everything here is pure and deterministic, and uses only general knowledge of English
conversation (function words, interjections, evaluative words, cue words for life events,
plans and preferences). Nothing is learned from, or tuned to, any particular transcript.
Non-English text still works: it is split and weighted by rarity; only the English cue
lists stop helping.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = [
    "Features",
    "compress",
    "content_words",
    "features",
    "split_sentences",
]


def _wordlist(text: str) -> list[str]:
    return text.split()


def _wordset(text: str) -> frozenset[str]:
    return frozenset(text.split())


# Abbreviations whose period does not end a sentence.
_ABBREVIATIONS = _wordset(
    """
    mr mrs ms dr prof st jr sr vs etc e.g i.e a.m p.m no approx dept est inc ltd co mt ft
    """
)
_SENTENCE_END = re.compile(r"(?<=[.!?…])[\"'”’)\]]*\s+|\n+")
_WORD = re.compile(r"[^\W_]+(?:['’.\-][^\W_]+)*")
_SPACES = re.compile(r"\s+")

STOPWORDS = _wordset(
    """
    a about above after again against all also am an and any are aren't as at be because
    been before being below between both but by can can't cannot could couldn't did didn't
    do does doesn't doing don't down during each even ever every few for from further get
    gets got had hadn't has hasn't have haven't having he he'd he'll he's her here here's
    hers herself him himself his how how's i i'd i'll i'm i've if in into is isn't it it's
    its itself let's me more most much mustn't my myself no nor not now of off on once only
    or other ought our ours ourselves out over own same shan't she she'd she'll she's
    should shouldn't so some such than that that's the their theirs them themselves then
    there there's these they they'd they'll they're they've this those through to too under
    until up upon us very was wasn't we we'd we'll we're we've were weren't what what's
    when when's where where's which while who who's whom why why's will with won't would
    wouldn't you you'd you'll you're you've your yours yourself yourselves im ive dont cant
    didnt thats its youre whats also still yet may might must shall one ones thing things
    something anything everything nothing lot lots way really just actually like yeah yes
    oh ok okay well hey hi hello gonna wanna gotta kinda sorta
    """
)

#: Words that carry tone, not facts: chit-chat is mostly made of these.
EVALUATIVE = _wordset(
    """
    amazing awesome great good nice cool wow wonderful beautiful lovely fantastic
    incredible awesome super fun glad happy sad sorry proud excited thrilled stoked love
    loved lovely gorgeous stunning impressive inspiring inspired inspirational cute sweet
    thanks thank appreciate appreciated hope hoping sounds sound look looks looking seem
    seems feel feels felt feeling glad totally definitely absolutely truly true right sure
    bet agree tough hard care take keep best luck congrats congratulations enjoy enjoyed
    thing means mean meant special perfect exciting interesting awesome brilliant blast
    glad heart warming heartwarming support supportive rewarding powerful positive vibes
    wish wishing keep mind great day time see saw know knew think thought guess want wanted
    say said tell told talk talking chat share sharing pretty kind bit lot always never
    really much many
    """
)

# Interjections and fillers that open a sentence and can be dropped with their punctuation.
_LEADING_FILLER = re.compile(
    r"^(?:(?:hey|hi|hello|oh|ohh|ah|aw+|wow|whoa|yeah|yep|yup|yes|no|nope|well|so|ok|okay|hmm+|"
    r"haha+|lol|omg|cool|great|awesome|nice|sure|right|honestly|actually|anyway|anyways|btw|"
    r"by the way|thanks|thank you|sounds good|good to see you|you know|i mean|totally|"
    r"absolutely|definitely|indeed|gosh|man|dude|congrats|congratulations)\b[\s,!.…-]*)+",
    re.IGNORECASE,
)
# Adverbs that intensify or hedge without adding a fact; dropped inside sentences.
_INLINE_FILLER = re.compile(
    r"\b(?:really|just|actually|totally|basically|literally|honestly|definitely|absolutely|"
    r"truly|super|so|very|pretty much|kind of|sort of|you know|i mean|like,)\s+(?=\w)",
    re.IGNORECASE,
)
_TRAILING_TAG = re.compile(
    r",?\s*(?:you know|right|haha+|lol|though|too|as well|for sure)\s*([.!?…]*)$", re.IGNORECASE
)
# A greeting or thanks addressed to someone ("Hey Mel!", "Thanks, Caroline!").
_VOCATIVE = re.compile(
    r"^(?:hey|hi|hello|thanks|thank you|bye|goodbye|see you|take care|congrats|"
    r"congratulations|good night|good morning|cheers)\b[\s,]*[A-Z][\w'-]*(?:\s+[A-Z][\w'-]*)?"
    r"\s*[!.?…]*$",
    re.IGNORECASE,
)

_MONTHS = _wordlist(
    """
    january february march april may june july august september october november december
    jan feb mar apr jun jul aug sep sept oct nov dec
    """
)
_WEEKDAYS = _wordlist(
    """
    monday tuesday wednesday thursday friday saturday sunday
    """
)
_TIME_WORDS = frozenset(
    _MONTHS
    + _WEEKDAYS
    + _wordlist(
        """
        yesterday today tomorrow tonight weekend week weeks month months year years ago
        last next ago since until birthday anniversary summer winter spring fall autumn
        christmas morning evening night holiday holidays
        """
    )
)
_NUMBER_WORDS = _wordset(
    """
    one two three four five six seven eight nine ten eleven twelve thirteen fourteen
    fifteen sixteen seventeen eighteen nineteen twenty thirty forty fifty sixty seventy
    eighty ninety hundred thousand million billion first second third fourth fifth dozen
    half couple
    """
)
#: Cue words for facts about someone's life: events, plans, preferences, possessions, ties.
LIFE_CUES = _wordset(
    """
    adopt adopted adopting moved move moving married marry marriage wedding engaged divorce
    born birth pregnant baby graduated graduate graduation degree school college university
    class classes course study studying studied job work working career hired fired
    promoted promotion boss company business startup shop store launched launch started
    start starting joined join quit retired bought buy buying sold sell got won win lost
    lose trip travel traveled travelled traveling visit visited visiting vacation flight
    concert festival conference tournament competition game match race marathon plan plans
    planning planned going decided decide decision goal goals dream dreams hope will want
    wants learning learn learned favorite favourite prefer prefers love loves hate hates
    enjoy enjoys allergic hobby hobbies collect collection reading read book books wrote
    write writing painting painted paint draw drawing play playing played music song songs
    band instrument guitar piano violin dance dancing sport sports team pet pets dog dogs
    cat cats puppy kids kid children child son daughter husband wife partner boyfriend
    girlfriend mom dad mother father sister brother family friend friends grandma grandpa
    parents named name called live lives living house home apartment city town country car
    bike camping hiking cooking recipe volunteer volunteering charity project research
    researching applied apply accepted interview exam test surgery hospital sick injury
    injured hurt doctor therapy diagnosed recovered passed died funeral gift present party
    celebrate celebrated
    """
)
_QUESTION_OPENERS = _wordset(
    """
    what when where who why how which do does did are is was were have has had can could
    would will should any anything
    """
)
_PLACE_PREPOSITIONS = _wordset(
    """
    in at to from near visited visiting across around
    """
)


def split_sentences(text: str) -> list[str]:
    """Split text into sentences, keeping each one's own punctuation.

    Abbreviations (``Dr.``, ``e.g.``) and decimal numbers do not end a sentence. The split
    is stable: joining its output with spaces and splitting again gives the same list,
    which keeps a rolling summary parseable fold after fold.
    """
    out: list[str] = []
    start = 0
    for match in _SENTENCE_END.finditer(text):
        piece = text[start : match.start()].strip()
        if not piece:
            start = match.end()
            continue
        if not match.group().startswith("\n") and piece.endswith("."):
            last = piece.rsplit(None, 1)[-1].rstrip(".").lower()
            if last in _ABBREVIATIONS or (len(last) == 1 and last.isalpha()):
                continue
        out.append(_SPACES.sub(" ", piece))
        start = match.end()
    tail = text[start:].strip()
    if tail:
        out.append(_SPACES.sub(" ", tail))
    return out


def compress(sentence: str) -> str:
    """Drop what carries no fact: opening interjections ("Oh wow, …"), intensifiers and
    hedges ("really", "just", "kind of"), trailing tags ("…, you know?"). Returns "" for a
    sentence that is only a greeting, thanks or exclamation. Idempotent."""
    text = sentence.strip()
    if _VOCATIVE.match(text):
        return ""
    text = _LEADING_FILLER.sub("", text).strip()
    text = _INLINE_FILLER.sub("", text)
    text = _TRAILING_TAG.sub(r"\1", text).strip()
    text = _SPACES.sub(" ", text).strip(" ,;:-–—")
    if not any(ch.isalnum() for ch in text):
        return ""
    if text[0].islower() and not sentence.strip()[:1].islower():
        text = text[0].upper() + text[1:]
    return text


def words(text: str) -> list[str]:
    """The words of ``text`` in order, original case."""
    return _WORD.findall(text)


def content_words(text: str) -> list[str]:
    """Lower-cased words that are not function words, in order (duplicates kept)."""
    return [w for w in (x.lower() for x in words(text)) if w not in STOPWORDS]


@dataclass(frozen=True, slots=True)
class Features:
    """What makes a sentence worth keeping. ``terms`` are the coverage elements (content
    words, lower-cased) with their salience multiplier; ``cues`` counts life-event, plan
    and preference cue words; ``question`` marks a sentence that asks rather than tells."""

    terms: dict[str, float]
    cues: int
    entities: int
    numbers: int
    dates: int
    question: bool
    first_person: bool


def features(sentence: str, speakers: Iterable[str] = ()) -> Features:
    """Salience features of one (already compressed) sentence.

    Multipliers: proper nouns (capitalised mid-sentence) and places after a preposition
    weigh most, then numbers and dates; evaluative words and the speakers' own names (the
    attribution already carries them) weigh little.
    """
    names = {s.lower() for s in speakers}
    tokens = words(sentence)
    terms: dict[str, float] = {}
    cues = entities = numbers = dates = 0
    first_person = False
    prev = ""
    for i, tok in enumerate(tokens):
        low = tok.lower()
        if low in ("i", "my", "we", "our", "me", "i'm", "i've", "mine"):
            first_person = True
        if low in STOPWORDS and not (tok == "May" and i > 0):
            prev = low
            continue
        weight = 1.0
        if any(ch.isdigit() for ch in tok):
            weight, numbers = 2.0, numbers + 1
        elif low in _NUMBER_WORDS:
            weight, numbers = 1.5, numbers + 1
        elif low in _TIME_WORDS:
            weight, dates = 1.5, dates + 1
        elif tok[:1].isupper() and (i > 0 or (len(tok) > 1 and tok[1:].isupper())):
            weight, entities = 2.0, entities + 1
            if prev in _PLACE_PREPOSITIONS:
                weight = 2.5
        elif tok[:1].isupper():
            weight = 1.3  # sentence-initial capital: maybe a name, maybe not
        if low in names:
            weight = 0.3
        elif low in EVALUATIVE:
            weight = min(weight, 0.25)
        if low in LIFE_CUES:
            cues += 1
        terms[low] = max(terms.get(low, 0.0), weight)
        prev = low
    first = tokens[0].lower() if tokens else ""
    question = sentence.rstrip().endswith("?") or (
        first in _QUESTION_OPENERS and "?" in sentence
    )
    return Features(terms, cues, entities, numbers, dates, question, first_person)
