"""The :class:`Redactor`: detected personal data → typed placeholders stable within a scope.

Contracts that are easy to break:

- **Idempotent.** ``redact(redact(t, s), s) == redact(t, s)``. Placeholders (``<KIND_N>``)
  are never re-redacted: detectors only see the text *between* placeholders, and one call
  repeats its pass until nothing changes, so the result is a fixed point by construction.
- **Stable within a scope.** In one scope (a session id) the same value always gets the same
  placeholder (``<EMAIL_1>``), and numbers continue after any placeholder already present in
  the input, so a fresh process never reuses ``<EMAIL_1>`` for a different address in a
  summary that already mentions one.
- **Never raises** on any ``str`` (built-in detectors), and raises ``ValidationError`` for a
  non-string.
- Without a vault, raw values are not retained: the scope table keys placeholders by a keyed
  hash (HMAC-SHA256 with a per-redactor random key, or ``key=`` to keep numbering stable
  across processes). With a vault (reversible mode) values are written to the vault before
  the redacted text is returned.
"""

from __future__ import annotations

import bisect
import copy
import hashlib
import hmac
import ipaddress
import os
import re
import threading
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from ..bounded import LRU
from ..errors import ConfigError, ValidationError
from .contact import EmailDetector, PhoneDetector, PhoneShape
from .detectors import Detector, Finding, PatternDetector, longest_cluster
from .financial import CardDetector, IBANDetector
from .locales import resolve_locales
from .network import IPDetector
from .secret import SecretDetector
from .vault import PlaceholderVault

__all__ = ["BUILTIN_KINDS", "NATIONAL_ID_KINDS", "PLACEHOLDER", "Redactor"]

#: A placeholder as the redactor writes it: ``<EMAIL_1>``, ``<EMPLOYEE_ID_12>``.
PLACEHOLDER = re.compile(r"<([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*)_([1-9][0-9]{0,8})>")

_MASK = "\x00"

#: The built-in detector switch → the placeholder kind it produces.
BUILTIN_KINDS: dict[str, str] = {
    "email": "EMAIL",
    "phone": "PHONE",
    "card": "CARD",
    "iban": "IBAN",
    "ssn": "SSN",
    "ip": "IP",
    "secret": "SECRET",
    "address": "ADDRESS",
}

#: National identity numbers of the built-in locales: placeholder kind → what it is.
NATIONAL_ID_KINDS: dict[str, str] = {
    "SSN": "US Social Security number (en)",
    "GB_NINO": "UK National Insurance number (en)",
    "TR_TCKN": "Turkish T.C. kimlik numarası (tr)",
    "DE_TAX_ID": "German Steuer-ID (de)",
    "DE_ID_CARD": "German Personalausweis number (de)",
    "ES_DNI": "Spanish DNI (es)",
    "ES_NIE": "Spanish NIE (es)",
    "FR_NIR": "French NIR / numéro de sécurité sociale (fr)",
    "RU_SNILS": "Russian SNILS (ru)",
    "RU_INN": "Russian personal INN (ru)",
    "IT_FISCAL_CODE": "Italian codice fiscale (it)",
}


@dataclass
class _Scope:
    by_fingerprint: dict[bytes, str] = field(default_factory=dict)
    values: dict[str, str] = field(default_factory=dict)  # reversible mode only
    counters: dict[str, int] = field(default_factory=dict)

    def bump(self, kind: str, number: int) -> None:
        if number > self.counters.get(kind, 0):
            self.counters[kind] = number


class Redactor:
    """Replaces personal data with typed placeholders.

    ``locales`` picks the national detectors (identity numbers, phone shapes, street
    conventions) from :mod:`contextfold.privacy.locales`; ``None`` means
    :data:`~contextfold.privacy.locales.DEFAULT_LOCALES` (English, Turkish, German, Spanish,
    French, Russian, Italian). Each built-in detector is switched by its keyword (all on by
    default); ``national_ids`` is ``True`` (every identity number of the locales), ``False``,
    or the kinds to keep (``{"TR_TCKN", "ES_DNI"}``). ``patterns`` adds user kinds
    (``{"EMPLOYEE_ID": r"\\bEMP-\\d{6}\\b"}``); ``detectors`` adds detector objects (for
    example :class:`~contextfold.privacy.presidio.PresidioDetector`). ``phone_regions``
    (needs the ``phonenumbers`` extra) adds libphonenumber's national formats for those
    regions, or for the regions of the locales with ``phone_regions="locales"``.
    ``vault`` turns on the reversible mode (see :meth:`restore`).
    """

    def __init__(
        self,
        *,
        locales: Iterable[str] | None = None,
        email: bool = True,
        phone: bool = True,
        card: bool = True,
        iban: bool = True,
        ssn: bool = True,
        ip: bool = True,
        secret: bool = True,
        address: bool = True,
        national_ids: bool | Collection[str] = True,
        patterns: Mapping[str, str | re.Pattern[str]] | None = None,
        detectors: Sequence[Detector] = (),
        phone_regions: Sequence[str] | Literal["locales"] = (),
        vault: PlaceholderVault | None = None,
        key: bytes | None = None,
        max_scopes: int = 10_000,
    ) -> None:
        if isinstance(phone_regions, str) and phone_regions != "locales":
            raise ConfigError(
                f"phone_regions must be a sequence of codes or 'locales', got {phone_regions!r}"
            )
        if max_scopes < 1:
            raise ConfigError(f"max_scopes must be at least 1, got {max_scopes!r}")
        if key is not None and (not isinstance(key, bytes) or len(key) < 16):
            raise ConfigError("key must be at least 16 random bytes")
        chosen_locales = resolve_locales(locales)
        self.locales: tuple[str, ...] = tuple(loc.name for loc in chosen_locales)
        wanted_id = _id_filter(national_ids)

        def keep_ids(kind: str) -> bool:
            return (ssn or kind != "SSN") and wanted_id(kind)

        chosen: list[Detector] = []
        # Order is the tie-break between equally long overlapping findings.
        if secret:
            chosen.append(SecretDetector())
        if iban:
            chosen.append(IBANDetector())
        if card:
            chosen.append(CardDetector())
        if email:
            chosen.append(EmailDetector())
        for loc in chosen_locales:
            chosen.extend(d for d in loc.national_ids if keep_ids(getattr(d, "kind", "")))
        if phone_regions == "locales":
            regions: tuple[str, ...] = tuple(
                dict.fromkeys(r for loc in chosen_locales for r in loc.phone_regions)
            )
        else:
            regions = tuple(phone_regions)
        if phone:
            shapes: list[PhoneShape] = [s for loc in chosen_locales for s in loc.phone_shapes]
            chosen.append(PhoneDetector(shapes, regions))
        elif regions:
            raise ConfigError("phone_regions given but the phone detector is switched off")
        if ip:
            chosen.append(IPDetector())
        if address:
            for loc in chosen_locales:
                chosen.extend(loc.addresses)
        for kind, pattern in (patterns or {}).items():
            chosen.append(PatternDetector(kind, pattern))
        for det in detectors:
            if not isinstance(det, Detector):
                raise ConfigError(f"detectors must have a find(text) method, got {det!r:.80}")
            chosen.append(det)
        self._detectors: tuple[Detector, ...] = tuple(chosen)
        self._needs: tuple[int, ...] = tuple(_needs_digits(d) for d in chosen)
        self._finds = tuple(d.find for d in chosen)  # bound once, called for every text
        # each detector's gate as an index into the distinct gates (-1: none), so a gate
        # shared by several detectors is asked once per text (Detector.gate)
        gates: dict[Callable[[str], object], int] = {}
        self._gate_of: tuple[int, ...] = tuple(
            gates.setdefault(g, len(gates)) if callable(g := getattr(d, "gate", None)) else -1
            for d in chosen
        )
        self._gates: tuple[Callable[[str], object], ...] = tuple(gates)
        self._arrange()
        self._vault = vault
        self._key = key if key is not None else os.urandom(32)
        self._max_scopes = max_scopes
        self._scopes: LRU[str, _Scope] = LRU(max_scopes)
        self._lock = threading.RLock()

    def _arrange(self) -> None:
        """Group the detectors by what lets :meth:`detect` skip them: none (always run),
        ``needs_digits`` only (sorted, so the first one asking too much ends the list), or
        a gate (asked once for all its detectors, and only if one of them could pass its
        digit test)."""
        ranks = range(len(self._finds))
        needs, gate_of = self._needs, self._gate_of
        self._always = tuple(r for r in ranks if gate_of[r] < 0 and not needs[r])
        self._by_needs = tuple(sorted((needs[r], r) for r in ranks if gate_of[r] < 0 and needs[r]))
        by_gate = (
            (min(needs[r] for r in mine), tuple((needs[r], r) for r in mine))
            for mine in ([r for r in ranks if gate_of[r] == g] for g in range(len(self._gates)))
        )
        self._count_digits = any(needs)
        # What detect() walks for each text: the gates with the least digits any of their
        # detectors needs, and those detectors' ranks when none needs any (the usual case:
        # no per-detector digit test left to make).
        self._gate_plan: tuple[tuple[Callable[[str], object], int, tuple[int, ...] | None,
                                     tuple[tuple[int, int], ...]], ...] = tuple(
            (gate, least, tuple(r for _, r in mine) if all(n == 0 for n, _ in mine) else None, mine)
            for gate, (least, mine) in zip(self._gates, by_gate, strict=True)
        )
        #: fewer digits in a cluster than this: no detector of _by_needs can run
        self._least_needs = self._by_needs[0][0] if self._by_needs else 1 << 62

    @property
    def reversible(self) -> bool:
        """True when a vault keeps the values, so :meth:`restore` can bring them back."""
        return self._vault is not None

    # --- detection -----------------------------------------------------------------------

    def detect(self, text: str) -> list[Finding]:
        """Non-overlapping findings in ``text``, in order, ignoring existing placeholders.

        Overlaps are resolved longest-first (an IBAN beats the card-like digits inside it),
        then by detector order.
        """
        return self._detect(_check(text))

    def _detect(self, text: str) -> list[Finding]:
        # Placeholders are masked with NUL, which no built-in pattern can match or cross, so
        # the text around them is scanned as if they were ends of the text; a finding that
        # still overlaps one (a user pattern matching NUL) is dropped.
        held = [m.span() for m in PLACEHOLDER.finditer(text)] if "<" in text else []
        masked = text
        if held:
            parts: list[str] = []
            pos = 0
            for start, end in held:
                parts.append(text[pos:start])
                parts.append(_MASK * (end - start))
                pos = end
            parts.append(text[pos:])
            masked = "".join(parts)
        # the detectors that may find something here: each skipped one declared it cannot
        # (Detector.needs_digits: more digits in one cluster than the text has; Detector.gate)
        longest = longest_cluster(masked) if self._count_digits else 0
        run = self._by_digits(longest)
        for gate, least, ranks, mine in self._gate_plan:
            if least <= longest and gate(masked):
                self._gated(run, ranks, mine, longest)
        if not run:
            return []  # most text: no detector can find anything
        return self._resolve(text, masked, held, run)

    def _by_digits(self, longest: int) -> list[int]:
        """The ranks of the detectors without a gate that may find something in a text
        whose largest digit cluster holds ``longest`` digits."""
        run = list(self._always)
        if longest >= self._least_needs:
            for needs, rank in self._by_needs:
                if needs > longest:
                    break
                run.append(rank)
        return run

    @staticmethod
    def _gated(
        run: list[int],
        ranks: tuple[int, ...] | None,
        mine: tuple[tuple[int, int], ...],
        longest: int,
    ) -> None:
        """A gate said yes: add its detectors that pass their digit test to ``run``."""
        if ranks is not None:
            run.extend(ranks)
        else:
            run.extend(rank for needs, rank in mine if needs <= longest)

    def _resolve(
        self, text: str, masked: str, held: list[tuple[int, int]], run: list[int]
    ) -> list[Finding]:
        """Run the detectors ``run`` on ``masked`` and resolve their overlaps."""
        run.sort()
        held_starts = [s for s, _ in held] if held else held
        found: list[tuple[int, int, Finding]] = []
        finds = self._finds
        for rank in run:
            for f in finds[rank](masked):
                if not 0 <= f.start < f.end <= len(text):
                    continue
                if held:
                    i = bisect.bisect_left(held_starts, f.end)  # first placeholder at/after end
                    if i > 0 and held[i - 1][1] > f.start:
                        continue
                found.append((-(f.end - f.start), rank, f))
        found.sort(key=lambda t: (t[0], t[1], t[2].start))
        starts: list[int] = []  # accepted spans, sorted and disjoint
        taken: list[Finding] = []
        for _, _, f in found:
            i = bisect.bisect_right(starts, f.start)
            if i > 0 and taken[i - 1].end > f.start:
                continue
            if i < len(starts) and starts[i] < f.end:
                continue
            starts.insert(i, f.start)
            taken.insert(i, f)
        return taken

    # --- redaction -----------------------------------------------------------------------

    def redact(self, text: str, scope: str | None = None) -> str:
        """Return ``text`` with every detected value replaced by a typed placeholder.

        With ``scope`` (a session id) the same value keeps the same placeholder across calls;
        without one, numbering starts at 1 for this call only.
        """
        text = _check(text)
        if scope is not None and not isinstance(scope, str):
            raise ValidationError(f"scope must be a string or None, got {scope!r:.80}")
        # detection does not depend on the scope: most text has nothing to replace and
        # leaves without touching the scope table (no lock, no vault read)
        findings: list[Finding] | None = None if "<" in text else self._detect(text)
        if findings == []:
            return text
        with self._lock:
            state = self._scope(scope) if scope is not None else _Scope()
            for m in PLACEHOLDER.finditer(text) if "<" in text else ():
                state.bump(m.group(1), int(m.group(2)))
            new: dict[str, str] = {}
            while True:
                if findings is None:
                    findings = self._detect(text)
                if not findings:
                    break
                out: list[str] = []
                pos = 0
                for f in findings:
                    out.append(text[pos : f.start])
                    out.append(self._placeholder(state, f.kind, text[f.start : f.end], new))
                    pos = f.end
                out.append(text[pos:])
                text = "".join(out)
                findings = None
            if new and scope is not None and self._vault is not None:
                self._vault.put(scope, new)
            return text

    def restore(self, text: str, scope: str) -> str:
        """Put the original values back for the placeholders of ``scope`` (reversible mode).

        Placeholders the vault does not know are left as they are.
        """
        text = _check(text)
        if self._vault is None:
            raise ConfigError("restore needs the reversible mode: Redactor(vault=InMemoryVault())")
        with self._lock:
            values = self._scope(scope).values
        return PLACEHOLDER.sub(lambda m: values.get(m.group(), m.group()), text)

    def mapping(self, scope: str) -> dict[str, str]:
        """``{placeholder: value}`` of ``scope`` (reversible mode only)."""
        if self._vault is None:
            raise ConfigError("mapping needs the reversible mode: Redactor(vault=InMemoryVault())")
        with self._lock:
            return dict(self._scope(scope).values)

    def with_vault(self, vault: PlaceholderVault) -> Redactor:
        """A reversible copy using ``vault``: same detectors and key, its own scope table."""
        if not isinstance(vault, PlaceholderVault):
            raise ConfigError(f"vault must have get/put/delete, got {vault!r:.80}")
        twin = copy.copy(self)
        twin._vault = vault
        twin._scopes = LRU(self._max_scopes)
        twin._lock = threading.RLock()
        return twin

    def reload(self, scope: str) -> None:
        """Drop the cached table of ``scope`` so the next use reads the vault again (after
        another process may have added to it). Without a vault this forgets the numbering."""
        with self._lock:
            self._scopes.pop(scope, None)

    def forget(self, scope: str) -> None:
        """Drop ``scope``'s placeholders here and in the vault (call when a session is deleted)."""
        with self._lock:
            self._scopes.pop(scope, None)
            if self._vault is not None:
                self._vault.delete(scope)

    # --- internals -----------------------------------------------------------------------

    def _scope(self, scope: str) -> _Scope:
        state = self._scopes.get(scope)
        if state is not None:
            return state
        state = _Scope()
        if self._vault is not None:
            for placeholder, value in self._vault.get(scope).items():
                m = PLACEHOLDER.fullmatch(placeholder)
                if m is None:
                    continue
                kind = m.group(1)
                state.values[placeholder] = value
                state.by_fingerprint.setdefault(self._fingerprint(kind, value), placeholder)
                state.bump(kind, int(m.group(2)))
        self._scopes.put(scope, state)
        return state

    def _placeholder(self, state: _Scope, kind: str, value: str, new: dict[str, str]) -> str:
        fp = self._fingerprint(kind, value)
        placeholder = state.by_fingerprint.get(fp)
        if placeholder is None:
            number = state.counters.get(kind, 0) + 1
            state.counters[kind] = number
            placeholder = f"<{kind}_{number}>"
            state.by_fingerprint[fp] = placeholder
            if self._vault is not None:
                state.values[placeholder] = value
                new[placeholder] = value
        return placeholder

    def _fingerprint(self, kind: str, value: str) -> bytes:
        message = f"{kind}\x00{_normalise(kind, value)}".encode("utf-8", "surrogatepass")
        return hmac.new(self._key, message, hashlib.sha256).digest()

    def __repr__(self) -> str:
        names = ", ".join(type(d).__name__ for d in self._detectors)
        return f"Redactor([{names}], reversible={self.reversible})"


def _needs_digits(detector: Detector) -> int:
    needs = getattr(detector, "needs_digits", 0)
    return needs if isinstance(needs, int) and not isinstance(needs, bool) and needs > 0 else 0


def _id_filter(national_ids: bool | Collection[str]) -> Callable[[str], bool]:
    if national_ids is True:
        return lambda kind: True
    if national_ids is False:
        return lambda kind: False
    if isinstance(national_ids, str) or not isinstance(national_ids, Collection):
        raise ConfigError(
            f"national_ids must be True, False or a collection of kinds, got {national_ids!r:.80}"
        )
    wanted = set(national_ids)
    return lambda kind: kind in wanted


def _check(text: object) -> str:
    if not isinstance(text, str):
        raise ValidationError(f"text to redact must be a string, got {type(text).__name__}")
    return text


def _normalise(kind: str, value: str) -> str:
    """One placeholder per value however it is written (``4111-1111…`` = ``4111 1111…``)."""
    if kind == "EMAIL":
        return value.lower()
    if kind in ("CARD", "SSN"):
        return "".join(c for c in value if c.isdigit())
    if kind == "ADDRESS":
        return " ".join(value.split()).casefold()
    if kind in NATIONAL_ID_KINDS:
        return "".join(c for c in value if c.isalnum()).upper()
    if kind == "PHONE":
        return "".join(c for c in value if c.isdigit() or c == "+")
    if kind == "IBAN":
        return "".join(c for c in value if c.isalnum()).upper()
    if kind == "IP":
        try:
            return ipaddress.ip_address(value.split("%")[0]).compressed
        except ValueError:
            return value
    return value
