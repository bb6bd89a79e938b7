"""JSON Lines for streams: one finding object per line (as in the JSON report), then a summary line."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from pgvet.findings import LintResult

if TYPE_CHECKING:
    from pgvet.report import ReportOptions


def render(result: LintResult, options: ReportOptions) -> str:
    from pgvet.report.json_report import SCHEMA_VERSION, finding_json, summary_json

    lines = [json.dumps({"type": "finding", **finding_json(finding, host, options.repo_root)}, ensure_ascii=False,
                        default=str)
             for host in result.hosts for finding in host.findings]
    lines += [json.dumps({"type": "error", "host": error.host, "message": error.message,
                          "path": error.source.path if error.source else None,
                          "line": error.source.line if error.source else None}, ensure_ascii=False)
              for error in result.errors]
    lines.append(json.dumps({"type": "summary", "schema_version": SCHEMA_VERSION, "tool_version": result.tool_version,
                             "rule_pack": result.pack_version, **summary_json(result)}))
    return "".join(line + "\n" for line in lines)
