"""One lint run: paths → hosts → lint → suppressions, ignore files and baseline → the reports it feeds.

``run_lint`` is `pgvet lint`'s work once its command line is read; LintRun yields each host's outcome as it is
linted, and the reports (pgvet.report) write what it gives them, host by host: memory stays flat however many hosts.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

from pgvet import __version__
from pgvet.engine.loader import load_pack
from pgvet.errors import InputError, UsageError
from pgvet.findings import HostError, HostResult, LintResult
from pgvet.output_file import any_private
from pgvet.paths import root_within
from pgvet.pgparams import SUPPORTED_MAJORS
from pgvet.report import HostWriter, default_format, destinations, report_options, writer_factory
from pgvet.report.files import ReportFile
from pgvet.report.progress import progress_bar
from pgvet.run.config import SEVERITIES, load_config
from pgvet.run.hosts import Linter, bug_message, validate_selectors
from pgvet.run.options import LintOptions, RunOptions, lint_options
from pgvet.run.paths import GivenPaths, host_directories, inputs_not_read
from pgvet.run.summary import RunSummary
from pgvet.run.suppress import load_baseline, mark_baseline, suppress_inline
from pgvet.run.workers import (
    batches,
    collecting_garbage_for_batches,
    handed_on,
    usable_cpus,
    worker_count,
)


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
        pack = load_pack(options.rules, repository=options.repository)
        validate_selectors(pack, [*options.configured_select, *options.configured_ignore], options.config_path)
        validate_selectors(pack, [*options.select, *options.ignore])
        self.linter = Linter.of(pack, options)
        self.directories = directories
        self.jobs = worker_count(len(directories), jobs)  # a wrong PGVET_JOBS_MIN_HOSTS refuses the run here
        self.rules = pack.meta()
        self.tool_version = __version__
        self.pack_version = pack.version
        self.summary = RunSummary()
        self.ignoring = self.linter.ignoring
        self.baseline = (load_baseline(options.baseline, root_within(options.baseline, options.repository))
                         if options.baseline is not None else None)
        self.compared_with_baseline = self.baseline is not None
        # notices in the order the reports have always listed them: inputs, then suppressions, then ignore files
        self.given = given if given is not None else GivenPaths([])
        self._notices: tuple[list[str], list[str], list[str]] = (list(self.given.notices), [], [])
        # each host name: the directory of the first host of that name. Two hosts of one name share fingerprints,
        # baseline entries and suppressions; the later ones are marked namesakes (a name a host, the one thing a
        # run keeps that grows with its hosts)
        self._roots: dict[str, str] = {}

    @property
    def notices(self) -> list[str]:
        return [notice for part in self._notices for notice in part]

    def outcomes(self) -> Iterator[HostResult | HostError]:
        inputs, inline, ignored = self._notices
        for refused in self.given.refused:  # paths that name no host
            self.summary.add_error()
            yield self._named(refused)
        for linted in self._linted():
            outcome = linted if isinstance(linted, HostError) else self._judged(linted, inline, ignored)
            if isinstance(outcome, HostError):
                self.summary.add_error()
                yield self._named(outcome)
                continue
            facts = outcome.host_facts
            inputs.extend(f"{facts.name}: {warning}" for warning in facts.warnings)
            first = self._roots.setdefault(facts.name, facts.root)
            if first != facts.root:
                outcome.namesake = True
                inputs.append(f"{facts.name}: {first} and {facts.root} have the same host name: their "
                              "findings share fingerprints, baseline entries and suppressions; give each its own "
                              "`name:` in host.yaml")
            self.summary.add(outcome)
            files = self.given.files.get(os.path.realpath(facts.root)) if self.given.files else None
            yield outcome
            for not_read in inputs_not_read(outcome, files) if files else ():
                self.summary.add_error()
                yield self._named(not_read)
        self.ignoring.finish(ignored)

    def _named(self, error: HostError) -> HostError:
        """The error, marked a namesake when an earlier host or error of its name had another directory."""
        root = error.root or (error.source.path if error.source is not None else "")
        return error if self._roots.setdefault(error.host, root) == root else error._replace(namesake=True)

    def _judged(self, outcome: HostResult, inline: list[str], ignored: list[str]) -> HostResult | HostError:
        """The host with its suppressions, ignore file and baseline applied, their notices added; or its error:
        an invalid .pgvet-ignore.yaml of its own is that host's, as an unreadable input is, and the others go on."""
        own_inline: list[str] = []
        own_ignored: list[str] = []
        host = outcome.host_facts
        try:
            entries = self.ignoring.entries(outcome, own_ignored)
            suppress_inline(outcome, own_inline, self.linter.rule_names, self.linter.evaluated)
            self.ignoring.apply(outcome, entries)
            # the notices of the files of the hosts judged before go to the run's, whatever becomes of this host
            self.ignoring.judged(outcome, entries, ignored)
            if self.baseline is not None:
                mark_baseline(outcome, self.baseline)
        except InputError as error:
            return HostError(host=host.name, message=error.message, source=error.source, root=host.root)
        except Exception as error:  # a bug met on one host must not end the lint of a fleet
            return HostError(host=host.name, message=bug_message(error), root=host.root)
        inline.extend(own_inline)
        ignored.extend(own_ignored)
        return outcome

    def _linted(self) -> Iterator[HostResult | HostError]:
        with collecting_garbage_for_batches():
            if self.jobs <= 1:
                for batch in batches(self.directories):
                    yield from handed_on(self.linter.lint_batch(batch))
            else:
                yield from self._linted_in_processes()

    def _linted_in_processes(self) -> Iterator[HostResult | HostError]:
        # here only: importing the pool's module (multiprocessing) is a start-up cost a run in one process avoids
        from pgvet.run.pool import in_processes

        directories, jobs = self.directories, self.jobs
        size = max(1, min(64, len(directories) // (jobs * 8)))
        chunks = (directories[start:start + size] for start in range(0, len(directories), size))
        yield from in_processes(chunks, jobs, self.linter.options)


def lint(directories: Sequence[Path | None], options: LintOptions, *, jobs: int = 1) -> LintResult:
    """Lint hosts in order, every result kept; with ``jobs`` > 1 (or 0), across processes (worker_count)."""
    run = LintRun(directories, options, jobs=jobs)
    result = LintResult(hosts=[], rules=run.rules, tool_version=run.tool_version, pack_version=run.pack_version,
                        compared_with_baseline=run.compared_with_baseline)
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


def run_lint(request: RunOptions) -> int:
    """Lint the hosts and write the reports; the exit code (see pgvet.cli). pgvet's own errors are raised
    (PgvetError), and the caller says them."""
    settings = load_config(request.config)
    threshold = request.fail_on or settings.fail_on
    if threshold not in SEVERITIES:
        raise UsageError(f"--fail-on must be one of {', '.join(SEVERITIES)}")
    if request.upgrade_to is not None and request.upgrade_to not in SUPPORTED_MAJORS:
        raise UsageError(f"--upgrade-to must be a major version pgvet has a parameter catalog for "
                         f"({', '.join(map(str, SUPPORTED_MAJORS))}), not {request.upgrade_to}")
    explicit = request.explicit
    given = host_directories(request.paths)
    directories: list[Path | None] = list(given.hosts)
    if not directories and not given.refused:
        if explicit is not None:
            directories = [None]
        elif not given.notices:  # else every file given was left out, with a notice: a run of no host says so
            raise UsageError("give host directories or input files (see pgvet lint --help)")
    elif explicit is not None and len(directories) > 1:
        raise UsageError("input file options apply to one host: give a single directory with them")
    options = lint_options(settings, rules=request.rules, select=request.select, ignore=request.ignore,
                           explicit=explicit, baseline=request.baseline or settings.baseline,
                           ignore_file=request.ignore_file or settings.ignore_file, upgrade_to=request.upgrade_to)
    jobs = request.jobs
    if jobs > 1 and len(directories) > 1:  # 0 (the default) takes as many as pay, which the CPUs bound
        cpus = usable_cpus()
        if jobs > cpus:  # more processes than CPUs only share them, each with its own copy of the rules
            print(f"pgvet: notice: --jobs {jobs} lowered to {cpus}, the CPUs this process may use", file=sys.stderr)
            jobs = cpus
    # refuses a wrong pack, selector, parameter first
    run = LintRun(directories, options, jobs=jobs, given=given)
    write_reports(run, formats=request.formats, outputs=request.outputs, verbose=request.verbose,
                  color=request.color)
    code = run.summary.exit_code(threshold, allow_unreadable=request.allow_unreadable)
    return 0 if request.exit_zero and code == 1 else code


def write_reports(run: LintRun, *, formats: list[str], outputs: list[Path], verbose: bool,
                  color: bool | None) -> None:
    """Each --format written to its --output (or standard output) as the run gives its hosts: each host handed to
    every report as it is linted, then dropped."""
    with contextlib.ExitStack() as files:
        writers: list[HostWriter] = []
        reports: list[ReportFile] = []
        paired = destinations(formats or [default_format()], outputs)
        for fmt, destination in paired:
            out: ReportFile | None = None
            if destination is not None:
                out = files.enter_context(ReportFile(destination))
                reports.append(out)
            options = report_options(fmt, color=False if out is not None else color, verbose=verbose)
            writer = writer_factory(fmt)(run, options, sys.stdout if out is None else out)
            files.callback(writer.close)  # its spools, also when the run fails
            writers.append(writer)
        on_stdout = [fmt for fmt, destination in paired if destination is None]
        with progress_bar(len(run.directories), on_stdout) as linted:
            for outcome in run.outcomes():
                if isinstance(outcome, HostError):
                    for writer in writers:
                        writer.error(outcome)
                    if outcome.root is not None:  # a host's (not a path given that names none)
                        linted()
                    continue
                for writer in writers:
                    writer.host(outcome)
                linted()
        notices = run.notices
        for writer in writers:
            writer.finish(notices, run.summary)
        if reports and any_private(run.directories):  # a report of hosts others may not read is theirs neither
            for report in reports:
                report.private = True
