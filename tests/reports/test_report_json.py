"""JSON and JSON Lines on hand-built results: every document validates against the published schema."""

from __future__ import annotations

import json
import os
from pathlib import Path

import jsonschema
import pytest

from conftest import PROJECT, output_schema
from pgvet.report import FORMATS, ReportOptions
from report_samples import Samples, write_samples

SCHEMA = output_schema(strict=True)  # all that pgvet prints is documented


@pytest.fixture
def samples(tmp_path: Path) -> Samples:
    return write_samples(tmp_path)


def as_json(samples: Samples, tmp_path: Path) -> dict[str, object]:
    document: dict[str, object] = json.loads(FORMATS["json"](samples.fleet(), ReportOptions(repo_root=tmp_path)))
    return document


def test_every_sample_validates(samples: Samples, tmp_path: Path) -> None:
    for result in (samples.fleet(), samples.result(samples.small_vm), samples.result(samples.big_server),
                   samples.result(samples.config_repo), samples.result(errors=(samples.host_error,))):
        document = json.loads(FORMATS["json"](result, ReportOptions(repo_root=tmp_path)))
        jsonschema.validate(document, SCHEMA, format_checker=jsonschema.FormatChecker())


def test_the_huge_page_error_as_a_ticketing_script_reads_it(samples: Samples, tmp_path: Path) -> None:
    document = as_json(samples, tmp_path)
    findings = document["findings"]
    assert isinstance(findings, list)
    error = next(finding for finding in findings if finding["rule_id"] == "PGV110")
    assert error == {
        "fingerprint": "a1b2c3d4e5f60718", "rule_id": "PGV110", "rule_name": "huge-pages-on-pool-too-small",
        "severity": "error", "tags": ["os", "memory", "huge-pages", "startup"], "host": "db-prod-03",
        "path": "big-server/postgresql.conf", "line": 3, "subject": None,
        "title": "huge_pages = on but the huge page pool is smaller than the shared memory",
        "message": error["message"],
        "values": {"needed": 72250, "available": 52000, "shared_memory_size": 151517146003.13538,
                   "hugepage_size": 2097152, "suggested": 73695},
        "expected": None, "actual": None,
        "fix": {"sysctl": {"vm.nr_hugepages": "73695"}, "postgresql": {"huge_pages": "on"},
                "alter_system": ["ALTER SYSTEM SET huge_pages = 'on';"],
                "text": "Reserve the pages at boot so that fragmentation cannot prevent their allocation."},
        "help": "With huge_pages = on PostgreSQL refuses to start when the kernel cannot give it enough huge pages.",
        "references": ["PostgreSQL documentation — Managing Kernel Resources, Linux Huge Pages"],
        "evidence": [
            {"fact": "pg.huge_pages", "value": "on", "path": "postgresql.conf", "line": 3},
            {"fact": "meminfo.hugepages_total", "value": 52000, "path": "meminfo.txt", "line": 4},
            {"fact": "sysctl.vm.nr_hugepages", "value": 60000, "path": "sysctl.txt", "line": 1},
            {"fact": "derived.hugepages_needed", "value": 72250, "path": "<derived>", "line": None},
        ],
        "suppressed": None, "baseline": False,
    }


def test_expected_and_actual_come_from_values_named_so(samples: Samples, tmp_path: Path) -> None:
    findings = as_json(samples, tmp_path)["findings"]
    assert isinstance(findings, list)
    commit_limit = next(finding for finding in findings if finding["rule_id"] == "PGV104")
    assert (commit_limit["expected"], commit_limit["actual"]) == (160000000000, 88227287040)


def test_hosts_summary_errors_and_quiet_findings(samples: Samples, tmp_path: Path) -> None:
    document = as_json(samples, tmp_path)
    assert document["schema_version"] == "1"
    assert document["tool"] == {"name": "pgvet", "version": "0.1.0", "rule_pack": "2026.11"}
    assert document["hosts"] == [
        {"name": "web-db-01", "path": "small-vm", "counts": {"error": 0, "warning": 2, "info": 1},
         "warnings": []},
        {"name": "db-prod-03", "path": "big-server",
         "counts": {"error": 1, "warning": 1, "info": 0}, "warnings": []},
        {"name": "reporting-db", "path": "config-repo",
         "counts": {"error": 1, "warning": 0, "info": 1}, "warnings": []},
    ]
    fleet = document["summary"].pop("fleet")  # tests/reports/test_report_fleet.py checks it
    assert document["summary"] == {"hosts": 3, "hosts_failed": 1, "error": 2, "warning": 3, "info": 2,
                                   "suppressed": 1, "baseline": 1, "not_evaluated": 1}
    assert fleet["hosts_with_errors"] == 2
    # the error's file as a finding's: its host directory's, relative to the repository root
    assert document["errors"] == [{"host": "broken-host", "message": "permission denied",
                                   "path": "broken-host/meminfo.txt", "line": None}]
    assert document["not_evaluated"] == [{"host": "web-db-01", "rule_id": "PGV142",
                                          "rule_name": "sched-migration-cost-low",
                                          "missing": ["sysctl.kernel.sched_migration_cost_ns"], "subject": None,
                                          "reason": None}]
    findings = document["findings"]
    assert isinstance(findings, list)
    quiet = {finding["rule_id"]: (finding["suppressed"], finding["baseline"]) for finding in findings
             if finding["suppressed"] or finding["baseline"]}
    assert quiet == {"PGV130": ("a 1 GiB swap on a VM that is rebuilt nightly", False), "PGV536": (None, True)}


def test_jsonl_is_one_finding_per_line_then_errors_then_a_summary(samples: Samples, tmp_path: Path) -> None:
    lines = [json.loads(line) for line in
             FORMATS["jsonl"](samples.fleet(), ReportOptions(repo_root=tmp_path)).splitlines()]
    assert [line["type"] for line in lines] == ["finding"] * 9 + ["error", "summary"]
    finding_schema = {**SCHEMA["$defs"]["finding"], "$defs": SCHEMA["$defs"]}
    finding_schema["properties"] = {**finding_schema["properties"], "type": {"const": "finding"}}
    for line in lines[:9]:
        jsonschema.validate(line, finding_schema)
    assert lines[0]["host"] == "web-db-01" and lines[0]["path"] == "small-vm/sysctl.txt"
    assert lines[-1].pop("fleet")["hosts_not_listed"] == 0
    assert lines[-1] == {"type": "summary", "schema_version": "1", "tool_version": "0.1.0", "rule_pack": "2026.11",
                         "hosts": 3, "hosts_failed": 1, "error": 2, "warning": 3, "info": 2, "suppressed": 1,
                         "baseline": 1, "not_evaluated": 1,
                         # the JSON report's notices[]: a stream has no other place for them
                         "notices": ["suppression for PGV999 in .pgvet.toml matched nothing"]}


def test_jsonl_records_hold_no_character_that_splits_lines(samples: Samples, tmp_path: Path) -> None:
    """JSON leaves U+2028, U+2029 and NEL unescaped, and str.splitlines (and other readers of lines) end a line
    at each: a host named so cut every one of its records in two."""
    host = samples.small_vm.host_facts
    host.name = "db\u2028one\u2029two\x85three"
    for finding in samples.small_vm.findings:
        finding.host = host.name
    result = samples.result(samples.small_vm)
    result.notices.append(f"{host.name}: a notice")
    text = FORMATS["jsonl"](result, ReportOptions(repo_root=tmp_path))
    assert text.splitlines() == text.split("\n")[:-1]
    records = [json.loads(line) for line in text.splitlines()]
    assert [record["host"] for record in records[:-1]] == [host.name] * (len(records) - 1)
    assert records[-1]["notices"] == [f"{host.name}: a notice"]


def test_jsonl_findings_are_the_json_reports_findings(samples: Samples) -> None:
    """A JSON Lines finding is the JSON report's finding object with its type first, on every finding of the
    fixtures and the samples."""
    from pgvet.report import ReportOptions
    from pgvet.report.json_report import render as render_json
    from pgvet.report.jsonl import render as render_jsonl
    from pgvet.run.lint import lint
    from pgvet.run.options import LintOptions

    fixtures = sorted(path for path in (PROJECT / "fixtures").glob("*/") if (path / "host.yaml").exists())
    for result in (lint(fixtures, LintOptions()), samples.fleet()):
        lines = [json.loads(line) for line in render_jsonl(result, ReportOptions()).splitlines()]
        findings = [line for line in lines if line["type"] == "finding"]
        assert len(findings) > 5
        assert all(next(iter(line)) == "type" for line in findings)
        assert [{key: value for key, value in line.items() if key != "type"} for line in findings] == \
            json.loads(render_json(result, ReportOptions()))["findings"]


def test_a_hosts_real_directory_is_worked_out_from_its_parents(tmp_path: Path) -> None:
    """report._real resolves a host's root from its parent's real path (kept for the fleet) and one lstat: the
    same as os.path.realpath whatever links, missing directories, '..' or doubled slashes the path holds."""
    from pgvet.report import _real

    (tmp_path / "real" / "hosts" / "a").mkdir(parents=True)
    (tmp_path / "link").symlink_to(tmp_path / "real" / "hosts")
    (tmp_path / "a-host").symlink_to("real/hosts/a")
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    for path in ("link/a", "a-host", "real/hosts/a", "link/missing/b", "link/../real", "link/a/", "loop/x", "a-host/."):
        assert _real(f"{tmp_path}/{path}") == os.path.realpath(f"{tmp_path}/{path}"), path
    assert _real("/") == "/" and _real("//tmp") == os.path.realpath("//tmp")
