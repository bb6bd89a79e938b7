"""One line per finding, ``path:line: SEVERITY ID name: message`` — for hooks and editors."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pgvet.findings import LintResult

if TYPE_CHECKING:
    from pgvet.report import ReportOptions


def render(result: LintResult, options: ReportOptions) -> str:
    from pgvet.report import relative_path

    lines: list[str] = []
    for error in result.errors:
        place = str(error.source) if error.source else error.host
        lines.append(f"{place}: ERROR input: {error.message}")
    for host in result.hosts:
        # in file order, as compilers print, so that editors step through a file from top to bottom
        for finding in sorted(host.findings, key=lambda item: (item.path is None, item.path or "", item.line or 0,
                                                               item.rule_id)):
            if finding.path:
                place = relative_path(finding.path, host.host.root, options.repo_root)
                place += f":{finding.line}" if finding.line else ""
            else:
                place = relative_path(".", host.host.root, options.repo_root)
            state = " (suppressed)" if finding.suppressed else " (baseline)" if finding.baseline else ""
            message = " ".join(finding.message.split())
            lines.append(f"{place}: {finding.severity.upper()} {finding.rule_id} {finding.rule_name}: {message}{state}")
    return "".join(line + "\n" for line in lines)
