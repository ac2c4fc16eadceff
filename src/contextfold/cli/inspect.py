"""``contextfold sessions | show | stats | fold``: look at what is stored, fold by hand."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Any

import click
from rich.table import Table

from ..policy import SessionStats
from .common import console, db_option, emit_json, fail, guard, open_existing, require_store
from .render import message_line

#: The TokenBudget ``fold`` uses without --max-tokens (the library's default policy).
DEFAULT_FOLD_BUDGET = 4000


def _session_row(s: SessionStats) -> dict[str, Any]:
    return {
        "session": s.session_id,
        "messages": s.last_seq,
        "live": s.live_count,
        "live_tokens": s.live_tokens,
        "folded_through": s.through_seq,
        "summary_version": s.summary_version,
        "last_activity": s.last_activity.isoformat() if s.last_activity else None,
    }


@click.command()
@click.option("--limit", type=click.IntRange(min=1), default=50, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@db_option
@guard
def sessions(limit: int, as_json: bool, db: str | None) -> None:
    """List sessions, most recently active first."""
    with open_existing(db) as memory:
        rows = [_session_row(s) for s in memory.sessions(limit=limit)]
    if as_json:
        emit_json(rows)
        return
    table = Table("session", "messages", "live", "live tokens", "folded through", "last activity")
    longest = max((len(r["session"]) for r in rows), default=0)
    table.columns[0].min_width = longest  # ids are shown whole, however narrow the terminal
    for r in rows:
        table.add_row(
            r["session"],
            str(r["messages"]),
            str(r["live"]),
            str(r["live_tokens"]),
            str(r["folded_through"]),
            r["last_activity"] or "",
        )
    if not rows:
        console.print("[dim]no sessions yet — try `contextfold demo`[/]")
        return
    # wider than the terminal if an id needs it: a cut id cannot be copied into a command
    console.print(table, width=max(console.width, longest + 80), crop=False)


@click.command()
@click.argument("session_id")
@click.option("--all", "show_all", is_flag=True, help="Also list folded (archived) messages.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@db_option
@guard
def show(session_id: str, show_all: bool, as_json: bool, db: str | None) -> None:
    """Show a session: its summary and its live messages."""
    with open_existing(db) as memory:
        stats = memory.stats(session_id)
        if stats is None:
            fail(f"no session {session_id!r} in this database (see `contextfold sessions`)")
        summary = memory.summary(session_id)
        messages = memory.messages(session_id, include_folded=show_all)
    if as_json:
        emit_json(
            {
                **_session_row(stats),  # type: ignore[arg-type]
                "summary": summary.text if summary else None,
                "messages": [
                    {"seq": m.seq, "folded": m.folded, "tokens": m.tokens, **m.message.to_dict()}
                    for m in messages
                ],
            }
        )
        return
    if summary:
        console.print(
            f"[magenta]summary[/] (v{summary.version}, through seq "
            f"{summary.through_seq}, {summary.tokens} tokens)"
        )
        console.print(summary.text)
        console.print()
    for m in messages:
        line = message_line(m.message, m.seq)
        if m.folded:
            line.stylize("dim")
        console.print(line)


@click.command()
@click.argument("session_id", required=False)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.option(
    "--ledger",
    "show_ledger",
    type=click.IntRange(min=0),
    default=0,
    help="Also list the last N ledger rows.",
)
@db_option
@guard
def stats(session_id: str | None, as_json: bool, show_ledger: int, db: str | None) -> None:
    """Fold ledger totals: folds, failures, summarizer tokens (one session or all)."""
    with open_existing(db) as memory:
        usage = memory.usage(session_id)
        rows = memory.ledger(session_id, limit=show_ledger) if show_ledger else []
    if as_json:
        emit_json({"usage": asdict(usage), "ledger": [asdict(r) for r in rows]})
        return
    table = Table(
        "folds",
        "failed",
        "calls",
        "input tokens",
        "output tokens",
        "messages folded",
        "tokens folded",
    )
    table.add_row(
        *(
            str(v)
            for v in (
                usage.folds,
                usage.failed,
                usage.calls,
                usage.input_tokens,
                usage.output_tokens,
                usage.messages_folded,
                usage.tokens_folded,
            )
        )
    )
    console.print(table)
    if rows:
        ledger = Table("id", "session", "outcome", "seqs", "tokens", "model", "ms", "error")
        for r in rows:
            ledger.add_row(
                str(r.id),
                r.session_id,
                r.outcome,
                f"{r.lo}..{r.hi}",
                str(r.tokens_folded),
                r.model or "",
                f"{r.latency_ms:.0f}",
                r.error_class or "",
            )
        console.print(ledger)


@click.command()
@click.argument("session_ids", nargs=-1)
@click.option(
    "--force",
    is_flag=True,
    help="Fold every live message but the newest --keep-last (up to a safe cut), due or not.",
)
@click.option(
    "--due",
    is_flag=True,
    help="Fold (or clear) every session whose due time has come, like one pass of a "
    "worker; use the same --settings as the app that marked them.",
)
@click.option(
    "--settings",
    "settings_path",
    default=None,
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Agent settings YAML (context limit, idle fold/clear timeouts) for the policy.",
)
@click.option(
    "--max-tokens",
    type=click.IntRange(min=64),
    default=None,
    help=f"Budget of the TokenBudget policy (default {DEFAULT_FOLD_BUDGET}): fold when a session's "
    "context is over it.",
)
@click.option(
    "--keep-last",
    type=click.IntRange(min=0),
    default=2,
    show_default=True,
    help="Newest messages always kept verbatim, by a policy fold and by --force alike.",
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@db_option
@guard
def fold(
    session_ids: tuple[str, ...],
    force: bool,
    due: bool,
    settings_path: Path | None,
    max_tokens: int | None,
    keep_last: int,
    as_json: bool,
    db: str | None,
) -> None:
    """Fold sessions now (when their policy fires, or with --force all live messages but
    the newest --keep-last), or with --due every session whose due time (an idle timeout,
    a deferred fold) has come. The policy used is printed first: a TokenBudget of
    --max-tokens (default 4000) unless --settings names agent settings."""
    from ..policy import TokenBudget

    if not session_ids and not due:
        fail("name the sessions to fold, or use --due")
    options: dict[str, Any] = {"fold": "manual"}
    if settings_path is not None:
        from ..settings import AgentSettings

        options.update(AgentSettings.load(settings_path).options())
    else:
        options["policy"] = TokenBudget(max_tokens or DEFAULT_FOLD_BUDGET, keep_last=keep_last)
    require_store(db)
    if due:
        _fold_due(db, options, as_json)
        return
    with open_existing(db, **options) as memory:
        missing = [s for s in session_ids if memory.stats(s) is None]
        if missing:
            fail(f"no session {', '.join(map(repr, missing))} in this database "
                 "(see `contextfold sessions`); nothing was folded")
        batch = memory.fold_many(session_ids, force=force)
    policy = options["policy"]
    budget = getattr(policy, "max_tokens", None)
    if not as_json:
        described = (f"TokenBudget({budget}, keep_last={keep_last})" if settings_path is None
                     else f"the agent settings in {settings_path}")
        default = "" if max_tokens or settings_path else " (the default; --max-tokens N)"
        console.print(f"[dim]policy: {described}{default}[/]")
    rows = [
        {
            "session": s,
            "budget": budget,
            "status": o.status,
            "lo": o.lo,
            "hi": o.hi,
            "messages_folded": o.messages_folded,
            "reason": o.reason,
            "error": type(o.error).__name__ if o.error else None,
        }
        for s, o in batch.outcomes.items()
    ]
    if as_json:
        emit_json(rows)
        return
    for r in rows:
        span = f" seq {r['lo']}..{r['hi']}" if r["status"] == "committed" else ""
        console.print(f"{r['session']}: {r['status']}{span} {r['reason']}")


def _fold_due(db: str | None, options: dict[str, Any], as_json: bool) -> None:
    import asyncio

    from ..memory import AsyncMemory
    from ..worker import Worker, WorkerStats
    from .common import store_url

    async def once() -> WorkerStats:
        async with AsyncMemory(store_url(db), **options) as memory:
            return await Worker(memory, poll_interval=0.2).run(once=True)

    stats = asyncio.run(once())
    if as_json:
        emit_json(asdict(stats))
        return
    console.print(
        f"{stats.claimed} due: {stats.committed} folded, {stats.cleared} cleared, "
        f"{stats.skipped} skipped, {stats.failed} failed"
    )


COMMANDS = [sessions, show, stats, fold]
