"""PII redaction: detection quality on the labelled corpus, placeholders, vault, extras."""

from __future__ import annotations

import importlib.util
import json
import socket
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from contextfold.errors import ConfigError, ValidationError
from contextfold.privacy import (
    PLACEHOLDER,
    InMemoryVault,
    PlaceholderVault,
    Redactor,
    iban_valid,
    luhn_valid,
    ssn_valid,
)

CORPUS = Path(__file__).parent / "data" / "pii_corpus.jsonl"
#: Corpus label type → the redactor kind that must find it.
LABEL_KIND = {"PHONE_E164": "PHONE", "PHONE_NATIONAL": "PHONE"}
#: The issue's bar: precision and recall at least 0.98 for these types.
GATED = ("EMAIL", "CARD", "IBAN", "IP", "SSN", "PHONE_E164")


def load_corpus() -> list[dict[str, Any]]:
    with CORPUS.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def score(redactor: Redactor, rows: list[dict[str, Any]]) -> dict[str, tuple[int, int, int]]:
    """Per label type: (true positives, false positives, false negatives), exact spans."""
    tp: Counter[str] = Counter()
    fp: Counter[str] = Counter()
    fn: Counter[str] = Counter()
    for row in rows:
        text = row["text"]
        gold = Counter(
            (LABEL_KIND.get(lb["type"], lb["type"]), lb["value"]) for lb in row["labels"]
        )
        label_type = {
            (LABEL_KIND.get(lb["type"], lb["type"]), lb["value"]): lb["type"]
            for lb in row["labels"]
        }
        found = Counter((f.kind, text[f.start : f.end]) for f in redactor.detect(text))
        for key, n in (gold & found).items():
            tp[label_type[key]] += n
        for key, n in (found - gold).items():
            kind, value = key
            if kind == "PHONE":
                kind = "PHONE_E164" if value.startswith("+") else "PHONE_NATIONAL"
            fp[kind] += n
        for key, n in (gold - found).items():
            fn[label_type[key]] += n
    types = sorted(set(tp) | set(fp) | set(fn))
    return {t: (tp[t], fp[t], fn[t]) for t in types}


def table(scores: dict[str, tuple[int, int, int]]) -> str:
    lines = ["| type | labelled | precision | recall |", "|---|---:|---:|---:|"]
    for t, (tp, fp, fn) in scores.items():
        p = tp / (tp + fp) if tp + fp else 1.0
        r = tp / (tp + fn) if tp + fn else 1.0
        lines.append(f"| {t} | {tp + fn} | {p:.3f} | {r:.3f} |")
    return "\n".join(lines)


# --- detection quality -------------------------------------------------------------------


def test_corpus_is_large_and_covers_every_type_and_hard_negatives() -> None:
    rows = load_corpus()
    assert len(rows) >= 300
    types = Counter(lb["type"] for row in rows for lb in row["labels"])
    for t in (*GATED, "PHONE_NATIONAL", "SECRET", "ADDRESS"):
        assert types[t] >= 15, (t, types[t])
    assert sum(1 for row in rows if not row["labels"]) >= 100


def test_precision_and_recall_per_type_on_the_labelled_corpus() -> None:
    rows = load_corpus()
    scores = score(Redactor(), rows)
    print("\nall sentences\n" + table(scores))
    print(
        "\nheld-out split\n"
        + table(score(Redactor(), [r for r in rows if r["split"] == "heldout"]))
    )
    for t in GATED:
        tp, fp, fn = scores[t]
        assert tp / (tp + fp) >= 0.98, (t, scores[t])
        assert tp / (tp + fn) >= 0.98, (t, scores[t])


def test_phonenumbers_regions_keep_corpus_quality_and_add_formats() -> None:
    pytest.importorskip("phonenumbers")
    redactor = Redactor(phone_regions=("US", "GB", "DE", "FR", "NL"))
    scores = score(redactor, load_corpus())
    print("\nwith phone_regions\n" + table(scores))
    for t in (*GATED, "PHONE_NATIONAL"):
        tp, fp, fn = scores[t]
        assert tp / (tp + fp) >= 0.98 and tp / (tp + fn) >= 0.98, (t, scores[t])
    # An Italian mobile has no trunk 0, so only libphonenumber's metadata knows it.
    text = "il mio cellulare è 347 123 4567"
    assert Redactor().redact(text) == text
    assert Redactor(phone_regions=("IT",)).redact(text) == "il mio cellulare è <PHONE_1>"


def test_unknown_phone_region_is_a_config_error() -> None:
    pytest.importorskip("phonenumbers")
    with pytest.raises(ConfigError, match="XX"):
        Redactor(phone_regions=("XX",))


# --- placeholders ------------------------------------------------------------------------


def test_same_value_same_placeholder_within_a_scope_and_across_formats() -> None:
    r = Redactor()
    first = r.redact("Card 4111 1111 1111 1111, mail Jane@Example.com", scope="s1")
    second = r.redact("again 4111-1111-1111-1111 and jane@example.com, new bob@example.com", "s1")
    assert first == "Card <CARD_1>, mail <EMAIL_1>"
    assert second == "again <CARD_1> and <EMAIL_1>, new <EMAIL_2>"
    # Another scope numbers independently; no scope numbers per call.
    assert r.redact("bob@example.com", scope="s2") == "<EMAIL_1>"
    assert r.redact("bob@example.com") == "<EMAIL_1>"
    assert r.redact("x@example.com y@example.com x@example.com") == "<EMAIL_1> <EMAIL_2> <EMAIL_1>"


def test_placeholders_in_the_input_are_kept_and_numbering_continues_after_them() -> None:
    r = Redactor()
    text = "Earlier the user wrote to <EMAIL_3>; now to carol@example.com."
    assert r.redact(text, scope="fresh") == "Earlier the user wrote to <EMAIL_3>; now to <EMAIL_4>."
    # A placeholder glued to text is still never re-redacted.
    assert r.redact("ip<IP_1>.5 and <SSN_2>-45-6789") == "ip<IP_1>.5 and <SSN_2>-45-6789"


def test_each_detector_can_be_switched_off() -> None:
    samples = {
        "email": "jane@example.com",
        "phone": "+44 20 7946 0958",
        "card": "4111 1111 1111 1111",
        "iban": "DE89 3704 0044 0532 0130 00",
        "ssn": "123-45-6789",
        "ip": "192.168.1.20",
        "secret": "AKIAIOSFODNN7EXAMPLE",
        "address": "221B Baker Street",
    }
    for switch, value in samples.items():
        text = f"value: {value} end"
        assert value not in Redactor().redact(text), switch
        switches: dict[str, Any] = {switch: False}
        assert Redactor(**switches).redact(text) == text, switch


def test_user_patterns_add_kinds_and_may_redact_only_a_named_group() -> None:
    r = Redactor(patterns={"EMPLOYEE_ID": r"\bEMP-\d{6}\b", "BADGE": r"badge (?P<value>\d{4})"})
    out = r.redact("EMP-123456 showed badge 7781 and EMP-123456 again")
    assert out == "<EMPLOYEE_ID_1> showed badge <BADGE_1> and <EMPLOYEE_ID_1> again"
    assert r.redact(out) == out


@pytest.mark.parametrize("kind", ["email", "Bad-Kind", "X__Y", "_X", ""])
def test_user_pattern_kinds_must_make_parseable_placeholders(kind: str) -> None:
    with pytest.raises(ConfigError):
        Redactor(patterns={kind: r"\d+"})


def test_invalid_user_regex_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="not a valid regex"):
        Redactor(patterns={"X": "("})


def test_pem_private_key_blocks_are_redacted_whole() -> None:
    pem = (
        "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIG5vdGFyZWFsa2V5\nAwEHoUQDQgAE\n"
        "-----END EC PRIVATE KEY-----"
    )
    out = Redactor().redact(f"key:\n{pem}\nthanks")
    assert out == "key:\n<SECRET_1>\nthanks"


def test_non_string_input_is_a_validation_error() -> None:
    with pytest.raises(ValidationError):
        Redactor().redact(b"jane@example.com")  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        Redactor().redact("x", scope=3)  # type: ignore[arg-type]


# --- reversible mode ---------------------------------------------------------------------


def test_reversible_mode_restores_values_and_forgets_them_with_the_scope() -> None:
    vault = InMemoryVault()
    assert isinstance(vault, PlaceholderVault)
    r = Redactor(vault=vault)
    text = "Mail jane@example.com or call +1 415 555 2671."
    red = r.redact(text, scope="s")
    assert red == "Mail <EMAIL_1> or call <PHONE_1>."
    assert vault.get("s") == {"<EMAIL_1>": "jane@example.com", "<PHONE_1>": "+1 415 555 2671"}
    assert r.restore(red, "s") == text
    assert r.restore("unknown <EMAIL_9>", "s") == "unknown <EMAIL_9>"
    # A second redactor on the same vault (a restarted process) keeps the numbering.
    again = Redactor(vault=vault)
    assert again.redact("jane@example.com, bob@example.com", "s") == "<EMAIL_1>, <EMAIL_2>"
    assert again.mapping("s")["<EMAIL_2>"] == "bob@example.com"
    again.forget("s")
    assert vault.get("s") == {}
    assert again.restore(red, "s") == red


def test_without_a_vault_values_cannot_be_restored() -> None:
    r = Redactor()
    r.redact("jane@example.com", scope="s")
    assert not r.reversible
    with pytest.raises(ConfigError, match="vault"):
        r.restore("<EMAIL_1>", "s")
    with pytest.raises(ConfigError, match="vault"):
        r.mapping("s")


def test_scope_table_is_bounded() -> None:
    r = Redactor(max_scopes=2)
    r.redact("a@example.com", "s1")
    r.redact("b@example.com", "s2")
    r.redact("c@example.com", "s3")  # evicts s1
    # s1 was evicted, so numbering restarts there: stable only while cached (no vault).
    assert r.redact("b@example.com", "s1") == "<EMAIL_1>"
    assert r.redact("b@example.com", "s3") == "<EMAIL_2>"


# --- checksums ---------------------------------------------------------------------------


def test_checksum_helpers() -> None:
    assert luhn_valid("4111111111111111") and not luhn_valid("4111111111111112")
    assert iban_valid("GB82WEST12345698765432") and not iban_valid("GB82WEST12345698765433")
    assert not iban_valid("XX82WEST12345698765432")
    assert ssn_valid("123", "45", "6789")
    for area, group, serial in [("000", "12", "3456"), ("666", "12", "3456"), ("900", "12", "3456"),
                                ("123", "00", "4567"), ("123", "45", "0000")]:  # fmt: skip
        assert not ssn_valid(area, group, serial)


# --- properties --------------------------------------------------------------------------

PII_BITS = [
    "jane.doe@example.com", "+44 20 7946 0958", "(415) 555-2671", "4111 1111 1111 1111",
    "DE89 3704 0044 0532 0130 00", "123-45-6789", "192.168.1.20", "2001:db8::1",
    "AKIAIOSFODNN7EXAMPLE", "221B Baker Street", "<EMAIL_1>", "password: hunter2!x",
    "Bearer abcdefghijklmnop1234", "-----BEGIN PRIVATE KEY-----\nabc\n-----END PRIVATE KEY-----",
]  # fmt: skip
pieces = st.one_of(
    st.sampled_from(PII_BITS),
    st.text(alphabet=st.characters(blacklist_categories=()), max_size=12),
    st.text(alphabet="0123456789 -.:+()@<>_ABEFIKLMPSTabcde", max_size=24),
)
texts = st.lists(pieces, max_size=12).map("".join)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(texts)
def test_redaction_is_idempotent_and_never_raises(text: str) -> None:
    r = Redactor()
    once = r.redact(text, scope="p")
    assert r.redact(once, scope="p") == once
    assert Redactor().redact(once) == once
    assert not r.detect(once)


@settings(max_examples=300)
@given(st.text(alphabet=st.characters(blacklist_categories=()), max_size=200))
def test_arbitrary_text_never_raises_and_keeps_the_non_pii_rest(text: str) -> None:
    out = Redactor().redact(text)
    assert isinstance(out, str)
    if not Redactor().detect(text) and not PLACEHOLDER.search(text):
        assert out == text


# --- Presidio extra ----------------------------------------------------------------------

needs_presidio = pytest.mark.skipif(
    importlib.util.find_spec("presidio_analyzer") is None,
    reason='needs the presidio extra: pip install "contextfold[presidio]"',
)


@pytest.mark.presidio
@needs_presidio
def test_presidio_pattern_recognisers_work_without_any_network(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def no_network(*args: object, **kwargs: object) -> None:
        raise AssertionError("network access attempted")

    monkeypatch.setattr(socket.socket, "connect", no_network)
    monkeypatch.setattr(socket, "getaddrinfo", no_network)
    from contextfold.privacy.presidio import PresidioDetector

    detector = PresidioDetector()
    assert "PERSON" not in detector.kinds  # NER needs a model the user installed
    r = Redactor(email=False, card=False, iban=False, ip=False, detectors=[detector])
    out = r.redact(
        "card 4111 1111 1111 1111, IBAN DE89 3704 0044 0532 0130 00, ip 10.0.0.1, jo@x.com"
    )
    assert out == "card <CARD_1>, IBAN <IBAN_1>, ip <IP_1>, jo@x.com"


@pytest.mark.presidio
@needs_presidio
def test_presidio_refuses_a_model_that_is_not_installed() -> None:
    from contextfold.privacy.presidio import PresidioDetector

    with pytest.raises(ConfigError, match="never downloads"):
        PresidioDetector(model="en_core_web_not_installed")
    with pytest.raises(ConfigError, match="PERSON"):
        PresidioDetector(entities=["PERSON"])


def test_presidio_missing_extra_names_the_install_command() -> None:
    if importlib.util.find_spec("presidio_analyzer") is not None:
        pytest.skip("presidio is installed here")
    from contextfold.privacy.presidio import PresidioDetector

    with pytest.raises(ImportError, match=r'pip install "contextfold\[presidio\]"'):
        PresidioDetector()
