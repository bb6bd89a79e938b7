"""JSON Lines for streams: one finding object per line (as in the JSON report), then a summary line, which
carries the run's notices as the JSON report's ``notices`` does.

Written host by host: each host's findings go out as soon as it is linted; the lines of hosts that
could not be read follow the findings, then the summary.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pgvet.findings import Finding, HostError, HostResult, LintResult
from pgvet.report import error_path, render_with_writer
from pgvet.report.json_report import SCHEMA_VERSION, finding_json, summary_json

if TYPE_CHECKING:
    from pgvet.report import Out, ReportOptions, RunInfo
    from pgvet.run.summary import RunSummary

# what JSON leaves unescaped in a string but str.splitlines and other readers of lines take for a line's end
ESCAPES = {"\u2028": "\\u2028", "\u2029": "\\u2029", "\x85": "\\u0085"}


def record_line(record: dict[str, Any]) -> str:
    """One record, on one line whoever splits the lines."""
    text = json.dumps(record, ensure_ascii=False, default=str)
    for character, escape in ESCAPES.items():  # rare: a scan for each, which leaves most lines as they are
        text = text.replace(character, escape)
    return text


def finding_line(finding: Finding, host: HostResult, repo_root: Path | None) -> str:
    """A finding's line: its JSON report object (report/json_report.py) with ``"type": "finding"`` first."""
    return record_line({"type": "finding", **finding_json(finding, host, repo_root)})


class Writer:
    def __init__(self, run: RunInfo, options: ReportOptions, out: Out) -> None:
        self.run = run
        self.out = out
        self.repo_root = options.repo_root
        self.errors: list[HostError] = []

    def host(self, host: HostResult) -> None:
        if host.findings:
            self.out.write("".join([finding_line(finding, host, self.repo_root) + "\n"
                                    for finding in host.findings]))

    def error(self, error: HostError) -> None:
        self.errors.append(error)

    def finish(self, notices: list[str], summary: RunSummary) -> None:
        for error in self.errors:
            self.out.write(record_line({"type": "error", "host": error.host, "message": error.message,
                                        "path": error_path(error, self.repo_root),
                                        "line": error.source.line if error.source else None}) + "\n")
        self.out.write(record_line({"type": "summary", "schema_version": SCHEMA_VERSION,
                                    "tool_version": self.run.tool_version, "rule_pack": self.run.pack_version,
                                    **summary_json(summary), "notices": notices}) + "\n")

    def close(self) -> None:
        """Nothing held: each line went out as it came."""


def render(result: LintResult, options: ReportOptions) -> str:
    return render_with_writer(Writer, result, options)
