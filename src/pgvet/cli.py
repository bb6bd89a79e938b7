"""The command line: thin. Parse options, run the pipeline, pick a reporter."""

from __future__ import annotations

import sys

import typer

from pgvet import __version__

app = typer.Typer(
    name="pgvet",
    help="Static configuration advisor and linter for PostgreSQL hosts.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"pgvet {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="Show the version."),
) -> None:
    """pgvet vets a PostgreSQL host: kernel, memory, storage and PostgreSQL settings."""


def main() -> None:
    from pgvet.errors import PgvetError

    try:
        app()
    except PgvetError as error:
        typer.echo(f"pgvet: error: {error}", err=True)
        sys.exit(error.exit_code)
