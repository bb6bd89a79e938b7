"""JSON Lines for streams: one finding object per line (as in the JSON report), then a summary line.

Written host by host: each host's findings go out as soon as it is linted; the lines of hosts that
could not be read follow the findings, then the summary.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from pgvet.findings import HostError, HostResult, LintResult
from pgvet.report import render_with_writer

if TYPE_CHECKING:
    from pgvet.report import Out, ReportOptions, RunInfo
    from pgvet.summary import RunSummary


class Writer:
    def __init__(self, run: RunInfo, options: ReportOptions, out: Out) -> None:
        self.run = run
        self.out = out
        self.repo_root = options.repo_root
        self.errors: list[HostError] = []

    def host(self, host: HostResult) -> None:
        from pgvet.report.json_report import finding_json

        for finding in host.findings:
            self.out.write(json.dumps({"type": "finding", **finding_json(finding, host, self.repo_root)},
                                      ensure_ascii=False, default=str) + "\n")

    def error(self, error: HostError) -> None:
        self.errors.append(error)

    def finish(self, notices: list[str], summary: RunSummary) -> None:
        from pgvet.report.json_report import SCHEMA_VERSION, summary_json

        for error in self.errors:
            self.out.write(json.dumps({"type": "error", "host": error.host, "message": error.message,
                                       "path": error.source.path if error.source else None,
                                       "line": error.source.line if error.source else None},
                                      ensure_ascii=False) + "\n")
        self.out.write(json.dumps({"type": "summary", "schema_version": SCHEMA_VERSION,
                                   "tool_version": self.run.tool_version, "rule_pack": self.run.pack_version,
                                   **summary_json(summary)}) + "\n")


def render(result: LintResult, options: ReportOptions) -> str:
    return render_with_writer(Writer, result, options)
