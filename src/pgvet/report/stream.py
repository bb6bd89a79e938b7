"""``pgvet lint``: hosts linted one after the other and handed to every report as they come.

Every report is written host by host (HostWriter); a host is then dropped, and what remains of a run
is its summary counts: memory stays flat however many hosts.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Sequence
from pathlib import Path

from pgvet.findings import HostError
from pgvet.lint import LintOptions, LintRun
from pgvet.output_file import any_private
from pgvet.report import HostWriter, ReportOptions, default_format, destinations, writer_factory
from pgvet.report.files import ReportFile
from pgvet.summary import RunSummary


def lint_and_report(directories: Sequence[Path | None], options: LintOptions, *, jobs: int, formats: list[str],
                    outputs: list[Path], verbose: bool, color: bool | None, notices: Sequence[str] = ()) -> RunSummary:
    """Lint the hosts and write each --format to its --output (or standard output); the run's summary.
    ``notices``: what the run has to say before its first host (paths given that are no host's)."""
    run = LintRun(directories, options, jobs=jobs, notices=notices)  # refuses a wrong pack, selector, parameter first
    with contextlib.ExitStack() as files:
        writers: list[HostWriter] = []
        reports: list[ReportFile] = []
        for fmt, destination in destinations(formats or [default_format()], outputs):
            out: ReportFile | None = None
            if destination is not None:
                out = files.enter_context(ReportFile(destination))
                reports.append(out)
            report_options = ReportOptions(color=False if out is not None else color, verbose=verbose)
            factory = writer_factory(fmt)
            writer = factory(run, report_options, sys.stdout if out is None else out)
            files.callback(writer.close)  # its spools, also when the run fails
            writers.append(writer)
        for outcome in run.outcomes():
            if isinstance(outcome, HostError):
                for writer in writers:
                    writer.error(outcome)
                continue
            for writer in writers:
                writer.host(outcome)
        notices = run.notices
        for writer in writers:
            writer.finish(notices, run.summary)
        if reports and any_private(directories):  # a report of hosts others may not read is theirs neither
            for report in reports:
                report.private = True
    return run.summary
