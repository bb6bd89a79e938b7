"""The command line: thin. Parse options, run the pipeline, pick a reporter.

Exit codes: 0 nothing at or above --fail-on; 1 findings at or above it; 2 usage, input or rule-pack
error. Heavy modules are imported inside the commands: start-up time matters on every commit.
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Optional, ParamSpec, TypeVar

import typer

from pgvet import __version__
from pgvet.inputs.registry import KINDS
from pgvet.lint_command import comma_list, explicit_inputs, lint_options, run_lint

if TYPE_CHECKING:
    from pgvet.config import Config
    from pgvet.engine.pack import RulePack
    from pgvet.errors import InputError
    from pgvet.findings import HostError, LintResult
    from pgvet.lint import LintOptions
    from pgvet.report import Renderer
    from pgvet.snapshot.discovery import SnapshotInputs
    from pgvet.snapshot.facts import HostFacts

app = typer.Typer(
    name="pgvet",
    help="Static configuration advisor and linter for PostgreSQL hosts: kernel, memory, storage and settings.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)
rules_app = typer.Typer(help="List the rules, or test a rule pack's examples.", invoke_without_command=True)
app.add_typer(rules_app, name="rules")
baseline_app = typer.Typer(help="Record today's findings so that only new ones fail (a ratchet).", no_args_is_help=True)
app.add_typer(baseline_app, name="baseline")


P = ParamSpec("P")
R = TypeVar("R")


def reports_errors(command: Callable[P, R]) -> Callable[P, R]:
    """pgvet's own errors become one line on stderr and their exit code (2), never a traceback; Ctrl-C one line
    and 130 (typer would make it 130 without a word)."""

    @functools.wraps(command)
    def run(*args: P.args, **kwargs: P.kwargs) -> R:
        from pgvet.errors import PgvetError
        from pgvet.report import visible

        try:
            return command(*args, **kwargs)
        except PgvetError as error:
            typer.echo(visible(f"pgvet: error: {error}"), err=True)
            raise typer.Exit(error.exit_code) from None
        except KeyboardInterrupt as interrupt:
            from pgvet.interrupt import interrupted_message

            typer.echo(interrupted_message(interrupt), err=True)
            raise typer.Exit(130) from None

    return run


def _configured_pack(config: Path | None, rules: list[Path] | None) -> tuple[Config, RulePack]:
    """The configuration and the rule pack `pgvet lint` would use: the configuration's packs, then --rules; the
    configuration's parameters checked as lint checks them (a misspelt one is an error here too)."""
    from pgvet.config import load_config
    from pgvet.engine.evaluate import configure, plan_rules
    from pgvet.engine.loader import load_pack

    settings = load_config(config)
    pack = load_pack([*settings.rules, *(rules or [])])
    plan_rules(configure(pack, settings.params), settings.params)
    return settings, pack


def _load_one_host(directory: Path | None, explicit: SnapshotInputs | None = None) -> HostFacts:
    """load_host for the commands of one host (facts, explain, fix): an input error names the file as the user
    can open it (``hosts/db1/sysctl.d/10.conf:1``), not relative to the host as a fleet report does."""
    from pgvet.errors import InputError
    from pgvet.snapshot.load import load_host

    try:
        return load_host(directory, explicit)
    except InputError as error:
        raise _in_host(error, directory) from None


def _in_host(error: InputError, directory: Path | None) -> InputError:
    source = error.source
    if (directory is None or source is None or source.path.startswith("<") or os.path.isabs(source.path)
            or source.path == os.fspath(directory)):  # the directory itself, named as given (not `nope/nope`)
        return error
    from pgvet.errors import InputError
    from pgvet.provenance import Source

    return InputError(error.message, Source(os.path.normpath(os.path.join(directory, source.path)), source.line))


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


# Options naming input files, for hosts that are not laid out as a snapshot directory (inputs/registry.py).
def _input_option(kind: str) -> Any:
    return typer.Option(KINDS[kind].option, help=KINDS[kind].option_help)


SysctlOpt = Annotated[Optional[Path], _input_option("sysctl")]  # noqa: UP045
SysctlConfOpt = Annotated[Optional[list[Path]], _input_option("sysctl_conf")]  # noqa: UP045
MeminfoOpt = Annotated[Optional[Path], _input_option("meminfo")]  # noqa: UP045
LscpuOpt = Annotated[Optional[Path], _input_option("lscpu")]  # noqa: UP045
MountsOpt = Annotated[Optional[Path], _input_option("mounts")]  # noqa: UP045
SysfsOpt = Annotated[Optional[Path], _input_option("sysfs")]  # noqa: UP045
HostYamlOpt = Annotated[Optional[Path], _input_option("host_yaml")]  # noqa: UP045
ConfOpt = Annotated[Optional[Path], _input_option("postgresql_conf")]  # noqa: UP045
AutoConfOpt = Annotated[Optional[Path], _input_option("postgresql_auto_conf")]  # noqa: UP045
PgSettingsOpt = Annotated[Optional[Path], _input_option("pg_settings")]  # noqa: UP045


@app.command()
@reports_errors
def facts(
    path: Annotated[Optional[Path], typer.Argument(help="The host directory (a snapshot).")] = None,  # noqa: UP045
    output_format: Annotated[str, typer.Option("--format", "-f", help="text or json.")] = "text",
    derived: Annotated[bool, typer.Option(help="Also compute the derived facts of the rule pack.")] = True,
    rules: Annotated[Optional[list[Path]], typer.Option("--rules", help="An extra rule pack directory.")] = None,  # noqa: UP045
    config: Annotated[Optional[Path], typer.Option(  # noqa: UP045
        help="Configuration file for the rule packs and derived values' parameters (default: .pgvet.toml or "
             "pyproject.toml).")] = None,
    sysctl: SysctlOpt = None, sysctl_conf: SysctlConfOpt = None, meminfo: MeminfoOpt = None, lscpu: LscpuOpt = None,
    mounts: MountsOpt = None, sysfs: SysfsOpt = None, host_yaml: HostYamlOpt = None,
    postgresql_conf: ConfOpt = None, auto_conf: AutoConfOpt = None, pg_settings: PgSettingsOpt = None,
) -> None:
    """Show what pgvet understood of a host: every fact with its value and where it came from."""
    from pgvet.errors import UsageError

    if output_format not in ("text", "json"):
        raise UsageError(f"--format must be text or json, not {output_format!r}")
    explicit = explicit_inputs(sysctl, sysctl_conf, meminfo, lscpu, mounts, sysfs, host_yaml, postgresql_conf,
                         auto_conf, pg_settings)
    if path is None and explicit is None:
        raise UsageError("give a host directory or input files (see pgvet facts --help)")
    host = _load_one_host(path, explicit)
    if derived:
        from pgvet.engine.derived import derived_values
        from pgvet.engine.evaluate import configure

        settings, pack = _configured_pack(config, rules)  # the derived values `lint` would compute
        host.facts.update(derived_values(configure(pack, settings.params), host))
    from pgvet.report.facts import render_facts

    sys.stdout.write(render_facts(host, output_format))


def _render_outputs(result: LintResult, formats: list[str], outputs: list[Path], verbose: bool,
                    color: bool | None, text: Renderer | None = None) -> None:
    """Write each --format to its --output (or standard output); ``text`` replaces the text report."""
    from pgvet.output_file import any_private
    from pgvet.report import FORMATS, ReportOptions, default_format, destinations
    from pgvet.report.files import ReportFile

    for fmt, destination in destinations(formats or [default_format()], outputs):
        options = ReportOptions(color=False if destination is not None else color, verbose=verbose)
        rendered = (text if fmt == "text" and text is not None else FORMATS[fmt])(result, options)
        if destination is not None:
            with ReportFile(destination) as out:  # whole or not at all, as lint's reports
                out.write(rendered)
                out.private = any_private(host.host.root for host in result.hosts)
        else:
            sys.stdout.write(rendered)


@app.command()
@reports_errors
def lint(
    paths: Annotated[Optional[list[Path]], typer.Argument(  # noqa: UP045
        # not checked by typer: one host that cannot be read is reported, and the others are linted
        readable=False,
        help="Host directories (snapshots), or files inside them (each is linted with its whole host).")] = None,
    output_format: Annotated[Optional[list[str]], typer.Option(  # noqa: UP045
        "--format", "-f",
        help="text, concise, json, jsonl, sarif, github, junit, gitlab, html, summary (repeat, or a comma list; "
             "paired with --output).")] = None,
    output: Annotated[Optional[list[Path]], typer.Option(  # noqa: UP045
        "--output", "-o", help="Write the matching --format to this file (repeat).")] = None,
    select: Annotated[Optional[list[str]], typer.Option(  # noqa: UP045
        help="Only these rules: id, id prefix, name or tag (repeat, or a comma list).")] = None,
    ignore: Annotated[Optional[list[str]], typer.Option(  # noqa: UP045
        help="Not these rules: id, id prefix, name or tag (repeat, or a comma list).")] = None,
    rules: Annotated[Optional[list[Path]], typer.Option("--rules", help="An extra rule pack directory.")] = None,  # noqa: UP045
    config: Annotated[Optional[Path], typer.Option(  # noqa: UP045
        help="Configuration file (default: .pgvet.toml or pyproject.toml).")] = None,
    fail_on: Annotated[Optional[str], typer.Option(help="Lowest severity that fails: error, warning or info.")] = None,  # noqa: UP045
    exit_zero: Annotated[bool, typer.Option(help="Exit 0 even with findings (never hides exit 2).")] = False,
    allow_unreadable: Annotated[bool, typer.Option(
        "--allow-unreadable/--strict",
        help="Report a host that cannot be read without failing the run for it, as a fleet that expects gaps "
             "wants (exit 2 then only when no host could be read). --strict, the default: any host that cannot "
             "be read makes the run exit 2, the others still linted and reported.")] = False,
    jobs: Annotated[int, typer.Option(
        "--jobs", "-j", min=0,
        help="Lint hosts in this many processes (at most the CPUs usable); 0, the default: one fewer than the "
             "CPUs, the last writing the reports. A run stays in one process, which is then faster, unless each "
             "has 1000 hosts (PGVET_JOBS_MIN_HOSTS).")] = 0,
    baseline: Annotated[Optional[Path], typer.Option(  # noqa: UP045
        help="Findings recorded in this baseline file are shown as such and do not fail.")] = None,
    ignore_file: Annotated[Optional[Path], typer.Option(  # noqa: UP045
        help="Ignore file (host, rule, subject, reason, expires); default: each host's .pgvet-ignore.yaml.")] = None,
    verbose: Annotated[bool, typer.Option(
        "--verbose", "-v", help="Say which rules were not evaluated and why.")] = False,
    color: Annotated[Optional[bool], typer.Option("--color/--no-color", help="Force colour on or off.")] = None,  # noqa: UP045
    sysctl: SysctlOpt = None, sysctl_conf: SysctlConfOpt = None, meminfo: MeminfoOpt = None, lscpu: LscpuOpt = None,
    mounts: MountsOpt = None, sysfs: SysfsOpt = None, host_yaml: HostYamlOpt = None,
    postgresql_conf: ConfOpt = None, auto_conf: AutoConfOpt = None, pg_settings: PgSettingsOpt = None,
    upgrade_to: Annotated[Optional[int], typer.Option(  # noqa: UP045
        "--upgrade-to", help="Judge the PostgreSQL files as this major version would read them (an upgrade check): "
                             "removed parameters, refused values, defaults that change, shared memory.")] = None,
) -> None:
    """Lint one or many hosts and report findings with their computed values and fixes."""
    raise typer.Exit(run_lint(
        paths=paths, output_format=output_format, output=output, select=select, ignore=ignore, rules=rules,
        config=config, fail_on=fail_on, exit_zero=exit_zero, allow_unreadable=allow_unreadable, jobs=jobs,
        baseline=baseline, ignore_file=ignore_file, verbose=verbose, color=color, sysctl=sysctl,
        sysctl_conf=sysctl_conf, meminfo=meminfo, lscpu=lscpu, mounts=mounts, sysfs=sysfs, host_yaml=host_yaml,
        postgresql_conf=postgresql_conf, auto_conf=auto_conf, pg_settings=pg_settings,
        upgrade_to=upgrade_to))


@rules_app.callback()
@reports_errors
def rules_list(
    ctx: typer.Context,
    output_format: Annotated[str, typer.Option("--format", "-f", help="text, json or markdown.")] = "text",
    rules: Annotated[Optional[list[Path]], typer.Option("--rules", help="An extra rule pack directory.")] = None,  # noqa: UP045
) -> None:
    """List the rules (text, json, or the markdown rule reference)."""
    if ctx.invoked_subcommand is not None:
        return
    from pgvet.engine.loader import load_pack
    from pgvet.errors import UsageError
    from pgvet.report.rules import render_rules

    if output_format not in ("text", "json", "markdown"):
        raise UsageError(f"--format must be text, json or markdown, not {output_format!r}")
    sys.stdout.write(render_rules(load_pack(list(rules or [])), output_format))


@rules_app.command("test")
@reports_errors
def rules_test(
    directories: Annotated[list[Path], typer.Argument(help="Rule pack directories whose examples to run.")],
) -> None:
    """Run every example of the rules in a pack; exit 1 when one fails."""
    from pgvet.engine.examples import run_examples
    from pgvet.engine.loader import load_pack
    from pgvet.report import visible

    pack = load_pack(directories, builtin=True)
    own = {rule.id for rule in pack.rules if any(_is_within(rule.file, directory) for directory in directories)}
    failures = [failure for failure in run_examples(pack) if failure.rule_id in own]
    examples = sum(len(rule.examples) for rule in pack.rules if rule.id in own)
    for failure in failures:
        typer.echo(visible(str(failure)))
    typer.echo(f"{examples - len(failures)} passed, {len(failures)} failed")
    raise typer.Exit(1 if failures else 0)


def _is_within(file: str, directory: Path) -> bool:
    try:
        Path(file).resolve().relative_to(directory.resolve())
    except ValueError:
        return False
    return True


@app.command()
@reports_errors
def fix(
    path: Annotated[Path, typer.Argument(help="The host directory.")],
    write: Annotated[bool, typer.Option(help="Change each value where it takes effect (postgresql.conf, its "
                                            "includes, sysctl.d/90-postgresql.conf), keeping .bak copies; exit 1 "
                                            "when a change is left to do by hand.")] = False,
    select: Annotated[Optional[list[str]], typer.Option(  # noqa: UP045
        help="Only these rules: id, prefix, name or tag (repeat, or a comma list).")] = None,
    config: Annotated[Optional[Path], typer.Option(  # noqa: UP045
        help="Configuration file (default: .pgvet.toml or pyproject.toml).")] = None,
) -> None:
    """Print the host's target configuration as a diff (setting, current → target, rules) and the files that make
    it (sysctl.d file, postgresql.conf lines, ALTER SYSTEM)."""
    from pgvet.config import load_config
    from pgvet.errors import InputError
    from pgvet.fix.writer import fix_host, render
    from pgvet.report import visible

    # the findings `pgvet lint` gives: the configuration's rule packs, parameters, ignored rules and ignore file
    # apply (a rule the configuration ignores must not have its change written); not its baseline, a ratchet
    # of findings still to fix
    settings = load_config(config)
    options = lint_options(settings, select=select, ignore_file=settings.ignore_file)
    try:
        consolidated, outcome = fix_host(path, options, write_files=write)
    except InputError as error:
        raise _in_host(error, path) from None
    sys.stdout.write(visible(render(consolidated)))  # the values hosts hold, control characters escaped
    if outcome is not None:
        for written in outcome.written:
            typer.echo(visible(f"wrote {written}"), err=True)
        for left in outcome.left:
            typer.echo(visible(f"left: {left}"), err=True)
        if outcome.left or consolidated.notes:
            raise typer.Exit(1)


DEFAULT_BASELINE = "pgvet-baseline.json"
BaselineFileOpt = Annotated[Optional[Path], typer.Option(  # noqa: UP045
    "--output", "-o", help="The baseline file (default: the configuration's `baseline`, else pgvet-baseline.json).")]


@baseline_app.command("create")
@reports_errors
def baseline_create(
    paths: Annotated[list[Path], typer.Argument(help="Host directories.")],
    output: BaselineFileOpt = None,
    rules: Annotated[Optional[list[Path]], typer.Option("--rules", help="An extra rule pack directory.")] = None,  # noqa: UP045
    config: Annotated[Optional[Path], typer.Option(  # noqa: UP045
        help="Configuration file (default: .pgvet.toml or pyproject.toml).")] = None,
) -> None:
    """Write the current findings' fingerprints to a baseline file."""
    from pgvet.config import load_config
    from pgvet.lint import host_directories, lint
    from pgvet.suppress import baseline_document, baseline_entries

    settings = load_config(config)
    baseline = output or settings.baseline or Path(DEFAULT_BASELINE)
    given = host_directories(paths)
    result = lint(list(given.hosts), _baseline_options(settings, rules))
    _refuse_unread_hosts([*given.refused, *result.errors])
    entries = baseline_entries(result)
    _write_baseline(baseline, baseline_document(entries), given.hosts)
    found = sum(len(host.findings) for host in result.hosts)
    shared = (f" ({found} found: hosts of one name share their findings' fingerprints, one entry each; give each "
              "host its own `name:` in host.yaml)") if found > len(entries) else ""
    typer.echo(f"{len(entries)} finding{'' if len(entries) == 1 else 's'} recorded in {baseline}{shared}")


@baseline_app.command("update")
@reports_errors
def baseline_update(
    paths: Annotated[list[Path], typer.Argument(help="Host directories.")],
    output: BaselineFileOpt = None,
    rules: Annotated[Optional[list[Path]], typer.Option("--rules", help="An extra rule pack directory.")] = None,  # noqa: UP045
    config: Annotated[Optional[Path], typer.Option(  # noqa: UP045
        help="Configuration file (default: .pgvet.toml or pyproject.toml).")] = None,
) -> None:
    """Remove the entries that are fixed; never add new ones. The baseline is given as to create (-o)."""
    from pgvet.config import load_config
    from pgvet.lint import HOST_MARKERS, host_directories, lint
    from pgvet.report import visible
    from pgvet.suppress import baseline_document, baseline_entries, load_baseline

    settings = load_config(config)
    if output is None and len(paths) > 1 and paths[0].suffix == ".json" and paths[0].is_file() and (
            paths[0].name not in HOST_MARKERS):
        # the form of before, `update FILE HOSTS…`, which create did not share: still read as it was meant
        output, paths = paths[0], paths[1:]
        typer.echo(f"pgvet: notice: give the baseline with -o, as to create: pgvet baseline update HOSTS -o "
                   f"{visible(str(output))}", err=True)
    baseline = output or settings.baseline or Path(DEFAULT_BASELINE)
    recorded = load_baseline(baseline)
    given = host_directories(paths)
    result = lint(list(given.hosts), _baseline_options(settings, rules))
    _refuse_unread_hosts([*given.refused, *result.errors])
    entries = baseline_entries(result, keep=set(recorded))
    _write_baseline(baseline, baseline_document(entries), given.hosts)
    removed = len(recorded) - len(entries)
    typer.echo(f"{removed} fixed {'entry' if removed == 1 else 'entries'} removed, {len(entries)} "
               f"{'remains' if len(entries) == 1 else 'remain'} in {baseline}")


def _write_baseline(path: Path, document: str, directories: list[Path]) -> None:
    """The baseline written whole or not at all, never through a link; 0600 when the hosts are private."""
    from pgvet.output_file import any_private, write_file

    write_file(path, document.encode("utf-8", errors="backslashreplace"), private=any_private(directories))


def _baseline_options(settings: Config, rules: list[Path] | None) -> LintOptions:
    """The rules `pgvet lint` runs — the configuration's packs and parameters, then --rules — so that the findings
    of a pack of one's own are recorded too (they failed the next lint). Every finding is recorded, whatever
    select, ignore and suppressions say: a rule ignored today and selected tomorrow is not new."""
    from pgvet.lint import LintOptions

    return LintOptions(rules=[*settings.rules, *(rules or [])], params=settings.params)


def _refuse_unread_hosts(errors: list[HostError]) -> None:
    """A baseline is written only when every host was read: update would drop an unread host's entries as
    fixed (its accepted findings would fail the next run), create would leave them out without a word."""
    if not errors:
        return
    from pgvet.errors import InputError
    from pgvet.report import error_place, visible

    for error in errors:  # the file as lint shows it (hosts/a/host.yaml:2), not relative to its host
        typer.echo(visible(f"pgvet: error: {error_place(error) or error.host}: {error.message}"), err=True)
    raise InputError("the baseline is not written while a host cannot be read")


@app.command()
@reports_errors
def explain(
    rule: Annotated[str, typer.Argument(help="A rule id or name, or derived.NAME.")],
    path: Annotated[Optional[Path], typer.Argument(  # noqa: UP045
        help="A host directory (or a file in it): also show what the rule gives there and every number it "
             "read, with its source.")] = None,
    rules: Annotated[Optional[list[Path]], typer.Option("--rules", help="An extra rule pack directory.")] = None,  # noqa: UP045
    config: Annotated[Optional[Path], typer.Option(  # noqa: UP045
        help="Configuration file for the rules and their parameters (default: .pgvet.toml or pyproject.toml).")
                      ] = None,
) -> None:
    """Show what a rule checks, why, its formula, parameters and examples; on a host, its numbers there. Markdown,
    rendered for a terminal (wrapped to its width), as it is in a pipe or a file."""
    from pgvet.report.rules import explain_rule

    settings, pack = _configured_pack(config, rules)  # with or without a host: `explain OPS001` as `lint` knows it
    if path is None:
        _write_markdown(explain_rule(pack, rule, params=settings.params))
        return
    from pgvet.errors import UsageError
    from pgvet.lint import host_directories

    given = host_directories([path])
    if given.refused:
        raise UsageError(f"{path}: {given.refused[0].message}")
    [directory] = given.hosts
    if not directory.is_dir():
        raise UsageError(f"{path}: {'not a directory' if directory.exists() else 'no such file or directory'} "
                         "(a host is a directory of inputs)")
    _write_markdown(explain_rule(pack, rule, _load_one_host(directory), settings.params))


def _write_markdown(text: str) -> None:
    """Markdown on standard output: on a terminal rendered by rich, wrapped to its width (raw Markdown broke words
    at the terminal's edge), without colours under NO_COLOR; elsewhere as it is, for files and scripts. ``text``
    comes escaped (report.visible); links are not made terminal hyperlinks, whose targets a rule pack chooses."""
    if not sys.stdout.isatty():
        sys.stdout.write(text)
        return
    from rich.console import Console
    from rich.markdown import Markdown

    Console(highlight=False, emoji=False, markup=False).print(Markdown(text, hyperlinks=False))


@app.command()
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
    from pgvet.live.commands import collect_command
    from pgvet.report import visible

    path = collect_command(output, dsn, host_only=host_only, timeout=timeout)
    typer.echo(visible(str(path)))  # the default name holds the host name


@app.command()
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
    output: Annotated[Optional[list[Path]], typer.Option(  # noqa: UP045
        "--output", "-o", help="Write the matching --format to this file (repeat).")] = None,
    select: Annotated[Optional[list[str]], typer.Option(  # noqa: UP045
        help="Only these rules: id, id prefix, name or tag (repeat, or a comma list).")] = None,
    ignore: Annotated[Optional[list[str]], typer.Option(  # noqa: UP045
        help="Not these rules: id, id prefix, name or tag (repeat, or a comma list).")] = None,
    config: Annotated[Optional[Path], typer.Option(  # noqa: UP045
        help="Configuration file (default: .pgvet.toml or pyproject.toml).")] = None,
    fail_on: Annotated[Optional[str], typer.Option(help="Lowest severity that fails: error, warning or info.")] = None,  # noqa: UP045
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
    from pgvet.config import SEVERITIES, load_config
    from pgvet.errors import UsageError
    from pgvet.lint import exit_code
    from pgvet.live.check import run_check
    from pgvet.report import destinations

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
    from pgvet.report.check import render_check

    _render_outputs(outcome.result, formats, outputs, verbose, color,
                    text=lambda _result, report_options: render_check(outcome, report_options))
    code = exit_code(outcome.result, threshold)
    if exit_zero and code == 1:
        code = 0
    if outcome.server_error is not None and dsn is not None:
        # the server given could not be read: the host's report is out, and the command still fails
        typer.echo(f"pgvet: error: {outcome.server_error}", err=True)
        code = 2
    raise typer.Exit(code)


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
