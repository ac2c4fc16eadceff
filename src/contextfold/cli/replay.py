"""``contextfold replay``: stream a JSONL transcript through a memory, print the result."""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path
from typing import Any

import click
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from ..errors import ConfigError, ValidationError
from ..memory import Memory
from ..messages import DEFAULT_MAX_MESSAGE_CHARS, Message, check_sequence, check_text
from ..policy import TokenBudget
from .common import (
    SUMMARIZERS,
    db_option,
    describe_store,
    emit_json,
    err_console,
    guard,
    make_summarizer,
    model_option,
    open_memory,
)
from .render import print_context

_PROGRESS_MIN_LINES = 200


def line_id(path: Path, lineno: int, raw: bytes) -> str:
    """The stable id of a transcript line that has none: the file's name, the line number
    and a digest of the line, so re-running an import (or the same file fixed) skips the
    lines already stored, and two different files never collide."""
    digest = hashlib.sha256(raw.strip()).hexdigest()[:12]
    return f"{path.name}:{lineno}:{digest}"


def read_transcript(path: Path) -> list[tuple[int, Message]]:
    """Every message of ``path`` (JSONL), validated before anything is stored: JSON per
    line, a valid message, UTF-8 text, the tool-call order rules over the whole file. Any
    problem is one ``ValidationError`` naming the file and line; nothing has been written.
    Lines without an ``id`` get :func:`line_id`."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ValidationError(f"{path}: cannot read: {exc.strerror}") from exc
    out: list[tuple[int, Message]] = []
    for lineno, raw in enumerate(data.splitlines(), 1):
        if lineno == 1 and raw.startswith(b"\xef\xbb\xbf"):
            raw = raw[3:]
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ValidationError(
                f"{path}:{lineno}: not UTF-8 text (byte 0x{raw[exc.start]:02x} at column "
                f"{exc.start + 1}); replay reads JSONL, one JSON message per line"
            ) from None
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ValidationError(f"{path}:{lineno}: not JSON: {exc.msg}") from None
        try:
            if isinstance(value, dict) and value.get("id") is None:
                value = {**value, "id": line_id(path, lineno, raw)}
            message = Message.from_openai(value)
            check_text(message.text, f"{message.role} message content", DEFAULT_MAX_MESSAGE_CHARS)
        except ValidationError as exc:
            raise ValidationError(f"{path}:{lineno}: {exc}") from None
        out.append((lineno, message))
    try:
        check_sequence(m for _, m in out)
    except ValidationError as exc:
        index = int(str(exc).split(":", 1)[0].removeprefix("message "))
        detail = str(exc).split(":", 1)[1].strip()
        raise ValidationError(f"{path}:{out[index][0]}: {detail}") from None
    return out


def replay_into(
    memory: Memory,
    session_id: str,
    messages: list[tuple[int, Message]],
    *,
    show_progress: bool,
) -> dict[str, Any]:
    """Add ``messages`` (from :func:`read_transcript`) to ``session_id`` one by one, so the
    policy folds as it would live. Idempotent: a message already stored (same id) is
    skipped, so an interrupted import finishes when run again. Returns replay statistics."""
    total = len(messages)
    folds = failed = skipped = 0
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
        for _, message in messages:
            result = memory.add(session_id, message)
            skipped += result.duplicates
            if result.fold is not None:
                folds += result.fold.status == "committed"
                failed += result.fold.status in ("failed", "conflict")
            progress.advance(task)
    return {
        "messages": total,
        "already_stored": skipped,
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
    help="Session id to replay into (default: the file name). An existing session is "
    "left alone unless --replace or --append is given.",
)
@click.option(
    "--append",
    is_flag=True,
    help="Add to an existing session; lines already stored are skipped "
    "(re-run an interrupted import safely).",
)
@click.option(
    "--replace",
    is_flag=True,
    help="Delete an existing session (messages, summary, ledger) and replay into it afresh.",
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
@click.option(
    "--query",
    default=None,
    metavar="TEXT",
    help="Replay with recall on and print the context for this question: folded turns "
    "that match it are recalled into it (see docs/recall.md).",
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
    append: bool,
    replace: bool,
    output: str,
    fmt: str,
    query: str | None,
    db: str | None,
) -> None:
    """Stream TRANSCRIPT (JSONL: one message per line with role, content, optional name,
    timestamp and id) through a memory with a MAX_TOKENS budget and print the final context.

    The whole file is checked first: a bad line (or a file with no messages) stops the
    import before anything is stored or replaced. An existing session is never touched
    unless you say how: --append adds to it, --replace deletes it first. Lines without an
    id get one from the file name, line number and content, so running an import again
    never stores a line twice.

    \b
    Example:
      contextfold replay chat.jsonl --max-tokens 4000 --format json > context.json
      contextfold replay chat.jsonl --max-tokens 4000 --model openai:gpt-4o-mini
      contextfold replay chat.jsonl --max-tokens 4000 --append   # finish an import
      contextfold replay chat.jsonl --max-tokens 4000 --query "when is the ferry?"
    """
    if append and replace:
        raise ConfigError("--append and --replace exclude each other: pick one")
    sid = session_id or transcript.stem
    with open_memory(
        db,
        summarizer=make_summarizer(summarizer, model),
        tokenizer=tokenizer,
        policy=TokenBudget(max_tokens),
        recall=True if query is not None else None,  # folds leave the recalled block room
    ) as memory:
        messages = read_transcript(transcript)  # all checked before anything changes
        if not messages:
            raise ValidationError(f"{transcript}: no messages (an empty transcript); "
                                  "nothing was stored or replaced")
        existing = memory.stats(sid)
        if existing is not None and not (append or replace):
            raise ConfigError(
                f"session {sid!r} already exists ({existing.last_seq} messages): pass "
                "--append to add to it, --replace to delete it and replay afresh, or "
                "--session NAME to replay into another session"
            )
        if replace and memory.delete(sid):
            err_console.print(f"[dim]replaced the earlier session {sid!r}[/]")
        stats = replay_into(memory, sid, messages, show_progress=fmt == "text")
        ctx = memory.context(sid, query=query)
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
        if query is not None:
            stats["recalled"] = list(ctx.recalled)
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
        if fmt == "text":  # JSON output names the session in its own fields
            if query is not None:
                seqs = ", ".join(map(str, ctx.recalled)) or "none"
                err_console.print(f"[dim]recalled for the query: seqs {seqs}[/]")
            err_console.print(
                f"[dim]replayed into session {escape(repr(sid))} of {escape(describe_store(db))}: "
                f"{stats['messages']} messages, {stats['folds']} folds, context "
                f"{ctx.tokens}/{max_tokens} tokens, {stats['seconds']} s[/]",
                soft_wrap=True,
            )


COMMANDS = [replay]
