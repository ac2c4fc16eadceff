"""``python -m contextfold.cli``: the same as the ``contextfold`` command."""

from . import main

main()
