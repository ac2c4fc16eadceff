"""A number its own words name an order, invoice or reference number is not a national id
(privacy/labels.py), in every default locale; identity numbers elsewhere are still taken."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contextfold.privacy import NATIONAL_ID_KINDS, Redactor
from contextfold.privacy.labels import labelled_as_document

from .data.locale_order_negatives import LOCALES, order_negatives, takes_alone

#: The bar for the share of negatives left untouched, per locale.
BAR = 0.98
R = Redactor()


def ids_in(text: str) -> list[str]:
    return [text[f.start : f.end] for f in R.detect(text) if f.kind in NATIONAL_ID_KINDS]


@pytest.mark.parametrize("locale", LOCALES)
@pytest.mark.parametrize("hard", [True, False])
def test_labelled_order_numbers_are_left_alone(locale: str, hard: bool) -> None:
    sentences = order_negatives(locale, 150, hard=hard)
    untouched = sum(1 for s in sentences if not ids_in(s))
    assert untouched / len(sentences) >= BAR, [s for s in sentences if ids_in(s)][:5]


@pytest.mark.parametrize("locale", LOCALES)
def test_the_hard_negatives_hold_numbers_an_id_detector_takes_without_the_label(
    locale: str,
) -> None:
    """The generator is worth something only if every number would be taken unlabelled."""
    for sentence in order_negatives(locale, 40):
        number = next(w.strip(".,:#") for w in sentence.split() if sum(c.isdigit() for c in w) >= 8)
        assert takes_alone(number), sentence
        assert ids_in(f"Kimlik / ID {number} ."), sentence


TCKN = "31773402760"  # valid check digits


@pytest.mark.parametrize(
    "text",
    [
        f"TC kimlik no {TCKN}",
        f"Sipariş 4521, TC kimlik no {TCKN}",
        f"Fatura numarası 4521; kimlik numaram {TCKN}",
        f"Order number 1001 is mine and my ID is {TCKN}",
        f"{TCKN} numaralı kimlik kartı",
        f"Bestellnummer 4711. Steuer-ID: {TCKN}",
        "My SSN is 123-45-6789, order 4521.",
        # the SNILS's own name ends in "счёта" (account): not an invoice label
        "Страховой номер индивидуального лицевого счёта 072-624-012 35.",
    ],
)
def test_an_id_near_an_order_number_is_still_taken(text: str) -> None:
    assert ids_in(text), text


@pytest.mark.parametrize(
    "text",
    [
        f"Sipariş numarası {TCKN}, toplam 1.250 TL",
        f"sipariş no: {TCKN}",
        f"{TCKN} numaralı siparişiniz",
        f"Invoice #{TCKN}",
        f"my order number is {TCKN}",
        f"Rechnungs-Nr. {TCKN}",
        f"número de factura {TCKN}",
        f"numéro de référence : {TCKN}",
        f"номер заказа {TCKN}",
        f"Счёт № {TCKN}",
        "Invoice no. 123-45-6789",
    ],
)
def test_each_language_names_its_order_numbers(text: str) -> None:
    assert ids_in(text) == [], text


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=80), st.text(max_size=80))
def test_labelled_as_document_never_raises(before: str, after: str) -> None:
    text = before + TCKN + after
    assert isinstance(labelled_as_document(text, len(before), len(before) + len(TCKN)), bool)
