"""Held-out sentences, written after tuning stopped (see build_locale_corpus.py)."""

HELDOUT_POSITIVES: dict[str, list[str]] = {}
HELDOUT_NEGATIVES: dict[str, list[str]] = {}
