"""Presidio as an extra detector (``pip install "contextfold[presidio]"``), never downloading.

Presidio's ``AnalyzerEngine`` loads (and, when missing, *downloads*) a spaCy model on
construction. This adapter avoids that: by default it runs Presidio's pattern recognisers
directly, with no NLP engine at all; an NER model is used only when the caller passes
``model=`` naming an installed spaCy package or an existing path, which is checked before
Presidio sees it. Presidio's ``EmailRecognizer`` is always left out: its validation calls
``tldextract``, which fetches the public suffix list over the network (the built-in email
detector covers addresses).

Use it as one more detector: ``Redactor(detectors=[PresidioDetector()])``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from .detectors import Finding

__all__ = ["PresidioDetector"]

_INSTALL = 'pip install "contextfold[presidio]"'

#: Presidio entity → our placeholder kind, where we have one; others keep Presidio's name.
ENTITY_KINDS: dict[str, str] = {
    "EMAIL_ADDRESS": "EMAIL",
    "PHONE_NUMBER": "PHONE",
    "CREDIT_CARD": "CARD",
    "IBAN_CODE": "IBAN",
    "US_SSN": "SSN",
    "IP_ADDRESS": "IP",
}
#: Not personal data in the sense of this library (dates, public URLs), or network-bound.
_SKIPPED_ENTITIES = frozenset({"DATE_TIME", "URL", "EMAIL_ADDRESS"})
_NETWORK_RECOGNIZERS = ("EmailRecognizer",)


def _kind(entity: str) -> str:
    kind = ENTITY_KINDS.get(entity)
    if kind is None:
        kind = re.sub(r"_+", "_", re.sub(r"[^A-Z0-9]", "_", entity.upper())).strip("_")
        if not kind or not kind[0].isalpha():
            kind = "PII"
    return kind


class PresidioDetector:
    """Findings from Presidio recognisers.

    ``entities`` limits the Presidio entity types (default: every type the loaded
    recognisers support except dates, URLs and emails). ``model`` is an installed spaCy
    model name (``"en_core_web_sm"``) or path, enabling NER types such as ``PERSON``;
    without it, only pattern recognisers run. Results scoring under ``score_threshold``
    are dropped.
    """

    def __init__(
        self,
        entities: Sequence[str] | None = None,
        *,
        language: str = "en",
        model: str | Path | None = None,
        score_threshold: float = 0.5,
    ) -> None:
        try:
            from presidio_analyzer import (  # type: ignore[import-not-found,unused-ignore]
                RecognizerRegistry,
            )
        except ImportError as exc:
            raise ImportError(
                f"PresidioDetector needs the presidio-analyzer package: {_INSTALL}"
            ) from exc
        if not 0.0 <= score_threshold <= 1.0:
            raise ConfigError(f"score_threshold must be within 0..1, got {score_threshold!r}")
        self._language = language
        self._threshold = score_threshold
        registry = RecognizerRegistry(supported_languages=[language])
        self._engine: Any = None
        if model is None:
            # The NER recogniser this registers is only a class here; it is filtered out
            # below, and nothing loads a model.
            registry.load_predefined_recognizers(languages=[language])
        else:
            nlp_engine = _installed_spacy_engine(model, language)
            registry.load_predefined_recognizers(languages=[language], nlp_engine=nlp_engine)
        for name in _NETWORK_RECOGNIZERS:
            registry.remove_recognizer(name)
        if model is None:
            from presidio_analyzer.predefined_recognizers import (  # type: ignore[import-not-found,unused-ignore]
                SpacyRecognizer,
            )

            # Without a model only recognisers that need no NLP artifacts can run.
            usable = [r for r in registry.recognizers if not isinstance(r, SpacyRecognizer)]
        else:
            usable = list(registry.recognizers)
        supported = sorted({e for r in usable for e in r.supported_entities})
        if entities is None:
            self._entities = [e for e in supported if e not in _SKIPPED_ENTITIES]
        else:
            unknown = sorted(set(entities) - set(supported))
            if unknown:
                raise ConfigError(
                    f"Presidio has no usable recogniser for {unknown!r} here (NER types need "
                    f"model=); available: {supported!r}"
                )
            self._entities = list(entities)
        self._recognizers = usable
        if model is not None:
            from presidio_analyzer import (  # type: ignore[import-not-found,unused-ignore]
                AnalyzerEngine,
            )

            self._engine = AnalyzerEngine(
                registry=registry, nlp_engine=nlp_engine, supported_languages=[language]
            )
        self.kinds = frozenset(_kind(e) for e in self._entities)

    def find(self, text: str) -> Iterator[Finding]:
        if self._engine is not None:
            results = self._engine.analyze(
                text=text,
                language=self._language,
                entities=self._entities,
                score_threshold=self._threshold,
            )
        else:
            results = []
            for rec in self._recognizers:
                wanted = [e for e in rec.supported_entities if e in self._entities]
                if wanted:
                    results.extend(rec.analyze(text, wanted, None) or [])
        for res in results:
            if res.score >= self._threshold and 0 <= res.start < res.end <= len(text):
                yield Finding(res.start, res.end, _kind(res.entity_type))

    def __repr__(self) -> str:
        mode = "ner" if self._engine is not None else "patterns"
        return f"PresidioDetector({mode}, {len(self._entities)} entity types)"


def _installed_spacy_engine(model: str | Path, language: str) -> Any:
    """A Presidio spaCy engine for a model that is already installed; never downloads."""
    import spacy.util  # type: ignore[import-not-found,unused-ignore]
    from presidio_analyzer.nlp_engine import (  # type: ignore[import-not-found,unused-ignore]
        NlpEngineProvider,
    )

    name = str(model)
    if not (Path(name).exists() or spacy.util.is_package(name)):
        raise ConfigError(
            f"spaCy model {name!r} is not installed and contextfold never downloads at run "
            f"time; install it first (python -m spacy download {name}) or pass a path"
        )
    provider = NlpEngineProvider(
        nlp_configuration={
            "nlp_engine_name": "spacy",
            "models": [{"lang_code": language, "model_name": name}],
        }
    )
    return provider.create_engine()
