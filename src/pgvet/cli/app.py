"""The typer app: its commands, each declared in the module of its group."""

from typing import Annotated

import typer

from pgvet import __version__
from pgvet.cli import baseline, lint, live, rules

app = typer.Typer(
    name="pgvet",
    help="Static configuration advisor and linter for PostgreSQL hosts: kernel, memory, storage and settings.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)
app.add_typer(rules.app, name="rules")
app.add_typer(baseline.app, name="baseline")
for command in (lint.facts, lint.lint, lint.fix, lint.explain, live.collect, live.check):
    app.command()(command)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"pgvet {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                          help="Show the version.")] = False,
) -> None:
    """pgvet vets a PostgreSQL host: kernel, memory, storage and PostgreSQL settings."""
