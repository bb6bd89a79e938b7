"""JSON output (schema: docs/schema/pgvet-output.schema.json, ``schema_version`` "1")."""

from __future__ import annotations

import json
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pgvet.findings import Finding, HostResult, LintResult

if TYPE_CHECKING:
    from pgvet.report import ReportOptions

SCHEMA_VERSION = "1"


def finding_json(finding: Finding, host: HostResult, repo_root: Path | None = None) -> dict[str, Any]:
    """One finding; ``path`` relative to ``repo_root`` (or the current directory) when it lies under it."""
    from pgvet.report import relative_path

    path = relative_path(finding.path, host.host.root, repo_root) if finding.path else None
    return {
        "fingerprint": finding.fingerprint,
        "rule_id": finding.rule_id,
        "rule_name": finding.rule_name,
        "severity": finding.severity,
        "tags": list(finding.tags),
        "host": finding.host,
        "path": path,
        "line": finding.line,
        "subject": finding.subject,
        "title": finding.title,
        "message": finding.message,
        "values": finding.values,
        # rules that compare a value with what it should be name those values expected and actual
        "expected": finding.values.get("expected"),
        "actual": finding.values.get("actual"),
        "fix": {
            "sysctl": finding.fix.sysctl,
            "postgresql": finding.fix.postgresql,
            "alter_system": finding.fix.alter_system(),
            "text": finding.fix.text,
        },
        "help": finding.help,
        "references": list(finding.references),
        "evidence": [
            {"fact": item.fact, "value": item.value,
             "path": item.source.path if item.source else None, "line": item.source.line if item.source else None}
            for item in finding.evidence
        ],
        "suppressed": finding.suppressed,
        "baseline": finding.baseline,
    }


def summary_json(result: LintResult) -> dict[str, Any]:
    counts: Counter[str] = Counter()
    for host in result.hosts:
        for finding in host.findings:
            if finding.suppressed is None and not finding.baseline:
                counts[finding.severity] += 1
    return {
        "hosts": len(result.hosts),
        "hosts_failed": len(result.errors),
        "error": counts["error"],
        "warning": counts["warning"],
        "info": counts["info"],
        "suppressed": sum(1 for host in result.hosts for finding in host.findings if finding.suppressed),
        "baseline": sum(1 for host in result.hosts for finding in host.findings if finding.baseline),
        "not_evaluated": sum(len(host.not_evaluated) for host in result.hosts),
    }


def _counts(host: HostResult) -> dict[str, int]:
    counts = Counter(finding.severity for finding in host.findings
                     if finding.suppressed is None and not finding.baseline)
    return {severity: counts[severity] for severity in ("error", "warning", "info")}


def document(result: LintResult, repo_root: Path | None = None) -> dict[str, Any]:
    from pgvet.report import relative_path

    return {
        "schema_version": SCHEMA_VERSION,
        "tool": {"name": "pgvet", "version": result.tool_version, "rule_pack": result.pack_version},
        "generated_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "hosts": [
            {"name": host.host.name, "path": relative_path(".", host.host.root, repo_root),
             "counts": _counts(host),
             "warnings": host.host.warnings}
            for host in result.hosts
        ],
        "findings": [finding_json(finding, host, repo_root) for host in result.hosts for finding in host.findings],
        "not_evaluated": [
            {"host": host.host.name, "rule_id": item.rule_id, "rule_name": item.rule_name,
             "missing": list(item.missing), "subject": item.subject, "reason": item.reason}
            for host in result.hosts for item in host.not_evaluated
        ],
        "errors": [
            {"host": error.host, "message": error.message,
             "path": error.source.path if error.source else None, "line": error.source.line if error.source else None}
            for error in result.errors
        ],
        "notices": result.notices,
        "summary": summary_json(result),
    }


def render(result: LintResult, options: ReportOptions) -> str:
    return json.dumps(document(result, options.repo_root), indent=2, ensure_ascii=False, default=str) + "\n"
