"""``contextfold search``: find old messages of a session by their words."""

from __future__ import annotations

import click
from rich.table import Table

from .common import console, db_option, emit_json, fail, guard, open_memory


@click.command()
@click.argument("session_id")
@click.argument("query")
@click.option("--limit", type=click.IntRange(1, 1000), default=20, show_default=True,
              help="Most hits.")
@click.option("--folded/--live", "folded", default=None,
              help="Only folded (summarized) messages, or only live ones (default: both).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@db_option
@guard
def search(
    session_id: str, query: str, limit: int, folded: bool | None, as_json: bool, db: str | None
) -> None:
    """Search a session's stored messages, best first — folded ones too.

    Any word of QUERY matches (common words like "the" or "when" are skipped); case and
    accents do not matter. For example:

    \b
      contextfold search my-chat "when is the ferry to Bodrum?"
      contextfold search my-chat invoice --folded --json
    """
    with open_memory(db) as memory:
        if memory.stats(session_id) is None:
            fail(f"no session {session_id!r} in this database (see `contextfold sessions`)")
        hits = memory.search(session_id, query, limit=limit, folded=folded)
    if as_json:
        emit_json([
            {"seq": h.seq, "role": h.role,
             "timestamp": h.timestamp.isoformat() if h.timestamp else None,
             "snippet": h.snippet, "score": h.score, "folded": h.folded, "matched": h.matched}
            for h in hits
        ])
        return
    if not hits:
        console.print(f"[dim]nothing in {session_id!r} matches {query!r}[/]")
        return
    table = Table("seq", "role", "date", "score", "snippet")
    for h in hits:
        table.add_row(
            str(h.seq),
            h.role + (" [dim](folded)[/]" if h.folded else ""),
            h.timestamp.strftime("%Y-%m-%d %H:%M") if h.timestamp else "",
            f"{h.score:.3g}",
            h.snippet,
        )
    console.print(table)


COMMANDS = [search]
