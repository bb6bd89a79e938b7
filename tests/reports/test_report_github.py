"""GitHub workflow commands: escaping, levels, the per-level cap, the step summary, the default format."""

from __future__ import annotations

from pathlib import Path

import pytest

from pgvet.findings import Finding, HostError
from pgvet.provenance import Source
from pgvet.report import FORMATS, ReportOptions, default_format
from pgvet.report.github import _cell, _code, escape_data, escape_property
from report_samples import Samples, write_samples


@pytest.fixture
def samples(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Samples:
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    return write_samples(tmp_path)


def commands(samples: Samples, tmp_path: Path) -> list[str]:
    return FORMATS["github"](samples.fleet(), ReportOptions(repo_root=tmp_path)).splitlines()


def test_escaping_as_the_runner_decodes_it() -> None:
    assert escape_data("50% of RAM\r\nnext: a,b") == "50%25 of RAM%0D%0Anext: a,b"
    assert escape_property("a/b.conf: x,y%\n") == "a/b.conf%3A x%2Cy%25%0A"


def test_one_command_per_active_finding_most_severe_first(samples: Samples, tmp_path: Path) -> None:
    assert commands(samples, tmp_path) == [
        "::error title=pgvet%3A input error::broken-host: broken-host/meminfo.txt: permission denied",
        "::error file=big-server/postgresql.conf,line=3,title=PGV110 huge-pages-on-pool-too-small (db-prod-03)::"
        "huge_pages = on: PostgreSQL 17 needs 72250 huge pages of 2.0 MiB for 141 GiB of shared memory, but the "
        "kernel has 52000: the server will not start.",
        "::error file=config-repo/postgresql.conf,line=12,title=PGV401 unknown-parameter (reporting-db)::"
        "unrecognized configuration parameter \"effective_io_concurency\"; did you mean effective_io_concurrency?",
        "::warning file=small-vm/sysctl.txt,line=3,title=PGV101 overcommit-not-strict (web-db-01)::"
        "vm.overcommit_memory = 0: the kernel overcommits and the OOM killer may kill a backend; set 2 with "
        "vm.overcommit_ratio = 53 (CommitLimit = 3.2 GiB of 4.0 GiB).",
        "::warning file=small-vm/sysfs.txt,line=1,title=PGV139 transparent-huge-pages-always (web-db-01)::"
        "Transparent huge pages are enabled = always: latency spikes, and they never back shared memory.",
        "::warning file=big-server/sysctl.txt,line=3,title=PGV104 commit-limit-too-low (db-prod-03)::"
        "CommitLimit = 82.2 GiB is 43.6 %25 of RAM (188 GiB): queries fail with \"out of memory\" long before.",
        "::notice file=small-vm/host.yaml,title=PGV605 checkpoint-timeout-default (web-db-01)::"
        "checkpoint_timeout = 5min (the default); 15min is common for write-heavy loads, measure it.",
        "::notice file=config-repo/postgresql.conf,title=PGV605 checkpoint-timeout-default (reporting-db)::"
        "checkpoint_timeout = 5min (the default); 15min is common for write-heavy loads, measure it.",
        # the run's notices, which no other line of this format shows
        "::notice title=pgvet::suppression for PGV999 in .pgvet.toml matched nothing",
    ]


def test_notices_are_escaped_and_come_before_the_count_of_findings_not_annotated(samples: Samples,
                                                                                 tmp_path: Path) -> None:
    result = samples.fleet()
    result.notices[:] = ["a: sysctl.d/x.conf:2: `# 50% of RAM` after vm.swappiness = 1 is no comment\nto sysctl"]
    template = samples.small_vm.findings[-1]
    samples.small_vm.findings.extend(
        Finding("PGV605", template.rule_name, "info", template.title, "again", "web-db-01", f"{number:016x}")
        for number in range(10))
    output = FORMATS["github"](result, ReportOptions(repo_root=tmp_path)).splitlines()
    assert output[-2:] == [
        "::notice title=pgvet::a: sysctl.d/x.conf:2: `# 50%25 of RAM` after vm.swappiness = 1 is no comment"
        "%0Ato sysctl",
        "::notice::2 more findings are not annotated (GitHub shows 10 per level and step); "
        "use --format text or json to see them"]


def test_an_unreadable_host_is_annotated_at_the_input_that_failed(samples: Samples, tmp_path: Path) -> None:
    broken = tmp_path / "hosts" / "db 7"
    broken.mkdir(parents=True)
    (broken / "host.yaml").write_text("name: [unclosed\n", encoding="utf-8")
    error = HostError("db 7", "invalid YAML", Source("host.yaml", 2), root=str(broken))
    gone = HostError("db 8", "no inputs found", Source(str(tmp_path / "hosts" / "db 8")), root=None)
    output = FORMATS["github"](samples.result(errors=(error, gone)), ReportOptions(repo_root=tmp_path)).splitlines()
    # on the file, so that a pull request that broke it shows where; a directory is no file to annotate
    assert output == ["::error file=hosts/db 7/host.yaml,line=2,title=pgvet%3A input error::"
                      "db 7: hosts/db 7/host.yaml:2: invalid YAML",
                      "::error title=pgvet%3A input error::db 8: hosts/db 8: no inputs found"]


def test_ten_per_level_then_the_step_summary_lists_all(samples: Samples, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    template = samples.small_vm.findings[0]
    samples.small_vm.findings.extend(
        Finding("PGV101", "overcommit-not-strict", "warning", template.title, f"copy {number} | piped",
                "web-db-01", f"{number:016x}", path="sysctl.txt", line=3) for number in range(12))
    output = commands(samples, tmp_path)
    assert sum(line.startswith("::warning ") for line in output) == 10
    assert sum(line.startswith("::error ") for line in output) == 3
    assert output[-1] == ("::notice::5 more findings are not annotated (GitHub shows 10 per level and step); "
                          "see the step summary")
    table = summary.read_text().splitlines()
    assert table[:5] == ["## pgvet", "",
                         "5 findings are not annotated: GitHub shows 10 annotations per level and step. "
                         "All are listed here.", "", "| severity | rule | where | message |"]
    assert sum(line.startswith("| warning |") for line in table) == 15
    assert "| warning | `PGV101` overcommit-not-strict | `small-vm/sysctl.txt:3` | copy 0 \\| piped |" in table


def test_the_step_summary_renders_no_markdown_or_html_of_the_repository(samples: Samples, tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    # a value or file name of the repository's in a message rendered as Markdown: an image fetched from another's
    # server whenever the summary is viewed, a link, HTML; a backtick in a file name ended the code span
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    template = samples.small_vm.findings[0]
    samples.small_vm.findings[:] = [Finding(
        "PGV101", "overcommit-not-strict", "warning", template.title,
        "value ![x](https://evil.example/b.png) <img src=https://evil.example/b.png> [ok](javascript:x) **all passed**",
        "web-db-01", "0" * 16, path="sysctl.txt", line=3)]
    commands(samples, tmp_path)
    [row] = [line for line in summary.read_text().splitlines() if "evil" in line]
    assert row.endswith(r"| value \!\[x\]\(https\:\/\/evil\.example\/b\.png\) "
                        r"\<img src\=https\:\/\/evil\.example\/b\.png\> \[ok\]\(javascript\:x\) \*\*all passed\*\* |")
    assert _code("a`b|c") == "``a`b\\|c``" and _code("`x") == "`` `x ``"
    # GFM makes a mailto link of an address in the text, backslashes or not (cmark-gfm's autolink extension reads
    # the text once escapes are resolved): a word joiner before the @ leaves it text
    assert _cell("mail ops@evil.example") == "mail ops\u2060\\@evil\\.example"


def test_without_a_step_summary_it_says_how_to_see_the_rest(samples: Samples, tmp_path: Path) -> None:
    template = samples.small_vm.findings[-1]
    samples.small_vm.findings.extend(
        Finding("PGV605", template.rule_name, "info", template.title, "again", "web-db-01", f"{number:016x}")
        for number in range(10))
    assert commands(samples, tmp_path)[-1] == (
        "::notice::2 more findings are not annotated (GitHub shows 10 per level and step); "
        "use --format text or json to see them")


def test_default_format_is_github_under_actions(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    assert default_format() == "github"
    monkeypatch.setenv("GITHUB_ACTIONS", "false")
    assert default_format() == "text"
    monkeypatch.delenv("GITHUB_ACTIONS")
    assert default_format() == "text"


def test_step_summary_takes_file_names_that_are_not_utf8(tmp_path: Path) -> None:
    from pgvet.report.github import _write_summary

    summary = tmp_path / "summary.md"
    assert _write_summary(str(summary), ["| warning | `PGV130` swappiness-too-high | `db-\udcff/sysctl.txt:1` | x |"],
                          0) is None
    assert "db-\\udcff/sysctl.txt" in summary.read_text(encoding="utf-8")
