"""The lint pipeline: host directories → facts → derived facts → rules → findings (a LintResult)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pgvet import __version__
from pgvet.errors import InputError
from pgvet.findings import SEVERITY_RANK, HostError, HostResult, LintResult, RuleMeta

if TYPE_CHECKING:
    from pgvet.engine.loader import RulePack
    from pgvet.snapshot import SnapshotInputs


@dataclass(slots=True)
class LintOptions:
    rules: list[Path] = field(default_factory=list)
    select: list[str] = field(default_factory=list)
    ignore: list[str] = field(default_factory=list)
    params: dict[str, dict[str, Any]] = field(default_factory=dict)
    explicit: SnapshotInputs | None = None
    baseline: Path | None = None
    ignore_file: Path | None = None
    record_passes: bool = False  # also list the rules that passed, with their values (pgvet check)
    keep_facts: bool = False  # keep every fact of the host for the report instead of pruning them


def matches(rule: RuleMeta, selector: str) -> bool:
    """A selector names a rule by id, id prefix (``PGV1``), name or tag."""
    return selector == rule.name or selector in rule.tags or rule.id.startswith(selector.upper())


def make_selector(select: Sequence[str], ignore: Sequence[str]) -> Callable[[RuleMeta], bool]:
    def selected(rule: RuleMeta) -> bool:
        if select and not any(matches(rule, item) for item in select):
            return False
        return not any(matches(rule, item) for item in ignore)

    return selected


def check_selectors(pack: RulePack, selectors: Sequence[str]) -> None:
    """A selector that names nothing is a typo: say so instead of silently linting nothing."""
    from pgvet.errors import UsageError

    metas = list(pack.meta().values())
    for selector in selectors:
        if not any(matches(meta, selector) for meta in metas):
            raise UsageError(f"--select/--ignore '{selector}' matches no rule id, name or tag (see 'pgvet rules')")


# Files that make a directory a host (see the snapshot layout); a file passed alone (pre-commit passes
# changed files one by one) is linted as part of the nearest directory above it that holds one.
HOST_MARKERS = ("host.yaml", "host.yml", "postgresql.conf", "postgresql.auto.conf", "sysctl.d", "sysctl.conf",
                "sysctl.txt", "meminfo.txt", "PG_VERSION", "pg_settings.json")


# Facts the reporters read after evaluation (report/memory.py), besides the derived ones.
REPORT_FACTS = frozenset({"host.ram", "host.name", "pg.shared_buffers", "pg.huge_pages", "meminfo.hugepages_total",
                          "meminfo.hugepagesize", "sysctl.vm.overcommit_memory"})


def host_directories(paths: Sequence[Path], stop: Path | None = None) -> list[Path]:
    """Host directories for the paths given: directories as they are; a file belongs to the nearest
    directory above it holding a host marker (conf.d/10-memory.conf → the directory of postgresql.conf),
    never above ``stop`` (the current directory by default), else to its own directory. Each host once."""
    boundary = (stop or Path.cwd()).resolve()
    hosts: dict[Path, None] = {}
    for path in paths:
        host = path
        if path.is_file():
            host = path.parent
            for directory in (path.parent, *path.parent.parents):
                if any((directory / marker).exists() for marker in HOST_MARKERS):
                    host = directory
                    break
                resolved = directory.resolve()
                if resolved == boundary or boundary not in resolved.parents:
                    break
        hosts.setdefault(host, None)
    return list(hosts)


def lint_host(pack: RulePack, directory: Path | None, options: LintOptions,
              selected: Callable[[RuleMeta], bool]) -> HostResult:
    from pgvet.engine.derived import derived_values
    from pgvet.engine.evaluate import evaluate_host
    from pgvet.snapshot import load_host

    host = load_host(directory, options.explicit)
    result = evaluate_host(pack, host, params=options.params, selected=selected,
                           record_passes=options.record_passes)
    if options.keep_facts:
        host.facts.update(derived_values(pack, host))
        return result
    # Reports need only what the RAM picture draws: keep those facts (derived ones included) and drop the
    # rest, so that a fleet's memory grows with its findings, not with every host's 2 000 facts.
    kept = {name: fact for name, fact in host.facts.items() if name in REPORT_FACTS}
    for name, fact in derived_values(pack, host).items():
        kept.setdefault(name, fact)
    host.facts = kept
    host.items = {}
    return result


def iter_hosts(pack: RulePack, directories: Sequence[Path | None],
               options: LintOptions) -> Iterator[HostResult | HostError]:
    selected = make_selector(options.select, options.ignore)
    for directory in directories:
        try:
            yield lint_host(pack, directory, options, selected)
        except InputError as error:
            name = directory.name if directory is not None else "."
            yield HostError(host=name, message=error.message, source=error.source)


_WORKER_PACK: dict[tuple[str, ...], RulePack] = {}


def _lint_in_worker(task: tuple[Path | None, LintOptions]) -> HostResult | HostError:
    """One host in a worker process; the rule pack is loaded once per process (from the cache)."""
    from pgvet.engine.loader import load_pack

    directory, options = task
    key = tuple(str(path) for path in options.rules)
    if key not in _WORKER_PACK:
        _WORKER_PACK[key] = load_pack(options.rules)
    return next(iter_hosts(_WORKER_PACK[key], [directory], options))


def _outcomes(pack: RulePack, directories: Sequence[Path | None], options: LintOptions,
              jobs: int) -> Iterator[HostResult | HostError]:
    if jobs <= 1 or len(directories) < 2 * jobs:
        yield from iter_hosts(pack, directories, options)
        return
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(max_workers=jobs) as pool:
        chunk = max(1, len(directories) // (jobs * 8))
        yield from pool.map(_lint_in_worker, [(directory, options) for directory in directories], chunksize=chunk)


def lint(directories: Sequence[Path | None], options: LintOptions, *, jobs: int = 1) -> LintResult:
    """Lint hosts in order; with ``jobs`` > 1, across that many processes (results keep the input order)."""
    from pgvet.engine.loader import load_pack

    pack = load_pack(options.rules)
    check_selectors(pack, [*options.select, *options.ignore])
    result = LintResult(hosts=[], rules=pack.meta(), tool_version=__version__, pack_version=pack.version)
    for outcome in _outcomes(pack, directories, options, jobs):
        if isinstance(outcome, HostError):
            result.errors.append(outcome)
        else:
            result.hosts.append(outcome)
            result.notices.extend(f"{outcome.host.name}: {warning}" for warning in outcome.host.warnings)
    from datetime import date

    from pgvet.suppress import apply_baseline, apply_ignore_files, apply_inline_suppressions, load_baseline

    apply_inline_suppressions(result)
    apply_ignore_files(result, options.ignore_file, os.environ.get("PGVET_TODAY") or date.today().isoformat())
    if options.baseline is not None:
        apply_baseline(result, load_baseline(options.baseline))
    return result


def exit_code(result: LintResult, fail_on: str, *, strict: bool) -> int:
    """0: nothing at or above fail_on; 1: findings; 2: a host could not be read (one host, or --strict)."""
    if result.errors and (strict or not result.hosts):
        return 2
    threshold = SEVERITY_RANK[fail_on]
    for host in result.hosts:
        for finding in host.findings:
            if finding.rank >= threshold and finding.suppressed is None and not finding.baseline:
                return 1
    return 0
