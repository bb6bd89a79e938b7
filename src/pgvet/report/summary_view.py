"""The summary alone (``--format summary``): for a fleet of hundreds of hosts, what a person reads first — the hosts
that could not be read, the hosts with the most findings, the findings on the most hosts, the counts — in a few
dozen lines where the text report holds every finding (80 000 lines for 500 hosts). Nothing of a host is kept but
its counts (RunSummary)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text

from pgvet.findings import HostError, HostResult, LintResult
from pgvet.report import error_label, printed, render_with_writer, visible
from pgvet.report.text import print_fleet, report_console, summary_text

if TYPE_CHECKING:
    from pgvet.report import Out, ReportOptions, RunInfo
    from pgvet.run.summary import RunSummary


class Writer:
    def __init__(self, run: RunInfo, options: ReportOptions, out: Out) -> None:
        self.options = options
        self.out = out
        self.errors: list[HostError] = []

    def host(self, host: HostResult) -> None:
        """Nothing: the run's summary counts the host."""

    def error(self, error: HostError) -> None:
        self.errors.append(error)

    def finish(self, notices: list[str], summary: RunSummary) -> None:
        console, buffer, _ = report_console(self.options)
        for error in self.errors:
            console.print(Text(visible(f"error: {error_label(error, self.options.repo_root)}: {error.message}"),
                               "bold red"))
        if self.errors:
            console.print()
        if summary.is_fleet():
            print_fleet(console, summary)
        if notices:
            console.print(Text(f"{len(notices)} notice{'' if len(notices) == 1 else 's'} (the text report lists "
                               f"{'it' if len(notices) == 1 else 'them'})", "yellow"))
        console.print(Text(summary_text(summary, self.options.verbose), "bold"))
        self.out.write(printed(buffer.getvalue()))

    def close(self) -> None:
        """Nothing held."""


def render(result: LintResult, options: ReportOptions) -> str:
    return render_with_writer(Writer, result, options)
