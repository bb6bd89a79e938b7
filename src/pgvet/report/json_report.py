"""JSON output (schema: docs/schema/pgvet-output.schema.json, ``schema_version`` "1").

Written host by host: the document's ``hosts`` go out as they come, its ``findings`` and
``not_evaluated`` are held in a spool (memory, then a temporary file) until the end — the bytes are
those ``json.dumps(document, indent=2)`` would give.
"""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pgvet.findings import Finding, HostError, HostResult, LintResult
from pgvet.report import JsonArray, Spool, error_path, host_file_path, json_text, relative_path, render_with_writer

if TYPE_CHECKING:
    from pgvet.engine.planner import Target
    from pgvet.report import Out, ReportOptions, RunInfo
    from pgvet.run.summary import RunSummary

SCHEMA_VERSION = "1"


def finding_json(finding: Finding, host: HostResult, repo_root: Path | None = None) -> dict[str, Any]:
    """One finding; ``path`` relative to ``repo_root`` (or the current directory) when it lies under it."""
    path = host_file_path(finding.path, host, repo_root) if finding.path else None
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
            # none for a host a configuration document declares: its tool owns postgresql.conf
            "alter_system": finding.fix.alter_system() if host.declared_by is None else [],
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


def target_json(target: Target) -> dict[str, Any]:
    """The host's target configuration (engine/planner/): each change, and what is left by hand."""
    return {
        "changes": [{"kind": change.setting.kind, "setting": change.setting.name, "current": change.current,
                     "target": change.target, "why": change.why, "rules": [rule.split(" ", 1)[0] for rule in
                                                                         change.rules]}
                    for change in target.changes],
        # values the host's files declare and it does not run yet: `sysctl --system` applies the kernel's, a
        # restart of PostgreSQL (or a reload) a live server's
        "declared_not_applied": [{"kind": change.setting.kind, "setting": change.setting.name,
                                  "running": change.current, "declared": change.target}
                                 for change in target.declared_not_applied],
        "by_hand": [{"text": step.text, "rules": [rule.split(" ", 1)[0] for rule in step.rules],
                     "setting": step.setting.name if step.setting is not None else None}
                    for step in target.by_hand],
    }


def summary_json(summary: RunSummary) -> dict[str, Any]:
    out: dict[str, Any] = {
        "hosts": summary.hosts,
        "hosts_failed": summary.hosts_failed,
        "error": summary.counts["error"],
        "warning": summary.counts["warning"],
        "info": summary.counts["info"],
        "suppressed": summary.suppressed,
        "baseline": summary.baseline,
        "not_evaluated": summary.not_evaluated,
    }
    if summary.is_fleet():
        out["fleet"] = fleet_json(summary)
    return out


def fleet_json(summary: RunSummary) -> dict[str, Any]:
    """The fleet summary: the hosts with the most findings (at most TOP_HOSTS), the rules by hosts."""
    listed = summary.top_hosts()
    return {
        "hosts_with_errors": summary.hosts_by_worst["error"],
        "hosts_with_warnings": summary.hosts_by_worst["warning"],
        "hosts_with_info": summary.hosts_by_worst["info"],
        "hosts_without_findings": summary.hosts_by_worst["clean"],
        "top_hosts": [{"host": row.host, "error": row.error, "warning": row.warning, "info": row.info}
                      for row in listed],
        "hosts_not_listed": summary.hosts - len(listed),
        "rules": [{"rule_id": row.rule_id, "rule_name": row.rule_name, "severity": row.severity, "hosts": row.hosts}
                  for row in summary.top_rules()],
    }


def _counts(host: HostResult) -> dict[str, int]:
    counts = Counter(finding.severity for finding in host.findings
                     if finding.suppressed is None and not finding.baseline)
    return {severity: counts[severity] for severity in ("error", "warning", "info")}


class Writer:
    def __init__(self, run: RunInfo, options: ReportOptions, out: Out) -> None:
        self.out = out
        self.repo_root = options.repo_root
        self.findings, self.not_evaluated = Spool(), Spool()
        self.finding_items, self.not_evaluated_items = JsonArray(self.findings, 2), JsonArray(self.not_evaluated, 2)
        self.errors: list[HostError] = []
        tool = {"name": "pgvet", "version": run.tool_version, "rule_pack": run.pack_version}
        out.write(f'{{\n  "schema_version": {json_text(SCHEMA_VERSION, 1)},\n  "tool": {json_text(tool, 1)},\n'
                  f'  "generated_at": {json_text(datetime.now(UTC).isoformat(timespec="seconds"), 1)},\n  "hosts": [')
        self.hosts = JsonArray(out, 2)

    def host(self, host: HostResult) -> None:
        facts = host.host_facts
        entry: dict[str, Any] = {"name": facts.name, "path": relative_path(".", facts.root, self.repo_root),
                                 "counts": _counts(host), "warnings": facts.warnings}
        if host.target is not None:
            entry["target"] = target_json(host.target)
        self.hosts.add(entry)
        for finding in host.findings:
            self.finding_items.add(finding_json(finding, host, self.repo_root))
        for item in host.not_evaluated:
            self.not_evaluated_items.add({"host": facts.name, "rule_id": item.rule_id, "rule_name": item.rule_name,
                                          "missing": list(item.missing), "subject": item.subject,
                                          "reason": item.reason})

    def error(self, error: HostError) -> None:
        self.errors.append(error)  # a few lines each, and listed after the findings

    def finish(self, notices: list[str], summary: RunSummary) -> None:
        out = self.out
        self.hosts.close()
        out.write(',\n  "findings": [')
        self.finding_items.close()
        self.findings.copy_to(out)
        out.write(',\n  "not_evaluated": [')
        self.not_evaluated_items.close()
        self.not_evaluated.copy_to(out)
        errors = [{"host": error.host, "message": error.message, "path": error_path(error, self.repo_root),
                   "line": error.source.line if error.source else None} for error in self.errors]
        out.write(f',\n  "errors": {json_text(errors, 1)},\n  "notices": {json_text(notices, 1)},\n'
                  f'  "summary": {json_text(summary_json(summary), 1)}\n}}\n')

    def close(self) -> None:
        self.findings.close()
        self.not_evaluated.close()


def render(result: LintResult, options: ReportOptions) -> str:
    return render_with_writer(Writer, result, options)
