"""Key facts of plain-text tool output (logs, file dumps, search results, tables): the
last error and the lines around it, ``key: value`` lines, line numbers next to an error,
dates, amounts, paths and identifiers. ASCII text (the usual case) is scanned with
C-level string and byte operations where they find exactly what the patterns would;
other text with the patterns themselves. Pure; see :func:`.agent_state.extract`."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Iterator

from .agent_values import (
    _ANY_ERROR,
    _CANDIDATE,
    _CURRENCY_AFTER,
    _DATE,
    _DIGITS,
    _DIGITS_TO_HASH,
    _ERROR_HINTS,
    _HAS_ALPHA,
    _KEY_REST,
    _LINE_NO,
    _MAX_ERROR_CHARS,
    _MAX_ITEMS,
    _MONEY,
    _NEAR_ERROR_BONUS,
    _PLACEHOLDER,
    _RUN_BYTES,
    _SCORE_AMOUNT,
    _SCORE_ERROR,
    _SCORE_OTHER,
    _SCORE_SHAPE,
    _SCORE_STATUS,
    _SHAPE_SCORE_KV,
    _STRONG_ERROR,
    ValueFacts,
    _clip,
    value_shape,
)

__all__ = ["outlier_rows", "text_facts"]


def _error_lines(text: str) -> list[str]:
    """The lines holding an error word, in order. ASCII text (the usual tool output) is
    searched lower-cased for the words without word-boundary checks (fast), and each
    candidate line is then checked with the exact pattern."""
    if not text.isascii():
        out: list[str] = []
        end = -1
        for match in _ANY_ERROR.finditer(text):
            if match.start() <= end:
                continue  # this line is already taken
            start = text.rfind("\n", 0, match.start()) + 1
            end = text.find("\n", match.end())
            end = len(text) if end < 0 else end
            out.append(text[start:end].strip())
        return [line for line in out if line]
    low = text.lower()
    starts: set[int] = set()  # the lines holding a hint (str.find: C-level, no regex)
    for hint in _ERROR_HINTS:
        at = low.find(hint)
        while at >= 0:
            starts.add(low.rfind("\n", 0, at) + 1)
            at = low.find("\n", at)  # the rest of this line is taken already
            if at < 0:
                break
            at = low.find(hint, at)
    lines: list[str] = []
    for start in sorted(starts):
        end = text.find("\n", start)
        line = text[start: len(text) if end < 0 else end].strip()
        if line and _ANY_ERROR.search(line):
            lines.append(line)
    return lines


def _near(text: str, line: str) -> str:
    """The lines around the last occurrence of ``line`` in ``text`` (5 before, 2 after)."""
    at = text.rfind(line)
    if at < 0:
        return ""
    lo = at
    for _ in range(6):
        lo = text.rfind("\n", 0, lo - 1) if lo > 0 else -1
        if lo < 0:
            break
    hi = at
    for _ in range(3):
        hi = text.find("\n", hi + 1)
        if hi < 0:
            break
    return text[max(0, lo): hi if hi >= 0 else len(text)]


def text_facts(text: str, facts: ValueFacts, scan: int) -> None:
    """Add the values of text output ``text`` to ``facts`` (``scan``: characters looked at,
    a third from the start and the rest from the end)."""
    # a table's odd rows, looked for in more of the output than the scan (one split and a
    # count per column: cheap), since they may sit in a long listing's middle
    odd = "\n".join(outlier_rows(text[:TABLE_SCAN_CHARS]))
    if len(text) > scan:  # bounded work: the start and the (most recent) end
        text = text[: scan // 3] + "\n" + text[-2 * scan // 3:]
    errors = _error_lines(text)
    strong: list[str] = []
    whole: list[str] = []  # lines kept whole: their key: value pairs are not kept again
    if errors:
        facts.failed = True
        strong = [ln for ln in errors if _STRONG_ERROR.search(ln)]
        for line in dict.fromkeys([*(strong[-1:]), errors[-1], errors[0]]):
            facts.add("error", _clip(line, _MAX_ERROR_CHARS), _SCORE_ERROR)
            whole.append(line)
    first = text.lstrip()
    newline = first.find("\n")
    first = first if newline < 0 else first[:newline]
    if first.strip():
        facts.add("output", _clip(first, 100), _SCORE_STATUS)
        whole.append(first)
    # where the (last) error is, then the whole (scanned) output; C-level scans, each
    # distinct match tested once
    near = _near(text, (strong or errors)[-1]) if errors else ""
    ident = _SCORE_SHAPE["ident"]
    taken: set[str] = set()  # words near the error: they already hold their best score
    for part, bonus in ((near, _NEAR_ERROR_BONUS), (odd, _NEAR_ERROR_BONUS), (text, 0.0)):
        if not part:
            continue
        if bonus:
            for number in dict.fromkeys(_LINE_NO.findall(part)):
                facts.add("line", number, ident + bonus)
        if "USD" in part or "EUR" in part or "GBP" in part:
            for found in dict.fromkeys(_CURRENCY_AFTER.findall(part)):
                facts.add("amounts", found.replace(" ", ""), _SCORE_AMOUNT + bonus)
        words = _candidates(part)
        if bonus:
            taken.update(words)
        elif taken:
            words = {w: None for w in words if w not in taken}
        _text_words(words, facts, bonus)
    _demote_enumerations(facts)
    items = facts.items
    shown = dict(_kv_lines("\n".join(whole)))  # key -> value
    for count, (key, found) in enumerate(_kv_lines(text)):
        if count >= 400:
            break
        if shown and shown.get(key) == found:
            continue  # "Error: quota exceeded" is kept whole already, not again in two
        value = " ".join(found.split())  # _clip (a value is at most 58 characters)
        score = _SHAPE_SCORE_KV.get(value_shape(value), _SCORE_OTHER + 0.5)
        if value[:1] == "<" and _PLACEHOLDER.fullmatch(value):
            continue  # facts.add inlined
        hit = items.get(value)
        if hit is None:
            if len(items) < _MAX_ITEMS:
                items[value] = (score, len(items), key)
        elif score > hit[0]:
            items[value] = (score, hit[1], hit[2])


#: Characters of a text result looked at for a table's odd rows.
TABLE_SCAN_CHARS = 12000
#: A table: at least this many rows of one column count (the header included).
_TABLE_ROWS = 5
#: At most one row in this many is an outlier (else no state stands out).
_OUTLIER_EVERY = 3


def outlier_rows(text: str) -> list[str]:
    """The rows of a text table (the most frequent number of blank-separated columns, at
    least :data:`_TABLE_ROWS` lines of it) whose value in a categorical column — few
    distinct values, one of them on most rows — is not that usual one: the pod not
    ``Running``, the job ``failed`` among ``done``s, the ``0/1`` among ``1/1``. The rows
    a listing's reader acts on next; none when more than a third of the rows would be."""
    lines = [line for line in text.split("\n") if line.strip()]
    if len(lines) < _TABLE_ROWS:
        return []
    rows = [line.split() for line in lines]
    width, count = Counter(map(len, rows)).most_common(1)[0]
    if width < 2 or count < _TABLE_ROWS:
        return []
    table = [(line, row) for line, row in zip(lines, rows, strict=True) if len(row) == width]
    body = table[1:]  # the first row may be the header
    odd: dict[int, None] = {}
    for col in range(1, width):
        values = Counter(row[col] for _, row in body)
        usual, seen = values.most_common(1)[0]
        if seen * 2 <= len(body) or len(values) > max(3, len(body) // 4):
            continue  # no usual value, or too many distinct ones: not categorical
        odd.update((i, None) for i, (_, row) in enumerate(body) if row[col] != usual)
    if not odd or _OUTLIER_EVERY * len(odd) > len(body):
        return []
    return [body[i][0] for i in sorted(odd)]


def _kv_lines(text: str) -> Iterator[tuple[str, str]]:
    """``(key, value)`` of each line that is ``key: value`` or ``key = value``: the lines
    ``^[ \\t]*([A-Za-z][\\w .-]{0,30}?)[ \\t]*[:=][ \\t]*(\\S[^\\n]{0,57}?)[ \\t]*$`` matches
    (multi-line), by string methods: the key opens the line (after blanks) with a letter
    and runs to the first ``:`` or ``=`` (blanks before it left out), the value is the
    rest without its outer blanks."""
    for line in text.split("\n"):
        rest = line.lstrip(" \t")
        if not rest or not ("a" <= rest[0] <= "z" or "A" <= rest[0] <= "Z"):
            continue
        colon, equals = rest.find(":"), rest.find("=")
        at = equals if colon < 0 or 0 <= equals < colon else colon
        if at < 0:
            continue
        key = rest[:at].rstrip(" \t")
        if len(key) > 31 or (len(key) > 1 and not _KEY_REST(key, 1)):
            continue
        value = rest[at + 1:].lstrip(" \t").rstrip(" \t")
        if value and len(value) <= 58 and not value[0].isspace():
            yield key.strip(), value


def _candidates(text: str) -> dict[str, None]:
    """The distinct maximal runs of ``_WORD`` characters in ``text`` that hold a digit or
    a slash, in order (for ASCII text: a byte-level translate and split, no regex)."""
    if not text.isascii():
        return dict.fromkeys(_CANDIDATE.findall(text))
    runs = dict.fromkeys(text.encode("ascii").translate(_RUN_BYTES).split())
    return {run.decode("ascii"): None for run in runs  # (a run of letters is no value)
            if not run.isalpha() and len(run.translate(None, b"0123456789/")) != len(run)}


def _text_words(words: Iterable[str], facts: ValueFacts, bonus: float) -> None:
    """Sort the words of text output that hold a digit or a slash: a path, a date, an
    amount, an identifier, or nothing (``facts.add`` inlined: this is the hot loop)."""
    items = facts.items
    path_score = id_score = _SCORE_SHAPE["ident"] + bonus
    date_score = _SCORE_SHAPE["date"] + bonus
    amount_score = _SCORE_AMOUNT + bonus
    for word in words:
        if len(word) < 3:
            continue
        w = word.strip(".:,;+-")  # keeps its digit or slash (never stripped)
        if len(w) < 3 or len(w) > 120:
            continue
        # an ASCII word holds a letter exactly when case-mapping changes it (no regex call)
        alpha = w.lower() != w.upper() if w.isascii() else _HAS_ALPHA(w) is not None
        if "/" in w:
            if not alpha:
                continue
            label, score = "paths", path_score
        elif w[0].isdecimal() and len(w) >= 10 and w[4] == "-" and _DATE.fullmatch(w):
            label, score = "dates", date_score
        elif w[0] in "$€£¥" or w[-1] == "%":
            if not _MONEY.fullmatch(w):
                continue
            label, score = "amounts", amount_score
        elif alpha:
            label, score = "ids", id_score
        else:
            continue
        hit = items.get(w)  # no placeholder can match _CANDIDATE (no "<")
        if hit is None:
            if len(items) < _MAX_ITEMS:
                items[w] = (score, len(items), label)
        elif score > hit[0]:
            items[w] = (score, hit[1], hit[2])


def _demote_enumerations(facts: ValueFacts) -> None:
    """In text output, identifiers that differ only in their digits (``value_1`` …
    ``value_30`` in a file dump, ``test_case_7`` in a test log) are enumerations, not the
    ids a later call reuses: each loses score with the size of its family."""
    values = list(facts.items)
    joined = "\n".join(values)
    if joined.isascii() and "#" not in joined:  # each digit run to one "#", byte-level
        digits = joined.encode("ascii").translate(_DIGITS_TO_HASH)
        while b"##" in digits:
            digits = digits.replace(b"##", b"#")
        joined = digits.decode("ascii")
    else:
        joined = _DIGITS.sub("#", joined)
    families = joined.split("\n")
    if len(families) != len(values):  # a value holds a line break: one by one
        families = [_DIGITS.sub("#", value) for value in values]
    sizes = Counter(families)
    if not sizes or max(sizes.values()) <= 2:
        return
    items = facts.items
    for value, name in zip(values, families, strict=True):
        size = sizes[name]
        if size > 2:
            score, order, label = items[value]
            if score < _SCORE_ERROR:
                items[value] = (max(_SCORE_OTHER, score - 2.0 * math.log2(size)), order, label)
