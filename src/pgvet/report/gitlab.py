"""GitLab Code Quality: a JSON array of issues (the subset of the Code Climate format GitLab reads) for
``artifacts: reports: codequality``. Suppressed and baseline findings are left out: GitLab has no way to
mark them, and the merge request widget would show them as new. A host that could not be read is an issue
too (``input``, critical): without it, a fleet whose host stopped being read passed with nothing to see.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pgvet.findings import HostError, LintResult

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
    issues += [_error_issue(error, options) for error in result.errors]
    return json.dumps(issues, indent=2, ensure_ascii=False) + "\n"


def _error_issue(error: HostError, options: ReportOptions) -> dict[str, Any]:
    """An unreadable host, at the input that failed (from where the run is, as the findings' files), else at its
    directory; the fingerprint is stable across runs as long as the host fails the same way."""
    from pgvet.report import relative_path

    source = error.source
    if source is not None and error.root is not None and source.path != error.root:
        path = relative_path(source.path, error.root, options.repo_root)
    else:
        path = source.path if source is not None else error.root or error.host
    line = source.line if source is not None and source.line else 1
    key = "\0".join(("input", error.host, path, error.message))
    return {
        "description": f"input: {error.host} could not be read: {error.message}",
        "check_name": "input",
        "fingerprint": hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:16],
        "severity": "critical",
        "location": {"path": Path(path).as_posix(), "lines": {"begin": line}},
    }
