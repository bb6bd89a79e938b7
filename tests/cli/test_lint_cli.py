"""`pgvet lint` end to end: exit codes, formats, selection, configuration, several outputs, fleets."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import pytest
from typer.testing import CliRunner

from conftest import FIXTURES, PROJECT
from pgvet.cli import app
from pgvet.findings import HostResult
from pgvet.run.options import LintOptions

runner = CliRunner()


def lint(*args: str) -> tuple[int, str]:
    result = runner.invoke(app, ["lint", *args])
    return result.exit_code, result.output


COMMANDS = [["lint"], ["fix"], ["facts"], ["explain"], ["collect"], ["check"], ["rules"], ["rules", "test"],
            ["baseline"], ["baseline", "create"], ["baseline", "update"]]


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_every_command_has_help_and_refuses_an_unknown_option(command: list[str]) -> None:
    # typer 0.13 to 0.15 with a current click (8.2 and later) met both with a traceback (exit 1): the lowest typer
    # pyproject.toml allows must pass this
    shown = subprocess.run([sys.executable, "-m", "pgvet", *command, "--help"], capture_output=True, text=True,
                           timeout=60, cwd=PROJECT)
    assert (shown.returncode, shown.stderr) == (0, ""), shown.stderr
    assert "Usage:" in shown.stdout
    refused = subprocess.run([sys.executable, "-m", "pgvet", *command, "--no-such-option"], capture_output=True,
                             text=True, timeout=60, cwd=PROJECT)
    assert refused.returncode == 2 and "No such option" in refused.stderr, refused.stderr
    assert "Traceback" not in refused.stderr


def test_findings_exit_1_and_carry_their_numbers() -> None:
    code, output = lint(str(FIXTURES / "big-server"), "--format", "json")
    assert code == 1
    document = json.loads(output)
    assert document["schema_version"] == "1"
    by_id = {finding["rule_id"]: finding for finding in document["findings"]}
    shared_buffers = by_id["PGV501"]
    assert shared_buffers["path"].endswith("big-server/postgresql.conf")
    assert shared_buffers["values"]["shared_buffers"] == 138 * 1024**3
    assert shared_buffers["fix"]["alter_system"] == ["ALTER SYSTEM SET shared_buffers = '48234MB';"]
    assert len(shared_buffers["fingerprint"]) == 16


def test_fail_on_and_exit_zero() -> None:
    host = str(FIXTURES / "small-vm")
    assert lint(host, "--fail-on", "error")[0] == 0
    assert lint(host, "--exit-zero")[0] == 0
    assert lint(host)[0] == 1


def test_select_and_ignore_by_id_name_prefix_and_tag() -> None:
    host = str(FIXTURES / "big-server")

    def ids(*args: str) -> set[str]:
        code, output = lint(host, "--format", "json", "--exit-zero", *args)
        assert code == 0, output
        return {finding["rule_id"] for finding in json.loads(output)["findings"]}

    everything = ids()
    assert {"PGV103", "PGV501"} <= everything
    assert ids("--select", "PGV501") == {"PGV501"}
    assert ids("--select", "shared-buffers-too-large") == {"PGV501"}
    assert ids("--select", "PGV1") == {rule for rule in everything if rule.startswith("PGV1")}
    assert "PGV103" not in ids("--ignore", "overcommit")


def test_issue_30_list_options_take_comma_lists(tmp_path: Path) -> None:
    # `--select PGV110,PGV103` was "matches no rule": ruff and most linters take comma lists
    host = str(FIXTURES / "big-server")

    def ids(*args: str) -> set[str]:
        code, output = lint(host, "--format", "json", "--exit-zero", *args)
        assert code == 0, output
        return {finding["rule_id"] for finding in json.loads(output)["findings"]}

    assert ids("--select", "PGV110,PGV103") == {"PGV110", "PGV103"}
    assert ids("--select", "PGV110, shared-buffers-too-large", "--select", "PGV103") == {"PGV110", "PGV501", "PGV103"}
    assert ids("--select", "PGV110,PGV103,PGV501", "--ignore", "PGV103,shared-buffers-too-large") == {"PGV110"}
    code, output = lint(host, "--select", "PGV110,,PGV103")
    assert code == 2 and "is empty" in output
    code, output = lint(host, "--select", "PGV110,no-such-rule")
    assert code == 2 and "'no-such-rule' matches no rule" in output
    report = tmp_path / "report.json"
    code, output = lint(host, "-f", "concise,json", "-o", "-", "-o", str(report))
    assert code == 1 and "PGV110" in output and json.loads(report.read_text())["findings"]
    fixed = runner.invoke(app, ["fix", host, "--select", "PGV110,PGV501"])
    assert fixed.exit_code == 0 and "shared_buffers" in fixed.output
    assert fixed.output == runner.invoke(app, ["fix", host, "--select", "PGV110", "--select", "PGV501"]).output


def test_unknown_selector_is_a_usage_error() -> None:
    code, output = lint(str(FIXTURES / "small-vm"), "--select", "no-such-rule")
    assert code == 2
    assert "matches no rule" in output


@pytest.mark.parametrize("option", ["--select", "--ignore"])
@pytest.mark.parametrize("selector", ["", " "])
def test_empty_selector_is_a_usage_error(option: str, selector: str) -> None:
    """An empty id prefix matches every rule: `--ignore ''` (an unset shell variable) linted nothing, exit 0."""
    code, output = lint(str(FIXTURES / "big-server"), option, selector)
    assert code == 2
    assert "is empty" in output


def test_configuration_file_selects_and_sets_params(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / ".pgvet.toml").write_text(
        'ignore = ["PGV101"]\nfail-on = "warning"\n[params.shared-buffers-too-large]\nmax_ratio = 0.8\n'
    )
    monkeypatch.chdir(tmp_path)
    code, output = lint(str(FIXTURES / "big-server"), "--format", "json")
    ids = {finding["rule_id"] for finding in json.loads(output)["findings"]}
    assert "PGV501" not in ids  # 73 % of RAM is under the raised threshold
    assert code == 1


@pytest.mark.parametrize("selection", [["--select", "PGV110"], ["--select", "PGV1"], ["--ignore", "PGV501"], []])
def test_issue_30_a_misspelt_parameter_is_an_error_whatever_is_selected(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                        selection: list[str]) -> None:
    # accepted silently when `select` left its rule out (a typo found only the day the rule is selected)
    (tmp_path / ".pgvet.toml").write_text('select = ["PGV1"]\n[params.shared-buffers-too-large]\nmax_ratoi = 0.8\n')
    monkeypatch.chdir(tmp_path)
    code, output = lint(str(FIXTURES / "big-server"), *selection)
    assert code == 2
    # the file is named (it was not: the message left the user to guess where params.… was written)
    assert f"{tmp_path / '.pgvet.toml'}: params.shared-buffers-too-large.max_ratoi: PGV501 has no parameter " \
           "max_ratoi" in output
    for command in (["fix", str(FIXTURES / "big-server"), "--select", "PGV110"], ["explain", "PGV110"],
                    ["facts", str(FIXTURES / "big-server")],
                    ["baseline", "create", str(FIXTURES / "big-server"), "-o", str(tmp_path / "b.json")]):
        done = runner.invoke(app, command)
        assert done.exit_code == 2 and f"{tmp_path / '.pgvet.toml'}: params.shared-buffers-too-large.max_ratoi" \
            in done.output, command


def test_issue_30_the_configuration_s_select_is_checked_when_the_command_line_replaces_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / ".pgvet.toml").write_text('select = ["PGV11O"]\n')  # a letter O for a zero
    monkeypatch.chdir(tmp_path)
    code, output = lint(str(FIXTURES / "big-server"), "--select", "PGV110")
    assert code == 2 and "'PGV11O' matches no rule" in output


@pytest.mark.parametrize(("content", "command_line"), [
    ('ignore = ["PGV9999"]\n', []), ('select = ["no-such-rule"]\n', []),
    ('select = ["no-such-rule"]\n', ["--select", "PGV110"])])
def test_a_configured_selector_that_names_no_rule_is_said_to_be_the_configuration_s(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, content: str, command_line: list[str]) -> None:
    # was "--select/--ignore 'PGV9999' matches no rule" on a command line that had neither
    (tmp_path / ".pgvet.toml").write_text(content)
    monkeypatch.chdir(tmp_path)
    code, output = lint(str(FIXTURES / "big-server"), *command_line)
    assert code == 2
    assert f"{tmp_path / '.pgvet.toml'}: select/ignore '" in output and "--select" not in output


def test_bad_configuration_names_the_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / ".pgvet.toml").write_text("selct = ['x']\n")
    monkeypatch.chdir(tmp_path)
    code, output = lint(str(FIXTURES / "small-vm"))
    assert code == 2
    assert ".pgvet.toml" in output and "selct" in output


@pytest.mark.parametrize(("name", "content", "says"), [
    ("pyproject.toml", b"# [tool.pgvet]\ntool = 1\n", "'tool.pgvet' must be a table"),
    ("pyproject.toml", b"# [tool.pgvet]\n[tool]\npgvet = 1\n", "'tool.pgvet' must be a table"),
    ("pyproject.toml", b"\xff\xfe[tool.pgvet]\n", "pyproject.toml:1: invalid TOML: not valid UTF-8"),
    (".pgvet.toml", b"select = " + b"[" * 100_000 + b"]" * 100_000 + b"\n", "nested too deep"),
    (".pgvet.toml", b"baseline = 5\n", "'baseline' must be a path"),
    (".pgvet.toml", b"ignore-file = ['a.yaml']\n", "'ignore-file' must be a path"),
])
def test_hostile_configuration_is_a_usage_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str,
                                                content: bytes, says: str) -> None:
    # each was a traceback (UnicodeDecodeError, RecursionError, AttributeError, TypeError) or silently ignored
    (tmp_path / name).write_bytes(content)
    monkeypatch.chdir(tmp_path)
    code, output = lint(str(FIXTURES / "small-vm"))
    assert code == 2, output
    assert name in output and says in " ".join(output.split()), output


def test_huge_pyproject_is_not_read_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with (tmp_path / "pyproject.toml").open("wb") as handle:
        handle.truncate(1024**3)  # sparse; it was read whole (3 GB of memory) to look for [tool.pgvet
    monkeypatch.chdir(tmp_path)
    code, output = lint(str(FIXTURES / "small-vm"))
    assert code == 2 and "pyproject.toml" in output and "more than pgvet reads" in output, output


def test_several_outputs_in_one_run(tmp_path: Path) -> None:
    out = tmp_path / "report.json"
    code, output = lint(str(FIXTURES / "small-vm"), "--format", "json", "--output", str(out), "--format", "concise")
    assert code == 1
    assert json.loads(out.read_text())["summary"]["warning"] >= 1
    assert "WARNING PGV101 overcommit-not-strict" in output


def test_two_formats_cannot_share_an_output_file(tmp_path: Path) -> None:
    # both would write into the same file: a JSON document with SARIF over part of it
    out = tmp_path / "report.json"
    code, output = lint(str(FIXTURES / "small-vm"), "-f", "json", "-o", str(out), "-f", "sarif",
                        "-o", str(tmp_path / "." / "report.json"))
    assert code == 2 and "report.json" in output and "--output" in output
    assert not out.exists()


def test_two_hosts_with_one_name_are_a_notice(tmp_path: Path) -> None:
    # prod/db and staging/db: one name, so one fingerprint for their findings (tickets, baselines)
    for site in ("prod", "staging"):
        shutil.copytree(FIXTURES / "rules" / "PGV130-swappiness-too-high", tmp_path / site / "db")
    code, output = lint(str(tmp_path / "prod" / "db"), str(tmp_path / "staging" / "db"), "--format", "json")
    notices = json.loads(output)["notices"]
    assert code == 1 and len(notices) == 1 and "same host name" in notices[0] and "staging" in notices[0]
    # the run marks the second a namesake: the reports that key by host name tell it apart by its directory
    code, output = lint(str(tmp_path / "prod" / "db"), str(tmp_path / "staging" / "db"), "--format", "gitlab")
    fingerprints = [issue["fingerprint"] for issue in json.loads(output)]
    assert code == 1 and len(fingerprints) == 2 and len(set(fingerprints)) == 2
    code, output = lint(str(tmp_path / "prod" / "db"), str(tmp_path / "staging" / "db"), "--format", "junit")
    suites = [suite.get("name") for suite in ElementTree.fromstring(output)]
    assert code == 1 and len(suites) == 2 and suites[0] == "db" and suites[1].startswith("db (")
    # and two unreadable hosts of one name
    for site in ("prod", "staging"):
        (tmp_path / site / "db" / "host.yaml").write_text("workload: oltpp\n")
    code, output = lint(str(tmp_path / "prod" / "db"), str(tmp_path / "staging" / "db"), "--format", "junit")
    suites = [suite.get("name") for suite in ElementTree.fromstring(output)]
    assert code == 2 and len(suites) == 2 and suites[0] == "db" and suites[1].startswith("db (")


def test_unreadable_host_in_a_fleet_does_not_stop_the_others(tmp_path: Path) -> None:
    bad = tmp_path / "bad-host"
    bad.mkdir()
    (bad / "host.yaml").write_text("workload: oltpp\n")
    code, output = lint(str(FIXTURES / "small-vm"), str(bad), "--format", "json")
    document = json.loads(output)
    assert code == 2  # a host that could not be read fails the run: in CI, no silent hole in a fleet
    assert document["errors"][0]["host"] == "bad-host"
    assert document["errors"][0]["line"] == 1
    assert document["summary"]["hosts"] == 1 and document["findings"]  # the other host linted and reported
    assert lint(str(FIXTURES / "small-vm"), str(bad), "--strict")[0] == 2  # the default, still accepted
    # a fleet that expects gaps: the unreadable host reported, the run judged on the others
    assert lint(str(FIXTURES / "small-vm"), str(bad), "--allow-unreadable")[0] == 1
    assert lint(str(FIXTURES / "well-tuned"), str(bad), "--allow-unreadable")[0] == 0
    assert lint(str(bad))[0] == 2
    assert lint(str(bad), str(bad.parent / "nothing"), "--allow-unreadable")[0] == 2  # no host read at all


def test_issue_30_a_fleet_with_a_directory_of_no_host_exits_2(tmp_path: Path) -> None:
    # `pgvet lint fixtures/well-tuned /tmp/emptydir; echo $?` gave 0 unless --strict was given
    (tmp_path / "emptydir").mkdir()
    code, output = lint(str(FIXTURES / "well-tuned"), str(tmp_path / "emptydir"), "--no-color")
    assert code == 2
    assert "no findings" in output and "error: emptydir: " in output and "no inputs" in output


def test_text_report_shows_values_offending_line_and_fix() -> None:
    code, output = lint(str(FIXTURES / "big-server"), "--no-color")
    assert code == 1
    assert "Where the RAM goes (188.4 GiB)" in output
    assert "postgresql.conf:129   shared_buffers = 138GB" in output
    assert "ALTER SYSTEM SET shared_buffers = '48234MB';" in output
    assert "\x1b[" not in output


def test_concise_lines_have_path_line_severity_id_name() -> None:
    code, output = lint(str(FIXTURES / "big-server"), "--format", "concise")
    assert code == 1
    line = next(text for text in output.splitlines() if "PGV501" in text)
    assert line.startswith(str(Path("fixtures/big-server/postgresql.conf")) + ":129: WARNING PGV501 "
                           "shared-buffers-too-large: shared_buffers = 138 GiB is 73.2 % of RAM")


def test_concise_input_error_names_the_file_from_where_the_run_is(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    # pre-commit runs at the repository's root with files of several hosts: `host.yaml:1` would not say which
    for host in ("a", "b"):
        (tmp_path / "hosts" / host).mkdir(parents=True)
        (tmp_path / "hosts" / host / "postgresql.conf").write_text("max_connections = 100\n")
    (tmp_path / "hosts" / "a" / "host.yaml").write_text("workload: oltpp\n")
    (tmp_path / "empty").mkdir()
    monkeypatch.chdir(tmp_path)
    code, output = lint("hosts/a/host.yaml", "hosts/b/postgresql.conf", "empty", "--format", "concise")
    assert code == 2
    assert "hosts/a/host.yaml:1: ERROR input: " in output
    assert "empty: ERROR input: no inputs found" in output


def test_text_error_names_a_host_given_by_its_name_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "empty").mkdir()
    (tmp_path / "elsewhere" / "other").mkdir(parents=True)
    monkeypatch.chdir(tmp_path)
    code, output = lint("empty", "elsewhere/other")
    assert code == 2
    assert "error: empty: no inputs found" in output  # not "empty: empty:"
    assert "error: other: elsewhere/other: no inputs found" in output  # the path, when it says more


def test_concise_prints_what_was_refused_and_the_notices(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # decisions.md: an input refused for lying outside the host directory is always said; the hook's format
    # said nothing, so a postgresql.conf linked from elsewhere in the repository passed the hook unread
    (tmp_path / "common").mkdir()
    (tmp_path / "common" / "postgresql.conf").write_text("shared_buffer = 1GB\n")
    host = tmp_path / "hosts" / "a"
    (host / "sysctl.d").mkdir(parents=True)
    (host / "postgresql.conf").symlink_to("../../common/postgresql.conf")
    (host / "sysctl.d" / "10.conf").write_text("# pgvet: ignore[swappiness-too-high]\nvm.swappiness = 60\n")
    monkeypatch.chdir(tmp_path)
    code, output = lint("hosts/a/postgresql.conf", "--format", "concise")
    assert code == 2  # the file given is not read: an error of the run (issue #30), its refusal said as before
    assert "hosts/a/postgresql.conf: WARNING input: refused, it resolves outside the host directory" in output
    assert "hosts/a/postgresql.conf: ERROR input: not an input of its host" in output
    assert "hosts/a/sysctl.d/10.conf:2: WARNING PGV130 swappiness-too-high" in output
    assert "notice: a: sysctl.d/10.conf:1: suppression without a reason is ignored" in output
    assert output.count("refused") == 1  # not again among the notices


def test_explicit_input_files_without_a_directory(tmp_path: Path) -> None:
    meminfo = tmp_path / "mem"
    shutil.copy(FIXTURES / "big-server" / "meminfo.txt", meminfo)
    sysctl = tmp_path / "sys"
    shutil.copy(FIXTURES / "big-server" / "sysctl.txt", sysctl)
    code, output = lint("--meminfo", str(meminfo), "--sysctl", str(sysctl), "--format", "json")
    assert code == 1
    assert "PGV103" in {finding["rule_id"] for finding in json.loads(output)["findings"]}


def test_an_explicit_input_beside_the_host_is_shown_where_it_is(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    # `pgvet lint h --meminfo out/mem.txt`: the file is out/mem.txt, not h/out/mem.txt; and the same file
    # given from inside the host directory keeps its fingerprints (its path is kept relative to the host)
    host = tmp_path / "h"
    shutil.copytree(FIXTURES / "big-server", host)
    (tmp_path / "out").mkdir()
    (host / "meminfo.txt").rename(tmp_path / "out" / "mem.txt")
    monkeypatch.chdir(tmp_path)
    _, output = lint("h", "--meminfo", "out/mem.txt", "--format", "json")
    from_above = [finding for finding in json.loads(output)["findings"] if "mem.txt" in (finding["path"] or "")]
    assert from_above and {finding["path"] for finding in from_above} == {"out/mem.txt"}
    monkeypatch.chdir(host)
    _, output = lint(".", "--meminfo", "../out/mem.txt", "--format", "json")
    from_inside = [finding for finding in json.loads(output)["findings"] if "mem.txt" in (finding["path"] or "")]
    # outside the current directory: absolute, as docs/output.md says and every format shows it
    assert {finding["path"] for finding in from_inside} == {str((tmp_path / "out" / "mem.txt").resolve())}
    assert sorted(finding["fingerprint"] for finding in from_inside) == sorted(
        finding["fingerprint"] for finding in from_above)


@pytest.mark.parametrize("from_inside", [True, False], ids=["under-cwd", "outside-cwd"])
def test_every_format_shows_a_path_relative_under_the_cwd_and_absolute_outside_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, from_inside: bool) -> None:
    hosts = (tmp_path / "hosts").resolve()
    shutil.copytree(FIXTURES / "config-repo", hosts / "cfg")
    (hosts / "bad").mkdir()
    (hosts / "bad" / "host.yaml").write_text("ram: lots\n")
    (hosts / "vm").mkdir()
    monkeypatch.chdir(hosts if from_inside else hosts / "vm")
    given = "" if from_inside else "../"
    formats = ("json", "concise", "text", "junit", "github", "gitlab", "sarif")
    options = [option for name in formats for option in ("--format", name, "--output", str(tmp_path / name))]
    lint(f"{given}cfg", f"{given}bad", *options)
    shown = {name: (tmp_path / name).read_text() for name in formats}
    conf = "cfg/conf.d/30-planner.conf" if from_inside else str(hosts / "cfg" / "conf.d" / "30-planner.conf")
    bad = "bad/host.yaml" if from_inside else str(hosts / "bad" / "host.yaml")
    document = json.loads(shown["json"])
    assert conf in {finding["path"] for finding in document["findings"]}
    assert [error["path"] for error in document["errors"]] == [bad]
    assert f"{conf}:3: ERROR PGV401" in shown["concise"]
    assert f"reporting-db  {'cfg' if from_inside else hosts / 'cfg'}\n" in shown["text"]  # its lines may be cropped
    assert f'file="{conf}"' in shown["junit"]
    assert f"::error file={conf},line=3," in shown["github"]
    assert {"path": conf, "lines": {"begin": 3}} in [issue["location"] for issue in json.loads(shown["gitlab"])]
    uris = [result["locations"][0]["physicalLocation"]["artifactLocation"]
            for result in json.loads(shown["sarif"])["runs"][0]["results"]]
    # SARIF: a URI under %SRCROOT% (the current directory), else an absolute file: URI
    assert ({"uri": conf, "uriBaseId": "%SRCROOT%"} if from_inside else {"uri": Path(conf).as_uri()}) in uris
    for name in formats:
        assert "../" not in shown[name], name


def test_no_traceback_from_the_installed_command(tmp_path: Path) -> None:
    (tmp_path / "postgresql.conf").write_bytes(b"\xff\xfe shared_buffers = = 1\n")
    (tmp_path / "meminfo.txt").write_text("garbage\n")
    done = subprocess.run([sys.executable, "-m", "pgvet", "lint", str(tmp_path)], capture_output=True, text=True,
                          check=False, timeout=60)
    assert done.returncode == 2
    assert "Traceback" not in done.stderr + done.stdout
    # the file as it can be opened from here (the text report wraps at its width)
    assert f"{tmp_path / 'meminfo.txt'}:1: not a /proc/meminfo line" in " ".join(done.stdout.split())


def test_jobs_give_the_same_results_in_the_same_order(tmp_path: Path) -> None:
    hosts = []
    for number, name in enumerate(["small-vm", "big-server", "config-repo", "well-tuned"] * 2):
        host = tmp_path / f"h{number}"
        shutil.copytree(FIXTURES / name, host)
        hosts.append(str(host))
    serial = lint(*hosts, "--format", "concise", "--exit-zero")
    parallel = lint(*hosts, "--format", "concise", "--exit-zero", "--jobs", "2")
    assert serial == parallel
    assert serial[1].count("PGV110") == 4


def test_jobs_lint_large_chunks_in_batches_with_the_same_results(tmp_path: Path) -> None:
    # a worker's chunk (up to 64 hosts) is linted BATCH_HOSTS at a time, as one process lints a fleet
    from pgvet.run.hosts import BATCH_HOSTS

    hosts = _fleet(tmp_path, 300)  # chunks of 300 // 16 = 18 hosts with --jobs 2
    assert BATCH_HOSTS < 300 // 16
    serial = lint(*hosts, "--format", "jsonl", "--exit-zero")
    assert lint(*hosts, "--format", "jsonl", "--exit-zero", "--jobs", "2") == serial
    assert json.loads(serial[1].splitlines()[-1])["hosts"] == 300


def test_the_collector_is_set_for_the_batch_and_given_back(monkeypatch: pytest.MonkeyPatch) -> None:
    """During a lint the cycle collector runs less often (run.workers.BATCH_GC_THRESHOLD); a program that calls the
    command line in its own process gets its setting back."""
    import gc

    from pgvet.run import hosts, workers

    seen: list[tuple[int, int, int]] = []
    real = hosts.Linter.lint_batch

    def lint_and_look(self: hosts.Linter, directories: list[Path | None]) -> object:
        seen.append(gc.get_threshold())
        return real(self, directories)

    monkeypatch.setattr(hosts.Linter, "lint_batch", lint_and_look)
    before = gc.get_threshold()
    gc.set_threshold(700, 10, 10)
    try:
        result = runner.invoke(app, ["lint", str(FIXTURES / "small-vm"), "--exit-zero"])
        assert result.exit_code == 0, result.output
        assert seen == [workers.BATCH_GC_THRESHOLD]
        assert gc.get_threshold() == (700, 10, 10)
    finally:
        gc.set_threshold(*before)


def _fleet(directory: Path, count: int) -> list[str]:
    hosts = []
    for number in range(count):
        host = directory / f"h{number:03}"
        shutil.copytree(FIXTURES / ("small-vm", "big-server", "well-tuned")[number % 3], host)
        hosts.append(str(host))
    return hosts


fork_only = pytest.mark.skipif(__import__("multiprocessing").get_start_method() != "fork",
                               reason="the workers see the test's monkeypatch only when forked")


@fork_only
@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_bug_met_on_one_host_is_reported_and_the_others_linted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                   jobs: str) -> None:
    # a parser's bug on host 5 of 10 000 ended the whole run with a traceback and exit code 1, nothing written
    from pgvet.engine import evaluate
    from pgvet.run import hosts as linting

    hosts = _fleet(tmp_path, 8)
    real_load, real_record = linting.load_hosts, evaluate._record

    def buggy_load(directory: Path | None, *args: object, **kwargs: object) -> object:
        if directory is not None and directory.name == "h004":
            raise ValueError("a bug")
        return real_load(directory, *args, **kwargs)  # type: ignore[arg-type]

    def buggy_record(rule: object, env: object, fired: object, host_name: str, result: HostResult,
                     verdicts_only: bool) -> None:
        if result.host_facts.root.endswith("h006"):  # a bug once read: while the batch's hosts are evaluated together
            raise KeyError("another bug")
        real_record(rule, env, fired, host_name, result, verdicts_only)  # type: ignore[arg-type]

    monkeypatch.setattr(linting, "load_hosts", buggy_load)
    monkeypatch.setattr(evaluate, "_record", buggy_record)
    code, output = lint(*hosts, "--format", "json", "--jobs", jobs)
    document = json.loads(output)
    assert code == 2, output
    assert [error["host"] for error in document["errors"]] == ["h004", "h006"]
    assert "internal error" in document["errors"][0]["message"] and "ValueError: a bug" in output
    assert "KeyError: 'another bug'" in output
    assert document["summary"]["hosts"] == 6 and document["summary"]["hosts_failed"] == 2
    assert lint(*hosts, "--jobs", jobs, "--allow-unreadable")[0] == 1


@fork_only
def test_a_worker_that_dies_is_reported_and_the_others_linted(tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    # a worker killed (out of memory, a crash in C) broke the pool: BrokenProcessPool's traceback, exit 1
    import os
    import signal

    from pgvet.run import hosts as linting

    hosts = _fleet(tmp_path, 12)
    serial = lint(*hosts, "--format", "concise")[1]
    real = linting.load_hosts

    def dying(directory: Path | None, *args: object, **kwargs: object) -> object:
        if directory is not None and directory.name == "h005" and os.getpid() != parent:
            os.kill(os.getpid(), signal.SIGKILL)
        return real(directory, *args, **kwargs)  # type: ignore[arg-type]

    parent = os.getpid()
    monkeypatch.setattr(linting, "load_hosts", dying)
    code, output = lint(*hosts, "--format", "concise", "--jobs", "2")
    assert code == 2, output
    lines = output.splitlines()
    assert lines[0].startswith("h005: ERROR input: internal error: the process linting this host died")
    findings = [line for line in serial.splitlines() if not line.startswith("notice:")]
    assert [line for line in lines[1:] if not line.startswith("notice:")] == [
        line for line in findings if "/h005/" not in line]


def test_ctrl_c_during_a_jobs_run_ends_it_quietly(tmp_path: Path) -> None:
    # Ctrl-C reaches the whole process group: each worker printed a KeyboardInterrupt traceback (those still
    # loading the rules broke the pool: BrokenProcessPool and exit 1 instead of 130)
    import os
    import signal
    import time

    hosts = _fleet(tmp_path, 300)
    for attempt in range(3):  # the interrupt while the workers start, then while they lint
        process = subprocess.Popen([sys.executable, "-m", "pgvet", "lint", *hosts, "--jobs", "2", "-f", "jsonl"],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                                   start_new_session=True)

        def group(leader: int = process.pid) -> list[str]:
            return subprocess.run(["pgrep", "-g", str(leader)], capture_output=True, text=True,
                                  check=False).stdout.split()

        deadline = time.monotonic() + 30
        while len(group()) < 3 and time.monotonic() < deadline and process.poll() is None:
            time.sleep(0.005)
        time.sleep(0.2 * attempt)
        # a run that ended first (exit 1: findings) would say nothing about the interrupt: said as such
        assert process.poll() is None, f"the run ended before the interrupt: {process.returncode}"
        os.killpg(process.pid, signal.SIGINT)
        _, stderr = process.communicate(timeout=60)
        assert process.returncode == 130, stderr
        assert "Traceback" not in stderr and stderr.strip() == "pgvet: interrupted"
        time.sleep(0.5)
        assert group() == []


def test_a_host_given_twice_is_linted_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # hosts/a, /abs/hosts/a and a link to it were three hosts: findings counted three times in the fleet
    # summary, and a notice asking to give "each" its own name
    shutil.copytree(FIXTURES / "small-vm", tmp_path / "a")
    shutil.copytree(FIXTURES / "big-server", tmp_path / "b")
    (tmp_path / "link").symlink_to("a")
    monkeypatch.chdir(tmp_path)
    code, output = lint("a", "./a/", str(tmp_path / "a"), "link", "b", "a", "--format", "json")
    document = json.loads(output)
    assert code == 1
    assert [host["path"] for host in document["hosts"]] == ["a", "b"]
    assert document["notices"] == [] and document["summary"]["hosts"] == 2


def test_a_file_the_shell_glob_matched_beside_the_hosts_is_no_host(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    # `pgvet lint hosts/*` with hosts/README.md: the file stood for a host "hosts" that could not be read
    # ("no inputs found"), failing a --strict run
    shutil.copytree(FIXTURES / "small-vm", tmp_path / "hosts" / "a")
    shutil.copytree(FIXTURES / "well-tuned", tmp_path / "hosts" / "b")
    (tmp_path / "hosts" / "README.md").write_text("# our database hosts\n")
    monkeypatch.chdir(tmp_path)
    code, output = lint("hosts/README.md", "hosts/a", "hosts/b", "--format", "json")
    document = json.loads(output)
    assert code == 1, output
    assert document["errors"] == [] and [host["path"] for host in document["hosts"]] == ["hosts/a", "hosts/b"]
    assert document["notices"] == ["hosts/README.md: not linted, no host's file (no host.yaml, host.yml, "
                                   "postgresql.conf, postgresql.auto.conf… in its directory or above)"]
    code, output = lint("hosts/README.md", "hosts/a", "--format", "concise")
    assert code == 1 and output.endswith(f"notice: {document['notices'][0]}\n")


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_host_own_invalid_ignore_file_is_that_host_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                          jobs: str) -> None:
    # it ended the whole fleet with exit 2 and nothing written for the other hosts
    monkeypatch.chdir(tmp_path)
    hosts = [str(Path(host).relative_to(tmp_path)) for host in _fleet(tmp_path, 6)]
    (tmp_path / hosts[1] / ".pgvet-ignore.yaml").write_text("ignore: [\n  - bad")
    serial = lint(*hosts[:1], *hosts[2:], "--format", "concise")[1]
    code, output = lint(*hosts, "--format", "concise", "--jobs", jobs)
    assert code == 2, output
    lines = output.splitlines()
    assert lines[0].startswith("h001/.pgvet-ignore.yaml:2: ERROR input: invalid YAML")
    # h001 could not be read and has h004's name: the clash is told all the same
    clash = ("notice: db-prod-03: h001 and h004 have the same host name: their findings share fingerprints, "
             "baseline entries and suppressions; give each its own `name:` in host.yaml")
    assert clash in lines and [line for line in lines[1:] if line != clash] == serial.splitlines()
    document = json.loads(lint(*hosts, "--format", "json", "--jobs", jobs)[1])
    assert [error["line"] for error in document["errors"]] == [2]
    assert document["summary"]["hosts"] == 5 and document["summary"]["hosts_failed"] == 1
    assert lint(*hosts, "--jobs", jobs, "--allow-unreadable")[0] == 1
    # alone, as an unreadable host alone: exit 2, said in the report
    code, output = lint(hosts[1], "--format", "concise")
    assert code == 2 and output.startswith("h001/.pgvet-ignore.yaml:2: ERROR input: invalid YAML")


def test_ctrl_c_at_any_moment_is_exit_130_without_a_traceback() -> None:
    # a Ctrl-C while typer and the commands were still being imported (the first 0.2 s) printed a traceback,
    # and one raised in code that exec() runs (dataclasses) ended the process by SIGINT, not with 130
    import signal
    import time
    import tomllib

    scripts = tomllib.loads((FIXTURES.parent / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["pgvet"] == "pgvet.__main__:main"
    # as the installed command runs it, once the interpreter itself has started (its own start is Python's)
    start = ("import sys\nsys.stdout.write('started\\n')\nsys.stdout.flush()\n"
             "sys.argv = ['pgvet', 'lint', sys.argv[1], '--format', 'json']\n"
             "from pgvet.__main__ import main\nmain()\n")
    for delay in (0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.12, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5):
        process = subprocess.Popen([sys.executable, "-c", start, str(FIXTURES / "big-server")],
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert process.stdout is not None and process.stdout.readline() == "started\n"
        time.sleep(delay)
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=60)
        if stderr.splitlines()[-1:] == ["KeyboardInterrupt"] and "pgvet" not in stderr:
            continue  # on a busy machine the signal can land in this probe's own lines, before main() is entered
        assert "Traceback" not in stderr, (delay, stderr)
        assert (process.returncode, stderr) in ((130, "pgvet: interrupted\n"), (1, "")), (delay, stderr)


@pytest.mark.parametrize(("cause", "expected"), [("KeyboardInterrupt()", (130, "pgvet: interrupted\n")),
                                                 ("ValueError()", (1, "RuntimeError: made"))])
def test_ctrl_c_wrapped_by_a_class_being_made_is_still_exit_130(cause: str, expected: tuple[int, str]) -> None:
    # Python 3.11 turns an exception raised in __set_name__ (dataclass fields, while pgvet's modules load) into
    # a RuntimeError whose cause it is: a Ctrl-C at that moment printed a traceback. Another cause is a bug.
    probe = ("import pgvet.__main__ as entry\n"
             "def made():\n"
             f"    raise RuntimeError('made') from {cause}\n"
             "entry._run = made\n"
             "entry.main()\n")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    code, said = expected
    assert done.returncode == code
    assert done.stderr == said if code == 130 else said in done.stderr


def test_a_lint_in_one_process_imports_no_process_pool(tmp_path: Path) -> None:
    """The pool (run/pool.py, which imports multiprocessing) is imported only by a run that starts one: a lint of
    one host does not pay for it at start-up."""
    probe = ("import sys\n"
             "from pgvet.__main__ import main\n"
             "try:\n    main()\n"
             "except SystemExit:\n    pass\n"
             "print(sorted(m for m in ('pgvet.run.pool', 'multiprocessing', 'concurrent.futures.process')"
             " if m in sys.modules), file=sys.stderr)\n")
    env = {**os.environ, "PGVET_CACHE_DIR": str(tmp_path / "cache")}
    done = subprocess.run([sys.executable, "-c", probe, "lint", str(FIXTURES / "big-server"), "--format", "json"],
                          capture_output=True, text=True, check=False, env=env, cwd=PROJECT, timeout=120)
    assert done.returncode == 0 and done.stderr.splitlines()[-1] == "[]", done.stderr


def test_jobs_beyond_the_usable_cpus_are_lowered_with_a_notice(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # --jobs 500 started 500 processes on a 2-CPU machine (each loading the rules), or none under 1000 hosts
    from pgvet.run import lint as lint_module
    from pgvet.run import pool, workers

    assert 1 <= workers.usable_cpus() <= (os.cpu_count() or 1)
    hosts = _fleet(tmp_path, 6)
    pools: list[int] = []
    real = pool._pool

    def counted(jobs: int, options: LintOptions) -> object:
        pools.append(jobs)
        return real(jobs, options)

    monkeypatch.setattr(pool, "_pool", counted)
    monkeypatch.setattr(lint_module, "usable_cpus", lambda: 2)
    result = runner.invoke(app, ["lint", *hosts, "--format", "concise", "--jobs", "500"])
    assert result.exit_code == 1
    assert result.stderr == "pgvet: notice: --jobs 500 lowered to 2, the CPUs this process may use\n"
    assert pools == [2] and result.stdout == lint(*hosts, "--format", "concise", "--jobs", "1")[1]
    quiet = runner.invoke(app, ["lint", *hosts, "--format", "concise", "--jobs", "2"])
    assert quiet.stderr == "" and pools == [2, 2]


def test_a_report_file_is_written_whole_or_not_at_all(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # a run stopped midway (Ctrl-C, a bug, an error found late) left a truncated report over the previous one
    hosts = _fleet(tmp_path / "hosts", 4)
    report = tmp_path / "out" / "report.json"
    report.parent.mkdir()
    report.write_text("the previous report\n")
    report.chmod(0o640)
    from pgvet.run import hosts as linting

    real = linting.load_hosts

    def interrupted(directory: Path | None, *args: object, **kwargs: object) -> object:
        if directory is not None and directory.name == "h002":
            raise KeyboardInterrupt
        return real(directory, *args, **kwargs)  # type: ignore[arg-type]

    with monkeypatch.context() as patched:
        patched.setattr(linting, "load_hosts", interrupted)
        result = runner.invoke(app, ["lint", *hosts, "-f", "jsonl", "-o", str(report), "-f", "json", "-o",
                                     str(report.parent / "new.json")])
    assert result.exit_code == 130
    assert report.read_text() == "the previous report\n" and os.listdir(report.parent) == ["report.json"]
    # a good end: the report takes the old one's place and mode; a new one gets the umask's
    previous = os.umask(0o027)
    try:
        assert lint(*hosts, "-f", "json", "-o", str(report), "-f", "sarif", "-o", str(report.parent / "new"))[0] == 1
    finally:
        os.umask(previous)
    assert json.loads(report.read_text())["summary"]["hosts"] == 4 and report.stat().st_mode & 0o777 == 0o640
    assert (report.parent / "new").stat().st_mode & 0o777 == 0o640
    assert sorted(os.listdir(report.parent)) == ["new", "report.json"]


def test_report_targets_that_are_not_regular_files_are_written_in_place(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    host = str(FIXTURES / "small-vm")
    done = subprocess.run([sys.executable, "-m", "pgvet", "lint", host, "-f", "json", "-o", "/dev/stdout"],
                          capture_output=True, text=True, check=False, timeout=60)
    assert done.returncode == 1 and json.loads(done.stdout)["summary"]["hosts"] == 1
    real = tmp_path / "real.json"
    # a link to a file is refused, not followed (one planted in a repository would choose what is overwritten)
    real.write_text("mine\n")
    (tmp_path / "link.json").symlink_to(real)
    code, output = lint(host, "-f", "json", "-o", str(tmp_path / "link.json"))
    assert code == 2 and output == (f"pgvet: error: cannot write {tmp_path / 'link.json'}: a symbolic link: pgvet "
                                    "writes no file through a link\n")
    assert (tmp_path / "link.json").is_symlink() and real.read_text() == "mine\n"
    # a directory pgvet may not add a file to: an existing report is written in place, a new one refused
    real_open = os.open

    def refused(path: str, flags: int, mode: int = 0o777, **keywords: int) -> int:
        if str(path).endswith(".pgvet-tmp"):
            raise PermissionError(13, "Permission denied", path)
        return real_open(path, flags, mode, **keywords)

    monkeypatch.setattr(os, "open", refused)
    assert lint(host, "-f", "json", "-o", str(real))[0] == 1 and json.loads(real.read_text())["summary"]["hosts"] == 1
    code, output = lint(host, "-f", "json", "-o", str(tmp_path / "new.json"))
    assert code == 2 and f"cannot write {tmp_path / 'new.json'}: Permission denied" in output
    assert sorted(os.listdir(tmp_path)) == ["link.json", "real.json"]


def test_errors_name_their_file_as_findings_do(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # errors[].path was the host directory as given for a missing host, but relative to the host directory for
    # a file in it ("host.yaml": which host's?), while findings' paths are relative to the current directory
    monkeypatch.chdir(tmp_path)
    shutil.copytree(FIXTURES / "small-vm", tmp_path / "hosts" / "good")
    (tmp_path / "hosts" / "bad").mkdir()
    (tmp_path / "hosts" / "bad" / "host.yaml").write_text("workload: oltpp\n")
    shutil.copytree(FIXTURES / "small-vm", tmp_path / "hosts" / "ignoring")
    (tmp_path / "hosts" / "ignoring" / ".pgvet-ignore.yaml").write_text("- [\n")
    hosts = ["hosts/good", "hosts/missing", "hosts/bad", str(tmp_path / "hosts" / "ignoring")]
    expected = [("hosts/missing", None), ("hosts/bad/host.yaml", 1), ("hosts/ignoring/.pgvet-ignore.yaml", 2)]
    document = json.loads(lint(*hosts, "-f", "json")[1])
    assert [(error["path"], error["line"]) for error in document["errors"]] == expected
    assert document["findings"][0]["path"].startswith("hosts/good/")
    lines = [json.loads(line) for line in lint(*hosts, "-f", "jsonl")[1].splitlines()]
    assert [(line["path"], line["line"]) for line in lines if line["type"] == "error"] == expected
    concise = [line.split(": ERROR input:")[0] for line in lint(*hosts, "-f", "concise")[1].splitlines()
               if ": ERROR input:" in line]
    assert concise == [f"{path}:{line}" if line else path for path, line in expected]
    # the text report (and SARIF, GitHub, JUnit) named the file from its host directory (`host.yaml:1`)
    text = [line for line in lint(*hosts)[1].splitlines() if line.startswith("error: ")]
    assert [line.split(": ")[2] for line in text[1:]] == [f"{path}:{line}" for path, line in expected[1:]]


def test_check_report_files_are_written_whole_or_not_at_all(tmp_path: Path) -> None:
    # `pgvet check -o FILE` wrote FILE in place: a write that failed midway (a full disk; here the file size
    # limit) left a truncated report over the previous one
    report = tmp_path / "check.txt"
    report.write_text("the previous report\n")
    script = (
        "import resource, signal, sys\n"
        "from pathlib import Path\n"
        "from pgvet.cli.live import render_outputs\n"
        "from pgvet.errors import UsageError\n"
        "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
        "resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))\n"
        "try:\n"
        "    render_outputs(None, ['text'], [Path(sys.argv[1])], False, None, text=lambda *_: 'x' * 100_000)\n"
        "except UsageError as error:\n"
        "    print(error)\n"
    )
    done = subprocess.run([sys.executable, "-c", script, str(report)], capture_output=True, text=True, check=False,
                          timeout=60)
    assert done.stdout.startswith(f"cannot write {report}: "), done.stdout + done.stderr
    assert report.read_text() == "the previous report\n" and os.listdir(tmp_path) == ["check.txt"]


def test_issue_30_path_errors_name_the_path_as_given_and_what_was_expected(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    # `pgvet lint afile.txt` printed `error: : .: no inputs found`
    (tmp_path / "afile.txt").write_text("x\n")
    code, output = lint("afile.txt", "--format", "concise")
    assert code == 2
    assert output.startswith("afile.txt: ERROR input: not a file of a host: neither its directory nor one above it")
    # `pgvet fix nope` printed `nope/nope: not a directory`
    fixed = runner.invoke(app, ["fix", "nope"])
    assert fixed.exit_code == 2 and fixed.output == "pgvet: error: nope: no such file or directory (a host is a " \
                                                    "directory of inputs)\n"
    # `pgvet lint .` in a directory of nothing: the directory is named by its name, not `: .`
    (tmp_path / "empty").mkdir()
    monkeypatch.chdir(tmp_path / "empty")
    code, output = lint(".", "--no-color")
    assert code == 2 and output.startswith("error: empty: .: no inputs found"), output


def test_issue_30_a_file_its_host_does_not_read_is_an_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # `pgvet lint /etc/hostname` linted /etc (it has sysctl.conf) and said "no findings", exit 0
    etc = tmp_path / "etc"
    (etc / "sysctl.d").mkdir(parents=True)
    (etc / "sysctl.conf").write_text("vm.swappiness = 1\n")
    (etc / "hostname").write_text("db1\n")
    monkeypatch.chdir(tmp_path)
    code, output = lint("etc/hostname", "--format", "concise")
    assert code == 2
    assert output.startswith("etc/hostname: ERROR input: not an input of its host etc: pgvet does not read this file")
    assert lint("etc/sysctl.conf", "--format", "concise")[0] == 0  # an input: its host linted, nothing to say
    # a file that postgresql.conf does not include (yet) is no input either; the included ones are
    shutil.copytree(FIXTURES / "config-repo", tmp_path / "repo")
    (tmp_path / "repo" / "replication.conf").write_text("wal_level = 'logical'\n")
    code, output = lint("repo/replication.conf", "repo/conf.d/10-memory.conf", "repo/host.yaml", "--format", "json")
    document = json.loads(output)
    assert code == 2
    assert [error["host"] for error in document["errors"]] == ["repo/replication.conf"]
    assert document["summary"]["hosts"] == 1 and document["findings"]  # the host linted and reported
    assert "include" in document["errors"][0]["message"]


def test_issue_30_jobs_start_processes_only_where_they_pay(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # `-j 2` was slower than `-j 1` on 500 hosts of a 2-CPU machine: below run.workers.JOBS_MIN_HOSTS hosts a process
    # the run stays in its own (the crossover measured by scripts/bench.py --jobs, docs/performance.md)
    from pgvet.run import pool, workers

    monkeypatch.delenv("PGVET_JOBS_MIN_HOSTS")
    monkeypatch.setattr(workers, "usable_cpus", lambda: 4)
    least = workers.JOBS_MIN_HOSTS
    assert workers.worker_count(10, 2) == 1 and workers.worker_count(2 * least - 1, 2) == 1
    assert workers.worker_count(2 * least, 2) == 2 and workers.worker_count(100 * least, 3) == 3
    # the default: one process fewer than the CPUs (the last writes the reports); on two CPUs, one process
    assert workers.worker_count(2 * least, 0) == 2 and workers.worker_count(100 * least, 0) == 3
    assert workers.worker_count(least, 0) == 1
    monkeypatch.setattr(workers, "usable_cpus", lambda: 2)
    assert workers.worker_count(100 * least, 0) == 1 and workers.worker_count(100 * least, 2) == 2
    monkeypatch.setenv("PGVET_JOBS_MIN_HOSTS", "5")  # a machine where the crossover lies elsewhere
    assert workers.worker_count(10, 2) == 2 and workers.worker_count(9, 2) == 1
    hosts = _fleet(tmp_path, 6)
    pools: list[int] = []
    monkeypatch.setattr(pool, "_pool", lambda jobs, options: pools.append(jobs))
    assert lint(*hosts, "--format", "concise", "--jobs", "2")[0] == 1 and pools == []  # 3 hosts a process: one
    monkeypatch.setenv("PGVET_JOBS_MIN_HOSTS", "0")
    code, output = lint(*hosts, "--jobs", "2")
    assert code == 2 and "PGVET_JOBS_MIN_HOSTS must be a whole number of hosts, 1 or more, not '0'" in output


def test_an_error_is_said_with_its_control_characters_escaped(tmp_path: Path) -> None:
    """A rule pack directory whose name holds an escape sequence: the error names it escaped (no colour code
    reaches a terminal or a CI log), through the command as it is started (`python -m pgvet`)."""
    done = subprocess.run([sys.executable, "-m", "pgvet", "lint", "fixtures/big-server", "--rules", "/no\x1b[31mpe"],
                          capture_output=True, text=True, cwd=PROJECT, timeout=120,
                          env={**os.environ, "PGVET_CACHE_DIR": str(tmp_path)})
    assert done.returncode == 2
    assert "\x1b" not in done.stderr
    assert "/no\\x1b[31mpe" in done.stderr


def test_ci_formats_locate_files_from_the_repository_root_when_run_in_a_subdirectory(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # a CI step run in a subdirectory (`working-directory: config`) gave `hosts/db7/postgresql.conf`, which code
    # scanning, GitHub annotations and GitLab Code Quality look up from the repository's root: no such file there
    (tmp_path / ".git").mkdir()
    host = tmp_path / "config" / "hosts" / "db7"
    host.mkdir(parents=True)
    (host / "host.yaml").write_text("pg_version: 16\n")
    (host / "postgresql.conf").write_text("shared_bufers = 1GB\n")
    monkeypatch.chdir(tmp_path / "config")
    wanted = "config/hosts/db7/postgresql.conf"
    code, output = lint("hosts/db7", "--format", "sarif")
    run = json.loads(output)["runs"][0]
    assert code == 1 and run["originalUriBaseIds"]["%SRCROOT%"]["uri"] == tmp_path.as_uri() + "/"
    assert {result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
            for result in run["results"] if result["ruleId"] == "PGV401"} == {wanted}
    assert f"file={wanted},line=1," in lint("hosts/db7", "--format", "github")[1]
    issues = json.loads(lint("hosts/db7", "--format", "gitlab")[1])
    assert {issue["location"]["path"] for issue in issues if issue["check_name"].startswith("PGV401")} == {wanted}
    # JUnit too: GitLab's test tab and Jenkins open a test case's `file` from the repository's root
    junit = lint("hosts/db7", "--format", "junit")[1]
    assert f'file="{wanted}" line="1"' in junit and f"at {wanted}:1" in junit and 'file="hosts/' not in junit
    # a terminal's formats keep paths from where the user is, which they can open
    assert "hosts/db7/postgresql.conf:1: ERROR PGV401" in lint("hosts/db7", "--format", "concise")[1]
