"""Linting hosts: what every host of a run shares, worked out once (Linter: the rules with their parameters, the
facts to load, the planner, the ignore file), and a batch of hosts read then evaluated with it."""

from __future__ import annotations

import os
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pgvet.engine.derived import derived_values, expand
from pgvet.engine.evaluate import Plan, evaluate_hosts
from pgvet.engine.ir import Value
from pgvet.engine.loader import RulePack
from pgvet.engine.planner import Planner
from pgvet.errors import InputError, UsageError
from pgvet.findings import HostError, HostResult, RuleMeta
from pgvet.inputs.sysctl import PAIRED_SYSCTLS
from pgvet.provenance import Source
from pgvet.run.config import configured_rules
from pgvet.run.options import LintOptions
from pgvet.run.suppress import IgnoreFiles, suppress_inline
from pgvet.snapshot.facts import Fact, HostFacts
from pgvet.snapshot.load import load_hosts, run_date


def matches(rule: RuleMeta, selector: str) -> bool:
    """A selector names a rule by id, id prefix (``PGV1``), name or tag."""
    return selector == rule.name or selector in rule.tags or rule.id.startswith(selector.upper())


def make_selector(select: Sequence[str], ignore: Sequence[str]) -> Callable[[RuleMeta], bool]:
    def selected(rule: RuleMeta) -> bool:
        if select and not any(matches(rule, item) for item in select):
            return False
        return not any(matches(rule, item) for item in ignore)

    return selected


def validate_selectors(pack: RulePack, selectors: Sequence[str], configuration: Path | None = None) -> None:
    """A selector that names nothing is a typo: say so instead of silently linting nothing, naming where it was
    written: the configuration file given, else the command line."""
    metas = list(pack.meta().values())
    where = Source(str(configuration)) if configuration is not None else None
    label = "select/ignore" if configuration is not None else "--select/--ignore"
    for selector in selectors:
        if not selector.strip():  # as an id prefix it would match every rule: `--ignore ''` linted nothing
            raise UsageError(f"{label} '{selector}' is empty: name a rule id, id prefix, name or tag", where)
        if not any(matches(meta, selector) for meta in metas):
            raise UsageError(f"{label} '{selector}' matches no rule id, name or tag (see 'pgvet rules')", where)


# The facts a host keeps once its rules are evaluated, for what reads them afterwards: the RAM picture
# (report/memory.py), the orchestrator that says where a fix goes and its parameters' form (findings.py,
# fix/writer.py). Every other fact is dropped, so that a host handed to the reports weighs its findings, not its
# 2 000 facts; a report that asks for one of them fails loudly (FactsKeptForReports) instead of drawing as if the
# host lacked it.
FACTS_KEPT_FOR_REPORTS = frozenset({
    "host.ram", "host.name", "host.orchestrator", "host.parameter_form", "host.parameters_path", "pg.shared_buffers",
    "pg.huge_pages",
    "meminfo.hugetlb", "meminfo.hugepages_total", "meminfo.hugepagesize", "sysctl.vm.overcommit_memory",
    "derived.shared_memory_size", "derived.hugepages_pool", "derived.hugepage_size", "derived.work_mem_budget",
    "derived.commit_limit", "cgroup.memory_max", "meminfo.mem_total",
    # the fix says whether PostgreSQL restarts or reloads: the contexts in the parameter table of this major
    "pg.catalog_version",
    # the check report's header
    "pg.server_version", "pg.version", "cpu.count",
    # the fix's diff shows the other key of a pair it writes, which the kernel zeroes
    *(f"sysctl.{key}" for key in PAIRED_SYSCTLS)})


class FactNotKeptError(LookupError):
    """A report asked an evaluated host for a fact FACTS_KEPT_FOR_REPORTS does not keep: a bug of pgvet."""

    def __init__(self, name: str) -> None:
        super().__init__(f"a report read the fact {name}, which a host does not keep once evaluated: add it to "
                         "FACTS_KEPT_FOR_REPORTS (run/hosts.py)")


class FactsKeptForReports(dict[str, Fact]):
    """An evaluated host's facts: those of FACTS_KEPT_FOR_REPORTS it has. Asking for any other name raises
    FactNotKeptError, where a plain dict would answer None and the report would go on without it."""

    __slots__ = ()

    def __getitem__(self, name: str) -> Fact:
        return super().__getitem__(_kept(name))

    def __contains__(self, name: object) -> bool:
        return super().__contains__(_kept(name) if isinstance(name, str) else name)

    def get(self, name: str, default: Any = None) -> Any:
        return super().get(_kept(name), default)


def _kept(name: str) -> str:
    if name not in FACTS_KEPT_FOR_REPORTS:
        raise FactNotKeptError(name)
    return name


def facts_read(pack: RulePack) -> frozenset[str]:
    """Every host-wide fact a lint reads: the rules (their evidence and location), the derived facts'
    inputs, FACTS_KEPT_FOR_REPORTS. Only these are taken from the bulk sources of each host."""
    names = set(FACTS_KEPT_FOR_REPORTS)
    for rule in pack.rules:
        names.update(rule.evidence_names)
        names.update(rule.location_names)
    names.update(expand([f"derived.{formula.name}" for formula in pack.derived], pack.derived_by_name))
    return frozenset(names)


# Hosts read before any is evaluated (Linter.lint_batch): as many as the caches gain from (32 and 64 did no
# better), few enough that holding their facts (~50 kB a host) does not show beside the run's 30 MB.
BATCH_HOSTS = 16


@dataclass(slots=True, eq=False, repr=False)
class Linter:
    """What every host of a run shares, worked out once: the rules with their parameters, the facts to load,
    the planner of the hosts' targets, the ignore file."""

    pack: RulePack
    options: LintOptions
    rules: Plan
    wanted: frozenset[str]
    planner: Planner
    ignoring: IgnoreFiles
    rule_names: dict[str, str]  # every rule's name by its id, selected or not: what a suppression may name
    evaluated: frozenset[str]  # the ids and names of the rules the run evaluates (--select, --ignore)

    @classmethod
    def of(cls, pack: RulePack, options: LintOptions) -> Linter:
        # the derived values' parameters and the rules'; a table naming nothing, or a wrong parameter, refused
        pack, rules = configured_rules(pack, options.params, options.config_path,
                                       make_selector(options.select, options.ignore))
        # a PGVET_TODAY that is no date refuses the run here (exit 2), not each host as an internal error
        rule_names = {rule.id: rule.name for rule in pack.rules}
        evaluated = frozenset(name for rule, _ in rules for name in (rule.id, rule.name))
        ignoring = IgnoreFiles(options.ignore_file, run_date().isoformat(), rule_names, evaluated, options.repository)
        return cls(pack, options, rules, facts_read(pack), Planner(pack, rules),
                   ignoring, rule_names, evaluated)

    def lint_batch(self, directories: Sequence[Path | None]) -> list[HostResult | HostError]:
        """The hosts' outcomes, in order: every host of the batch read, then the rules evaluated rule by rule on
        every host (engine/evaluate.py, evaluate_hosts). Each stage then runs on caches that still hold its own
        code and data (the parsers', the rule pack's), rather than each host's reading evaluated at once (the
        measurement: docs/performance.md)."""
        loaded = [(directory, host) for directory in directories for host in self._load(directory)]
        read = [(directory, host) for directory, host in loaded if isinstance(host, HostFacts)]
        evaluated = iter(self._evaluate(read))
        return [next(evaluated) if isinstance(host, HostFacts) else host for _, host in loaded]

    def _load(self, directory: Path | None) -> list[HostFacts] | list[HostError]:
        """The directory's hosts (several when its configuration documents declare several), or its error."""
        try:
            return load_hosts(directory, self.options.explicit, wanted=self.wanted,
                              upgrade_to=self.options.upgrade_to)
        except Exception as error:  # a bug met on one host must not end the lint of a fleet
            return [failed(directory, error)]

    def _evaluate(self, read: Sequence[tuple[Path | None, HostFacts]]) -> list[HostResult | HostError]:
        caches: list[dict[str, Value]] = [{} for _ in read]
        outcomes = evaluate_hosts(self.pack, [host for _, host in read], record_passes=self.options.record_passes,
                                  plan=self.rules, host_caches=caches)
        results: list[HostResult | HostError] = []
        for (directory, host), derived, outcome in zip(read, caches, outcomes, strict=True):
            if isinstance(outcome, Exception):  # a bug met on this host only
                results.append(failed(directory, outcome))
                continue
            try:
                self._plan_target(host, outcome, derived)
                results.append(self._for_reports(host, outcome, derived))
            except Exception as error:
                results.append(failed(directory, error))
        return results

    def _plan_target(self, host: HostFacts, result: HostResult, derived: dict[str, Value]) -> None:
        """The host's target (engine/planner.py), and each finding's fix taken from it. A suppressed finding's
        rule proposes nothing: the suppressions are applied here as LintRun judges them later (with their
        notices, in the process that reports), then undone, so that judging starts from the findings as made."""
        def suppress(judged: HostResult) -> None:
            try:
                suppress_inline(judged, [], self.rule_names, self.evaluated)
                self.ignoring.apply(judged, self.ignoring.entries(judged, []), trial=True)
            except InputError:
                pass  # an invalid ignore file makes the host an error when it is judged

        suppress(result)
        result.target = self.planner.plan(host, result, derived, suppress)
        result.findings += result.target.found_once_booted
        self.planner.fix_findings(result, result.target)
        for finding in result.findings:
            finding.suppressed = None

    def _for_reports(self, host: HostFacts, result: HostResult, derived: dict[str, Value]) -> HostResult:
        """The result as the reports take it: the facts they read and nothing more."""
        facts = host.facts
        kept = FactsKeptForReports({name: facts[name] for name in FACTS_KEPT_FOR_REPORTS if name in facts})
        kept.update(derived_values(self.pack, host, FACTS_KEPT_FOR_REPORTS, derived))
        host.facts = kept
        host.items = {}
        return result


def failed(directory: Path | None, error: Exception) -> HostError:
    """A host's error: its input's (the file and line named), or a bug of pgvet met on it."""
    if isinstance(error, InputError):
        return host_error(directory, error.message, error.source)
    return host_error(directory, bug_message(error))


def host_error(directory: Path | None, message: str, source: Source | None = None) -> HostError:
    if directory is None:
        name = "."
    else:  # `.` and `..` are named by the directory they are (`error: : .: no inputs found`)
        name = directory.name if directory.name not in ("", "..") else os.path.basename(os.path.realpath(directory))
    return HostError(host=name, message=message, source=source,
                     root=os.fspath(directory) if directory is not None else None)


def bug_message(error: BaseException) -> str:
    """A host's error for a bug of pgvet met on it: ``ValueError: text (at module.py:12)``, what a bug report
    needs, in one line (the innermost frame)."""
    frames = traceback.extract_tb(error.__traceback__)
    where = f" (at {Path(frames[-1].filename).name}:{frames[-1].lineno})" if frames else ""
    return f"internal error, a bug in pgvet (please report it): {type(error).__name__}: {error}{where}"
