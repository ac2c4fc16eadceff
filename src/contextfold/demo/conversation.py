"""A synthetic, deterministic conversation with planted facts, for ``contextfold demo``.

Maya chats with her assistant over six weeks: small talk, generic advice, and, scattered
among it, about twenty facts a good memory should keep (names, dates, numbers, places,
plans, preferences). Everything is generated here from fixed templates and a seeded
random generator, so every run and every machine gets the same messages. Each planted
fact comes with a *needle*: an exact string that appears in the conversation only where
the fact is stated, so finding it in a context means the fact survived.
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta, timezone

from ..messages import Message

__all__ = ["demo_conversation", "planted_facts"]

USER = "Maya"
START = datetime(2024, 2, 5, 8, 30, tzinfo=timezone.utc)

# (day of the conversation, what Maya says, what the assistant answers,
#  fact description, needle)
_FACTS: tuple[tuple[int, str, str, str, str], ...] = (
    (0, "My sister Ingrid is coming to stay with us next month.",
     "How lovely! I'll keep that in mind while we plan.",
     "sister's name", "Ingrid"),
    (0, "She lands on 14 March, on flight LH 2417 from Oslo.",
     "Noted: 14 March, LH 2417 from Oslo.",
     "flight number", "LH 2417"),
    (1, "Our dog Biscuit needs a sitter while we're away.",
     "I can list dog sitters near you when you're ready.",
     "dog's name", "Biscuit"),
    (2, "Please remember that I'm allergic to hazelnuts, so no recipes with them.",
     "Understood, I'll leave them out of every recipe.",
     "allergy", "hazelnuts"),
    (3, "Our favourite restaurant is Trattoria Lupo, the one by the river.",
     "Good choice; I'll suggest it for special evenings.",
     "favourite restaurant", "Trattoria Lupo"),
    (5, "The kitchen renovation budget is 18,500 euros, not a cent more.",
     "Got it, I'll keep every quote under that budget.",
     "renovation budget", "18,500"),
    (7, "Big news: I start a new job at Northwind Labs on 1 April.",
     "Congratulations on the new role!",
     "new employer", "Northwind Labs"),
    (8, "My partner Tomasz is handling the movers.",
     "Great, that splits the work nicely.",
     "partner's name", "Tomasz"),
    (9, "We're moving to Ljubljana in the summer.",
     "A beautiful city; I can help with the checklist.",
     "city they move to", "Ljubljana"),
    (11, "I signed up for the Vienna City half marathon in April.",
     "Nice! Let's plan the training weeks.",
     "race", "Vienna City"),
    (12, "My goal is to finish in under 1:55.",
     "That's a realistic goal with steady training.",
     "race target time", "1:55"),
    (14, "Our anniversary is on 2 June, we've been together nine years.",
     "Nine years, wonderful. I'll remind you in late May.",
     "anniversary date", "2 June"),
    (15, "My daughter Lena starts piano lessons on Thursdays.",
     "That's a great age to start.",
     "daughter's name", "Lena"),
    (17, "We bought a blue Skoda Octavia last weekend.",
     "Enjoy the new car!",
     "car", "Skoda Octavia"),
    (19, "The dentist appointment is on 3 April at 9:30.",
     "Added: dentist, 3 April, 9:30.",
     "appointment time", "9:30"),
    (21, "The booking reference for the cabin is QX7-552.",
     "Saved the reference QX7-552.",
     "booking reference", "QX7-552"),
    (23, "I always prefer a window seat on flights.",
     "I'll look for window seats first.",
     "seat preference", "window seat"),
    (25, "In May we plan a weekend at Lake Bled with the kids.",
     "Lovely plan; it's beautiful in spring.",
     "weekend plan", "Lake Bled"),
    (28, "My favourite author is Ursula Le Guin, so book ideas in that spirit are welcome.",
     "Noted. I'll suggest thoughtful speculative fiction.",
     "favourite author", "Le Guin"),
    (31, "Ingrid's flight changed: it now lands at 17:40.",
     "Updated the arrival time for Ingrid to 17:40.",
     "changed arrival time", "17:40"),
)

_USER_SMALL_TALK = (
    "Morning! How are you today?",
    "Ugh, it's raining again.",
    "Haha, that's funny.",
    "Thanks, that helps a lot!",
    "Okay, sounds good.",
    "I'm so tired this week, honestly.",
    "Can you give me a tip for staying focused?",
    "What should I cook tonight? Something quick.",
    "Any idea for a short stretching routine?",
    "Wow, that was fast.",
    "Hmm, let me think about it.",
    "Nice, I like that idea.",
    "Can you suggest a podcast for the commute?",
    "What's a good way to keep houseplants alive?",
    "I had way too much coffee today.",
    "Do you have a good joke?",
    "Remind me why Mondays exist?",
    "Okay, back to work now.",
    "That makes sense, thank you.",
    "How do I get better sleep?",
)
_ASSISTANT_SMALL_TALK = (
    "I'm doing well, thanks for asking! How can I help today?",
    "Rainy days are perfect for a warm drink and a good playlist.",
    "Glad it made you smile!",
    "You're welcome, happy to help anytime.",
    "Great, let me know if anything else comes up.",
    "Try working in short blocks of 25 minutes with a five-minute break in between; it "
    "keeps attention fresh and makes long tasks feel smaller.",
    "A quick stir-fry works well: vegetables, a protein, some garlic and soy sauce, and rice "
    "or noodles. It takes about twenty minutes from start to finish.",
    "Stand up, roll your shoulders, stretch your arms overhead, then gently twist left and "
    "right. Hold each stretch for a few breaths and repeat twice.",
    "Take your time, there's no rush at all.",
    "I'm glad you like it!",
    "A short news podcast or an audiobook chapter fits most commutes nicely.",
    "Most houseplants like bright indirect light and watering only when the top of the soil "
    "feels dry. Overwatering is the most common problem.",
    "Maybe switch to water or herbal tea for the rest of the day.",
    "Why did the scarecrow win an award? Because he was outstanding in his field.",
    "Mondays exist so the rest of the week looks better by comparison.",
    "Good luck with the rest of your day!",
    "Anytime, that's what I'm here for.",
    "Keep a regular bedtime, avoid screens for the last hour, keep the room cool and dark, "
    "and try not to have caffeine after lunch.",
)


def demo_conversation() -> list[Message]:
    """About 300 messages over six weeks: chit-chat with the planted facts in between.

    Deterministic: the same list on every call, every machine. Messages alternate user
    (named Maya) and assistant, and carry timestamps so folds date their facts.
    """
    rng = random.Random(20240205)
    by_day: dict[int, list[tuple[str, str]]] = {}
    for day, said, answer, _, _ in _FACTS:
        by_day.setdefault(day, []).append((said, answer))
    messages: list[Message] = []
    days = 36
    for day in range(days):
        clock = START + timedelta(days=day, minutes=rng.randrange(0, 180))
        exchanges = [
            (rng.choice(_USER_SMALL_TALK), rng.choice(_ASSISTANT_SMALL_TALK))
            for _ in range(rng.randrange(3, 6))
        ]
        for fact in by_day.get(day, []):
            exchanges.insert(rng.randrange(0, len(exchanges) + 1), fact)
        for said, answer in exchanges:
            messages.append(Message(role="user", name=USER, content=said, timestamp=clock))
            clock += timedelta(minutes=rng.randrange(1, 4))
            messages.append(Message(role="assistant", content=answer, timestamp=clock))
            clock += timedelta(minutes=rng.randrange(2, 9))
    return messages


def planted_facts() -> list[tuple[str, str]]:
    """``(description, needle)`` for every planted fact; the needle appears in the
    conversation only where that fact is stated (case-insensitive)."""
    return [(description, needle) for _, _, _, description, needle in _FACTS]
