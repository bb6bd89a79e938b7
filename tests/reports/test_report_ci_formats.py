"""JUnit XML, GitLab Code Quality and the concise format on hand-built results; the registry's laziness."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import pytest

from pgvet.report import FORMATS, ReportOptions
from report_samples import Samples, write_samples


@pytest.fixture
def samples(tmp_path: Path) -> Samples:
    return write_samples(tmp_path)


def test_junit_one_suite_per_host_one_case_per_finding(samples: Samples, tmp_path: Path) -> None:
    suites_xml = FORMATS["junit"](samples.fleet(), ReportOptions(repo_root=tmp_path))
    root = ElementTree.fromstring(suites_xml)
    assert [(suite.get("name"), suite.get("tests"), suite.get("failures"), suite.get("skipped"),
             suite.get("errors")) for suite in root] == [
        ("web-db-01", "5", "3", "2", "0"), ("db-prod-03", "2", "2", "0", "0"),
        ("reporting-db", "2", "2", "0", "0"), ("broken-host", "1", "0", "0", "1")]
    assert (root.get("tests"), root.get("failures"), root.get("skipped"), root.get("errors")) == ("10", "7", "2", "1")
    case = root.find("testsuite[@name='reporting-db']/testcase")
    assert case is not None and case.attrib == {
        "name": "PGV401 unknown-parameter [effective_io_concurency]", "classname": "pgvet.reporting-db",
        "file": "config-repo/postgresql.conf", "line": "12"}
    failure = case.find("failure")
    assert failure is not None and failure.get("type") == "error"
    assert failure.text is not None and failure.text.splitlines()[1:] == [
        "at config-repo/postgresql.conf:12", "value parameter = effective_io_concurency",
        "value suggestion = effective_io_concurrency", "fix: Correct the name (or remove the line)."]
    skipped = root.find("testsuite[@name='web-db-01']/testcase[@name='PGV536 too-many-connections']/skipped")
    assert skipped is not None and skipped.get("message") == "in the baseline"
    samples.big_server.findings.clear()
    passing = ElementTree.fromstring(FORMATS["junit"](samples.result(samples.big_server), ReportOptions()))
    assert [(case.get("name"), list(case)) for case in passing.iter("testcase")] == [("pgvet", [])]


def test_junit_test_cases_are_unique_as_gitlab_keys_them(tmp_path: Path) -> None:
    """GitLab keeps one test case per suite name, classname and name: a rule firing twice for one subject (the same
    unknown parameter on two lines) and two hosts of one name lost test cases."""
    prod, staging = write_samples(tmp_path / "prod"), write_samples(tmp_path / "staging")
    repeated = dataclasses.replace(prod.config_repo.findings[0], line=14, fingerprint="0123456789abcdef")
    prod.config_repo.findings.append(repeated)
    staging.config_repo.namesake = True  # as the run marks a later host of an earlier one's name
    root = ElementTree.fromstring(FORMATS["junit"](prod.result(prod.config_repo, staging.config_repo),
                                                  ReportOptions(repo_root=tmp_path)))
    keys = [(suite.get("name"), case.get("classname"), case.get("name"))
            for suite in root for case in suite.iter("testcase")]
    assert keys == [
        ("reporting-db", "pgvet.reporting-db", "PGV401 unknown-parameter [effective_io_concurency]"),
        ("reporting-db", "pgvet.reporting-db",
         "PGV401 unknown-parameter [effective_io_concurency] at prod/config-repo/postgresql.conf:14"),
        ("reporting-db", "pgvet.reporting-db", "PGV605 checkpoint-timeout-default"),
        # the second host of that name: told apart by its directory
        ("reporting-db (staging/config-repo)", "pgvet.reporting-db (staging/config-repo)",
         "PGV401 unknown-parameter [effective_io_concurency]"),
        ("reporting-db (staging/config-repo)", "pgvet.reporting-db (staging/config-repo)",
         "PGV605 checkpoint-timeout-default")]
    # two unreadable hosts of one name (prod/broken-host, staging/broken-host)
    namesake_error = staging.host_error._replace(namesake=True)
    root = ElementTree.fromstring(FORMATS["junit"](prod.result(errors=(prod.host_error, namesake_error)),
                                                  ReportOptions(repo_root=tmp_path)))
    assert [(suite.get("name"), case.get("classname")) for suite in root for case in suite.iter("testcase")] == [
        ("broken-host", "pgvet.broken-host"),
        ("broken-host (staging/broken-host)", "pgvet.broken-host (staging/broken-host)")]


def test_gitlab_code_quality_issues(samples: Samples, tmp_path: Path) -> None:
    issues = json.loads(FORMATS["gitlab"](samples.fleet(), ReportOptions(repo_root=tmp_path)))
    assert [(issue["check_name"], issue["severity"], issue["location"]["path"], issue["location"]["lines"]["begin"])
            for issue in issues] == [
        ("PGV101", "major", "small-vm/sysctl.txt", 3), ("PGV139", "major", "small-vm/sysfs.txt", 1),
        ("PGV605", "info", "small-vm/host.yaml", 1), ("PGV104", "major", "big-server/sysctl.txt", 3),
        ("PGV110", "critical", "big-server/postgresql.conf", 3),
        ("PGV401", "critical", "config-repo/postgresql.conf", 12),
        ("PGV605", "info", "config-repo/postgresql.conf", 1),
        # a host that could not be read was no issue: a fleet whose host stopped being read showed nothing
        # given relative to the current directory, outside the repository root: absolute
        ("input", "critical", "broken-host/meminfo.txt", 1)]
    assert issues[-1]["description"] == "input: broken-host could not be read: permission denied"
    assert issues[0] == {
        "description": "PGV101 overcommit-not-strict: vm.overcommit_memory = 0: the kernel overcommits and the OOM "
                       "killer may kill a backend; set 2 with vm.overcommit_ratio = 53 (CommitLimit = 3.2 GiB of "
                       "4.0 GiB).",
        "check_name": "PGV101", "fingerprint": "507e5400853b53b5", "severity": "major",
        "location": {"path": "small-vm/sysctl.txt", "lines": {"begin": 3}}}
    assert len({issue["fingerprint"] for issue in issues}) == len(issues)


def test_gitlab_fingerprints_stay_unique_for_hosts_of_one_name(tmp_path: Path) -> None:
    # prod/db and staging/db, both named db-prod-03: pgvet's fingerprints are the same for both, and GitLab keeps
    # one issue per fingerprint, so the second host's findings were dropped without a word
    prod, staging = write_samples(tmp_path / "prod"), write_samples(tmp_path / "staging")
    staging.big_server.namesake = True  # as the run marks a later host of an earlier one's name
    options = ReportOptions(repo_root=tmp_path)
    issues = json.loads(FORMATS["gitlab"](prod.result(prod.big_server, staging.big_server), options))
    assert [issue["location"]["path"] for issue in issues] == [
        "prod/big-server/sysctl.txt", "prod/big-server/postgresql.conf",
        "staging/big-server/sysctl.txt", "staging/big-server/postgresql.conf"]
    assert len({issue["fingerprint"] for issue in issues}) == 4
    # the first host keeps pgvet's fingerprints; the second's are the same run after run
    first = [finding.fingerprint for finding in prod.big_server.findings]
    assert [issue["fingerprint"] for issue in issues[:2]] == first
    again = json.loads(FORMATS["gitlab"](prod.result(prod.big_server, staging.big_server), options))
    assert [issue["fingerprint"] for issue in again] == [issue["fingerprint"] for issue in issues]
    assert all(len(issue["fingerprint"]) == 16 for issue in issues)


def test_concise_lines_relative_to_the_repository(samples: Samples, tmp_path: Path) -> None:
    lines = FORMATS["concise"](samples.result(samples.small_vm, samples.config_repo),
                               ReportOptions(repo_root=tmp_path)).splitlines()
    assert lines == [
        "small-vm/postgresql.conf:3: WARNING PGV536 too-many-connections: max_connections = 200 on 2 CPUs; "
        "suggested 100 behind a pooler. (baseline)",
        "small-vm/sysctl.txt:3: WARNING PGV101 overcommit-not-strict: vm.overcommit_memory = 0: the kernel "
        "overcommits and the OOM killer may kill a backend; set 2 with vm.overcommit_ratio = 53 (CommitLimit = "
        "3.2 GiB of 4.0 GiB).",
        "small-vm/sysctl.txt:5: WARNING PGV130 swappiness-too-high: vm.swappiness = 60; use 10. (suppressed)",
        "small-vm/sysfs.txt:1: WARNING PGV139 transparent-huge-pages-always: Transparent huge pages are enabled = "
        "always: latency spikes, and they never back shared memory.",
        "small-vm: INFO PGV605 checkpoint-timeout-default: checkpoint_timeout = 5min (the default); 15min is "
        "common for write-heavy loads, measure it.",
        "config-repo/postgresql.conf:12: ERROR PGV401 unknown-parameter: unrecognized configuration parameter "
        "\"effective_io_concurency\"; did you mean effective_io_concurrency?",
        "config-repo: INFO PGV605 checkpoint-timeout-default: checkpoint_timeout = 5min (the default); 15min is "
        "common for write-heavy loads, measure it.",
    ]


def test_every_format_renders_every_sample(samples: Samples, tmp_path: Path) -> None:
    for name in FORMATS:
        output = FORMATS[name](samples.fleet(), ReportOptions(color=False, repo_root=tmp_path))
        assert output.endswith("\n") and "PGV401" in output, name


def test_formats_import_rich_only_for_the_text_report() -> None:
    def modules_after(code: str) -> list[str]:
        probe = (f"import sys; {code}; "
                 "print(sorted(m for m in sys.modules if m.startswith(('rich', 'pgvet.report.'))))")
        done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60)
        return list(json.loads(done.stdout.replace("'", '"')))

    assert modules_after("import pgvet.report") == []
    assert modules_after("from pgvet.report import FORMATS; FORMATS['sarif']") == ["pgvet.report.sarif"]
    assert "rich" in modules_after("from pgvet.report import FORMATS; FORMATS['text']")
