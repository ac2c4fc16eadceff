"""Same-shape negatives per locale: order, invoice and reference numbers, labelled as such.

"Sipariş numarası 31773402760, toplam 1.250 TL": shops write order numbers of the same
length as a national identity number, and a random one passes the id's check digits one
time in ten to a hundred. :func:`order_negatives` makes seeded sentences of that shape in
each default locale's language, the number labelled by its own words as an order, invoice
or reference number. With ``hard=True`` every number is one a national-id detector takes
when it stands alone (its check digits pass), so the sentence is left untouched only
because of its label; with ``hard=False`` the numbers are random, as a shop's are.

Written before the label rule was measured on it; ``tests/test_privacy_labels.py`` and
``benchmarks/bench_redaction.py`` score it.
"""

from __future__ import annotations

import random
import string
from collections.abc import Callable

from contextfold.privacy import NATIONAL_ID_KINDS, Redactor

LOCALES = ("en", "tr", "de", "es", "fr", "ru")

#: Per locale: sentence templates ({n}: the number, {amount}: a price in local format).
TEMPLATES: dict[str, tuple[str, ...]] = {
    "en": (
        "Order number {n}, total ${amount}.",
        "Your order no. {n} has shipped.",
        "Invoice number: {n} (due {amount} USD).",
        "Reference number {n} — please quote it when you call.",
        "My order number is {n}, it came to ${amount}.",
        "Invoice #{n} was paid.",
    ),
    "tr": (
        "Sipariş numarası {n}, toplam {amount} TL.",
        "Sipariş numaranız: {n}, kargoya verildi.",
        "Fatura numarası {n} tutarı {amount} TL.",
        "Fatura no: {n}, son ödeme tarihi 15.04.",
        "Referans numarası {n} ile başvurun.",
        "{n} numaralı siparişiniz yola çıktı, toplam {amount} TL.",
        "Referans kodu {n}, toplam {amount} TL.",
    ),
    "de": (
        "Bestellnummer {n}, Gesamtbetrag {amount} €.",
        "Ihre Rechnungsnummer: {n} über {amount} €.",
        "Rechnungs-Nr. {n} ist beglichen.",
        "Referenznummer {n} bitte bei Rückfragen angeben.",
        "Bestellung Nr. {n} wurde versandt.",
        "Ihre Bestellnummer lautet {n}, Summe {amount} €.",
    ),
    "es": (
        "Número de pedido {n}, total {amount} €.",
        "Su número de factura es {n}.",
        "Pedido nº {n} enviado, importe {amount} €.",
        "Referencia {n} para la devolución.",
        "Factura n.º {n} por {amount} €.",
        "Número de referencia: {n}.",
    ),
    "fr": (
        "Numéro de commande {n}, total {amount} €.",
        "Votre numéro de facture : {n}.",
        "Commande n° {n} expédiée, montant {amount} €.",
        "Référence {n} à rappeler.",
        "Facture n° {n} réglée ({amount} €).",
        "N° de commande {n} en préparation.",
    ),
    "ru": (
        "Номер заказа {n}, сумма {amount} руб.",
        "Ваш заказ № {n} отправлен.",
        "Счёт № {n} на сумму {amount} руб. оплачен.",
        "Номер счёта: {n}.",
        "Заказ {n} собран, итого {amount} руб.",
    ),
}

_AMOUNT: dict[str, Callable[[random.Random], str]] = {
    "en": lambda r: f"{r.randint(5, 4000):,}.{r.randint(0, 99):02d}",
    "tr": lambda r: f"{r.randint(1, 9)}.{r.randint(0, 999):03d}",
    "de": lambda r: f"{r.randint(5, 999)},{r.randint(0, 99):02d}",
    "es": lambda r: f"{r.randint(5, 999)},{r.randint(0, 99):02d}",
    "fr": lambda r: f"{r.randint(5, 999)},{r.randint(0, 99):02d}",
    "ru": lambda r: f"{r.randint(1, 99)} {r.randint(0, 999):03d}",
}


def _digits(r: random.Random, k: int) -> str:
    return str(r.randint(1, 9)) + "".join(r.choice(string.digits) for _ in range(k - 1))


#: Per locale: the shapes its shops' numbers come in (as long as the locale's ids).
_SHAPES: dict[str, tuple[Callable[[random.Random], str], ...]] = {
    "en": (lambda r: f"{_digits(r, 3)}-{_digits(r, 2)}-{_digits(r, 4)}",),
    "tr": (lambda r: _digits(r, 11),),
    "de": (lambda r: _digits(r, 11),),
    "es": (lambda r: _digits(r, 8) + r.choice("TRWAGMYFPDXBNJZSQVHLCKE"),),
    "fr": (lambda r: _digits(r, 15),),
    "ru": (lambda r: _digits(r, 11), lambda r: _digits(r, 12)),
}

_ID_KINDS = frozenset(NATIONAL_ID_KINDS)
_ALONE = Redactor()


def takes_alone(number: str) -> bool:
    """True when a national-id detector takes ``number`` standing alone (no label)."""
    return any(f.kind in _ID_KINDS for f in _ALONE.detect(f"Nummer {number} ."))


def order_negatives(locale: str, count: int = 200, *, seed: int = 27, hard: bool = True
                    ) -> list[str]:
    """``count`` sentences of ``locale`` with a labelled order/invoice/reference number."""
    r = random.Random(f"{locale}:{seed}:{hard}")
    out: list[str] = []
    shapes, templates, amount = _SHAPES[locale], TEMPLATES[locale], _AMOUNT[locale]
    while len(out) < count:
        number = r.choice(shapes)(r)
        if hard and not takes_alone(number):
            continue
        out.append(r.choice(templates).format(n=number, amount=amount(r)))
    return out
