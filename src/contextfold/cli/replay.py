"""``contextfold replay``: stream a JSONL transcript through a memory, print the result."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from ..errors import ValidationError
from ..memory import Memory
from ..messages import Message
from ..policy import TokenBudget
from .common import (
    SUMMARIZERS,
    db_option,
    emit_json,
    err_console,
    guard,
    make_summarizer,
    model_option,
    open_memory,
)
from .render import print_context

_PROGRESS_MIN_LINES = 200


def read_transcript(path: Path) -> Iterator[tuple[int, Message]]:
    """Yield (line number, message) for each non-blank line; a bad line is a
    ``ValidationError`` naming its line number."""
    with path.open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                data = json.loads(line)
                yield lineno, Message.from_openai(data)
            except json.JSONDecodeError as exc:
                raise ValidationError(f"{path}:{lineno}: not JSON: {exc.msg}") from exc
            except ValidationError as exc:
                raise ValidationError(f"{path}:{lineno}: {exc}") from exc


def _count_lines(path: Path) -> int:
    with path.open("rb") as fh:
        return sum(1 for line in fh if line.strip())


def replay_into(
    memory: Memory, session_id: str, path: Path, *, show_progress: bool
) -> dict[str, Any]:
    """Add every message of ``path`` to ``session_id``; return replay statistics."""
    total = _count_lines(path)
    folds = failed = 0
    started = time.perf_counter()
    progress = Progress(
        TextColumn("replaying"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err_console,
        transient=True,
        disable=not show_progress or total < _PROGRESS_MIN_LINES,
    )
    with progress:
        task = progress.add_task("replay", total=total)
        for _, message in read_transcript(path):
            result = memory.add(session_id, message)
            if result.fold is not None:
                folds += result.fold.status == "committed"
                failed += result.fold.status in ("failed", "conflict")
            progress.advance(task)
    return {
        "messages": total,
        "folds": folds,
        "failed_folds": failed,
        "seconds": round(time.perf_counter() - started, 3),
    }


@click.command()
@click.argument("transcript", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option(
    "--max-tokens", type=click.IntRange(min=64), required=True, help="Token budget of the context."
)
@click.option(
    "--summarizer",
    type=click.Choice(sorted(SUMMARIZERS)),
    default="extractive",
    show_default=True,
    help="Who writes the summary.",
)
@model_option
@click.option(
    "--tokenizer",
    type=click.Choice(["o200k", "cl100k", "approx"]),
    default="o200k",
    show_default=True,
    help="How tokens are counted (approx = chars/4, an estimate).",
)
@click.option(
    "--session",
    "session_id",
    default=None,
    help="Session id to replay into (default: the file name); replaced if it exists.",
)
@click.option(
    "--output",
    type=click.Choice(["context", "summary", "stats"]),
    default="context",
    show_default=True,
    help="What to print at the end.",
)
@click.option(
    "--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True
)
@db_option
@guard
def replay(
    transcript: Path,
    max_tokens: int,
    summarizer: str,
    model: str | None,
    tokenizer: str,
    session_id: str | None,
    output: str,
    fmt: str,
    db: str | None,
) -> None:
    """Stream TRANSCRIPT (JSONL: one message per line with role, content, optional name
    and timestamp) through a memory with a MAX_TOKENS budget and print the final context.

    \b
    Example:
      contextfold replay chat.jsonl --max-tokens 4000 --format json > context.json
      contextfold replay chat.jsonl --max-tokens 4000 --model openai:gpt-4o-mini
    """
    sid = session_id or transcript.stem
    with open_memory(
        db,
        summarizer=make_summarizer(summarizer, model),
        tokenizer=tokenizer,
        policy=TokenBudget(max_tokens),
    ) as memory:
        if memory.delete(sid):
            err_console.print(f"[dim]replaced the earlier session {sid!r}[/]")
        stats = replay_into(memory, sid, transcript, show_progress=fmt == "text")
        ctx = memory.context(sid)
        usage = memory.usage(sid)
        stats.update(
            session=sid,
            budget=max_tokens,
            context_tokens=ctx.tokens,
            context_messages=len(ctx),
            omitted=ctx.omitted,
            summarizer_input_tokens=usage.input_tokens,
            summarizer_output_tokens=usage.output_tokens,
        )
        summary = memory.summary(sid)
        if output == "stats":
            if fmt == "json":
                emit_json(stats)
            else:
                for key, value in stats.items():
                    click.echo(f"{key}: {value}")
        elif output == "summary":
            text = summary.text if summary else ""
            if fmt == "json":
                emit_json(
                    {
                        "session": sid,
                        "summary": text,
                        "through_seq": summary.through_seq if summary else 0,
                    }
                )
            else:
                click.echo(text)
        elif fmt == "json":
            emit_json(ctx.to_openai())
        else:
            print_context(ctx)
            err_console.print(
                f"[dim]{stats['messages']} messages, {stats['folds']} folds, context "
                f"{ctx.tokens}/{max_tokens} tokens, {stats['seconds']} s[/]"
            )


COMMANDS = [replay]
