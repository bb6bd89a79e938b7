"""GitHub Actions workflow commands (annotations), capped as GitHub displays them, the rest in the step
summary. GitHub shows at most 10 annotations of each level (error, warning, notice) per step and 50 per
job; pgvet prints at most 10 per level, the most severe first, then the run's notices, and writes every finding
as a markdown table to ``$GITHUB_STEP_SUMMARY`` when that variable is set (the summary holds at most 1 MiB per
step).

Written host by host: the input errors are printed as they come (they go first); of the findings, only what
can be shown is kept until the end — the first 10 annotations of each level and, for the step summary, each
level's rows up to the summary's limit (no more than that can fit whatever comes later).
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import TYPE_CHECKING

from pgvet.findings import Finding, HostError, HostResult, LintResult
from pgvet.report import (
    anchor,
    anchor_path,
    error_label,
    error_path,
    markdown_text,
    prose,
    render_with_writer,
    visible,
)

if TYPE_CHECKING:
    from pgvet.report import Out, ReportOptions, RunInfo
    from pgvet.run.summary import RunSummary

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
    target, line = anchor(finding, host)
    if not target.is_file():
        return None, None
    return anchor_path(target, host, options.repo_root), line


def _command(level: str, shown: str, title: str, file: str | None, line: int | None) -> str:
    """``shown``: the message, escaped already (prose, visible): escaped again, its escapes' backslashes doubled."""
    # a file name is the repository's to choose: escaped as any text, though GitHub then finds no such file
    properties = [f"file={escape_property(visible(file))}"] if file else []
    if file and line:
        properties.append(f"line={line}")
    properties.append(f"title={escape_property(visible(title))}")
    return f"::{level} {','.join(properties)}::{escape_data(shown)}"


def _cell(shown: str) -> str:
    """Escaped text (prose) in a table cell: a message quotes the repository's values and file names
    (markdown_text)."""
    return markdown_text(shown)


def _code(shown: str) -> str:
    """Escaped text (prose) as a code span in a table cell: fenced by more backticks than any run inside (a file
    name's backtick would end it, and what follows be Markdown), a pipe escaped (GFM splits cells first)."""
    fence = "`" * (max((len(run) for run in re.findall("`+", shown)), default=0) + 1)
    pad = " " if shown[:1] == "`" or shown[-1:] == "`" else ""  # CommonMark strips one space at each end
    return f"{fence}{pad}{shown.replace('|', chr(92) + '|')}{pad}{fence}"


def _write_summary(path: str, rows: list[str], hidden: int, unkept: int = 0) -> str | None:
    """Append the table to the step summary; the reason when it cannot be written. ``unkept``: the rows after
    ``rows`` that were not kept, being past the limit already."""
    head = ["## pgvet", ""]
    if hidden:
        head += [f"{hidden} findings are not annotated: GitHub shows {PER_LEVEL_LIMIT} annotations per level "
                 "and step. All are listed here.", ""]
    head += ["| severity | rule | where | message |", "|---|---|---|---|"]
    lines, size = list(head), sum(len(line.encode()) + 1 for line in head)
    for position, row in enumerate(rows):
        size += len(row.encode(errors="backslashreplace")) + 1  # as written: file names may not be UTF-8
        if size > SUMMARY_LIMIT:
            lines += ["", f"{len(rows) - position + unkept} more findings do not fit in the step summary; "
                          "use --format json or sarif for all of them."]
            break
        lines.append(row)
    try:
        with open(path, "a", encoding="utf-8", errors="backslashreplace") as handle:
            handle.write("\n".join(lines) + "\n\n")
    except OSError as error:
        return error.strerror or str(error)
    return None


class _Level:
    """What is kept of one level's findings: its first annotations and step summary rows."""

    def __init__(self) -> None:
        self.annotations: list[str] = []
        self.rows: list[str] = []
        self.size = 0  # of the rows kept, as _write_summary counts it
        self.count = 0


class Writer:
    def __init__(self, run: RunInfo, options: ReportOptions, out: Out) -> None:
        self.out = out
        self.options = options
        self.summary_file = os.environ.get("GITHUB_STEP_SUMMARY")
        self.errors = 0
        self.levels = {level: _Level() for level in LEVELS.values()}  # the most severe first

    def host(self, host: HostResult) -> None:
        for finding in host.findings:
            if finding.suppressed is not None or finding.baseline:
                continue
            kept = self.levels[LEVELS[finding.severity]]
            kept.count += 1
            if len(kept.annotations) >= PER_LEVEL_LIMIT and (not self.summary_file or kept.size > SUMMARY_LIMIT):
                continue
            file, line = _where(finding, host, self.options)
            message = prose(finding.message)
            if len(kept.annotations) < PER_LEVEL_LIMIT:
                kept.annotations.append(_command(LEVELS[finding.severity], message,
                                                 f"{finding.rule_id} {finding.rule_name} ({finding.host})", file, line))
            if self.summary_file and kept.size <= SUMMARY_LIMIT:
                place = f"{file}:{line}" if file and line else file or host.host_facts.name
                row = (f"| {finding.severity} | `{finding.rule_id}` {finding.rule_name} | "
                       f"{_code(prose(place))} | {_cell(message)} |")
                kept.rows.append(row)
                kept.size += len(row.encode(errors="backslashreplace")) + 1

    def error(self, error: HostError) -> None:
        place = error_label(error, self.options.repo_root)
        self.errors += 1  # input errors count among the error annotations shown
        # at the input that failed, as a finding is at its file: a pull request that broke it shows where
        file = error_path(error, self.options.repo_root)
        if file is None or not (Path(self.options.repo_root or ".") / file).is_file():
            file = None  # an internal error, or the host directory itself
        line = error.source.line if file and error.source else None
        self.out.write(_command("error", visible(f"{place}: {error.message}"), "pgvet: input error", file, line) + "\n")

    def finish(self, notices: list[str], summary: RunSummary) -> None:
        lines: list[str] = []
        for level, kept in self.levels.items():
            room = PER_LEVEL_LIMIT - (self.errors if level == "error" else 0)
            lines += kept.annotations[:max(0, room)]
        total = sum(kept.count for kept in self.levels.values())
        hidden = total - len(lines)
        if self.summary_file and total:
            rows = [row for kept in self.levels.values() for row in kept.rows]
            problem = _write_summary(self.summary_file, rows, hidden, total - len(rows))
            if problem:
                lines.append(f"::warning::pgvet could not write the step summary: {escape_data(problem)}")
        # unused or unexplained suppressions, inputs read otherwise than they say: nowhere else in an Actions run
        lines += [f"::notice title=pgvet::{escape_data(visible(notice))}" for notice in notices]
        if hidden > 0:
            where = "see the step summary" if self.summary_file else "use --format text or json to see them"
            lines.append(f"::notice::{hidden} more findings are not annotated (GitHub shows {PER_LEVEL_LIMIT} "
                         f"per level and step); {where}")
        self.out.write("".join(line + "\n" for line in lines))

    def close(self) -> None:
        """Nothing held but what finish prints."""


def render(result: LintResult, options: ReportOptions) -> str:
    return render_with_writer(Writer, result, options)
