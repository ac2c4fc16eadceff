"""Regenerate ``src/contextfold/summarizers/data/function_words.json`` from stopwords-iso.

The extractive summarizer ships its function-word lists as package data so that it never
downloads anything at run time. The lists come from the maintained ``stopwordsiso``
package (stopwords-iso, MIT licence); this script records the version it copied from.

    pip install stopwordsiso && python scripts/build_function_words.py
"""

from __future__ import annotations

import json
from importlib.metadata import version
from pathlib import Path

import stopwordsiso

LANGUAGES = ("en", "tr", "de", "es", "fr", "ru")
OUT = (
    Path(__file__).resolve().parent.parent
    / "src" / "contextfold" / "summarizers" / "data" / "function_words.json"
)


def main() -> None:
    data = {
        "source": f"stopwords-iso via stopwordsiso {version('stopwordsiso')} (MIT licence)",
        "languages": {
            lang: sorted(w.lower() for w in stopwordsiso.stopwords(lang)) for lang in LANGUAGES
        },
    }
    OUT.write_text(json.dumps(data, ensure_ascii=False, indent=0) + "\n", encoding="utf-8")
    print(f"wrote {OUT} ({', '.join(f'{k}: {len(v)}' for k, v in data['languages'].items())})")


if __name__ == "__main__":
    main()
