"""`pgvet baseline`: record today's findings so that only new ones fail (a ratchet)."""

import os
from pathlib import Path
from typing import Annotated, Optional

import typer

from pgvet.cli.errors import reports_errors
from pgvet.cli.options import ConfigOpt, RulePacksOpt
from pgvet.errors import InputError, UsageError
from pgvet.findings import HostError
from pgvet.output_file import any_private, write_file
from pgvet.paths import link_out_of_repository, root_within
from pgvet.provenance import Source
from pgvet.report import error_place, one_line, visible
from pgvet.run.config import Config, load_config
from pgvet.run.lint import lint
from pgvet.run.options import LintOptions
from pgvet.run.paths import HOST_MARKERS, host_directories
from pgvet.run.suppress import DEFAULT_BASELINE, baseline_document, baseline_entries, load_baseline, updated_baseline

app = typer.Typer(help="Record today's findings so that only new ones fail (a ratchet).", no_args_is_help=True)

BaselineFileOpt = Annotated[Optional[Path], typer.Option(  # noqa: UP045
    "--output", "-o", help="The baseline file (default: the configuration's `baseline`, else pgvet-baseline.json).")]


@app.command("create")
@reports_errors
def baseline_create(
    paths: Annotated[list[Path], typer.Argument(help="Host directories.")],
    output: BaselineFileOpt = None,
    rules: RulePacksOpt = None,
    config: ConfigOpt = None,
) -> None:
    """Write the current findings' fingerprints to a baseline file."""
    settings = load_config(config)
    baseline = output or settings.baseline or Path(DEFAULT_BASELINE)
    if output is None and settings.baseline is not None and settings.repository is not None:
        _refuse_replacing_what_is_no_baseline(baseline, settings)
    given = host_directories(paths)
    result = lint(list(given.hosts), _baseline_options(settings, rules))
    _refuse_unread_hosts([*given.refused, *result.errors])
    entries = baseline_entries(result)
    _write_baseline(baseline, baseline_document(entries), given.hosts)
    found = sum(len(host.findings) for host in result.hosts)
    shared = (f" ({found} found: hosts of one name share their findings' fingerprints, one entry each; give each "
              "host its own `name:` in host.yaml)") if found > len(entries) else ""
    typer.echo(f"{len(entries)} finding{'' if len(entries) == 1 else 's'} recorded in "
               f"{one_line(str(baseline))}{shared}")


@app.command("update")
@reports_errors
def baseline_update(
    paths: Annotated[list[Path], typer.Argument(help="Host directories.")],
    output: BaselineFileOpt = None,
    rules: RulePacksOpt = None,
    config: ConfigOpt = None,
) -> None:
    """Remove the entries that are fixed; never add new ones. The baseline is given as to create (-o)."""
    settings = load_config(config)
    if output is None and len(paths) > 1 and paths[0].suffix == ".json" and paths[0].is_file() and (
            paths[0].name not in HOST_MARKERS):
        # the form of before, `update FILE HOSTS…`, which create did not share: still read as it was meant
        output, paths = paths[0], paths[1:]
        typer.echo(f"pgvet: notice: give the baseline with -o, as to create: pgvet baseline update HOSTS -o "
                   f"{visible(str(output))}", err=True)
    baseline = output or settings.baseline or Path(DEFAULT_BASELINE)
    out = link_out_of_repository(DEFAULT_BASELINE) if output is None and settings.baseline is None else None
    if out is not None:  # the repository's `pgvet-baseline.json -> /root/x.json`, read as root: named by no one
        raise UsageError(f"{DEFAULT_BASELINE}: a symbolic link that leads out of its repository {out}: not read; "
                         "give the baseline with -o")
    recorded = load_baseline(baseline, root_within(baseline, settings.repository) if output is None else None)
    given = host_directories(paths)
    result = lint(list(given.hosts), _baseline_options(settings, rules))
    _refuse_unread_hosts([*given.refused, *result.errors])
    entries = updated_baseline(recorded, result)
    _write_baseline(baseline, baseline_document(entries), given.hosts)
    removed = len(recorded) - len(entries)
    typer.echo(f"{removed} fixed {'entry' if removed == 1 else 'entries'} removed, {len(entries)} "
               f"{'remains' if len(entries) == 1 else 'remain'} in {one_line(str(baseline))}")  # a configuration's path


def _refuse_replacing_what_is_no_baseline(path: Path, settings: Config) -> None:
    """A found configuration names a file in its repository: one there already must be a baseline. Its checkout
    holds the user's files too (a virtual environment, an editor's settings), which the repository does not
    choose: `baseline = ".venv/bin/activate"` had the shell the user sources it in run the JSON written over it."""
    if not os.path.lexists(path):
        return
    try:
        load_baseline(path, root_within(path, settings.repository))
    except InputError:
        raise UsageError(f"not a pgvet baseline, and the configuration {settings.path} names it: not replaced (give "
                         "it with -o to replace it)", Source(str(path))) from None


def _write_baseline(path: Path, document: str, directories: list[Path]) -> None:
    """The baseline written whole or not at all, never through a link; 0600 when the hosts are private."""
    write_file(path, document.encode("utf-8", errors="backslashreplace"), private=any_private(directories))


def _baseline_options(settings: Config, rules: list[Path] | None) -> LintOptions:
    """The rules `pgvet lint` runs — the configuration's packs and parameters, then --rules — so that the findings
    of a pack of one's own are recorded too (they failed the next lint). Every finding is recorded, whatever
    select, ignore and suppressions say: a rule ignored today and selected tomorrow is not new."""
    return LintOptions(rules=[*settings.rules, *(rules or [])], params=settings.params, config_path=settings.path,
                       repository=settings.repository)


def _refuse_unread_hosts(errors: list[HostError]) -> None:
    """A baseline is written only when every host was read: update would drop an unread host's entries as
    fixed (its accepted findings would fail the next run), create would leave them out without a word."""
    if not errors:
        return

    for error in errors:  # the file as lint shows it (hosts/a/host.yaml:2), not relative to its host
        typer.echo(one_line(f"pgvet: error: {error_place(error) or error.host}: {error.message}"), err=True)
    raise InputError("the baseline is not written while a host cannot be read")
