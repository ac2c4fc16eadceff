"""The ``contextfold`` command line.

Every command takes ``--db PATH``; listings take ``--json``. ``CONTEXTFOLD_HOME`` sets
where the default database lives. Commands live in one module each and register here.
"""

from __future__ import annotations

import click

from .. import __version__


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="contextfold")
def cli() -> None:
    """Bounded LLM conversation memory.

    \b
    Start here:
      contextfold demo                       watch a long chat fold, offline
      contextfold replay chat.jsonl --max-tokens 4000
      contextfold sessions                   what is stored
      contextfold show SESSION               its summary and live messages
      contextfold search SESSION "ferry"     find old messages by their words
      contextfold stats                      fold ledger totals
      contextfold keys create --tenant demo  an API key for the HTTP service
      contextfold serve                      the HTTP service on 127.0.0.1:8765
    """


def _register() -> None:
    from . import demo, inspect, replay, search, serve, worker

    for module in (demo, replay, inspect, search, worker, serve):
        for command in module.COMMANDS:
            cli.add_command(command)


_register()


def main() -> None:
    cli()
