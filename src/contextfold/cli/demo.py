"""``contextfold demo``: a long synthetic chat folds in front of you, offline."""

from __future__ import annotations

import click
from rich.table import Table

from ..context import build_context
from ..messages import StoredMessage
from ..policy import TokenBudget
from .common import (
    SUMMARIZERS,
    console,
    db_option,
    guard,
    make_summarizer,
    model_option,
    open_memory,
)
from .render import print_context

DEMO_SESSION = "demo"


def truncation_view(messages: list[StoredMessage], budget: int) -> str:
    """What plain truncation to ``budget`` would keep (the newest messages that fit)."""
    from ..tokens import get_counter

    ctx = build_context(counter=get_counter(), live=messages, summary_text=None, budget=budget)
    return "\n".join(m.text for m in ctx.messages)


@click.command()
@click.option(
    "--max-tokens",
    type=click.IntRange(min=256),
    default=2000,
    show_default=True,
    help="Token budget of the context.",
)
@click.option(
    "--summarizer", type=click.Choice(sorted(SUMMARIZERS)), default="extractive", show_default=True
)
@model_option
@click.option("--quiet", is_flag=True, help="Only the final table.")
@db_option
@guard
def demo(max_tokens: int, summarizer: str, model: str | None, quiet: bool, db: str | None) -> None:
    """Replay a bundled synthetic conversation (a few hundred turns with planted facts)
    through a SQLite memory, show each fold, the final context, and which planted facts
    survived — next to what plain truncation to the same budget keeps."""
    from ..demo import demo_conversation, planted_facts

    messages = demo_conversation()
    with open_memory(
        db, summarizer=make_summarizer(summarizer, model), policy=TokenBudget(max_tokens)
    ) as memory:
        memory.delete(DEMO_SESSION)
        console.print(
            f"[bold]contextfold demo[/]: {len(messages)} messages, budget "
            f"{max_tokens} tokens, {model or summarizer} summarizer, "
            f"store {memory.store!r}"
        )
        n = 0
        for message in messages:
            outcome = memory.add(DEMO_SESSION, message).fold
            if outcome is None or quiet:
                continue
            n += 1
            if outcome.status == "committed" and outcome.summary is not None:
                console.print(
                    f"  fold {n:>2}: seq {outcome.lo:>3}..{outcome.hi:<3} "
                    f"({outcome.messages_folded} msgs, {outcome.tokens_folded} tok) "
                    f"→ summary {outcome.summary.tokens} tok, {outcome.latency_ms:.0f} ms"
                )
            else:
                console.print(f"  fold {n:>2}: [red]{outcome.status}[/] {outcome.error!r}")
        ctx = memory.context(DEMO_SESSION)
        everything = memory.messages(DEMO_SESSION)
    if not quiet:
        console.rule("final context")
        print_context(ctx)
    counter_total = sum(m.tokens for m in everything)
    context_text = "\n".join(m.text for m in ctx.messages).lower()
    truncated = truncation_view(everything, max_tokens).lower()
    table = Table("planted fact", "looking for", "contextfold", "truncation")
    kept = kept_trunc = 0
    facts = planted_facts()
    for fact, needle in facts:
        hit, hit_trunc = needle.lower() in context_text, needle.lower() in truncated
        kept += hit
        kept_trunc += hit_trunc
        table.add_row(
            fact,
            needle,
            "[green]kept[/]" if hit else "[red]lost[/]",
            "[green]kept[/]" if hit_trunc else "[red]lost[/]",
        )
    console.rule("planted facts")
    console.print(table)
    console.print(
        f"[bold]{kept}/{len(facts)}[/] planted facts survive in a {ctx.tokens}-token context "
        f"(budget {max_tokens}) built from {counter_total} tokens of conversation; plain "
        f"truncation keeps [bold]{kept_trunc}/{len(facts)}[/]."
    )
    console.print(
        f"[dim]Look again: contextfold show {DEMO_SESSION}{'' if db is None else f' --db {db}'}[/]"
    )


COMMANDS = [demo]
