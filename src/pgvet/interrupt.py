"""Ctrl-C: one line on stderr and exit code 130, whatever pgvet was doing (importing included)."""

import contextlib
import sys
from typing import NoReturn


def exit_interrupted() -> NoReturn:
    import os
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C while leaving is no traceback either
    sys.stderr.write("pgvet: interrupted\n")
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a closed or broken stream: nothing more to say there
            stream.flush()
    # os._exit, not sys.exit: CPython 3.11 takes an interrupt raised in code that exec() runs (dataclasses and
    # typing make methods so while modules load) for an unhandled one even once caught, and ends the process
    # by SIGINT at exit instead of with the code given.
    os._exit(130)
