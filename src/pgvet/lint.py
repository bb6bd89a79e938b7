"""The lint pipeline: host directories → facts → derived facts → rules → findings (a LintResult)."""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pgvet import __version__
from pgvet.errors import InputError
from pgvet.facts import HostFacts
from pgvet.findings import HostError, HostResult, LintResult, RuleMeta
from pgvet.summary import RunSummary

if TYPE_CHECKING:
    from concurrent.futures import Future, ProcessPoolExecutor

    from pgvet.engine.evaluate import Plan
    from pgvet.engine.expr import Value
    from pgvet.engine.loader import RulePack
    from pgvet.engine.planner import Planner
    from pgvet.provenance import Source
    from pgvet.snapshot import InputPath, SnapshotInputs
    from pgvet.suppress import IgnoreFiles


@dataclass(slots=True)
class LintOptions:
    rules: list[Path] = field(default_factory=list)
    select: list[str] = field(default_factory=list)
    ignore: list[str] = field(default_factory=list)
    params: dict[str, dict[str, Any]] = field(default_factory=dict)
    explicit: SnapshotInputs | None = None
    baseline: Path | None = None
    ignore_file: Path | None = None
    configured_select: list[str] = field(default_factory=list)  # the configuration's, replaced by --select: checked
    record_passes: bool = False  # also list the rules that passed, with their values (pgvet check)
    keep_facts: bool = False  # keep every fact of the host for the report instead of pruning them
    upgrade_to: int | None = None  # judge the PostgreSQL files as this major version reads them


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
        if not selector.strip():  # as an id prefix it would match every rule: `--ignore ''` linted nothing
            raise UsageError(f"--select/--ignore '{selector}' is empty: name a rule id, id prefix, name or tag")
        if not any(matches(meta, selector) for meta in metas):
            raise UsageError(f"--select/--ignore '{selector}' matches no rule id, name or tag (see 'pgvet rules')")


# Files that make a directory a host (see the snapshot layout); a file passed alone (pre-commit passes
# changed files one by one) is linted as part of the nearest directory above it that holds one.
HOST_MARKERS = ("host.yaml", "host.yml", "postgresql.conf", "postgresql.auto.conf", "sysctl.d", "sysctl.conf",
                "sysctl.txt", "meminfo.txt", "PG_VERSION", "pg_settings.json")


# Facts the reporters read after evaluation (report/memory.py): all a host keeps once evaluated.
REPORT_FACTS = frozenset({"host.ram", "host.name", "pg.shared_buffers", "pg.huge_pages", "meminfo.hugetlb",
                          "meminfo.hugepages_total", "meminfo.hugepagesize", "sysctl.vm.overcommit_memory",
                          "derived.shared_memory_size",
                          "derived.hugepages_pool", "derived.hugepage_size", "derived.work_mem_budget",
                          "derived.commit_limit", "cgroup.memory_max", "meminfo.mem_total"})


@dataclass(slots=True)
class GivenPaths:
    """What the paths of a command line name (host_directories)."""

    hosts: list[Path]  # the host directories to lint, each once
    notices: list[str] = field(default_factory=list)  # files a shell's glob matched beside the hosts: left out
    # paths that name no host: errors of the run, each named as given (``host``; no source, which reports resolve)
    refused: list[HostError] = field(default_factory=list)
    files: dict[str, list[Path]] = field(default_factory=dict)  # a host's real path → the files given in it


def host_directories(paths: Sequence[Path], stop: Path | None = None) -> GivenPaths:
    """Host directories for the paths given: directories as they are; a file belongs to the nearest
    directory above it holding a host marker (conf.d/10-memory.conf → the directory of postgresql.conf),
    never above ``stop`` (the current directory by default), else to its own directory. Each host once, however
    it is spelled (an absolute path, a symbolic link): the first spelling given is kept. The files given are
    kept by host (``files``): each must be one of its host's inputs (LintRun checks them once the host is read).

    A file of no host whose directory holds host directories of the run (``hosts/README.md`` when a shell
    expands ``hosts/*``) is no host's: it is left out, with a notice. One whose directory holds no input either
    (``pgvet lint notes.txt``) is refused: an error that names it, not its directory linted as an empty host."""
    boundary = (stop or Path.cwd()).resolve()
    hosts: dict[str, Path] = {}
    given = GivenPaths([])
    directories_given: set[str] = set()
    loose: list[tuple[Path, Path]] = []  # (file, its own directory) for files under no host marker
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
                    loose.append((path, host))
                    break
            else:
                loose.append((path, host))
            given.files.setdefault(os.path.realpath(host), []).append(path)
        else:
            directories_given.add(os.path.realpath(host))
        hosts.setdefault(os.path.realpath(host), host)
    for file, directory in loose:
        parent = os.path.realpath(directory)
        if parent in directories_given:  # linted as given: the file is checked against its inputs
            continue
        if any(os.path.dirname(other) == parent for other in hosts):
            hosts.pop(parent, None)
            given.files.pop(parent, None)
            given.notices.append(f"{file}: not linted, no host's file (no {', '.join(HOST_MARKERS[:4])}… in its "
                                 "directory or above)")
        elif _holds_no_input(directory):
            hosts.pop(parent, None)
            given.files.pop(parent, None)
            given.refused.append(HostError(
                host=str(file),
                message="not a file of a host: neither its directory nor one above it (up to the current directory) "
                        "holds a snapshot (host.yaml, postgresql.conf, sysctl.txt…); give a host directory or a file "
                        "in one (see the README's snapshot layout)"))
    given.hosts = list(hosts.values())
    return given


def _holds_no_input(directory: Path) -> bool:
    from pgvet.snapshot import discover

    return discover(directory).is_empty()


def _inputs_not_read(host: HostResult, files: Sequence[Path]) -> list[HostError]:
    """The files given in a host directory that the host does not read as inputs (``/etc/hostname`` in /etc, a
    file postgresql.conf does not include): linting their host would say nothing of them."""
    from dataclasses import fields

    from pgvet.snapshot import discover
    from pgvet.suppress import IGNORE_FILE

    root = host.host.root
    found = discover(Path(root))
    discovered: list[InputPath] = []  # joined with the host directory already
    for kind in fields(found):
        value = getattr(found, kind.name)
        if isinstance(value, list):
            discovered.extend(value)
        elif value is not None:
            discovered.append(value)
    named = [IGNORE_FILE, *host.host.unmarked_files, *host.host.marked_files]  # relative to it: the configuration
    inputs = {os.path.realpath(path) for path in discovered} | {os.path.realpath(os.path.join(root, name))
                                                                   for name in named}
    return [HostError(host=str(file),
                      message=f"not an input of its host {root}: pgvet does not read this file there (the inputs "
                              "are named in the README's snapshot layout; a PostgreSQL file must be included by "
                              "postgresql.conf)")
            for file in files if os.path.realpath(file) not in inputs]


def facts_read(pack: RulePack) -> frozenset[str]:
    """Every host-wide fact a lint reads: the rules (their evidence and location), the derived facts'
    inputs, the reports' REPORT_FACTS. Only these are taken from the bulk sources of each host."""
    from pgvet.engine.derived import expand

    names = set(REPORT_FACTS)
    for rule in pack.rules:
        names.update(rule.evidence_names)
        names.update(rule.location_names)
    names.update(expand([f"derived.{formula.name}" for formula in pack.derived], pack.derived_by_name))
    return frozenset(names)


# Hosts read before any is evaluated (_Plan.lint_batch): as many as the caches gain from (32 and 64 did no
# better), few enough that holding their facts (~50 kB a host) does not show beside the run's 30 MB.
BATCH_HOSTS = 16


@dataclass(slots=True)
class _Plan:
    """What every host of a run shares, worked out once: the rules with their parameters, the facts to load,
    the planner of the hosts' targets, the ignore file."""

    pack: RulePack
    options: LintOptions
    rules: Plan
    wanted: frozenset[str] | None
    planner: Planner
    ignoring: IgnoreFiles

    @classmethod
    def of(cls, pack: RulePack, options: LintOptions) -> _Plan:
        from pgvet.engine.evaluate import configure, plan_rules
        from pgvet.engine.planner import Planner
        from pgvet.snapshot import run_date
        from pgvet.suppress import IgnoreFiles

        pack = configure(pack, options.params)  # the derived values' parameters; a table naming nothing refused
        selected = make_selector(options.select, options.ignore)
        rules = plan_rules(pack, options.params, selected)
        # a PGVET_TODAY that is no date refuses the run here (exit 2), not each host as an internal error
        ignoring = IgnoreFiles(options.ignore_file, run_date().isoformat())
        return cls(pack, options, rules, None if options.keep_facts else facts_read(pack), Planner(pack, rules),
                   ignoring)

    def lint_batch(self, directories: Sequence[Path | None]) -> list[HostResult | HostError]:
        """The hosts' outcomes, in order: every host of the batch read, then the rules evaluated rule by rule on
        every host (engine/evaluate.py, evaluate_hosts). Each stage then runs on caches that still hold its own
        code and data (the parsers', the rule pack's): against reading and evaluating one host after the other,
        two fifths fewer misses of a simulated 1 MB cache (cachegrind), and a sixth less CPU time."""
        loaded = [self._load(directory) for directory in directories]
        read = [(directory, host) for directory, host in zip(directories, loaded, strict=True)
                if isinstance(host, HostFacts)]
        evaluated = iter(self._evaluate(read))
        return [next(evaluated) if isinstance(host, HostFacts) else host for host in loaded]

    def _load(self, directory: Path | None) -> HostFacts | HostError:
        from pgvet.snapshot import load_host

        try:
            return load_host(directory, self.options.explicit, wanted=self.wanted,
                             upgrade_to=self.options.upgrade_to)
        except Exception as error:  # a bug met on one host must not end the lint of a fleet
            return _failed(directory, error)

    def _evaluate(self, read: Sequence[tuple[Path | None, HostFacts]]) -> list[HostResult | HostError]:
        from pgvet.engine.evaluate import evaluate_hosts

        caches: list[dict[str, Value]] = [{} for _ in read]
        outcomes = evaluate_hosts(self.pack, [host for _, host in read], record_passes=self.options.record_passes,
                                  plan=self.rules, host_caches=caches)
        results: list[HostResult | HostError] = []
        for (directory, host), derived, outcome in zip(read, caches, outcomes, strict=True):
            if isinstance(outcome, Exception):  # a bug met on this host only
                results.append(_failed(directory, outcome))
                continue
            try:
                self._plan_target(host, outcome)
                results.append(self._for_reports(host, outcome, derived))
            except Exception as error:
                results.append(_failed(directory, error))
        return results

    def _plan_target(self, host: HostFacts, result: HostResult) -> None:
        """The host's target (engine/planner.py), and each finding's fix taken from it. A suppressed finding's
        rule proposes nothing: the suppressions are applied here as LintRun judges them later (with their
        notices, in the process that reports), then undone, so that judging starts from the findings as made."""
        from pgvet.suppress import suppress_inline

        try:
            suppress_inline(result, [])
            self.ignoring.apply(result, self.ignoring.entries(result, []), [])
        except InputError:
            pass  # an invalid ignore file makes the host an error when it is judged
        result.target = self.planner.plan(host, result)
        self.planner.fix_findings(result, result.target)
        for finding in result.findings:
            finding.suppressed = None

    def _for_reports(self, host: HostFacts, result: HostResult, derived: dict[str, Value]) -> HostResult:
        """The result as the reports take it: the facts they read and nothing more (unless all are asked for)."""
        from pgvet.engine.derived import derived_values

        if self.options.keep_facts:
            host.facts.update(derived_values(self.pack, host, cache=derived))
            return result
        # Reports need only what the RAM picture draws: keep those facts and drop the rest, so that a host
        # handed to the reports weighs its findings, not its 2 000 facts.
        facts = host.facts
        kept = {name: facts[name] for name in REPORT_FACTS if name in facts}
        kept.update(derived_values(self.pack, host, REPORT_FACTS, derived))
        host.facts = kept
        host.items = {}
        return result


def _failed(directory: Path | None, error: Exception) -> HostError:
    """A host's error: its input's (the file and line named), or a bug of pgvet met on it."""
    if isinstance(error, InputError):
        return _host_error(directory, error.message, error.source)
    return _host_error(directory, _bug(error))


def _host_error(directory: Path | None, message: str, source: Source | None = None) -> HostError:
    if directory is None:
        name = "."
    else:  # `.` and `..` are named by the directory they are (`error: : .: no inputs found`)
        name = directory.name if directory.name not in ("", "..") else os.path.basename(os.path.realpath(directory))
    return HostError(host=name, message=message, source=source,
                     root=os.fspath(directory) if directory is not None else None)


def _bug(error: BaseException) -> str:
    """A host's error for a bug of pgvet met on it: ``ValueError: text (at module.py:12)``, what a bug report
    needs, in one line (the innermost frame)."""
    import traceback

    frames = traceback.extract_tb(error.__traceback__)
    where = f" (at {Path(frames[-1].filename).name}:{frames[-1].lineno})" if frames else ""
    return f"internal error, a bug in pgvet (please report it): {type(error).__name__}: {error}{where}"


# The fewest hosts each --jobs process must have for the processes to pay: with fewer, starting the pool (each
# worker loads the rule pack) and moving results between processes cost more than the linting they share, and the
# run is slower than in one process (scripts/bench.py --jobs measures it; docs/performance.md). PGVET_JOBS_MIN_HOSTS
# sets it for a machine where it lies elsewhere.
JOBS_MIN_HOSTS = 1000


def worker_count(hosts: int, jobs: int) -> int:
    """The processes a run of ``hosts`` hosts is spread over for ``--jobs``: each must have JOBS_MIN_HOSTS hosts,
    and fewer than two is the run in its own process (1). ``jobs`` 0 (the default) takes one process fewer than the
    CPUs usable: the process that started them reads every result and writes the reports, the text report's
    rendering as costly as the linting (docs/decisions.md) — on two CPUs, a run stays in one process."""
    from pgvet.errors import UsageError

    given = os.environ.get("PGVET_JOBS_MIN_HOSTS")
    try:
        least = JOBS_MIN_HOSTS if not given else int(given)
    except ValueError:
        least = 0
    if least < 1:
        raise UsageError(f"PGVET_JOBS_MIN_HOSTS must be a whole number of hosts, 1 or more, not {given!r}")
    count = min(jobs or usable_cpus() - 1, hosts // least)
    return count if count >= 2 else 1


def usable_cpus() -> int:
    """The CPUs this process may use: its affinity mask (taskset, a CI runner's cpuset) and a cgroup v2 CPU
    quota (a container's --cpus), which os.cpu_count() does not see."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        cpus = os.cpu_count() or 1
    try:
        with open("/proc/self/cgroup", encoding="utf-8") as handle:
            group = next(line[3:].strip() for line in handle if line.startswith("0::"))
        with open(f"/sys/fs/cgroup{group.rstrip('/')}/cpu.max", encoding="utf-8") as handle:
            quota, period = handle.read().split()[:2]
        return cpus if quota == "max" else max(1, min(cpus, -(-int(quota) // int(period))))
    except (OSError, StopIteration, ValueError, ZeroDivisionError):  # cgroup v1, no cpu controller: no quota known
        return cpus


_WORKER_PLAN: list[_Plan] = []  # a worker process's plan, made once by _start_worker


# A host makes thousands of containers and no reference cycle (tests/reports/test_report_fleet.py holds a lint to none):
# its objects are freed by their reference counts, and each pass of the cycle collector finds nothing while it
# walks the hosts of the batch still in use. A pass every 20 000 new containers rather than CPython's 700 (or
# the 5 000 of before, 3 % of a 1 000-host lint's time) takes 0.5 %; a cycle that some input still makes is
# collected all the same, within 20 000 containers.
BATCH_GC_THRESHOLD = (20_000, 20, 20)


@contextmanager
def collecting_garbage_for_batches() -> Iterator[None]:
    """The cycle collector set for a batch of hosts while the block runs, as it was after."""
    import gc

    before = gc.get_threshold()
    gc.set_threshold(*BATCH_GC_THRESHOLD)
    try:
        yield
    finally:
        gc.set_threshold(*before)


# Signals that stop a run (pgvet.interrupt): held back while worker processes start (_signals_held)
_STOPPING = ("SIGINT", "SIGTERM", "SIGHUP")


def _start_worker(options: LintOptions, parent: int) -> None:
    import gc
    import signal

    from pgvet import cache
    from pgvet.engine.loader import load_pack

    # Ctrl-C reaches the whole process group: the parent stops the run and ends its workers, which must not
    # each print a KeyboardInterrupt traceback (nor break the pool). SIGTERM and SIGHUP end a worker as they end
    # any process (the parent ends its workers with SIGTERM), not by the parent's handler, inherited by fork.
    # They start with these signals blocked (_signals_held), until they are so.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    for name in _STOPPING[1:]:
        signal.signal(getattr(signal, name), signal.SIG_DFL)
    _die_with(parent)
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {getattr(signal, name) for name in _STOPPING})
    gc.set_threshold(*BATCH_GC_THRESHOLD)  # a worker process lints hosts until the pool ends
    cache.keep_quiet()  # a refused cache was said by the parent, which loaded the pack first
    _WORKER_PLAN[:] = [_Plan.of(load_pack(options.rules), options)]  # the pack from the cache


def _die_with(parent: int) -> None:
    """On Linux, this worker ends when its parent dies, also killed by SIGKILL (the out-of-memory killer) with no
    handler run to end the pool: else it would wait for chunks forever."""
    import sys

    if not sys.platform.startswith("linux"):
        return
    import ctypes
    import signal

    try:
        ctypes.CDLL(None).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:  # the parent died before the request was made
        os._exit(1)


@contextmanager
def _signals_held() -> Iterator[None]:
    """The signals that stop a run held back while the block runs (they are delivered after): worker processes
    started in it begin with them blocked, until _start_worker has set what they do there."""
    import signal

    if not hasattr(signal, "pthread_sigmask"):
        yield
        return
    held = {getattr(signal, name) for name in _STOPPING}
    signal.pthread_sigmask(signal.SIG_BLOCK, held)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, held)


def _end_workers(pool: ProcessPoolExecutor) -> None:
    """The pool's processes ended and reaped now, not once they have finished their chunk: the run is stopped (a
    signal, Ctrl-C, a report that cannot be written). A worker ended while it wrote a result leaves half of it in
    the results' pipe, which the pool's thread would wait forever to read the rest of (and shutdown, and the
    interpreter's exit, for that thread): the pipe's last writing end, this process's own, is closed, so that the
    thread reads its end instead and stops. ProcessPoolExecutor has no public way to end its processes before
    Python 3.14."""
    processes = list((pool._processes or {}).values())
    for process in processes:
        process.terminate()
    for process in processes:
        process.join()
    results = pool._result_queue
    if results is not None:
        results._writer.close()  # type: ignore[attr-defined]  # SimpleQueue's own end of its pipe


def _lint_in_worker(directories: Sequence[Path | None]) -> list[HostResult | HostError]:
    """A chunk's outcomes (up to 64 hosts, for fewer round trips), linted in batches as in one process."""
    plan = _WORKER_PLAN[0]
    return [outcome for batch in _batches(directories) for outcome in plan.lint_batch(batch)]


def _batches(directories: Sequence[Path | None]) -> Iterator[Sequence[Path | None]]:
    """The directories BATCH_HOSTS at a time, in order."""
    return (directories[start:start + BATCH_HOSTS] for start in range(0, len(directories), BATCH_HOSTS))


class LintRun:
    """A lint, host by host. ``outcomes()`` yields each host's result — suppressions, ignore files and
    baseline applied — or its error, in the order given, once; nothing of a host is kept after it is
    yielded but its counts (``summary``). ``notices`` is complete when the outcomes are exhausted. ``given``: what
    the command line's paths said besides the hosts — the paths that name no host come first as errors, and a file
    given that its host does not read is an error after that host.

    Everything that can refuse the run (rule pack, selectors, parameters, ignore file, baseline) is
    checked when it is created, before any host is read or any report written.
    """

    def __init__(self, directories: Sequence[Path | None], options: LintOptions, *, jobs: int = 1,
                 given: GivenPaths | None = None) -> None:
        """``jobs``: --jobs, the processes asked for (0: as many as pay); worker_count says how many are used."""
        from pgvet.engine.loader import load_pack
        from pgvet.suppress import load_baseline

        pack = load_pack(options.rules)
        check_selectors(pack, [*options.select, *options.ignore, *options.configured_select])
        self.plan = _Plan.of(pack, options)
        self.directories = directories
        self.jobs = worker_count(len(directories), jobs)  # a wrong PGVET_JOBS_MIN_HOSTS refuses the run here
        self.rules = pack.meta()
        self.tool_version = __version__
        self.pack_version = pack.version
        self.summary = RunSummary()
        self.ignoring = self.plan.ignoring
        self.baseline = load_baseline(options.baseline) if options.baseline is not None else None
        # notices in the order the reports have always listed them: inputs, then suppressions, then ignore files
        self.given = given if given is not None else GivenPaths([])
        self._notices: tuple[list[str], list[str], list[str]] = (list(self.given.notices), [], [])
        # each host's name and directory: two hosts of one name share fingerprints, baseline entries and
        # suppressions (a name a host, the one thing a run keeps that grows with its hosts)
        self._roots: dict[str, str] = {}

    @property
    def notices(self) -> list[str]:
        return [notice for part in self._notices for notice in part]

    def outcomes(self) -> Iterator[HostResult | HostError]:
        inputs, inline, ignored = self._notices
        for refused in self.given.refused:  # paths that name no host
            self.summary.add_error()
            yield refused
        for linted in self._linted():
            outcome = linted if isinstance(linted, HostError) else self._judged(linted, inline, ignored)
            if isinstance(outcome, HostError):
                self.summary.add_error()
                yield outcome
                continue
            inputs.extend(f"{outcome.host.name}: {warning}" for warning in outcome.host.warnings)
            first = self._roots.setdefault(outcome.host.name, outcome.host.root)
            if first != outcome.host.root:
                inputs.append(f"{outcome.host.name}: {first} and {outcome.host.root} have the same host name: their "
                              "findings share fingerprints, baseline entries and suppressions; give each its own "
                              "`name:` in host.yaml")
            self.summary.add(outcome)
            files = self.given.files.get(os.path.realpath(outcome.host.root)) if self.given.files else None
            yield outcome
            for not_read in _inputs_not_read(outcome, files) if files else ():
                self.summary.add_error()
                yield not_read
        self.ignoring.finish(ignored)

    def _judged(self, outcome: HostResult, inline: list[str], ignored: list[str]) -> HostResult | HostError:
        """The host with its suppressions, ignore file and baseline applied, their notices added; or its error:
        an invalid .pgvet-ignore.yaml of its own is that host's, as an unreadable input is, and the others go on."""
        from pgvet.suppress import mark_baseline, suppress_inline

        own_inline: list[str] = []
        own_ignored: list[str] = []
        host = outcome.host
        try:
            entries = self.ignoring.entries(outcome, own_ignored)
            suppress_inline(outcome, own_inline)
            self.ignoring.apply(outcome, entries, own_ignored)
            if self.baseline is not None:
                mark_baseline(outcome, self.baseline)
        except InputError as error:
            return HostError(host=host.name, message=error.message, source=error.source, root=host.root)
        except Exception as error:  # a bug met on one host must not end the lint of a fleet
            return HostError(host=host.name, message=_bug(error), root=host.root)
        inline.extend(own_inline)
        ignored.extend(own_ignored)
        return outcome

    def _linted(self) -> Iterator[HostResult | HostError]:
        directories, jobs = self.directories, self.jobs
        if jobs <= 1:
            for batch in _batches(directories):
                yield from _handed_on(self.plan.lint_batch(batch))
            return
        size = max(1, min(64, len(directories) // (jobs * 8)))
        chunks = (directories[start:start + size] for start in range(0, len(directories), size))
        yield from _in_processes(chunks, jobs, self.plan.options)


Chunk = Sequence[Path | None]


def _handed_on(outcomes: list[HostResult | HostError]) -> Iterator[HostResult | HostError]:
    """A batch's outcomes in order, each let go of once yielded: the run holds no host the reports wrote."""
    outcomes.reverse()
    while outcomes:
        yield outcomes.pop()


def _in_processes(chunks: Iterator[Chunk], jobs: int, options: LintOptions) -> Iterator[HostResult | HostError]:
    """The chunks' outcomes in order, linted by ``jobs`` processes. A worker that dies (killed by the kernel
    out of memory, a crash in a C library) breaks its pool: the hosts that were under way are then linted again
    one at a time (_isolated) so that the one it died on is reported as such, and the run goes on."""
    from collections import deque
    from concurrent.futures.process import BrokenProcessPool

    # a few chunks ahead of the reports, no more: results wait in memory only while the reports write
    pending: deque[tuple[Chunk, Future[list[HostResult | HostError]]]] = deque()
    pool = _pool(jobs, options)
    try:
        for chunk in itertools.chain(chunks, [None]):
            if chunk is not None:
                try:
                    with _signals_held():
                        pending.append((chunk, pool.submit(_lint_in_worker, chunk)))
                except BrokenProcessPool:
                    pending.append((chunk, _broken()))
            while pending and (chunk is None or len(pending) > 2 * jobs):
                try:
                    outcomes = pending[0][1].result()
                except BrokenProcessPool:
                    pool.shutdown(wait=True)
                    for lost, _ in pending:
                        yield from _isolated(lost, options)
                    pending.clear()
                    pool = _pool(jobs, options)
                    continue
                pending.popleft()
                yield from _handed_on(outcomes)
    except BaseException:
        _end_workers(pool)
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _pool(jobs: int, options: LintOptions) -> ProcessPoolExecutor:
    from concurrent.futures import ProcessPoolExecutor

    return ProcessPoolExecutor(max_workers=jobs, initializer=_start_worker, initargs=(options, os.getpid()))


def _broken() -> Future[list[HostResult | HostError]]:
    from concurrent.futures import Future
    from concurrent.futures.process import BrokenProcessPool

    future: Future[list[HostResult | HostError]] = Future()
    future.set_exception(BrokenProcessPool("the pool broke before the chunk was given to it"))
    return future


def _isolated(directories: Chunk, options: LintOptions) -> Iterator[HostResult | HostError]:
    """Each host in a process of its own pool: a host its process dies on is reported, the others linted."""
    from concurrent.futures.process import BrokenProcessPool

    pool = _pool(1, options)
    try:
        for directory in directories:
            try:
                with _signals_held():
                    future = pool.submit(_lint_in_worker, [directory])
                yield from future.result()
            except BrokenProcessPool:
                yield _host_error(directory, "internal error: the process linting this host died (killed by the "
                                             "system, out of memory?); the other hosts were linted")
                pool.shutdown(wait=True)
                pool = _pool(1, options)
    except BaseException:
        _end_workers(pool)
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def lint(directories: Sequence[Path | None], options: LintOptions, *, jobs: int = 1) -> LintResult:
    """Lint hosts in order, every result kept; with ``jobs`` > 1 (or 0), across processes (worker_count)."""
    run = LintRun(directories, options, jobs=jobs)
    result = LintResult(hosts=[], rules=run.rules, tool_version=run.tool_version, pack_version=run.pack_version)
    for outcome in run.outcomes():
        if isinstance(outcome, HostError):
            result.errors.append(outcome)
        else:
            result.hosts.append(outcome)
    result.notices = run.notices
    return result


def exit_code(result: LintResult, fail_on: str, *, allow_unreadable: bool = False) -> int:
    """0: nothing at or above fail_on; 1: findings; 2: a host could not be read (see RunSummary.exit_code)."""
    return RunSummary.of(result).exit_code(fail_on, allow_unreadable=allow_unreadable)
