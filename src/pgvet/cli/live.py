"""The commands that read this host and a running server: collect, check. Their modules (pgvet.live, the check
report) are imported by the command that runs them: every other command's start would pay for them."""

import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from pgvet.cli.errors import reports_errors
from pgvet.cli.options import ConfigOpt, FailOnOpt, IgnoreOpt, OutputsOpt, SelectOpt
from pgvet.errors import UsageError
from pgvet.findings import LintResult
from pgvet.output_file import any_private
from pgvet.report import FORMATS, Renderer, default_format, destinations, one_line, report_options, visible
from pgvet.report.files import ReportFile
from pgvet.run.config import SEVERITIES, load_config
from pgvet.run.lint import exit_code
from pgvet.run.options import comma_list, lint_options


@reports_errors
def collect(
    output: Annotated[Optional[Path], typer.Option(  # noqa: UP045
        "--output", "-o", help="Snapshot directory to write (default: ./pgvet-snapshot-HOST-TIME).")] = None,
    dsn: Annotated[Optional[str], typer.Option(  # noqa: UP045
        help="Connection string or URI of the server to read (libpq conventions: PG* variables, "
             "service files and .pgpass apply). Without it, libpq's defaults choose the server; "
             "--host-only reads the host alone.")] = None,
    host_only: Annotated[bool, typer.Option(help="Read the host only, even when PG* variables are set.")] = False,
    timeout: Annotated[float, typer.Option(
        help="Seconds to connect (libpq connect_timeout) and for each query; the whole reading of the server "
             "is limited to six times that.")] = 10,
) -> None:
    """Read this host (and a live server, read-only) into a snapshot directory that `pgvet lint` reads."""
    # here, not at the top: the live modules are collect's and check's alone, and lint's start would pay for them
    from pgvet.live.commands import collect_command

    _warn_of_a_password_in(dsn)
    path = collect_command(output, dsn, host_only=host_only, timeout=timeout)
    typer.echo(visible(str(path)))  # the default name holds the host name


@reports_errors
def check(
    dsn: Annotated[Optional[str], typer.Option(  # noqa: UP045
        help="Connection string or URI of the server (libpq conventions: PG* variables, service files and "
             ".pgpass apply).")] = None,
    answers: Annotated[Optional[Path], typer.Option(  # noqa: UP045
        help="host.yaml with what cannot be detected (storage, raid, workload, dedicated…); not asked again.")] = None,
    no_input: Annotated[bool, typer.Option("--no-input", help="Never ask a question (also when not on a terminal).")
                        ] = False,
    snapshot: Annotated[Optional[Path], typer.Option(  # noqa: UP045
        "--snapshot", "-s", help="Keep the collected snapshot in this new directory (default: a temporary one).")
    ] = None,
    output_format: Annotated[Optional[list[str]], typer.Option(  # noqa: UP045
        "--format", "-f", help="text (the sectioned check report), or any format of pgvet lint (repeat, or a comma "
                                "list; paired with --output).")
    ] = None,
    output: OutputsOpt = None,
    select: SelectOpt = None,
    ignore: IgnoreOpt = None,
    config: ConfigOpt = None,
    fail_on: FailOnOpt = None,
    exit_zero: Annotated[bool, typer.Option(help="Exit 0 even with findings (never hides exit 2).")] = False,
    timeout: Annotated[float, typer.Option(
        help="Seconds to connect (libpq connect_timeout) and for each query; the whole reading of the server "
             "is limited to six times that.")] = 10,
    verbose: Annotated[bool, typer.Option(
        "--verbose", "-v", help="Say which rules were not evaluated and why.")] = False,
    color: Annotated[Optional[bool], typer.Option("--color/--no-color", help="Force colour on or off.")] = None,  # noqa: UP045
) -> None:
    """Check this host and a running server, postgresqltuner-style: every check with its value and verdict.

    Without a server to read, the host is checked and the report says what was not (with --dsn, exit code 2)."""
    from pgvet.live.check import run_check
    from pgvet.report.check import render_check

    _warn_of_a_password_in(dsn)
    settings = load_config(config)
    threshold = fail_on or settings.fail_on
    if threshold not in SEVERITIES:
        raise UsageError(f"--fail-on must be one of {', '.join(SEVERITIES)}")
    formats, outputs = comma_list(output_format) or ["text"], list(output or [])
    destinations(formats, outputs)  # a bad --format fails now, not after a collection (and its --snapshot)
    interactive = not no_input and sys.stdin.isatty() and sys.stderr.isatty()
    options = lint_options(settings, select=select, ignore=ignore)
    outcome = run_check(dsn, options, snapshot=snapshot, answers_file=answers,
                        prompt=_prompt if interactive else None, confirm_save=_confirm_save if interactive else None,
                        timeout=timeout)
    render_outputs(outcome.result, formats, outputs, verbose, color,
                   text=lambda _result, report_options: render_check(outcome, report_options))
    code = exit_code(outcome.result, threshold)
    if exit_zero and code == 1:
        code = 0
    if outcome.server_error is not None and dsn is not None:
        # the server given could not be read: the host's report is out, and the command still fails
        typer.echo(one_line(f"pgvet: error: {outcome.server_error}"), err=True)  # the server's own words
        code = 2
    raise typer.Exit(code)


def _warn_of_a_password_in(dsn: str | None) -> None:
    """A password on the command line is in the process list, which every user of the machine reads (``ps``), for as
    long as pgvet runs (and sudo or a shell's ``timeout`` above it): said, with where it belongs instead."""
    from pgvet.live.redact import secrets_in

    if dsn and secrets_in(dsn):
        typer.echo("pgvet: notice: --dsn holds a password (or another value libpq keeps secret): every user of this "
                   "machine can read it in the process list while pgvet runs; put it in ~/.pgpass (or PGPASSFILE) "
                   "or PGPASSWORD instead", err=True)


def render_outputs(result: LintResult, formats: list[str], outputs: list[Path], verbose: bool,
                   color: bool | None, text: Renderer | None = None) -> None:
    """Write each --format to its --output (or standard output); ``text`` replaces the text report."""
    for fmt, destination in destinations(formats or [default_format()], outputs):
        options = report_options(fmt, color=False if destination is not None else color, verbose=verbose)
        rendered = (text if fmt == "text" and text is not None else FORMATS[fmt])(result, options)
        if destination is not None:
            with ReportFile(destination) as out:  # whole or not at all, as lint's reports
                out.write(rendered)
                out.private = any_private(host.host_facts.root for host in result.hosts)
        else:
            sys.stdout.write(rendered)


def _prompt(question: str, choices: list[str], default: str) -> str:
    """Ask on standard error until the answer is one of ``choices`` (or, without choices, a whole number)."""
    shown = f"{question} ({'/'.join(choices)})" if choices else question
    while True:
        answer = str(typer.prompt(shown, default=default, err=True)).strip().lower()
        if (answer in choices) if choices else (answer.isdigit() and 1 <= int(answer) <= 1000):
            return answer
        typer.echo(f"  answer one of {', '.join(choices)}" if choices else "  answer a whole number", err=True)


def _confirm_save() -> Path | None:
    if not typer.confirm("Save these answers as a host.yaml for next time?", default=True, err=True):
        return None
    path = Path(typer.prompt("File", default="host.yaml", err=True))
    if path.exists() and not typer.confirm(f"{path} exists: replace it?", default=False, err=True):
        return None
    return path

