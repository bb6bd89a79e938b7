"""Stopping: Ctrl-C (SIGINT), SIGTERM and SIGHUP end pgvet with one line on stderr and exit code 128 + the signal
(130, 143, 129), whatever pgvet was doing (importing included), after the cleanup of what it was doing: report
files and baselines half-written are removed, the worker processes of ``lint --jobs`` ended."""

# _signal (signal's C half, without stubs), not signal, at every start: importing signal builds its enums, which
# a lint's start pays for nowhere else
import _signal  # type: ignore[import-not-found]
import contextlib
import sys
from types import FrameType
from typing import NoReturn

STOP_SIGNALS = (_signal.SIGTERM, _signal.SIGHUP)

class Interrupted(KeyboardInterrupt):
    """A Ctrl-C after which the command knows what it left behind (``nothing written``): said after
    "interrupted" on the same line."""

    def __init__(self, left: str) -> None:
        super().__init__(left)
        self.left = left


def interrupted_message(interrupt: BaseException | None = None) -> str:
    """``pgvet: interrupted``, and what was left when the command said so."""
    return f"pgvet: interrupted; {interrupt.left}" if isinstance(interrupt, Interrupted) else "pgvet: interrupted"


class Stopped(BaseException):
    """SIGTERM or SIGHUP, raised where the program was, as Python raises KeyboardInterrupt for SIGINT: a
    BaseException, which the ``except Exception`` that keeps a fleet going when one host fails lets through."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _raise_stopped(signum: int, _frame: FrameType | None) -> None:
    raise Stopped(signum)


def stop_on_signals() -> None:
    """SIGTERM and SIGHUP raise Stopped, unless they are ignored (nohup): then they stay so. A stop raised where
    Python cannot pass it on ends pgvet there (_stop_where_raised)."""
    for signum in STOP_SIGNALS:
        if _signal.getsignal(signum) == _signal.SIG_DFL:
            _signal.signal(signum, _raise_stopped)
    sys.unraisablehook = _stop_where_raised


def _stop_where_raised(unraisable: "sys.UnraisableHookArgs") -> None:  # a type of typeshed only
    """A Ctrl-C or a stop raised where Python cannot pass it on — a finaliser, or a C library calling back into
    Python (pydantic-core building typer's validators while pgvet starts) — ends pgvet there, as any other
    (one line, 128 + the signal), rather than being printed as an ignored exception with its traceback while the
    program goes on. Raising the signal again would not do: Python would raise it inside this hook, which ignores
    it. What the command had begun is not cleaned up (an output file's temporary copy may be left). Anything else
    is reported as Python reports it."""
    error = unraisable.exc_value
    if isinstance(error, Stopped):
        exit_stopped(error.signum)
    if isinstance(error, KeyboardInterrupt):
        exit_stopped(interrupt=error)
    sys.__unraisablehook__(unraisable)


def exit_stopped(signum: int = _signal.SIGINT, interrupt: BaseException | None = None) -> NoReturn:
    """One line (what was left, for a Ctrl-C whose command said so) and exit code 128 + the signal."""
    import os
    import signal

    for other in (signal.SIGINT, *STOP_SIGNALS):  # a second signal while leaving is no traceback either
        signal.signal(other, signal.SIG_IGN)
    said = interrupted_message(interrupt) if signum == signal.SIGINT else (
        f"pgvet: stopped by {signal.Signals(signum).name}")
    sys.stderr.write(f"{said}\n")
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a closed or broken stream: nothing more to say there
            stream.flush()
    # os._exit, not sys.exit: CPython 3.11 takes an interrupt raised in code that exec() runs (dataclasses and
    # typing make methods so while modules load) for an unhandled one even once caught, and ends the process
    # by SIGINT at exit instead of with the code given.
    os._exit(128 + signum)
