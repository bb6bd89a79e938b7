"""A progress bar for a long lint on a terminal: rich's, on standard error, gone when the run ends. Never in a pipe,
a file or a CI log (not a terminal, ``TERM=dumb``, or ``CI`` set), and not while a report is written to the same
terminal as the run goes (it would tear the bar): only the reports that write when the run ends go there with it."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager

PROGRESS_HOSTS = 100  # fewer hosts are linted in about a second: no bar
# Formats that write nothing to their output before the run ends (they hold it: Spool, or only counts)
HELD_UNTIL_THE_END = frozenset({"text", "concise", "html", "summary"})


def wanted(hosts: int, formats_on_stdout: list[str]) -> bool:
    """Whether a run of ``hosts`` hosts shows a bar, its reports on standard output being ``formats_on_stdout``."""
    if hosts < PROGRESS_HOSTS or not sys.stderr.isatty():
        return False
    if os.environ.get("TERM") == "dumb" or os.environ.get("CI"):
        return False
    return not (sys.stdout.isatty() and any(fmt not in HELD_UNTIL_THE_END for fmt in formats_on_stdout))


@contextmanager
def progress_bar(hosts: int, formats_on_stdout: list[str]) -> Iterator[Callable[[], None]]:
    """A function to call once a host is linted: it moves the bar, when there is one (``wanted``); else it does
    nothing. The bar is removed when the block ends, also on an error or Ctrl-C."""
    if not wanted(hosts, formats_on_stdout):
        yield lambda: None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    columns = (TextColumn("linting"), BarColumn(), MofNCompleteColumn(), TextColumn("hosts"), TimeRemainingColumn())
    with Progress(*columns, console=Console(stderr=True), transient=True, redirect_stdout=False,
                  redirect_stderr=False) as bar:
        task = bar.add_task("lint", total=hosts)
        yield lambda: bar.advance(task)
