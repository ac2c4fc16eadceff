"""Numbers their own words call something else: an order, invoice or reference number.

A national identity number's check digits are its whole validation, and one random number
in ten or a hundred passes them by chance. Order numbers are random numbers of the same
length, so a shop's "Sipariş numarası 62601815965" would be a T.C. kimlik numarası one time
in a hundred, and a corpus of order confirmations loses one order number in twenty. When
the words right before the number (or, in Turkish, right after it: "… numaralı sipariş")
name it an order, invoice or reference number, in any of the default locales' languages,
the identity detectors leave it alone (:class:`~contextfold.privacy.identity.NationalIdDetector`,
the SSN detector).

Only a label that ends where the number starts counts (a colon, "#", "№", "nº", "is" may sit
between), so "order 4521, TC kimlik no 12345678901" is still an identity number.
"""

from __future__ import annotations

import re

__all__ = ["labelled_as_document"]

#: How far before a number its label may start.
_WINDOW = 48

_NO = r"(?:n[º°o]\.?|nr\.?|num\.?|№|#)"
_BEFORE = re.compile(
    r"(?:"
    # en: order / invoice / reference (number|no|#|id|code)
    r"\b(?:order|invoice|reference|ref)(?:\s*(?:number|no\.?|nr\.?|num\.?|id|code|#))?"
    # tr: sipariş / fatura / referans (numarası|numaranız|no|kodu)
    r"|\b(?:sipari[şs]|fatura|referans)(?:\s*(?:numaras[ıi]|numaran[ıi]z|numaram|"
    r"numaras[ıi]n[ıi]z|no\.?|kodu|kodunuz))?"
    # de: Bestellnummer, Rechnungs-Nr., Bestellung Nr., Referenznummer, Auftragsnummer
    r"|\b(?:bestell|rechnungs|referenz|auftrags)-?(?:nummer|nr\.?)"
    r"|\b(?:bestellung|rechnung|auftrag|referenz)(?:\s*(?:nr\.?|nummer|no\.?))?"
    # es: número de pedido / factura / referencia; pedido nº; factura n.º
    rf"|\b(?:n[úu]mero|{_NO}|n\.º)\s*de\s*(?:pedido|factura|referencia)"
    rf"|\b(?:pedido|factura|referencia)(?:\s*(?:{_NO}|n\.º|n[úu]mero))?"
    # fr: numéro de commande / facture / référence; commande n°; réf.
    rf"|\b(?:num[ée]ro|{_NO})\s*de\s*(?:commande|facture|r[ée]f[ée]rence)"
    rf"|\b(?:commande|facture|r[ée]f[ée]rence|r[ée]f\.?)(?:\s*(?:{_NO}|num[ée]ro))?"
    # ru: номер заказа / счёта; заказ №; счёт № (a bare "счёт" is also an account:
    # "страховой номер индивидуального лицевого счёта" is the SNILS itself)
    r"|номер[а-я]*\s*(?:заказа|сч[её]та)"
    rf"|\bзаказ[а-я]*(?:\s*(?:{_NO}|номер))?"
    r"|\bсч[её]т(?:-фактур[а-я]*)?\s*№"
    r")"
    # what may sit between the label and the number
    r"\s*[:#№]?\s*(?:(?:is|was|ist|lautet|es|est|—|-)\s*)?[:#№]?\s*$",
    re.IGNORECASE,
)
#: Turkish puts the label after the number too: "62601815965 numaralı siparişiniz".
_AFTER = re.compile(
    r"\s*(?:numaral[ıi]|nolu|no'lu)\s+(?:sipari[şs]|fatura|referans)", re.IGNORECASE
)


def labelled_as_document(text: str, start: int, end: int) -> bool:
    """True when the words round ``text[start:end]`` name it an order, invoice or
    reference number (see the module doc)."""
    if _BEFORE.search(text, max(0, start - _WINDOW), start) is not None:
        return True
    return _AFTER.match(text, end, min(len(text), end + _WINDOW)) is not None
