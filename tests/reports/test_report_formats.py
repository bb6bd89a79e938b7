"""JSON Lines, GitHub annotations and SARIF on real lint results."""

from __future__ import annotations

import html
import json
import pickle
from pathlib import Path

import pytest

from conftest import FIXTURES, PROJECT
from pgvet.findings import Finding, HostResult, LintResult
from pgvet.fix.writer import consolidate
from pgvet.provenance import Source
from pgvet.report import FORMATS, ReportOptions
from pgvet.run.hosts import FACTS_KEPT_FOR_REPORTS, FactNotKeptError, FactsKeptForReports
from pgvet.run.lint import lint
from pgvet.run.options import LintOptions
from pgvet.snapshot.facts import Fact


def result_for(*hosts: str) -> LintResult:
    return lint([FIXTURES / host for host in hosts], LintOptions())


# hosts that draw every part of the RAM picture, are declared by documents (host.orchestrator) or have few inputs
EVERY_KIND_OF_HOST = ["big-server", "small-vm", "well-tuned", "config-repo", "documents-repo/cnpg",
                      "documents-repo/patroni", "rules/PGV110-huge-pages-on-pool-too-small",
                      "rules/PGV115-huge-pages-off-with-pool"]


def test_every_format_and_the_fix_read_only_the_facts_a_linted_host_keeps() -> None:
    """A linted host keeps FACTS_KEPT_FOR_REPORTS only, and any other fact asked of it raises: every format (and
    the fix, which reads where a document declares the host) rendered over the fixtures asks for none."""
    result = result_for(*EVERY_KIND_OF_HOST)
    assert not result.errors and any(host.declared_by is not None for host in result.hosts)
    for host in result.hosts:
        facts = host.host_facts.facts
        assert isinstance(facts, FactsKeptForReports) and set(facts) <= FACTS_KEPT_FOR_REPORTS
        consolidate(host)
    for fmt in FORMATS:
        for verbose in (False, True):
            FORMATS[fmt](result, ReportOptions(color=False, verbose=verbose, width=100))


def test_a_fact_not_kept_for_the_reports_is_a_loud_bug_not_a_missing_fact() -> None:
    kept = FactsKeptForReports({"host.ram": Fact("host.ram", 1024, Source("meminfo.txt", 1))})
    assert kept.get("host.ram") == kept["host.ram"] and "host.ram" in kept
    assert kept.get("host.orchestrator") is None and "host.orchestrator" not in kept  # kept, absent on this host
    for ask in (kept.get, kept.__getitem__, kept.__contains__):
        with pytest.raises(FactNotKeptError, match=r"pg\.max_connections.*FACTS_KEPT_FOR_REPORTS"):
            ask("pg.max_connections")
    copied = pickle.loads(pickle.dumps(kept))  # as --jobs workers hand hosts back
    assert type(copied) is FactsKeptForReports and copied == kept


def test_jsonl_one_finding_per_line_then_a_summary() -> None:
    result = result_for("config-repo", "small-vm")
    lines = [json.loads(line) for line in FORMATS["jsonl"](result, ReportOptions()).splitlines()]
    findings = [line for line in lines if line["type"] == "finding"]
    assert len(findings) == sum(len(host.findings) for host in result.hosts)
    assert lines[-1]["type"] == "summary" and lines[-1]["error"] == 3
    assert {"fingerprint", "rule_id", "values", "fix"} <= set(findings[0])


def test_github_annotations_escape_and_cap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    base = result_for("config-repo")
    host = base.hosts[0]
    template = next(finding for finding in host.findings if finding.severity == "warning")
    many = [Finding(template.rule_id, template.rule_name, "warning", template.title, f"50% done,\nline {n}",
                    template.host, f"{n:016x}", path="conf.d/10-memory.conf", line=n + 1) for n in range(15)]
    result = LintResult(hosts=[HostResult(host_facts=host.host_facts, findings=many)], rules=base.rules,
                        tool_version="0", pack_version="0")
    output = FORMATS["github"](result, ReportOptions(repo_root=PROJECT)).splitlines()
    warnings = [line for line in output if line.startswith("::warning ")]
    assert len(warnings) == 10
    assert warnings[0] == (f"::warning file=fixtures/config-repo/conf.d/10-memory.conf,line=1,"
                           # a line break in a message (a value brought it) is written \n: one annotation a finding
                           f"title={template.rule_id} {template.rule_name} (reporting-db)::50%25 done,\\nline 0")
    assert output[-1].startswith("::notice::5 more findings are not annotated")
    assert summary.read_text().count("| warning |") == 15


def test_github_escaping_rules() -> None:
    from pgvet.report.github import escape_data, escape_property

    assert escape_data("a%\r\nb:c,d") == "a%25%0D%0Ab:c,d"
    assert escape_property("a%\r\nb:c,d") == "a%25%0D%0Ab%3Ac%2Cd"


def test_github_is_the_default_under_github_actions(monkeypatch: pytest.MonkeyPatch) -> None:
    from pgvet.report import default_format

    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    assert default_format() == "github"
    monkeypatch.delenv("GITHUB_ACTIONS")
    assert default_format() == "text"


def test_sarif_meets_the_model_and_githubs_constraints() -> None:
    result = result_for("config-repo", "big-server")
    document = json.loads(FORMATS["sarif"](result, ReportOptions(repo_root=PROJECT)))
    sarif_pydantic = pytest.importorskip("sarif_pydantic")
    sarif_pydantic.Sarif.model_validate(document)
    assert document["version"] == "2.1.0"
    run = document["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    assert len(rules) == len(result.rules)
    for rule in rules:
        assert rule["help"]["markdown"] and rule["defaultConfiguration"]["level"] in ("error", "warning", "note")
    results = run["results"]
    assert len(results) == sum(len(host.findings) for host in result.hosts)
    for entry in results:
        assert rules[entry["ruleIndex"]]["id"] == entry["ruleId"]
        location = entry["locations"][0]["physicalLocation"]
        assert not location["artifactLocation"]["uri"].startswith(("/", "file:"))
        assert location["artifactLocation"]["uriBaseId"] == "%SRCROOT%"
        assert location.get("region", {"startLine": 1})["startLine"] >= 1
        assert len(entry["partialFingerprints"]["pgvet/v1"]) == 16
    unknown = next(entry for entry in results if entry["ruleId"] == "PGV401")
    assert unknown["locations"][0]["physicalLocation"] == {
        "artifactLocation": {"uri": "fixtures/config-repo/conf.d/30-planner.conf", "uriBaseId": "%SRCROOT%"},
        "region": {"startLine": 3},
    }


def test_github_and_gitlab_paths_from_a_relative_host_directory(monkeypatch: pytest.MonkeyPatch) -> None:
    # `pgvet lint fixtures/small-vm` gives the host a relative root: the file shown must not repeat it
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    monkeypatch.chdir(PROJECT)
    result = lint([Path("fixtures/small-vm")], LintOptions())
    annotations = FORMATS["github"](result, ReportOptions()).splitlines()
    assert any(line.startswith("::warning file=fixtures/small-vm/sysctl.txt,line=") for line in annotations)
    assert not any("small-vm/fixtures" in line for line in annotations)
    issues = json.loads(FORMATS["gitlab"](result, ReportOptions()))
    assert {issue["location"]["path"] for issue in issues} >= {"fixtures/small-vm/sysctl.txt"}
    assert not any("small-vm/fixtures" in issue["location"]["path"] for issue in issues)


@pytest.mark.parametrize("fmt", ["text", "concise", "junit", "github"])
def test_control_characters_of_a_file_are_shown_not_sent(tmp_path: Path, fmt: str) -> None:
    # A value may hold ESC or another control character (PostgreSQL's lexer takes them inside quotes): the
    # reports for people show it escaped rather than sending it to a terminal or CI log, and JUnit stays XML.
    import xml.dom.minidom

    host = tmp_path / "h"
    host.mkdir()
    (host / "host.yaml").write_text("pg_version: 16\n")
    (host / "postgresql.conf").write_bytes(b"wal_level = 'rep\x01lica'\nwork_mem = '4\x1b[31mMB'\n"
                                           b"# pgvet: ignore[no-such\x1b[31m-rule] a notice names it\n")
    result = lint([host], LintOptions())
    assert any("\x1b" in notice for notice in result.notices)
    written = FORMATS[fmt](result, ReportOptions(color=False))
    assert not [character for character in written if character < " " and character not in "\t\n"]
    assert "rep\\x01lica" in written and "4\\x1b[31mMB" in written
    if fmt == "junit":
        xml.dom.minidom.parseString(written.encode())
    exact = json.loads(FORMATS["json"](result, ReportOptions()))  # data formats keep the value as it is
    assert any("4\x1b[31mMB" in finding["message"] for finding in exact["findings"])


def test_control_characters_are_escaped_in_colour_too(tmp_path: Path) -> None:
    host = tmp_path / "h"
    host.mkdir()
    (host / "host.yaml").write_text("pg_version: 16\n")
    (host / "postgresql.conf").write_bytes(b"work_mem = '4\x1b[31mMB'\n")
    written = FORMATS["text"](lint([host], LintOptions()), ReportOptions(color=True, width=200))
    assert "\x1b[" in written  # rich's own colours
    assert "4\x1b[31mMB" not in written and "4\\x1b[31mMB" in written


OVERRIDE_SPELT = "4\\u202eMB"  # a backslash, u, 2, 0, 2, e: what visible() writes for a real U+202E


def _override_hosts(tmp_path: Path) -> LintResult:
    """Two hosts whose work_mem holds a real right-to-left override, and its escape spelt out (PostgreSQL reads
    '\\\\' in a quoted value as one backslash); a third whose values and paths hold backslashes that read as
    no escape."""
    for name, written in (("real", "4\u202eMB"), ("spelt", "4\\\\u202eMB"), ("plain", "C:\\\\data\\\\_x")):
        host = tmp_path / name
        host.mkdir()
        (host / "host.yaml").write_text(f"name: {name}\npg_version: 16\n")
        (host / "postgresql.conf").write_text(f"work_mem = '{written}'\n")
    return lint([tmp_path / "real", tmp_path / "spelt", tmp_path / "plain"],
                LintOptions(select=["PGV403"]))


@pytest.mark.parametrize("fmt", ["text", "concise", "github", "junit", "sarif", "html", "check"])
def test_a_value_spelling_an_escape_is_told_apart_from_the_character(tmp_path: Path, fmt: str) -> None:
    # a backslash was never escaped: a value spelt 4\u202eMB printed as one holding the override does, and a
    # hostile repository or server could make the one look like the other
    result = _override_hosts(tmp_path)
    messages = {host.host_facts.name: host.findings[0].message for host in result.hosts}
    assert "4\u202eMB" in messages["real"] and OVERRIDE_SPELT in messages["spelt"]
    if fmt == "check":
        from pgvet.live.check import CheckOutcome
        from pgvet.report.check import render_check

        written = {host.host_facts.name: render_check(CheckOutcome(LintResult([host], result.rules, "", ""),
                                                                   tmp_path / host.host_facts.name, kept=True),
                                                      ReportOptions(color=False, width=300))
                   for host in result.hosts}
    else:
        written = {host.host_facts.name: FORMATS[fmt](LintResult([host], result.rules, "", ""),
                                                      ReportOptions(color=False, width=300, repo_root=tmp_path))
                   for host in result.hosts}
    if fmt == "sarif":  # the message's text is for people; the JSON around it escapes by itself
        written = {name: json.loads(text)["runs"][0]["results"][0]["message"]["text"] for name, text in written.items()}
    if fmt == "html":
        written = {name: html.unescape(text) for name, text in written.items()}
    assert "4\\u202eMB" in written["real"] and "\u202e" not in written["real"]
    assert "4\\\\u202eMB" in written["spelt"] and "4\\u202eMB" not in written["spelt"].replace("\\\\", "")
    assert '"C:\\data\\_x"' in written["plain"]  # the message's backslashes, read as no escape, left single


@pytest.mark.parametrize("fmt", ["text", "concise", "github", "gitlab", "junit", "sarif", "html"])
def test_a_line_break_a_value_brought_is_written_not_folded_in_every_format(fmt: str) -> None:
    # the HTML and GitLab reports folded it into a blank: the SQL of the message then named another database
    result = result_for("big-server")
    finding = result.hosts[0].findings[0]
    finding.message = 'Run ALTER DATABASE "new\nline" RESET enable_seqscan;'
    finding.fix.text = 'Then ALTER DATABASE "new\nline" RESET enable_seqscan;'
    result.hosts[0].findings[1:] = []
    written = FORMATS[fmt](result, ReportOptions(color=False, width=300))
    if fmt == "sarif":  # the texts for people, out of the JSON that escapes by itself
        [run] = json.loads(written)["runs"]
        written = run["results"][0]["message"]["text"] + json.dumps(run["results"][0].get("fixes"))
    if fmt == "gitlab":
        written = json.loads(written)[0]["description"]
    if fmt == "html":
        written = html.unescape(written)
    assert '"new\\nline"' in written and '"new line"' not in written and '"new\nline"' not in written


def test_json_keeps_the_value_exactly(tmp_path: Path) -> None:
    exact = json.loads(FORMATS["json"](_override_hosts(tmp_path), ReportOptions()))
    messages = [finding["message"] for finding in exact["findings"]]
    assert any("4\u202eMB" in message for message in messages)
    assert any(OVERRIDE_SPELT in message and "\\\\u202e" not in message for message in messages)
