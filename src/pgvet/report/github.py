"""GitHub Actions workflow commands (annotations), capped as GitHub displays them, the rest in the step
summary. GitHub shows at most 10 annotations of each level (error, warning, notice) per step and 50 per
job; pgvet prints at most 10 per level, the most severe first, and writes every finding as a markdown
table to ``$GITHUB_STEP_SUMMARY`` when that variable is set (the summary holds at most 1 MiB per step).
"""

from __future__ import annotations

import os
from collections import Counter
from typing import TYPE_CHECKING

from pgvet.findings import Finding, HostResult, LintResult

if TYPE_CHECKING:
    from pgvet.report import ReportOptions

LEVELS = {"error": "error", "warning": "warning", "info": "notice"}
PER_LEVEL_LIMIT = 10
SUMMARY_LIMIT = 1024 * 1024 - 4096  # bytes: GitHub refuses a step summary above 1 MiB; keep room for the tail


def escape_data(text: str) -> str:
    """The message of a workflow command: ``%``, CR and LF are percent-encoded."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """A property value (file, title): also ``:`` and ``,``, which separate properties."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def _where(finding: Finding, host: HostResult, options: ReportOptions) -> tuple[str | None, int | None]:
    """The file to annotate, relative to the repository root, and its line; no file for a directory."""
    from pgvet.report import anchor, anchor_path

    target, line = anchor(finding, host)
    if not target.is_file():
        return None, None
    return anchor_path(target, host, options.repo_root), line


def _command(level: str, message: str, title: str, file: str | None, line: int | None) -> str:
    properties = [f"file={escape_property(file)}"] if file else []
    if file and line:
        properties.append(f"line={line}")
    properties.append(f"title={escape_property(title)}")
    return f"::{level} {','.join(properties)}::{escape_data(message)}"


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")  # one line; a pipe would end the table cell


def _write_summary(path: str, rows: list[str], hidden: int) -> str | None:
    """Append the table to the step summary; the reason when it cannot be written."""
    head = ["## pgvet", ""]
    if hidden:
        head += [f"{hidden} findings are not annotated: GitHub shows {PER_LEVEL_LIMIT} annotations per level "
                 "and step. All are listed here.", ""]
    head += ["| severity | rule | where | message |", "|---|---|---|---|"]
    lines, size = list(head), sum(len(line.encode()) + 1 for line in head)
    for position, row in enumerate(rows):
        size += len(row.encode(errors="backslashreplace")) + 1  # as written: file names may not be UTF-8
        if size > SUMMARY_LIMIT:
            lines += ["", f"{len(rows) - position} more findings do not fit in the step summary; "
                          "use --format json or sarif for all of them."]
            break
        lines.append(row)
    try:
        with open(path, "a", encoding="utf-8", errors="backslashreplace") as handle:
            handle.write("\n".join(lines) + "\n\n")
    except OSError as error:
        return error.strerror or str(error)
    return None


def render(result: LintResult, options: ReportOptions) -> str:
    lines: list[str] = []
    shown: Counter[str] = Counter()  # annotations per level, input errors included
    annotated = 0
    rows: list[str] = []
    for error in result.errors:
        place = f"{error.host}: {error.source}" if error.source else error.host
        shown["error"] += 1
        lines.append(_command("error", f"{place}: {error.message}", "pgvet: input error", None, None))
    active = [(finding, host) for host in result.hosts for finding in host.findings
              if finding.suppressed is None and not finding.baseline]
    for finding, host in sorted(active, key=lambda pair: -pair[0].rank):
        level = LEVELS[finding.severity]
        file, line = _where(finding, host, options)
        message = " ".join(finding.message.split())
        place = f"{file}:{line}" if file and line else file or host.host.name
        rows.append(f"| {finding.severity} | `{finding.rule_id}` {finding.rule_name} | `{_cell(place)}` | "
                    f"{_cell(message)} |")
        if shown[level] >= PER_LEVEL_LIMIT:
            continue
        shown[level] += 1
        annotated += 1
        lines.append(_command(level, message, f"{finding.rule_id} {finding.rule_name} ({finding.host})", file, line))
    hidden = len(rows) - annotated
    summary_file = os.environ.get("GITHUB_STEP_SUMMARY")
    if summary_file and rows:
        problem = _write_summary(summary_file, rows, hidden)
        if problem:
            lines.append(f"::warning::pgvet could not write the step summary: {escape_data(problem)}")
    if hidden > 0:
        where = "see the step summary" if summary_file else "use --format text or json to see them"
        lines.append(f"::notice::{hidden} more findings are not annotated (GitHub shows {PER_LEVEL_LIMIT} "
                     f"per level and step); {where}")
    return "".join(line + "\n" for line in lines)
