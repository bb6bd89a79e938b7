"""One line per finding, ``path:line: SEVERITY ID name: message`` — for hooks and editors. A finding with no
place of its own is at its host's directory, or at the line of the document that declares the host.

Written host by host; the lines of hosts that could not be read come first, so the findings' lines
are held (Spool) until the run ends. What pgvet refused to read is a ``WARNING input`` line of its host;
the run's other notices (suppressions, ignore files) end the output as ``notice: …`` lines.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from pgvet.findings import HostError, HostResult, LintResult
from pgvet.report import (
    Spool,
    error_place,
    host_file_path,
    one_line,
    prose,
    relative_path,
    render_with_writer,
    without_commands,
)

if TYPE_CHECKING:
    from pgvet.report import Out, ReportOptions, RunInfo
    from pgvet.run.summary import RunSummary


class Writer:
    def __init__(self, run: RunInfo, options: ReportOptions, out: Out) -> None:
        self.out = out
        self.repo_root = options.repo_root
        self.errors: list[HostError] = []
        self.lines = Spool()
        self.warned: set[str] = set()  # the hosts' warnings as the notices repeat them, not to print them twice

    def host(self, host: HostResult) -> None:
        # What pgvet refused or could not read ("file[:line]: message", the file relative to the host directory)
        # is always said (docs/decisions.md), with the file shown from where the run is, as no link resolved.
        directory = relative_path(".", host.host_facts.root, self.repo_root)
        for warning in host.host_facts.warnings:
            place, _, message = warning.partition(": ")
            if directory != "." and not place.startswith(os.sep):
                place = os.path.join(directory, place)
            self.lines.write(without_commands(f"{one_line(place)}: WARNING input: {one_line(message)}\n" if message
                                              else f"{one_line(directory)}: WARNING input: {one_line(warning)}\n"))
            self.warned.add(f"{host.host_facts.name}: {warning}")
        # a finding without a place of its own: where the document declares the host (one directory may hold
        # several), else the directory
        declared = host.declared_by[0] if host.declared_by is not None else None
        placed = [(finding, (finding.path, finding.line) if finding.path else
                   (declared.path, declared.line) if declared is not None else (None, None))
                  for finding in host.findings]
        # in file order, as compilers print, so that editors step through a file from top to bottom
        for finding, (path, line) in sorted(placed, key=lambda item: (item[1][0] is None, item[1][0] or "",
                                                                      item[1][1] or 0, item[0].rule_id)):
            place = host_file_path(path, host, self.repo_root) + (f":{line}" if line else "") if path else directory
            state = " (suppressed)" if finding.suppressed else " (baseline)" if finding.baseline else ""
            # each text escaped once: escaping the message again would double its escapes' backslashes
            # a line starts with the place, a repository's path: GitHub Actions obeys one that starts with `::`
            self.lines.write(without_commands(
                one_line(f"{place}: {finding.severity.upper()} {finding.rule_id} {finding.rule_name}: ")
                + f"{prose(finding.message)}{state}\n"))

    def error(self, error: HostError) -> None:
        self.errors.append(error)

    def finish(self, notices: list[str], summary: RunSummary) -> None:
        for error in self.errors:
            self.out.write(without_commands(one_line(f"{self._error_place(error)}: ERROR input: {error.message}"))
                           + "\n")
        self.lines.copy_to(self.out)
        for notice in notices:  # unused or reasonless suppressions, expired ignore entries
            if notice not in self.warned:
                self.out.write(one_line(f"notice: {notice}") + "\n")

    def _error_place(self, error: HostError) -> str:
        return error_place(error, self.repo_root) or error.host

    def close(self) -> None:
        self.lines.close()


def render(result: LintResult, options: ReportOptions) -> str:
    return render_with_writer(Writer, result, options)
