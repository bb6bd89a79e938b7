"""GitLab Code Quality: a JSON array of issues (the subset of the Code Climate format GitLab reads) for
``artifacts: reports: codequality``. Suppressed and baseline findings are left out: GitLab has no way to
mark them, and the merge request widget would show them as new.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from pgvet.findings import LintResult

if TYPE_CHECKING:
    from pgvet.report import ReportOptions

SEVERITIES = {"info": "info", "warning": "major", "error": "critical"}


def render(result: LintResult, options: ReportOptions) -> str:
    from pgvet.report import anchor, anchor_path

    issues: list[dict[str, Any]] = []
    for host in result.hosts:
        for finding in host.findings:
            if finding.suppressed is not None or finding.baseline:
                continue
            target, line = anchor(finding, host)
            issues.append({
                "description": f"{finding.rule_id} {finding.rule_name}: {' '.join(finding.message.split())}",
                "check_name": finding.rule_id,
                # pgvet's fingerprint already names the rule, host, file and subject: stable across runs
                "fingerprint": finding.fingerprint,
                "severity": SEVERITIES[finding.severity],
                "location": {
                    "path": anchor_path(target, host, options.repo_root),
                    "lines": {"begin": line if line and line >= 1 else 1},
                },
            })
    return json.dumps(issues, indent=2, ensure_ascii=False) + "\n"
