"""`pgvet lint`'s work once its command line is read: what typer's ``cli.lint`` and the fast command line
(fastcli) both call. It imports no command-line library: a lint started through fastcli never imports
typer (a third of a one-host lint's start). It returns the exit code; pgvet's own errors are raised
(PgvetError), and the caller says them.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pgvet.config import Config
    from pgvet.lint import LintOptions
    from pgvet.snapshot import SnapshotInputs


def comma_list(values: list[str] | None) -> list[str]:
    """A repeatable option's values, each of which may be a comma list (``--select PGV110,PGV103``, as ruff and most
    linters take them). Names only: a path may hold a comma, so path options are not split."""
    return [item.strip() for value in values or () for item in value.split(",")]


def lint_options(settings: Config, *, rules: list[Path] | None = None, select: list[str] | None = None,
                 ignore: list[str] | None = None, explicit: SnapshotInputs | None = None,
                 baseline: Path | None = None, ignore_file: Path | None = None,
                 upgrade_to: int | None = None) -> LintOptions:
    """The options of a lint as the configuration gives them: the command line's rule packs and ignored rules
    added to the configuration's, its selection in place of the configuration's."""
    from pgvet.lint import LintOptions

    return LintOptions(rules=[*settings.rules, *(rules or [])], select=comma_list(select) or list(settings.select),
                       ignore=[*settings.ignore, *comma_list(ignore)], params=settings.params, explicit=explicit,
                       baseline=baseline, ignore_file=ignore_file, configured_select=list(settings.select),
                       upgrade_to=upgrade_to)


def explicit_inputs(sysctl: Path | None, sysctl_conf: list[Path] | None, meminfo: Path | None, lscpu: Path | None,
                    mounts: Path | None, sysfs: Path | None, host_yaml: Path | None, postgresql_conf: Path | None,
                    auto_conf: Path | None, pg_settings: Path | None) -> SnapshotInputs | None:
    """The input files given one by one (--sysctl, --meminfo…), or None when none was."""
    from pgvet.snapshot import SnapshotInputs

    explicit = SnapshotInputs(sysctl=sysctl, sysctl_conf=list(sysctl_conf or []), meminfo=meminfo, lscpu=lscpu,
                              mounts=mounts, sysfs=sysfs, host_yaml=host_yaml, postgresql_conf=postgresql_conf,
                              postgresql_auto_conf=auto_conf, pg_settings=pg_settings)
    return None if explicit.is_empty() else explicit


def run_lint(*, paths: list[Path] | None, output_format: list[str] | None, output: list[Path] | None,
             select: list[str] | None, ignore: list[str] | None, rules: list[Path] | None, config: Path | None,
             fail_on: str | None, exit_zero: bool, allow_unreadable: bool, jobs: int, baseline: Path | None,
             ignore_file: Path | None, verbose: bool, color: bool | None, sysctl: Path | None,
             sysctl_conf: list[Path] | None, meminfo: Path | None, lscpu: Path | None, mounts: Path | None,
             sysfs: Path | None, host_yaml: Path | None, postgresql_conf: Path | None, auto_conf: Path | None,
             pg_settings: Path | None, upgrade_to: int | None) -> int:
    """Lint the hosts and write the reports; the exit code (see cli.py's docstring)."""
    from pgvet.config import SEVERITIES, load_config
    from pgvet.errors import UsageError

    settings = load_config(config)
    threshold = fail_on or settings.fail_on
    if threshold not in SEVERITIES:
        raise UsageError(f"--fail-on must be one of {', '.join(SEVERITIES)}")
    if upgrade_to is not None:
        from pgvet.pgparams import SUPPORTED_MAJORS

        if upgrade_to not in SUPPORTED_MAJORS:
            raise UsageError(f"--upgrade-to must be a major version pgvet has a parameter catalog for "
                             f"({', '.join(map(str, SUPPORTED_MAJORS))}), not {upgrade_to}")
    explicit = explicit_inputs(sysctl, sysctl_conf, meminfo, lscpu, mounts, sysfs, host_yaml, postgresql_conf,
                               auto_conf, pg_settings)
    from pgvet.lint import host_directories

    given = host_directories(paths or [])
    directories: list[Path | None] = list(given.hosts)
    if not directories and not given.refused:
        if explicit is None:
            raise UsageError("give host directories or input files (see pgvet lint --help)")
        directories = [None]
    elif explicit is not None and len(directories) > 1:
        raise UsageError("input file options apply to one host: give a single directory with them")
    options = lint_options(settings, rules=rules, select=select, ignore=ignore, explicit=explicit,
                           baseline=baseline or settings.baseline, ignore_file=ignore_file or settings.ignore_file,
                           upgrade_to=upgrade_to)
    if jobs > 1 and len(directories) > 1:  # 0 (the default) takes as many as pay, which the CPUs bound
        from pgvet.lint import usable_cpus

        cpus = usable_cpus()
        if jobs > cpus:  # more processes than CPUs only share them, each with its own copy of the rules
            print(f"pgvet: notice: --jobs {jobs} lowered to {cpus}, the CPUs this process may use", file=sys.stderr)
            jobs = cpus
    from pgvet.lint import collecting_garbage_for_batches
    from pgvet.report.stream import lint_and_report  # each host reported as it is linted, then dropped

    with collecting_garbage_for_batches():
        summary = lint_and_report(directories, options, jobs=jobs, formats=comma_list(output_format),
                                  outputs=list(output or []), verbose=verbose, color=color, given=given)
    code = summary.exit_code(threshold, allow_unreadable=allow_unreadable)
    return 0 if exit_zero and code == 1 else code
