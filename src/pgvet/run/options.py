"""The options of a run: what `pgvet lint`'s command line asks (RunOptions), and the lint's own, once the
configuration is applied (LintOptions)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pgvet.run.config import Config
from pgvet.snapshot.discovery import SnapshotInputs


@dataclass(slots=True, eq=False, repr=False)
class LintOptions:
    rules: list[Path] = field(default_factory=list)
    select: list[str] = field(default_factory=list)
    ignore: list[str] = field(default_factory=list)
    params: dict[str, dict[str, Any]] = field(default_factory=dict)
    explicit: SnapshotInputs | None = None
    baseline: Path | None = None
    ignore_file: Path | None = None
    # the configuration's selectors (its select is replaced by --select, yet checked) and its file, which names them
    configured_select: list[str] = field(default_factory=list)
    configured_ignore: list[str] = field(default_factory=list)
    config_path: Path | None = None
    repository: Path | None = None  # a found configuration's repository: its rule packs are read beneath it
    record_passes: bool = False  # also list the rules that passed, with their values (pgvet check)
    upgrade_to: int | None = None  # judge the PostgreSQL files as this major version reads them


@dataclass(slots=True, eq=False, repr=False)
class RunOptions:
    """What `pgvet lint` asks of a run, as its command line says it (run.lint.run_lint); None: not given, the
    configuration's then."""

    paths: list[Path] = field(default_factory=list)  # host directories, or files in them
    formats: list[str] = field(default_factory=list)  # each --format, paired with an --output in order
    outputs: list[Path] = field(default_factory=list)
    select: list[str] = field(default_factory=list)  # as given: each may be a comma list
    ignore: list[str] = field(default_factory=list)
    rules: list[Path] = field(default_factory=list)  # rule packs added to the configuration's
    config: Path | None = None
    fail_on: str | None = None
    exit_zero: bool = False
    allow_unreadable: bool = False
    jobs: int = 0  # processes; 0: as many as pay (run.workers.worker_count)
    baseline: Path | None = None
    ignore_file: Path | None = None
    verbose: bool = False
    color: bool | None = None
    explicit: SnapshotInputs | None = None  # the input files given one by one (--sysctl, --meminfo…)
    upgrade_to: int | None = None


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
    return LintOptions(rules=[*settings.rules, *(rules or [])], select=comma_list(select) or list(settings.select),
                       ignore=[*settings.ignore, *comma_list(ignore)], params=settings.params, explicit=explicit,
                       baseline=baseline, ignore_file=ignore_file, configured_select=list(settings.select),
                       configured_ignore=list(settings.ignore), config_path=settings.path, upgrade_to=upgrade_to,
                       repository=settings.repository)
