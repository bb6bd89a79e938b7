"""How a command says pgvet's errors and a Ctrl-C: one line on stderr and the exit code, never a traceback."""

import functools
from collections.abc import Callable
from typing import ParamSpec, TypeVar

import typer

from pgvet.errors import PgvetError
from pgvet.interrupt import interrupted_message
from pgvet.report import one_line

P = ParamSpec("P")
R = TypeVar("R")


def reports_errors(command: Callable[P, R]) -> Callable[P, R]:
    """pgvet's own errors become one line on stderr and their exit code (2), never a traceback; Ctrl-C one line
    and 130 (typer would make it 130 without a word)."""

    @functools.wraps(command)
    def run(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return command(*args, **kwargs)
        except PgvetError as error:
            typer.echo(one_line(f"pgvet: error: {error}"), err=True)
            raise typer.Exit(error.exit_code) from None
        except KeyboardInterrupt as interrupt:
            typer.echo(interrupted_message(interrupt), err=True)
            raise typer.Exit(130) from None

    return run
