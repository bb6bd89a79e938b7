"""Ctrl-C: one line on stderr and exit code 130, whatever pgvet was doing (importing included)."""

import contextlib
import sys
from typing import NoReturn


class Interrupted(KeyboardInterrupt):
    """A Ctrl-C after which the command knows what it left behind (``nothing written``): said after
    "interrupted" on the same line."""

    def __init__(self, left: str) -> None:
        super().__init__(left)
        self.left = left


def interrupted_message(interrupt: BaseException | None = None) -> str:
    """``pgvet: interrupted``, and what was left when the command said so."""
    return f"pgvet: interrupted; {interrupt.left}" if isinstance(interrupt, Interrupted) else "pgvet: interrupted"


def exit_interrupted(interrupt: BaseException | None = None) -> NoReturn:
    import os
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C while leaving is no traceback either
    sys.stderr.write(interrupted_message(interrupt) + "\n")
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a closed or broken stream: nothing more to say there
            stream.flush()
    # os._exit, not sys.exit: CPython 3.11 takes an interrupt raised in code that exec() runs (dataclasses and
    # typing make methods so while modules load) for an unhandled one even once caught, and ends the process
    # by SIGINT at exit instead of with the code given.
    os._exit(130)
