"""The commands of one host or a fleet of them, read from their files: lint, fix, facts, explain."""

import os
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from pgvet.cli.errors import reports_errors
from pgvet.cli.input_options import (
    AutoConfOpt,
    ConfOpt,
    HostYamlOpt,
    LscpuOpt,
    MeminfoOpt,
    MountsOpt,
    PgSettingsOpt,
    SysctlConfOpt,
    SysctlOpt,
    SysfsOpt,
    explicit_inputs,
)
from pgvet.cli.options import ConfigOpt, FailOnOpt, IgnoreOpt, OutputsOpt, RulePacksOpt, SelectOpt
from pgvet.engine.derived import derived_values
from pgvet.engine.evaluate import configure
from pgvet.engine.loader import load_pack
from pgvet.engine.pack import RulePack
from pgvet.errors import InputError, UsageError
from pgvet.paths import is_inside
from pgvet.provenance import Source
from pgvet.report import one_line, without_commands
from pgvet.report.facts import render_facts
from pgvet.report.rules import explain_rule
from pgvet.run.config import Config, configured_rules, load_config
from pgvet.run.lint import run_lint
from pgvet.run.options import RunOptions, comma_list, lint_options
from pgvet.run.paths import host_directories
from pgvet.snapshot.discovery import SnapshotInputs
from pgvet.snapshot.facts import HostFacts
from pgvet.snapshot.load import chosen_host, load_hosts

# The host of a directory whose configuration documents declare several (a chart's primary and read replicas).
HostOpt = Annotated[Optional[str], typer.Option(  # noqa: UP045
    "--host", help="Of a directory whose documents declare several hosts, the one to work on (its name as the "
                   "reports show it).")]


@reports_errors
def facts(
    path: Annotated[Optional[Path], typer.Argument(help="The host directory (a snapshot).")] = None,  # noqa: UP045
    output_format: Annotated[str, typer.Option("--format", "-f", help="text or json.")] = "text",
    derived: Annotated[bool, typer.Option(help="Also compute the derived facts of the rule pack.")] = True,
    rules: RulePacksOpt = None,
    config: ConfigOpt = None,
    sysctl: SysctlOpt = None, sysctl_conf: SysctlConfOpt = None, meminfo: MeminfoOpt = None, lscpu: LscpuOpt = None,
    mounts: MountsOpt = None, sysfs: SysfsOpt = None, host_yaml: HostYamlOpt = None,
    postgresql_conf: ConfOpt = None, auto_conf: AutoConfOpt = None, pg_settings: PgSettingsOpt = None,
    host_name: HostOpt = None,
) -> None:
    """Show what pgvet understood of a host: every fact with its value and where it came from."""
    if output_format not in ("text", "json"):
        raise UsageError(f"--format must be text or json, not {output_format!r}")
    explicit = explicit_inputs(sysctl, sysctl_conf, meminfo, lscpu, mounts, sysfs, host_yaml, postgresql_conf,
                         auto_conf, pg_settings)
    if path is None and explicit is None:
        raise UsageError("give a host directory or input files (see pgvet facts --help)")
    host = _load_one_host(path, explicit, host_name)
    if derived:
        settings, pack = _configured_pack(config, rules)  # the derived values `lint` would compute
        host.facts.update(derived_values(configure(pack, settings.params), host))

    sys.stdout.write(render_facts(host, output_format))


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
    output: OutputsOpt = None,
    select: SelectOpt = None,
    ignore: IgnoreOpt = None,
    rules: RulePacksOpt = None,
    config: ConfigOpt = None,
    fail_on: FailOnOpt = None,
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
    raise typer.Exit(run_lint(RunOptions(
        paths=list(paths or []), formats=comma_list(output_format), outputs=list(output or []),
        select=list(select or []), ignore=list(ignore or []), rules=list(rules or []), config=config, fail_on=fail_on,
        exit_zero=exit_zero, allow_unreadable=allow_unreadable, jobs=jobs, baseline=baseline, ignore_file=ignore_file,
        verbose=verbose, color=color, upgrade_to=upgrade_to,
        explicit=explicit_inputs(sysctl, sysctl_conf, meminfo, lscpu, mounts, sysfs, host_yaml, postgresql_conf,
                                 auto_conf, pg_settings))))


@reports_errors
def fix(
    path: Annotated[Path, typer.Argument(help="The host directory.")],
    write: Annotated[bool, typer.Option(help="Change each value where it takes effect (postgresql.conf, its "
                                            "includes, sysctl.d/90-postgresql.conf), keeping .bak copies; exit 1 "
                                            "when a change is left to do by hand.")] = False,
    select: SelectOpt = None,
    config: ConfigOpt = None,
    host_name: HostOpt = None,
) -> None:
    """Print the host's target configuration as a diff (setting, current → target, rules) and the files that make
    it (sysctl.d file, postgresql.conf lines, ALTER SYSTEM)."""
    from pgvet.fix.writer import fix_host, render  # the fix writer's modules: no other command's start pays for them

    # the findings `pgvet lint` gives: the configuration's rule packs, parameters, ignored rules and ignore file
    # apply (a rule the configuration ignores must not have its change written); not its baseline, a ratchet
    # of findings still to fix
    settings = load_config(config)
    if write:
        _refuse_a_repositorys_packs_outside_it(path, settings)
    options = lint_options(settings, select=select, ignore_file=settings.ignore_file)
    try:
        consolidated, outcome = fix_host(path, options, write_files=write, host=host_name)
    except InputError as error:
        raise _in_host(error, path) from None
    sys.stdout.write(without_commands(render(consolidated)))  # what the inputs put in it escaped there, once
    if outcome is not None:
        for written in outcome.written:  # one line each: a file's name may hold a line feed
            typer.echo(one_line(f"wrote {written}"), err=True)
        for left in outcome.left:
            typer.echo(one_line(f"left: {left}"), err=True)
        if outcome.left or consolidated.notes:
            raise typer.Exit(1)


def _refuse_a_repositorys_packs_outside_it(path: Path, settings: Config) -> None:
    """A configuration found by itself is its repository's: the values its rule packs and parameters compute are
    written into that repository's hosts, not into a host elsewhere (`fix --write /etc/postgresql/16/main` run as
    root from a cloned repository wrote its pack's `archive_command = 'curl … | sh'` there)."""
    if settings.repository is None or not (settings.rules or settings.params):
        return
    repository = os.path.realpath(settings.repository)
    host = os.path.realpath(path)
    if host != repository and not is_inside(host, repository):
        raise UsageError(f"outside the repository {settings.repository}, whose configuration {settings.path} names "
                         "rule packs or parameters: fix --write applies them to the repository's own hosts only "
                         "(give it with --config to apply them here)", Source(str(path)))


@reports_errors
def explain(
    rule: Annotated[str, typer.Argument(help="A rule id or name, or derived.NAME.")],
    path: Annotated[Optional[Path], typer.Argument(  # noqa: UP045
        help="A host directory (or a file in it): also show what the rule gives there and every number it "
             "read, with its source.")] = None,
    rules: RulePacksOpt = None,
    config: ConfigOpt = None,
    host_name: HostOpt = None,
) -> None:
    """Show what a rule checks, why, its formula, parameters and examples; on a host, its numbers there. Markdown,
    rendered for a terminal (wrapped to its width), as it is in a pipe or a file."""
    settings, pack = _configured_pack(config, rules)  # with or without a host: `explain OPS001` as `lint` knows it
    if path is None:
        _write_markdown(explain_rule(pack, rule, params=settings.params))
        return

    given = host_directories([path])
    if given.refused:
        raise UsageError(f"{path}: {given.refused[0].message}")
    [directory] = given.hosts
    if not directory.is_dir():
        raise UsageError(f"{path}: {'not a directory' if directory.exists() else 'no such file or directory'} "
                         "(a host is a directory of inputs)")
    _write_markdown(explain_rule(pack, rule, _load_one_host(directory, host=host_name), settings.params))


def _write_markdown(text: str) -> None:
    """Markdown on standard output: on a terminal rendered by rich, wrapped to its width (raw Markdown broke words
    at the terminal's edge), without colours under NO_COLOR; elsewhere as it is, for files and scripts. ``text``
    comes escaped (report.visible); links are not made terminal hyperlinks, whose targets a rule pack chooses."""
    if not sys.stdout.isatty():
        sys.stdout.write(without_commands(text))  # a rule pack's line starts no workflow command
        return
    from rich.console import Console
    from rich.markdown import Markdown  # rich's Markdown, for explain on a terminal only: heavy to import

    Console(highlight=False, emoji=False, markup=False).print(Markdown(text, hyperlinks=False))


def _configured_pack(config: Path | None, rules: list[Path] | None) -> tuple[Config, RulePack]:
    """The configuration and the rule pack `pgvet lint` would use: the configuration's packs, then --rules; the
    configuration's parameters checked as lint checks them (a misspelt one is an error here too)."""
    settings = load_config(config)
    pack = load_pack([*settings.rules, *(rules or [])], repository=settings.repository)
    configured_rules(pack, settings.params, settings.path)
    return settings, pack


def _load_one_host(directory: Path | None, explicit: SnapshotInputs | None = None, host: str | None = None
                   ) -> HostFacts:
    """The host of the commands of one host (facts, explain): an input error names the file as the user can open
    it (``hosts/db1/sysctl.d/10.conf:1``), not relative to the host as a fleet report does. Of a directory whose
    configuration documents declare several hosts, the one ``host`` names (chosen_host)."""
    try:
        hosts = load_hosts(directory, explicit)
    except InputError as error:
        raise _in_host(error, directory) from None
    return hosts[chosen_host(directory, [each.name for each in hosts], host)]


def _in_host(error: InputError, directory: Path | None) -> InputError:
    """The error with its file named from the current directory (``hosts/db1/host.yaml``)."""
    source = error.source
    if (directory is None or source is None or source.path.startswith("<") or os.path.isabs(source.path)
            or source.path == os.fspath(directory)):  # the directory itself, named as given (not `nope/nope`)
        return error

    return InputError(error.message, Source(os.path.normpath(os.path.join(directory, source.path)), source.line))
