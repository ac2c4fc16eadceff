"""Messy synthetic chats with planted facts: two friends texting for three weeks.

Real chats are not LoCoMo: short lines sent in bursts, lower case (half the planted
values too), emoji, typos, slang, gossip full of names and numbers that is not worth
keeping, names written "jess" one day and "Jessica" the next, "yesterday" and "next friday", plans
corrected a few days later. :func:`messy_chats` generates such conversations from fixed
pools and a seeded random generator (same output on every machine), each with about
sixteen planted facts (:mod:`.planted`): facts split over two or three burst lines, facts
stated with a relative date (scored on whether the absolute date is kept with them), and
facts corrected later (scored on whether the newer value wins).

Nothing here is taken from a real chat or from the LoCoMo data set.
"""

from __future__ import annotations

import random
from datetime import date, datetime, timedelta, timezone

from ..messages import Message
from .planted import PlantedChat, PlantedFact

__all__ = ["messy_chat", "messy_chats"]

_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August",
           "September", "October", "November", "December")

# (canonical name, the forms it is written in)
_PEOPLE = (
    ("Jessica", ("jess", "Jess", "jessica")),
    ("Tommy", ("tom", "Tommy", "tommy")),
    ("Samantha", ("sam", "Samantha")),
    ("Daniel", ("dan", "Daniel", "daniel")),
    ("Alexandra", ("alex", "Alexandra")),
    ("Benjamin", ("ben", "Benjamin", "benjamin")),
)
_FILLER = (
    "lol", "omg 😂", "hahaha", "wait what", "no way", "sameee", "ikr", "brb", "ok ok",
    "lmao 💀", "ugh mondays", "sooo tired today", "did u see that video", "hows ur day going",
    "not much tbh", "just chilling", "watching netflix again", "im sooo hungry", "u there?",
    "yeah yeah", "hmm idk", "thats wild", "love that for u ❤️", "miss u", "same tbh",
    "gonna nap", "cant wait!!", "lol true", "ur the best", "good morning ☀️", "nite 😴",
    "traffic was insane", "coffee first ☕", "its raining again 🙄", "ya", "k", "nah",
    "for real", "ok whatever lol", "what r u up to", "work is so boring today",
    "my phone is dying", "did u eat", "tacos tonight?", "i cant even",
    "that show was sooo good", "the weather is nice", "sry was busy", "talk later?",
    "haha ok", "the bus was late again", "my boss is being weird", "need more coffee",
    "send pics!", "thats so cute 🥺", "how was ur weekend", "it was chill",
    "i love that song", "did u sleep ok", "not really lol", "same old same old",
)
# Lines that look like facts (names, places, numbers) but are not planted: a summarizer
# that keeps every capitalised word or number cannot keep them all.
_DISTRACTORS = (
    "my coworker Dave went to Paris again lol", "watched Dune 2 last night, so good",
    "the Lakers lost 3 games in a row smh", "my mom called about Aunt Rosa's birthday",
    "Spotify wrapped says i listened to 40,000 minutes", "Chipotle raised prices again",
    "my landlord Greg finally fixed the sink", "there's a new Thai place on 5th street",
    "Kevin from work got a Tesla", "the Apple store was packed", "Netflix canceled Sandman",
    "gas is $4.10 here now", "my cousin Leo got into UCLA", "iOS 17 broke my alarm",
    "saw a guy with 3 dogs at Target", "Sarah's party is at 8 i think",
    "my Uber driver was from Lagos", "the 42 bus skipped my stop", "Costco had a 2 for 1",
)
_POOLS: dict[str, tuple[str, ...]] = {
    "name": ("Priya", "Marco", "Ingrid", "Tobias", "Leilani", "Oskar", "Farah", "Yusuf"),
    "company": ("Brightwell Labs", "Kestrel Analytics", "Orchid Health", "Pinecrest Media",
                "Halcyon Robotics", "Tidewater Bank", "Nimbus Games", "Lantern Studio"),
    "city": ("Lisbon", "Ljubljana", "Zagreb", "Porto", "Krakow", "Tallinn", "Bergen",
             "Valencia", "Gdansk", "Riga", "Seville", "Bruges", "Tbilisi", "Malmo"),
    "pet": ("Biscuit", "Noodle", "Pickles", "Mochi", "Waffles", "Pepper", "Ziggy", "Nacho"),
    "food": ("shellfish", "peanuts", "kiwi", "sesame", "mustard"),
    "restaurant": ("Casa Verde", "Blue Lotus", "Trattoria Sole", "Smoky Joe's",
                   "Little Saigon"),
    "race": ("Berlin marathon", "Cape Town half", "Dublin 10k", "Oslo trail run"),
    "skill": ("pottery", "salsa", "bouldering", "ukulele", "sourdough"),
    "amount": ("$1,240", "$385", "$2,900", "$760", "$1,075"),
    "time": ("16:10", "17:40", "09:25", "21:05", "13:50", "07:45", "11:35"),
    "band": ("The Velvet Foxes", "Static Orchard", "Paper Lungs", "Kid Comet", "Moss Radio"),
    "venue": ("Roundhouse", "Paradiso", "Fox Theater", "Blue Note", "Melkweg"),
    "month": ("june", "july", "august", "september"),
}
# (description, burst lines, needle slot); "{x}" is filled from _POOLS[x].
_PLAIN = (
    ("sibling visiting", ("guess whos visiting", "my sister {name} lol",
                          "shes staying till sunday"), "name"),
    ("new job", ("omg", "i got the job!!!", "at {company} 🎉"), "company"),
    ("pet's name", ("we adopted a puppy", "his name is {pet} 🐶"), "pet"),
    ("moving city", ("so were moving to {city}", "in {month}"), "city"),
    ("allergy", ("btw im allergic to {food}", "so none at the party pls"), "food"),
    ("restaurant booking", ("booked {restaurant} for our anniversary",), "restaurant"),
    ("race", ("signed up for the {race}", "training starts soon ugh"), "race"),
    ("new hobby", ("started {skill} classes", "its harder than it looks lol"), "skill"),
    ("couch price", ("the new couch was {amount}", "worth it tho"), "amount"),
    ("brother's band", ("my brothers band is called {band}", "they play saturday"), "band"),
)
# (description, lines, needle slot, days from the message the relative date means)
_RELATIVE = (
    ("interview", ("i have an interview at {company} next friday", "so nervous"), "company",
     "next friday"),
    ("concert", ("got tickets for {venue} tomorrow night!!",), "venue", 1),
    ("trip back", ("just got back from {city} yesterday", "so tired"), "city", -1),
    ("cousin's wedding", ("my cousins wedding is in two weeks", "in {city}"), "city", 14),
)


def _typo(word: str, rng: random.Random) -> str:
    if len(word) < 4 or not word.isalpha():
        return word
    i = rng.randrange(1, len(word) - 2)
    return word[:i] + word[i + 1] + word[i] + word[i + 2 :]


def _mess(line: str, rng: random.Random) -> str:
    """Typos (two letters swapped) in a few words outside the planted values."""
    return " ".join(
        _typo(w, rng) if "{" not in w and rng.random() < 0.08 else w for w in line.split()
    )


def _resolved(day: date, offset: int | str) -> date:
    if offset == "next friday":
        ahead = (4 - day.weekday()) % 7 or 7
        return day + timedelta(days=ahead)
    assert isinstance(offset, int)
    return day + timedelta(days=offset)


def messy_chat(index: int, seed: int = 2026) -> PlantedChat:
    """One three-week chat between two friends (see the module docstring)."""
    rng = random.Random(seed * 1000 + index)
    (a_name, a_forms), (b_name, b_forms) = rng.sample(_PEOPLE, 2)
    start = datetime(2023, rng.randrange(1, 10), rng.randrange(1, 28), 8, 0,
                     tzinfo=timezone.utc)
    pools = {k: list(v) for k, v in _POOLS.items()}
    for values in pools.values():
        rng.shuffle(values)

    def take(slot: str) -> str:
        value = pools[slot].pop()
        return value.lower() if rng.random() < 0.5 else value  # "moving to lisbon"

    # plan: day → list of (speaker index, lines, fact or None)
    plan: dict[int, list[tuple[int, list[str], PlantedFact | None]]] = {}
    owners = (a_name, b_name)

    def plant(day: int, who: int, lines: list[str], fact: PlantedFact | None) -> None:
        plan.setdefault(day, []).append((who, lines, fact))

    for desc, lines, slot in _PLAIN:
        who = rng.randrange(2)
        value = take(slot)
        filled = [_mess(ln, rng).format(**{slot: value, "month": pools["month"][0]})
                  for ln in lines]
        plant(rng.randrange(21), who, filled, PlantedFact(value, owners[who], desc))
    for desc, lines, slot, offset in _RELATIVE:
        who = rng.randrange(2)
        value = take(slot)
        day = rng.randrange(21)
        when = _resolved((start + timedelta(days=day)).date(), offset)
        filled = [_mess(ln, rng).format(**{slot: value}) for ln in lines]
        resolved = f"{when.day} {_MONTHS[when.month - 1]} {when.year}"
        plant(day, who, filled, PlantedFact(value, owners[who], desc, resolved=resolved))
    # corrections: a flight time and a trip destination, corrected 2-6 days later
    who = rng.randrange(2)
    old, new = take("time"), take("time")
    day = rng.randrange(14)
    plant(day, who, [f"my flight is at {old}", "window seat yay"], None)
    plant(day + rng.randrange(2, 7), who, [f"update: flight moved to {new}", "ugh"],
          PlantedFact(new, owners[who], "flight time (corrected)", stale=old))
    who = rng.randrange(2)
    old, new = take("city"), take("city")
    day = rng.randrange(14)
    plant(day, who, [f"were going to {old} for the long weekend"], None)
    plant(day + rng.randrange(2, 7), who,
          [f"actually its {new} not {old}", "the hotel was cheaper lol"],
          PlantedFact(new, owners[who], "trip destination (corrected)", stale=old))

    messages: list[Message] = []
    facts: list[PlantedFact] = []
    forms = (a_forms, b_forms)
    for day in range(21):
        when = start + timedelta(days=day, minutes=rng.randrange(0, 600))
        bursts: list[tuple[int, list[str], PlantedFact | None]] = []
        for _ in range(rng.randrange(20, 34)):
            n = rng.choice((1, 1, 2, 2, 3, 4))
            pool = _DISTRACTORS if rng.random() < 0.3 else _FILLER
            bursts.append((rng.randrange(2), [_mess(rng.choice(pool), rng)
                                              for _ in range(n)], None))
        for item in plan.get(day, []):
            bursts.insert(rng.randrange(len(bursts) + 1), item)
        for who, said, fact in bursts:
            name = rng.choice(forms[who])
            for line in said:
                when += timedelta(seconds=rng.randrange(5, 60))
                messages.append(Message(role="user" if who == 0 else "assistant",
                                        name=name, content=line, timestamp=when))
            when += timedelta(minutes=rng.randrange(2, 40))
            if fact is not None:
                facts.append(fact)
    speakers = {f.lower(): canon for canon, fs in ((a_name, a_forms), (b_name, b_forms))
                for f in fs}
    return PlantedChat(f"messy-{index}", "en", messages, facts, speakers)


def messy_chats(n: int = 6, seed: int = 2026) -> list[PlantedChat]:
    """``n`` messy chats (deterministic for a given ``seed``)."""
    return [messy_chat(i, seed) for i in range(n)]
