"""SARIF 2.1.0 for code scanning (GitHub and others).

Rules carry their help as text and markdown (what it checks, why it matters, the fix); results point at
files relative to the repository root (``uriBaseId: %SRCROOT%``) with a region when the line is known;
``partialFingerprints`` carry pgvet's stable fingerprint so code scanning tracks a finding across commits.
A finding without a file points at the host directory's host.yaml when it exists, else at the directory.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pgvet.findings import Finding, HostResult, LintResult, RuleMeta

if TYPE_CHECKING:
    from pgvet.report import ReportOptions

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
LEVELS = {"error": "error", "warning": "warning", "info": "note"}
INFORMATION_URI = "https://example.invalid/pgvet"


def _rule(meta: RuleMeta) -> dict[str, Any]:
    why = " ".join(meta.why.split())
    references = "\n".join(f"- {reference}" for reference in meta.references)
    markdown = (f"**{meta.title}**\n\n## Why it matters\n\n{why}\n\n## References\n\n{references}\n\n"
                f"Run `pgvet explain {meta.name}` for the formula, parameters and examples.")
    return {
        "id": meta.id,
        "name": meta.name,
        "shortDescription": {"text": meta.title},
        "fullDescription": {"text": why or meta.title},
        "help": {"text": f"{meta.title}. {why}", "markdown": markdown},
        "defaultConfiguration": {"level": LEVELS[meta.severity]},
        "properties": {"tags": list(meta.tags)},
    }


def _uri(path: Path, repo_root: Path) -> str:
    try:
        return path.resolve().relative_to(repo_root.resolve()).as_posix()
    except ValueError:
        return path.resolve().as_uri()


def _location(finding: Finding, host: HostResult, repo_root: Path) -> dict[str, Any]:
    root = Path(host.host.root)
    if finding.path and not finding.path.startswith("<"):
        target = Path(finding.path) if Path(finding.path).is_absolute() else root / finding.path
    else:
        target = root / "host.yaml" if (root / "host.yaml").is_file() else root
    physical: dict[str, Any] = {"artifactLocation": {"uri": _uri(target, repo_root), "uriBaseId": "%SRCROOT%"}}
    if finding.line and finding.path:
        physical["region"] = {"startLine": finding.line}
    return {"physicalLocation": physical}


def render(result: LintResult, options: ReportOptions) -> str:
    repo_root = options.repo_root or Path.cwd()
    rule_ids = sorted(result.rules)
    index = {rule_id: position for position, rule_id in enumerate(rule_ids)}
    results: list[dict[str, Any]] = []
    for host in result.hosts:
        for finding in host.findings:
            entry: dict[str, Any] = {
                "ruleId": finding.rule_id,
                "ruleIndex": index[finding.rule_id],
                "level": LEVELS[finding.severity],
                "message": {"text": " ".join(finding.message.split())},
                "locations": [_location(finding, host, repo_root)],
                "partialFingerprints": {"pgvet/v1": finding.fingerprint},
                "properties": {"host": finding.host, "values": finding.values, "tags": list(finding.tags)},
            }
            if finding.suppressed is not None:
                entry["suppressions"] = [{"kind": "inSource", "justification": finding.suppressed}]
            elif finding.baseline:
                entry["baselineState"] = "unchanged"
            results.append(entry)
    notifications = [
        {"level": "error", "message": {"text": f"{error.host}: {error.message}"}} for error in result.errors
    ]
    run: dict[str, Any] = {
        "tool": {"driver": {"name": "pgvet", "version": result.tool_version, "semanticVersion": result.tool_version,
                            "informationUri": INFORMATION_URI,
                            "rules": [_rule(result.rules[rule_id]) for rule_id in rule_ids]}},
        "originalUriBaseIds": {"%SRCROOT%": {"uri": repo_root.resolve().as_uri() + "/"}},
        "results": results,
        "invocations": [{"executionSuccessful": not result.errors, "toolExecutionNotifications": notifications}],
    }
    document = {"$schema": SCHEMA, "version": "2.1.0", "runs": [run]}
    return json.dumps(document, indent=2, ensure_ascii=False, default=str) + "\n"
