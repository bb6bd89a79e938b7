"""GitLab Code Quality: a JSON array of issues (the subset of the Code Climate format GitLab reads) for
``artifacts: reports: codequality``. Suppressed and baseline findings are left out: GitLab has no way to
mark them, and the merge request widget would show them as new. A host that could not be read is an issue
too (``input``, critical): without it, a fleet whose host stopped being read passed with nothing to see.
GitLab keeps one issue per fingerprint, and two hosts of one name (``prod/db``, ``staging/db``) share pgvet's
fingerprints: the second one's are made its own, else its findings would vanish from the merge request.

Written host by host, straight to the output: the array's items are the findings as the hosts come, then the
hosts that could not be read.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pgvet.findings import HostError, HostResult, LintResult
from pgvet.report import JsonArray, anchor, anchor_path, error_path, prose, relative_path, render_with_writer

if TYPE_CHECKING:
    from pgvet.report import Out, ReportOptions, RunInfo
    from pgvet.run.summary import RunSummary

SEVERITIES = {"info": "info", "warning": "major", "error": "critical"}


class Writer:
    """The array as ``json.dumps(issues, indent=2)`` gives it."""

    def __init__(self, run: RunInfo, options: ReportOptions, out: Out) -> None:
        self.out = out
        self.options = options
        self.errors: list[HostError] = []  # a few lines each, and listed after the findings
        out.write("[")
        self.issues = JsonArray(out, 1)

    def host(self, host: HostResult) -> None:
        facts = host.host_facts
        directory = relative_path(".", facts.root, self.options.repo_root)
        for finding in host.findings:
            if finding.suppressed is not None or finding.baseline:
                continue
            target, line = anchor(finding, host)
            # pgvet's fingerprint already names the rule, host, file and subject: stable across runs; a namesake
            # host's is told apart by its directory, as stable
            fingerprint = _digest(finding.fingerprint, directory) if host.namesake else finding.fingerprint
            self.issues.add({
                "description": f"{finding.rule_id} {finding.rule_name}: {prose(finding.message)}",
                "check_name": finding.rule_id,
                "fingerprint": fingerprint,
                "severity": SEVERITIES[finding.severity],
                "location": {
                    "path": anchor_path(target, host, self.options.repo_root),
                    "lines": {"begin": line if line and line >= 1 else 1},
                },
            })

    def error(self, error: HostError) -> None:
        self.errors.append(error)

    def finish(self, notices: list[str], summary: RunSummary) -> None:
        for error in self.errors:
            self.issues.add(_error_issue(error, self.options))
        self.issues.close()
        self.out.write("\n")

    def close(self) -> None:
        """Nothing held: each issue went out as it came."""


def render(result: LintResult, options: ReportOptions) -> str:
    return render_with_writer(Writer, result, options)


def _error_issue(error: HostError, options: ReportOptions) -> dict[str, Any]:
    """An unreadable host, at the input that failed (from where the run is, as the findings' files), else at its
    directory; the fingerprint is stable across runs as long as the host fails the same way."""
    source = error.source
    path = error_path(error, options.repo_root) or error.root or error.host
    line = source.line if source is not None and source.line else 1
    return {
        "description": f"input: {error.host} could not be read: {error.message}",
        "check_name": "input",
        "fingerprint": _digest("input", error.host, path, error.message),
        "severity": "critical",
        "location": {"path": Path(path).as_posix(), "lines": {"begin": line}},
    }


def _digest(*parts: str) -> str:
    """A fingerprint of pgvet's length made of ``parts``; file names need not be UTF-8."""
    return hashlib.sha256("\0".join(parts).encode("utf-8", "surrogatepass")).hexdigest()[:16]
