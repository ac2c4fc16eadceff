"""The public API is ``contextfold.__all__``: complete, sorted, importable without extras."""

from __future__ import annotations

import subprocess
import sys

import contextfold


def test_all_is_sorted_and_resolves() -> None:
    assert contextfold.__all__ == sorted(contextfold.__all__)
    for name in contextfold.__all__:
        assert hasattr(contextfold, name), name


def test_every_public_class_defined_in_the_package_is_exported() -> None:
    exported = set(contextfold.__all__)
    for name in dir(contextfold):
        obj = getattr(contextfold, name)
        if (
            isinstance(obj, type)
            and obj.__module__.startswith("contextfold")
            and not name.startswith("_")
        ):
            assert name in exported, f"{name} is imported into contextfold but not in __all__"


def test_import_needs_no_optional_dependency() -> None:
    code = (
        "import sys, contextfold\n"
        "heavy = {'openai', 'anthropic', 'google.genai', 'psycopg', 'pydantic', 'jinja2', 'yaml'}\n"
        "print(sorted(heavy & set(sys.modules)))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
