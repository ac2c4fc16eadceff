"""Shared CLI plumbing: the --db option, opening a Memory, JSON output, summarizer choice."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click
from rich.console import Console
from rich.markup import escape

from ..errors import ContextFoldError
from ..memory import Memory
from ..stores import default_db_path

F = TypeVar("F", bound=Callable[..., Any])

console = Console(highlight=False)
err_console = Console(stderr=True, highlight=False)

#: Summarizer names the CLI accepts; value builds the summarizer (lazy imports).
SUMMARIZERS: dict[str, Callable[[], Any]] = {}


def register_summarizer(name: str, factory: Callable[[], Any]) -> None:
    SUMMARIZERS[name] = factory


def _extractive() -> Any:
    from ..summarizers.extractive import ExtractiveSummarizer

    return ExtractiveSummarizer()


register_summarizer("extractive", _extractive)


def model_option(fn: F) -> F:
    """``--model PROVIDER:MODEL``: an LLM writes the summaries (overrides --summarizer)."""
    return click.option(
        "--model",
        default=None,
        metavar="PROVIDER:MODEL",
        help="Summarize with a chat model instead of --summarizer: openai:gpt-4o-mini, "
        "anthropic:claude-haiku-4-5, gemini:gemini-2.5-flash, ollama:llama3.2 or "
        "openai-compatible:MODEL@URL (keys from OPENAI_API_KEY, ANTHROPIC_API_KEY, "
        "GEMINI_API_KEY).",
    )(fn)


def make_summarizer(name: str, model: str | None) -> Any:
    """The summarizer for ``--summarizer NAME`` / ``--model SPEC`` (the model wins)."""
    if model:
        from ..summarizers.llm import LLMSummarizer

        return LLMSummarizer(model)
    return SUMMARIZERS[name]()


def db_option(fn: F) -> F:
    """``--db PATH`` (or ``--store URL``): where sessions live. A plain path is a SQLite
    file; a URL may name any store (``postgresql://…``, ``sqlite:///…``, ``memory://``)."""
    return click.option(
        "--db",
        "--store",
        "db",
        default=None,
        metavar="PATH|URL",
        help="SQLite file or store URL (default: $CONTEXTFOLD_HOME/contextfold.db, "
        "else ~/.contextfold/contextfold.db).",
    )(fn)


def store_url(db: str | Path | None) -> str:
    """The store URL for a ``--db`` value: URLs pass through, paths become sqlite URLs."""
    if isinstance(db, str) and "://" in db:
        return db
    path = Path(db) if db is not None else default_db_path()
    return f"sqlite:///{path.expanduser().resolve()}"


def describe_store(db: str | Path | None) -> str:
    """The store a ``--db`` value names, fit to print: a SQLite file as its path, a URL
    without its password."""
    url = store_url(db)
    if url.startswith("sqlite:///"):
        return url.removeprefix("sqlite:///")
    scheme, sep, rest = url.partition("://")
    auth, at, host = rest.rpartition("@")
    if at and ":" in auth:
        rest = f"{auth.split(':', 1)[0]}:***@{host}"
    return f"{scheme}{sep}{rest}"


def open_memory(db: str | Path | None, **options: Any) -> Memory:
    return Memory(store_url(db), **options)


def require_store(db: str | Path | None) -> None:
    """For commands that only read or fold what is stored: a SQLite file that does not
    exist is an error (exit 2), never a new empty database and its directories."""
    url = store_url(db)
    if url.startswith("sqlite:///"):
        path = Path(url.removeprefix("sqlite:///"))
        if not path.exists():
            fail(f"no contextfold database at {str(path)!r}: nothing is stored there yet "
                 "(`contextfold demo` or `contextfold replay` create one; --db names another)")


def open_existing(db: str | Path | None, **options: Any) -> Memory:
    """:func:`open_memory` for a store that must already exist (see :func:`require_store`)."""
    require_store(db)
    return open_memory(db, **options)


def emit_json(data: Any) -> None:
    click.echo(json.dumps(data, ensure_ascii=False, indent=2, default=str))


def fail(message: str, code: int = 2) -> None:
    # one line, unwrapped; escaped so '[server]' in an install hint is not taken as markup
    err_console.print(f"[bold red]error:[/] {escape(message)}", soft_wrap=True)
    sys.exit(code)


def guard(fn: F) -> F:
    """Turn contextfold errors into a one-line message and exit code 2 (no traceback)."""
    import functools

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except ContextFoldError as exc:
            fail(f"{type(exc).__name__}: {exc}")

    return wrapper  # type: ignore[return-value]
