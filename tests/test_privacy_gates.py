"""The cheap tests that let detectors skip text (issue 14) never skip a finding.

Each gate is a necessary condition: whenever it says "no", the pattern or detector it
guards finds nothing in that text. Checked on generated text built from the pieces the
patterns look for (digit runs, separators, street words, month letters), so the gates are
exercised at their edges, and on the labelled corpora.
"""

from __future__ import annotations

import itertools
import re

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from contextfold.privacy import Redactor
from contextfold.privacy.address import _NUMBER_AFTER, StreetAddressDetector, _any_hint
from contextfold.privacy.detectors import Finding, digit_runs, longest_cluster, run_followed_by
from contextfold.privacy.locales.de import _ID_CARD_HINTS, _id_card_hint
from contextfold.privacy.locales.en import _ADDRESS
from contextfold.privacy.locales.fr import _FR_ADDRESS
from contextfold.privacy.locales.it import _cf_hint
from contextfold.privacy.network import _DOT_DIGIT, _IPV4, _IPV6_HINT
from contextfold.privacy.secret import _SECRET_HINTS
from contextfold.privacy.secret import _any_hint as secret_hint

from .pii_scoring import DATA, LOCALE_CORPUS, load

PIECES = [
    "0", "1", "12", "221", "4111", "85", "2024", "192", "10", "7",
    " ", "  ", "\n", "\t", ".", ",", "-", "/", ":", "(", ")", "+", "[", "]", "#",
    "B", "A", "T", "a", "x", "é", "ß", "ı", "İ", "٣",
    "bis", "ter", " Street", " Baker Street", " St", " Ave", " Main", "rue ", " rue de la Paix",
    "Calle Mayor", "Hauptstraße ", "Goethestr. ", "Am Markt ", "Atatürk Caddesi No:",
    "ул. Ленина, д. ", "Plaza ", " Apt ", "RSSMRA", "T10A562S", "IP ", "version ",
    "@", "jane@example.com", "::", "fe80::1", "ab:cd:", "Token ", "password: ", "sk-", "AKIA",
    "Ausweis ", "Person", "L01X00T47", "\x00", "<EMAIL_1>", "–", "😀", "12:30", "a:b:c:",
    "2001:db8:", "١٢٣٤٥٦", "123456", " 7 ", "ERSO", "USWEIS", "ID-Karte", "IDKarte", "S", "K",
    "xox", "eyJ", "J",
]
texts = st.lists(st.sampled_from(PIECES), max_size=40).map("".join)
CLUSTER = re.compile(r"\d(?:[ .\-/()]{0,3}\d){5,}")
IPV6_HINT = re.compile(r"[0-9A-Fa-f]{1,4}:[0-9A-Fa-f]{1,4}:[0-9A-Fa-f]{0,4}:")
REDACTOR = Redactor()


def check_gates(text: str) -> None:
    if not run_followed_by(text, _NUMBER_AFTER):  # number-first addresses (en, fr)
        assert _ADDRESS.search(text) is None
        assert _FR_ADDRESS.search(text) is None
    if text.count(".") < 3 or not run_followed_by(text, _DOT_DIGIT):  # IPv4
        assert _IPV4.search(text) is None
    # the codice fiscale hint is exactly its former regex
    assert _cf_hint(text) == (re.search(r"\d\d[A-EHLMPR-Ta-ehlmpr-t]", text) is not None)
    for det in REDACTOR._detectors:
        needs = getattr(det, "needs_digits", 0)
        if needs and longest_cluster(text) < needs:
            assert list(det.find(text)) == [], det
        if isinstance(det, StreetAddressDetector) and det.hints and not _any_hint(text):
            assert all(p.search(text) is None for p in det.patterns), det
        gate = getattr(det, "gate", None)
        if gate is not None and not gate(text):
            assert list(det.find(text)) == [], det
    # the bytes fast path of digit_runs is the regex it stands for (also for text with
    # characters beyond ASCII: an emoji, a dash, another script's digit)
    assert digit_runs(text) == tuple(m.span() for m in re.finditer(r"\d+", text))
    # longest_cluster's shortcuts from the runs agree with the cluster scan
    clusters = [len(re.sub(r"[ .\-/()]", "", m.group())) for m in CLUSTER.finditer(text)]
    assert longest_cluster(text) == max(clusters, default=0)
    # the Ausweis hint is "one of its literals occurs", whatever order it tests them in
    assert _id_card_hint(text) == any(h in text for h in _ID_CARD_HINTS)
    # the IPv6 hint, written to open on its colon, finds what its plain form finds
    assert (_IPV6_HINT(text) is not None) == (IPV6_HINT.search(text) is not None)


def ungated(redactor: Redactor) -> Redactor:
    """The same detectors, each called on every text (no digit test, no gate)."""
    redactor._needs = tuple(0 for _ in redactor._needs)
    redactor._gate_of = tuple(-1 for _ in redactor._gate_of)
    redactor._gates = ()
    redactor._arrange()
    return redactor


@settings(max_examples=800, suppress_health_check=[HealthCheck.too_slow])
@given(texts)
def test_gates_say_no_only_where_nothing_is_found(text: str) -> None:
    check_gates(text)


def test_gates_on_every_way_to_write_a_leading_number() -> None:
    """Every combination of what may precede, make up and follow a house number or a
    dotted quad, before a street: the gates let each match through."""
    for parts in itertools.product(
        ["", "[", "x", "("],
        ["12", "1234567", "٣"],
        ["", "B"],
        ["", "-2", ".5", ".1.2.3", "bis", " bis", " ter", " A"],
        ["", ","],
        ["", " ", "\n"],
        ["Main St", "N Main Street", "rue de la Paix", "avenue Foch"],
    ):
        check_gates("".join(parts))


def test_skipping_by_needs_digits_and_gates_changes_no_finding() -> None:
    """The Redactor skips a detector on text without the digit cluster it declared it
    needs, or where its gate says no: on the labelled corpora and the generated pieces,
    detection is the same as with every detector called."""
    every = ungated(Redactor())
    rows = load(LOCALE_CORPUS) + load(DATA / "pii_corpus.jsonl")
    corpus = [row["text"] for row in rows]
    pieces = ["".join(PIECES[i % len(PIECES)] for i in range(k, k + 30)) for k in range(90)]
    for text in corpus + pieces:
        assert REDACTOR.detect(text) == every.detect(text), text


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(texts)
def test_gated_detection_is_ungated_detection(text: str) -> None:
    assert REDACTOR.detect(text) == UNGATED.detect(text)


UNGATED = ungated(Redactor())


class _Shaped:
    """A user detector with a gate: "ZZ" followed by digits."""

    calls = 0

    def __init__(self, gate: object) -> None:
        self.gate = gate

    def find(self, text: str) -> list[Finding]:
        type(self).calls += 1
        return [Finding(m.start(), m.end(), "ZZ_ID") for m in re.finditer(r"ZZ\d+", text)]


def test_a_shared_gate_is_asked_once_per_text_and_skips_its_detectors() -> None:
    asked: list[str] = []

    def has_zz(text: str) -> bool:
        asked.append(text)
        return "ZZ" in text

    redactor = Redactor(detectors=[_Shaped(has_zz), _Shaped(has_zz)])
    _Shaped.calls = 0
    assert redactor.redact("nothing here") == "nothing here"
    assert asked == ["nothing here"] and _Shaped.calls == 0
    assert redactor.redact("id ZZ42") == "id <ZZ_ID_1>"
    # once per pass: the check pass sees the placeholder masked, and its gate says no
    assert asked[1] == "id ZZ42" and "ZZ" not in asked[2] and _Shaped.calls == 2


def test_the_secret_prefilter_lets_every_hint_through() -> None:
    for hints in _SECRET_HINTS:
        for hint in hints:
            assert secret_hint(f"see {hint}ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789abcdefgh."), hint


def test_a_run_of_non_ascii_digits_is_no_card_and_no_crash() -> None:
    """A card number's digits are ASCII: a run of 13-19 other decimal digits (Arabic-Indic,
    fullwidth) is not one, and neither is a number that holds fewer than 13 ASCII digits
    (hypothesis found the first raising ``IndexError`` in the card detector)."""
    for text in ("١٢٣٤٥٦٧٨٩٠١٢٣", "１２３４５６７８９０１２３４", "411111111111١"):
        assert [f for f in Redactor().detect(text) if f.kind == "CARD"] == []
    assert [f.kind for f in Redactor().detect("4111 1111 1111 1111")] == ["CARD"]
