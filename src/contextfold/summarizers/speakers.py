"""Speaker labels in a summary: one canonical name per person across case and short forms.

Pure code, no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable

from .facts import clean_speaker

__all__ = ["Speakers"]


class Speakers:
    """Canonical speaker labels across case and short forms.

    ``jess`` is shown as ``Jess``; a name that is the start of exactly one longer name in
    the session ("Mel" and "Melanie", "jess" and "Jessica") is that person. A name given
    in lower case is capitalised; one with any capital is kept as written. Nicknames
    that are not a prefix ("Bob" for "Robert") stay separate speakers.
    """

    def __init__(self, names: Iterable[str]) -> None:
        display: dict[str, str] = {}
        for raw in names:
            name = clean_speaker(raw)  # as canonical() cleans what it looks up
            if name is None:
                continue
            key = name.lower()
            if key not in display or (display[key].islower() and not name.islower()):
                display[key] = name if not name.islower() else name.title()
        self._canon: dict[str, str] = {}
        for key, shown in display.items():
            longer = [k for k in display if k != key and k.startswith(key)]
            if len(key) >= 3 and len(longer) == 1:
                self._canon[key] = display[longer[0]]
            else:
                self._canon[key] = shown

    def canonical(self, name: str | None) -> str | None:
        cleaned = clean_speaker(name)
        if cleaned is None:
            return None
        return self._canon.get(cleaned.lower(), cleaned)

    def lowered(self) -> list[str]:
        """Every known form, lower-cased (for dropping a name addressed to someone)."""
        return sorted(set(self._canon) | {v.lower() for v in self._canon.values()})
