"""Entry point of the fleet test's processes (``python -m tests.fleet_proc …``).

A SIGTERM that arrives while the process is still importing is remembered here, before
anything else loads, and honoured once the worker runs (its own handler replaces this).
"""

import signal

EARLY_STOP: list[int] = []
signal.signal(signal.SIGTERM, lambda signum, frame: EARLY_STOP.append(signum))

from tests import fleet  # noqa: E402

fleet.main(EARLY_STOP)
