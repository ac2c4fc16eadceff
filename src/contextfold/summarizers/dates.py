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
a year ("2024"). Results are cached per (language, phrase, day), so a fold pays the parse
once per distinct expression and day; the first use in a process loads dateparser's data
(about 0.3 s).

Without the extra installed, :func:`resolver_for` returns ``None`` and relative dates stay
as written (the summary line's date still anchors them).
"""

from __future__ import annotations

import re
from datetime import date, datetime, timedelta
from functools import cache, lru_cache
from typing import Any

from .facts import format_day

__all__ = ["DateResolver", "dates_available", "resolver_for"]

_UNITS = ("day", "week", "month", "year")
_MARK = re.compile(r"\((?:week of )?\d{1,2} [A-Z][a-z]+ \d{4}\)|\([A-Z][a-z]+ \d{4}\)|\(\d{4}\)")


@cache
def dates_available() -> bool:
    """True when ``dateparser`` can be imported."""
    try:
        import dateparser  # noqa: F401
    except ImportError:
        return False
    return True


def _plain(pattern: str) -> bool:
    return re.fullmatch(r"[^\W\d_]+(?:[ '\-][^\W\d_]+)*", pattern) is not None


@cache
def _phrase_patterns(lang: str) -> tuple[re.Pattern[str] | None, re.Pattern[str] | None]:
    """Regexes for the relative-date phrases dateparser knows in ``lang``: first the
    counted ones ("in 2 weeks", "vor zwei Wochen"), then the named ones ("yesterday")."""
    from dateparser.languages.loader import default_loader

    try:
        info: dict[str, Any] = default_loader.get_locale(lang).info
    except Exception:
        return (None, None)
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
        for words in (ago, into):
            if words:
                w = "(?:" + "|".join(words) + ")"
                counted += [f"{w} {num} {unit}", f"{num} {unit} {w}"]
    named = sorted((re.escape(p) for p in phrases), key=len, reverse=True)
    def compiled(alts: list[str]) -> re.Pattern[str] | None:
        if not alts:
            return None
        return re.compile(r"(?<![\w])(?:" + "|".join(alts) + r")(?![\w])", re.IGNORECASE)

    return compiled(counted), compiled(named)


@lru_cache(maxsize=8192)
def _resolve(lang: str, phrase: str, day: date, counted: bool) -> str | None:
    """The absolute date ``phrase`` means when said on ``day``, at the granularity said
    (a counted phrase, "in 2 weeks", names a day)."""
    from dateparser.date import DateDataParser

    base = datetime(day.year, day.month, day.day, 12, 0)
    try:
        parser = DateDataParser(
            languages=[lang],
            settings={"RELATIVE_BASE": base, "PREFER_DATES_FROM": "current_period"},
        )
        data = parser.get_date_data(phrase)
    except Exception:  # dateparser's own parsing errors: leave the phrase as written
        return None
    when = data.date_obj if data is not None else None
    if when is None or abs((when.date() - day).days) > 3660:
        return None
    period = str(data.period or "day")
    if period == "year":
        return str(when.year)
    if period == "month":
        return f"{when:%B} {when.year}"
    if period in ("day", "time") and when.date() == day:
        return None  # "today", "tonight": the summary line's date already says it
    if period == "week" and not counted:
        start = when.date() - timedelta(days=when.weekday())
        return f"week of {format_day(start)}"
    return format_day(when.date())


class DateResolver:
    """Appends absolute dates to the relative date expressions of a sentence."""

    def __init__(self, lang: str) -> None:
        self.lang = lang
        self._patterns = _phrase_patterns(lang)

    def annotate(self, sentence: str, day: date) -> str:
        """``sentence`` with each relative expression followed by ``(absolute date)``;
        unchanged when it has none, or has been annotated already."""
        if self._patterns == (None, None) or _MARK.search(sentence):
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
