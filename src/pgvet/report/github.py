"""GitHub Actions workflow commands (annotations), capped as GitHub displays them, the rest in the step
summary. GitHub shows at most 10 annotations of each level per step; all findings go to
``$GITHUB_STEP_SUMMARY`` when it is set.
"""

from __future__ import annotations

import os
from collections import Counter
from typing import TYPE_CHECKING

from pgvet.findings import LintResult

if TYPE_CHECKING:
    from pgvet.report import ReportOptions

LEVELS = {"error": "error", "warning": "warning", "info": "notice"}
PER_LEVEL_LIMIT = 10


def escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def render(result: LintResult, options: ReportOptions) -> str:
    from pgvet.report import relative_path

    lines: list[str] = []
    shown: Counter[str] = Counter()
    rows: list[str] = []
    for error in result.errors:
        place = f"file={escape_property(error.source.path)}," if error.source and error.source.path else ""
        line = f"line={error.source.line}," if error.source and error.source.line else ""
        lines.append(f"::error {place}{line}title={escape_property('pgvet: input error')}::"
                     f"{escape_data(error.host + ': ' + error.message)}")
    for host in result.hosts:
        for finding in sorted(host.findings, key=lambda item: -item.rank):
            if finding.suppressed is not None or finding.baseline:
                continue
            level = LEVELS[finding.severity]
            path = relative_path(finding.path or ".", host.host.root, options.repo_root)
            place = f"{path}:{finding.line}" if finding.line else path
            message = " ".join(finding.message.split())
            cell = message.replace("|", "\\|")  # a pipe would end the markdown table cell
            rows.append(f"| {finding.severity} | `{finding.rule_id}` {finding.rule_name} | `{place}` | {cell} |")
            if shown[level] >= PER_LEVEL_LIMIT:
                continue
            shown[level] += 1
            properties = [f"file={escape_property(path)}"]
            if finding.line:
                properties.append(f"line={finding.line}")
            properties.append(f"title={escape_property(f'{finding.rule_id} {finding.rule_name}')}")
            lines.append(f"::{level} {','.join(properties)}::{escape_data(message)}")
    summary_file = os.environ.get("GITHUB_STEP_SUMMARY")
    if summary_file and rows:
        table = ["## pgvet", "", "| severity | rule | where | message |", "|---|---|---|---|", *rows, ""]
        try:
            with open(summary_file, "a", encoding="utf-8") as handle:
                handle.write("\n".join(table) + "\n")
        except OSError:
            lines.append("::warning::pgvet could not write the step summary")
    hidden = len(rows) - sum(shown.values())
    if hidden > 0:
        lines.append(f"::notice::{hidden} more findings are not annotated (GitHub shows 10 per level); "
                     "see the step summary")
    return "".join(line + "\n" for line in lines)
