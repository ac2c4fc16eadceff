"""Sentence-level text analysis for the extractive summarizer: splitting, filler
compression and salience features.

Everything here is pure and deterministic, and uses only general knowledge of
conversation (function words, interjections, evaluative words, cue words for life events,
plans and preferences). Nothing is learned from, or tuned to, any particular transcript.
Sentence splitting is script-aware (Latin/Cyrillic/Greek full stops, CJK full-width
terminals that need no space, Arabic and Devanagari terminals, abbreviations and ordinal
dates of the supported languages). The function words come from :mod:`.languages` for
the span's language; the filler and cue lists are English, and outside English the
features fall back to what is language-neutral: rarity, capitalised names, numbers, dates.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from .weights import DEFAULT_WEIGHTS, Weights

__all__ = [
    "Features",
    "compress",
    "content_words",
    "features",
    "informative",
    "split_sentences",
]


def _wordlist(text: str) -> list[str]:
    return text.split()


def _wordset(text: str) -> frozenset[str]:
    return frozenset(text.split())


# Abbreviations whose period does not end a sentence (English, German, French, Spanish,
# Turkish, Russian).
_ABBREVIATIONS = _wordset(
    """
    mr mrs ms dr prof st jr sr vs etc e.g i.e a.m p.m no approx dept est inc ltd co mt ft
    z.b bzw usw nr str ca evtl ggf u.a d.h mme mlle env cf sra srta dra ud uds vb bkz
    sn г ул д т.е т.к т.д т.п им тыс руб
    """
)
# A sentence ends after . ! ? … (and closing quotes/brackets) followed by space, right
# after a full-width CJK terminal or an Arabic/Devanagari one, or at a line break.
_SENTENCE_END = re.compile(r"(?<=[.!?…])[\"'”’)\]»]*\s+|(?<=[。！？؟।])\s*|\n+")
# "am 14. März", "3 Mart" (tr writes "3. kat"), "le 1er mai": a day number with a period
# does not end a sentence when a month name follows.
_ORDINAL_END = re.compile(r"(?:^|\s)\d{1,2}\.$")
_MONTH_NAMES = _wordset(
    """
    january february march april may june july august september october november december
    januar februar märz mai juni juli oktober dezember jänner
    ocak şubat mart nisan mayıs haziran temmuz ağustos eylül ekim kasım aralık
    enero febrero marzo abril mayo junio julio agosto septiembre setiembre octubre
    noviembre diciembre janvier février mars avril juin juillet août septembre octobre
    novembre décembre января февраля марта апреля мая июня июля августа сентября октября
    ноября декабря
    """
)
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
    u ur r k ya yea ye nah lol lmao omg brb idk ikr tbh btw imo imho smh ty thx pls plz
    sry rn tho cuz bc np
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
    really much many huge adorable breathtaking funny hilarious crazy wild lucky blessed
    grateful thankful cozy rocks neat bye phew yay fab fave stuff glad hugs cheers wonderfully
    ah aw oh wow lol haha yeah yep nope hmm omg
    """
)

# Interjections and fillers that open a sentence and can be dropped with their punctuation.
_LEADING_FILLER = re.compile(
    r"^(?:(?:(?:hey|hi|hello|oh+|ah+|aw+|ugh|wow|whoa|yeah|yep|yup|hmm+|haha+|lol|omg|gosh|phew)\b"
    r"|(?:yes|nope|well|so|ok|okay|cool|great|awesome|nice|sure|right|honestly|actually|anyway|"
    r"anyways|btw|by the way|thanks|thank you|sounds good|good to see you|you know|i mean|"
    r"totally|absolutely|definitely|indeed|man|dude|congrats|congratulations|true|agreed|"
    r"morning|good morning|evening|good evening|welcome|you're welcome|no worries)"
    r"(?=[,!.…]))[\s,!.…-]*)+",
    re.IGNORECASE,
)
# A clause boundary inside a sentence; clauses that state no fact are dropped.
_CLAUSE = re.compile(
    r"(,\s+(?:and|but|so|which|because|as)\s+|\s+[-–—]+\s+|;\s+"
    r"|\s+(?:and|but|so)\s+(?=(?:it|it's|that|this|which|i|i'm|we|they|he|she|you)\b))",
    re.IGNORECASE,
)
# A name addressed at the end of a sentence ("That's great, Caro!").
_TRAILING_VOCATIVE = re.compile(r",\s*([A-Z][\w'-]*)\s*([!.?…]*)$")
_TERMINAL_PUNCT = re.compile(r"[\s.!?…]+$")
# Adverbs that intensify or hedge without adding a fact; dropped inside sentences.
_INLINE_FILLER = re.compile(
    r"\b(?:really|just|actually|totally|basically|literally|honestly|definitely|absolutely|"
    r"truly|super|so|very|pretty much|kind of|sort of|you know|i mean|like,)\s+(?=\w)",
    re.IGNORECASE,
)
_TRAILING_TAG = re.compile(
    r"(?:,\s*(?:you know|right|though|too|as well|for sure)|\s*\b(?:haha+|lol))\s*([.!?…]*)$",
    re.IGNORECASE,
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
# Openers of a reaction to what the other person said ("That's great", "Sounds fun").
_REACTION_OPENERS = _wordset(
    """
    that that's thats this sounds sound looks look seems what how such you you're your
    must glad hope wish can't cannot
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
            # the next word is looked up only after a day number (a slice of the rest of
            # the text per sentence made a long summary line quadratic to split); a digit
            # right before the period comes first (every regex \d is a str.isdigit())
            if piece[-2:-1].isdigit() and _ORDINAL_END.search(piece):
                following = text[match.end() :].split(None, 1)
                if following and following[0].strip(".,;:!?").lower() in _MONTH_NAMES:
                    continue
        out.append(_SPACES.sub(" ", piece))
        start = match.end()
    tail = text[start:].strip()
    if tail:
        out.append(_SPACES.sub(" ", tail))
    return out


def compress(
    sentence: str, names: Iterable[str] = (), function_words: frozenset[str] | None = None
) -> str:
    """Drop what carries no fact: opening interjections ("Oh wow, …"), intensifiers and
    hedges ("really", "just", "kind of"), trailing tags ("…, you know?"), a name addressed
    at the end, and clauses that only carry tone ("…, and it was so special"). Returns ""
    for a sentence left with no fact: a greeting, thanks or exclamation.

    The filler patterns are English; with another language's ``function_words`` the
    sentence is kept whole, or dropped when it has no word outside them."""
    text = sentence.strip()
    if function_words is not None and function_words is not STOPWORDS:
        return text if informative(text, (), function_words) else ""
    if _VOCATIVE.match(text):
        return ""
    text = _LEADING_FILLER.sub("", text).strip()
    text = _INLINE_FILLER.sub("", text)
    text = _TRAILING_TAG.sub(_untag, text).strip()
    lowered = [n.lower() for n in names if len(n) >= 3]
    vocative = _TRAILING_VOCATIVE.search(text)
    if vocative is not None and _addresses(vocative.group(1), lowered):
        text = (text[: vocative.start()] + vocative.group(2)).strip()
    end = _TERMINAL_PUNCT.search(text)
    tail = end.group().strip() if end else ""
    body = text[: end.start()] if end else text
    parts = _CLAUSE.split(body)
    kept: list[str] = []
    for i in range(0, len(parts), 2):
        if informative(parts[i], lowered):
            if kept:
                kept.append(parts[i - 1])
            kept.append(parts[i])
    text = _SPACES.sub(" ", "".join(kept)).strip(" ,;:-–—")
    if not text:
        return ""
    text += tail
    if text[0].islower() and not sentence.strip()[:1].islower():
        text = text[0].upper() + text[1:]
    return text


def _untag(match: re.Match[str]) -> str:
    """Drop a trailing tag; a question mark that belonged to it ("…, you know?", "…,
    right?") goes with it: the statement before it was not a question."""
    punct = match.group(1)
    return punct.replace("?", "") or ("." if "?" in punct else "")


def informative(
    text: str, names: Iterable[str] = (), function_words: frozenset[str] | None = None
) -> bool:
    """True when ``text`` has a word that is neither a function word, a tone word, nor the
    name (or a short form of the name) of someone in the conversation."""
    lowered = list(names)
    stop = STOPWORDS if function_words is None else function_words
    return any(
        w not in stop and w not in EVALUATIVE and not _addresses(w, lowered)
        for w in (x.lower() for x in words(text))
    )


def _addresses(word: str, names: list[str]) -> bool:
    """True when ``word`` is one of ``names`` or a short form of one ("Mel", "Caro")."""
    low = word.lower()
    return len(low) >= 3 and any(n.startswith(low) for n in names)


def words(text: str) -> list[str]:
    """The words of ``text`` in order, original case."""
    return _WORD.findall(text)


def content_words(text: str, function_words: frozenset[str] | None = None) -> list[str]:
    """Lower-cased words that are not function words, in order (duplicates kept)."""
    stop = STOPWORDS if function_words is None else function_words
    return [w for w in (x.lower() for x in words(text)) if w not in stop]


@dataclass(frozen=True, slots=True)
class Features:
    """What makes a sentence worth keeping. ``terms`` are the coverage elements (content
    words, lower-cased) with their salience multiplier; ``cues`` counts life-event, plan
    and preference cue words; ``question`` marks a sentence that asks rather than tells,
    ``reaction`` one that reacts to the other person ("That's great", "You should…")."""

    terms: dict[str, float]
    cues: int
    entities: int
    numbers: int
    dates: int
    question: bool
    first_person: bool
    reaction: bool


def features(
    sentence: str,
    speakers: Iterable[str] = (),
    weights: Weights = DEFAULT_WEIGHTS,
    function_words: frozenset[str] | None = None,
) -> Features:
    """Salience features of one (already compressed) sentence.

    Multipliers (``weights``): proper nouns (capitalised mid-sentence) and places after a
    preposition weigh most, then numbers and dates; evaluative words and the speakers' own
    names (the attribution already carries them) weigh little. A number is a number in
    every language, even where a function-word list counts number words.
    """
    stop = STOPWORDS if function_words is None else function_words
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
        # (a letter is never a digit: most words are settled without a look at each char)
        digit = not tok.isalpha() and any(ch.isdigit() for ch in tok)
        if low in stop and not digit and not (tok == "May" and i > 0):
            prev = low
            continue
        weight = 1.0
        if digit:
            weight, numbers = weights.number, numbers + 1
        elif low in _NUMBER_WORDS:
            weight, numbers = 1.5, numbers + 1
        elif low in _TIME_WORDS:
            weight, dates = weights.time, dates + 1
        elif tok[:1].isupper() and (i > 0 or (len(tok) > 1 and tok[1:].isupper())):
            weight, entities = weights.entity, entities + 1
            if prev in _PLACE_PREPOSITIONS:
                weight = weights.place
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
    reaction = first in _REACTION_OPENERS
    question = sentence.rstrip().endswith("?") or (
        first in _QUESTION_OPENERS and "?" in sentence
    )
    return Features(terms, cues, entities, numbers, dates, question, first_person, reaction)
