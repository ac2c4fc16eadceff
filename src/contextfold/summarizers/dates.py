"""Relative dates made absolute: "yesterday" said on 8 May 2023 is 7 May 2023.

A fact folded weeks after it was said must not keep "yesterday" or "next Friday" alone:
the reader of the summary no longer knows when "now" was. :class:`DateResolver` finds
relative expressions in a sentence and appends the absolute date they mean, computed from
the message's timestamp::

    "We fly to Lisbon next friday" (8 May 2023) → "We fly to Lisbon next friday (12 May 2023)"

Both halves come from ``dateparser`` (extra ``dates``), a maintained library with
relative-date vocabularies for 200+ locales: the *phrases* to look for are read from its
locale data (relative words such as "yesterday"/"dün"/"вчера", "last/next <weekday>",
"<n> <unit> ago", "in <n> <unit>", with number words), and each phrase found is parsed by
``dateparser.parse`` with the message time as ``RELATIVE_BASE``. The granularity follows
what was said: a day ("7 May 2023"), a week ("week of 1 May 2023"), a month ("June 2023"),
a year ("2024"). dateparser parses each distinct phrase once per weekday (against a
reference day) and the offset is cached, so a fold only adds offsets to message days; the
first use of a language in a process loads dateparser's data (0.1-0.3 s).

Without the extra installed, :func:`resolver_for` returns ``None`` and relative dates stay
as written (the summary line's date still anchors them).
"""

from __future__ import annotations

import importlib.util
import re
from datetime import date, datetime, timedelta
from functools import cache, lru_cache
from typing import Any

from .facts import MONTHS as _MONTH_NAMES
from .facts import format_day

__all__ = ["DateResolver", "dates_available", "resolver_for"]

_UNITS = ("day", "week", "month", "year")
#: Languages whose "in <n> <unit>" word follows the count ("2 gün sonra"); everywhere else
#: it comes first, and "a week in Lisbon" or "a day in Porto" is no date at all.
_POSTPOSITIONAL_IN = frozenset({"tr", "ja", "ko", "hu", "fi", "et", "hi", "bn", "ta", "te",
                                "mr", "ur", "az", "uz", "kk", "ky", "mn", "ka", "am", "eu"})
_LETTERS = re.compile(r"[^\W\d_]+")
_MARK = re.compile(r"\((?:week of )?\d{1,2} [A-Z][a-z]+ \d{4}\)|\([A-Z][a-z]+ \d{4}\)|\(\d{4}\)")


@cache
def dates_available() -> bool:
    """True when ``dateparser`` is installed. Only looks it up: the import (about 0.4 s)
    waits for the first fold that resolves a date."""
    try:
        return importlib.util.find_spec("dateparser") is not None
    except (ImportError, ValueError):  # a broken or blocked install
        return False


def _plain(pattern: str) -> bool:
    return re.fullmatch(r"[^\W\d_]+(?:[ '\-][^\W\d_]+)*", pattern) is not None


@cache
def _phrase_patterns(
    lang: str,
) -> tuple[re.Pattern[str] | None, re.Pattern[str] | None, frozenset[str]]:
    """Regexes for the relative-date phrases dateparser knows in ``lang``: first the
    counted ones ("in 2 weeks", "vor zwei Wochen"), then the named ones ("yesterday");
    and the *anchor* words, one of which every match contains (a cheap pre-filter)."""
    from dateparser.languages.loader import default_loader

    try:
        info: dict[str, Any] = default_loader.get_locale(lang).info
    except Exception:
        return (None, None, frozenset())
    phrases: set[str] = set()
    for values in info.get("relative-type", {}).values():
        phrases.update(v.lower() for v in values if _plain(v) and len(v) > 2)
    numbers = ["\\d{1,3}"]
    for item in info.get("simplifications", []):
        for key, value in item.items():
            if _plain(key) and str(value).isdigit():
                numbers.append(re.escape(key.lower()))
            elif _plain(key) and not str(value).isdigit() and len(key) > 3:
                phrases.add(key.lower())  # "tonight" → "today night"
    units = [
        re.escape(u.lower()) for unit in _UNITS for u in info.get(unit, []) if len(u) > 2
    ]
    ago = [re.escape(w.lower()) for w in info.get("ago", []) if len(w) > 1]
    into = [re.escape(w.lower()) for w in info.get("in", []) if len(w) > 1]
    counted: list[str] = []
    if units:
        num = "(?:" + "|".join(sorted(numbers, key=len, reverse=True)) + ")"
        unit = "(?:" + "|".join(sorted(units, key=len, reverse=True)) + ")"
        for words, before in ((ago, True), (into, lang not in _POSTPOSITIONAL_IN)):
            if words:
                w = "(?:" + "|".join(words) + ")"
                counted.append(f"{w} {num} {unit}")
                if not before or words is ago:  # "2 weeks ago", "vor 2 Wochen": both
                    counted.append(f"{num} {unit} {w}")
    named = sorted((re.escape(p) for p in phrases), key=len, reverse=True)
    def compiled(alts: list[str]) -> re.Pattern[str] | None:
        if not alts:
            return None
        return re.compile(r"(?<![\w])(?:" + "|".join(alts) + r")(?![\w])", re.IGNORECASE)

    anchors = {w for p in phrases for w in _LETTERS.findall(p)}
    anchors.update(
        w.lower() for unit in _UNITS for u in info.get(unit, []) if len(u) > 2
        for w in _LETTERS.findall(u)
    )
    return compiled(counted), compiled(named), frozenset(anchors)


# Reference days for parsing: one per weekday, mid-month and mid-year, so that month and
# year arithmetic never clamps (10 June 2024 is a Monday).
_REFERENCE = date(2024, 6, 10)


@lru_cache(maxsize=4096)
def _shift(lang: str, phrase: str, weekday: int) -> tuple[str, int, int] | None:
    """What ``phrase`` means said on a day with this ``weekday``: (period, offset in days,
    offset in months). dateparser parses each phrase once per weekday against a reference
    day; a fold then only adds offsets (a full dateparser call costs tens of ms)."""
    from dateparser.date import DateDataParser

    ref = _REFERENCE + timedelta(days=weekday)
    base = datetime(ref.year, ref.month, ref.day, 12, 0)
    try:
        parser = DateDataParser(
            languages=[lang],
            settings={"RELATIVE_BASE": base, "PREFER_DATES_FROM": "current_period"},
        )
        data = parser.get_date_data(phrase)
    except Exception:  # dateparser's own parsing errors: leave the phrase as written
        return None
    when = data.date_obj if data is not None else None
    if when is None:
        return None
    days = (when.date() - ref).days
    months = (when.year * 12 + when.month) - (ref.year * 12 + ref.month)
    if abs(days) > 3660:
        return None
    return str(data.period or "day"), days, months


def _resolve(lang: str, phrase: str, day: date, counted: bool) -> str | None:
    """The absolute date ``phrase`` means when said on ``day``, at the granularity said
    (a counted phrase, "in 2 weeks", names a day)."""
    shift = _shift(lang, phrase, day.weekday())
    if shift is None:
        return None
    period, days, months = shift
    if period in ("year", "month"):
        index = day.year * 12 + day.month - 1 + months
        year, month = divmod(index, 12)
        return str(year) if period == "year" else f"{_MONTH_NAMES[month]} {year}"
    when = day + timedelta(days=days)
    if period in ("day", "time") and when == day:
        return None  # "today", "tonight": the summary line's date already says it
    if period == "week" and not counted:
        start = when - timedelta(days=when.weekday())
        return f"week of {format_day(start)}"
    return format_day(when)


class DateResolver:
    """Appends absolute dates to the relative date expressions of a sentence."""

    def __init__(self, lang: str) -> None:
        self.lang = lang
        counted, named, self._anchors = _phrase_patterns(lang)
        self._patterns = (counted, named)

    def annotate(self, sentence: str, day: date) -> str:
        """``sentence`` with each relative expression followed by ``(absolute date)``;
        unchanged when it has none, or has been annotated already."""
        if self._anchors.isdisjoint(_LETTERS.findall(sentence.lower())):
            return sentence
        if _MARK.search(sentence):
            return sentence
        found: list[tuple[int, int, str]] = []
        for k, pattern in enumerate(self._patterns):
            if pattern is None:
                continue
            for match in pattern.finditer(sentence):
                if any(s < match.end() and match.start() < e for s, e, _ in found):
                    continue
                absolute = _resolve(self.lang, match.group().lower(), day, k == 0)
                if absolute is not None:
                    found.append((match.start(), match.end(), absolute))
        if not found:
            return sentence
        out: list[str] = []
        last = 0
        for _, end, absolute in sorted(found):
            out.append(sentence[last:end])
            out.append(f" ({absolute})")
            last = end
        out.append(sentence[last:])
        return "".join(out)


def resolver_for(lang: str) -> DateResolver | None:
    """A resolver for ``lang``, or ``None`` without the ``dates`` extra."""
    if not dates_available():
        return None
    return _resolver(lang)


@cache
def _resolver(lang: str) -> DateResolver:
    return DateResolver(lang)
