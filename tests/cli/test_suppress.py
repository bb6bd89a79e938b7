"""Inline suppressions (reason required, unused ones reported) and the baseline ratchet."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from conftest import FIXTURES
from pgvet.cli import app
from pgvet.run.lint import lint
from pgvet.run.options import LintOptions

runner = CliRunner()


def pg16_host(tmp_path: Path, conf: str) -> Path:
    """A host of PostgreSQL 16 with only this postgresql.conf."""
    host = tmp_path / "h"
    host.mkdir()
    (host / "host.yaml").write_text("pg_version: 16\n")
    (host / "postgresql.conf").write_text(conf)
    return host


def fixture_with_sysctl_d(tmp_path: Path, fixture: str, name: str, text: str) -> Path:
    """A copy of a bundled host with a sysctl.d file ``name`` holding ``text`` (beside its running sysctl.txt)."""
    host = tmp_path / "h"
    shutil.copytree(FIXTURES / fixture, host)
    (host / "sysctl.d").mkdir()
    (host / "sysctl.d" / name).write_text(text)
    return host


def config_repo(tmp_path: Path) -> Path:
    host = tmp_path / "repo"
    shutil.copytree(FIXTURES / "config-repo", host)
    return host


def test_inline_suppression_needs_a_reason_and_unused_ones_are_reported(tmp_path: Path) -> None:
    host = config_repo(tmp_path)
    wal = host / "conf.d" / "20-wal.conf"
    wal.write_text(wal.read_text().replace(
        "checkpoint_segments = 64", "# pgvet: ignore[removed-parameter] the 9.4 standby reads this file (OPS-12)\n"
                                    "checkpoint_segments = 64"))
    planner = host / "conf.d" / "30-planner.conf"
    planner.write_text(planner.read_text().replace("jit = on", "jit = on  # pgvet: ignore[PGV999] stale")
                       .replace("effective_io_concurency = 2", "effective_io_concurency = 2 # pgvet: ignore[PGV401]"))
    result = lint([host], LintOptions())
    by_rule = {finding.rule_id: finding for finding in result.hosts[0].findings}
    assert by_rule["PGV402"].suppressed == "the 9.4 standby reads this file (OPS-12)"
    assert by_rule["PGV401"].suppressed is None  # no reason: not suppressed
    assert any("30-planner.conf:5: suppression names no rule: PGV999 (see 'pgvet rules')" in notice
               for notice in result.notices)
    assert any("30-planner.conf:3: suppression without a reason" in notice for notice in result.notices)


def test_a_suppression_naming_no_rule_says_so_with_the_rule_meant(tmp_path: Path) -> None:
    # a misspelt name was "unused suppression [too-many-conections]", beside the finding it meant, failing the run
    host = pg16_host(tmp_path, "work_mem = 8MB  # pgvet: ignore[too-many-conections] pooler in Q3\n"
                               "# pgvet: ignore[PGV536, PGV9x] both\nmax_connections = 800\n")
    (host / "host.yaml").write_text("pg_version: 16\ncpus: 4\n")
    result = lint([host], LintOptions())
    assert [finding.suppressed for finding in result.hosts[0].findings if finding.rule_id == "PGV536"] == ["both"]
    assert any("postgresql.conf:1: suppression names no rule: too-many-conections (did you mean "
               "too-many-connections?)" in notice for notice in result.notices), result.notices
    assert any("postgresql.conf:2: suppression names no rule: PGV9x (see 'pgvet rules')" in notice
               for notice in result.notices), result.notices
    assert not any("unused suppression" in notice for notice in result.notices)


def test_unused_suppressions_are_reported_in_files_without_findings(tmp_path: Path) -> None:
    # the finding was fixed and the comment forgotten: the file has no finding left, the comment still says
    host = config_repo(tmp_path)
    memory = host / "conf.d" / "10-memory.conf"
    memory.write_text("# pgvet: ignore[work-mem-large] reporting queries, reviewed 2026-11\nwork_mem = 48MB\n")
    (host / "sysctl.d" / "30-empty.conf").write_text("# pgvet: ignore[swappiness-too-high]\n")
    result = lint([host], LintOptions())
    assert not any(finding.path == "conf.d/10-memory.conf" for finding in result.hosts[0].findings)
    assert any("conf.d/10-memory.conf:1: unused suppression [work-mem-large]" in notice for notice in result.notices)
    assert any("sysctl.d/30-empty.conf:1: suppression without a reason" in notice for notice in result.notices)


def test_a_suppression_of_a_rule_the_run_did_not_evaluate_is_not_called_unused(tmp_path: Path) -> None:
    # a pre-commit hook that lints with --select (or --ignore) must not be told that the comments silencing the
    # other rules are stale: those rules did not run
    host = pg16_host(tmp_path, "# pgvet: ignore[unknown-parameter] set by our fork\nshared_buffer = 1\n"
                               "work_mem = 48MB  # pgvet: ignore[work-mem-large] reviewed\n"
                               "# pgvet: ignore[PGV401, work-mem-large] either\nport = 5432\n")
    for options in (LintOptions(select=["PGV1"]), LintOptions(ignore=["PGV401", "work-mem-large"])):
        result = lint([host], options)
        assert not any("unused suppression" in notice for notice in result.notices), (options, result.notices)
    result = lint([host], LintOptions(select=["PGV401", "work-mem-large"]))
    assert [notice.split(": ", 1)[1] for notice in result.notices if "unused" in notice] == [
        "postgresql.conf:3: unused suppression [work-mem-large]",
        "postgresql.conf:4: unused suppression [PGV401, work-mem-large]"]


def test_suppressed_findings_do_not_fail(tmp_path: Path) -> None:
    host = pg16_host(tmp_path, "# pgvet: ignore[unknown-parameter] set by our fork\nshared_buffer = 1\nport = 5432\n")
    result = runner.invoke(app, ["lint", str(host), "--fail-on", "error", "--format", "concise"])
    assert result.exit_code == 0, result.output
    assert "(suppressed)" in result.output


def test_baseline_ratchet(tmp_path: Path) -> None:
    host = config_repo(tmp_path)
    baseline = tmp_path / "baseline.json"
    created = runner.invoke(app, ["baseline", "create", str(host), "--output", str(baseline)])
    assert created.exit_code == 0, created.output
    recorded = json.loads(baseline.read_text())["findings"]
    assert len(recorded) >= 10
    assert runner.invoke(app, ["lint", str(host), "--baseline", str(baseline)]).exit_code == 0
    # A new problem fails even with the baseline; the old ones stay marked.
    (host / "postgresql.conf").write_text((host / "postgresql.conf").read_text() + "shared_buffer = 1GB\n")
    result = runner.invoke(app, ["lint", str(host), "--baseline", str(baseline), "--format", "json"])
    assert result.exit_code == 1
    document = json.loads(result.output)
    new = [finding for finding in document["findings"] if not finding["baseline"]]
    assert [finding["rule_id"] for finding in new] == ["PGV401"]
    # SARIF says it too, as baselineState (none without a baseline: nothing was compared)
    sarif = runner.invoke(app, ["lint", str(host), "--baseline", str(baseline), "--format", "sarif"])
    states = {(result["ruleId"], result["baselineState"])
              for result in json.loads(sarif.output)["runs"][0]["results"]}
    assert ("PGV401", "new") in states and {state for _, state in states} == {"new", "unchanged"}
    assert len([state for _, state in states if state == "new"]) == 1
    plain = runner.invoke(app, ["lint", str(host), "--format", "sarif"])
    assert all("baselineState" not in result for result in json.loads(plain.output)["runs"][0]["results"])
    # Fixing a problem and updating removes its entry; the new problem is never added.
    wal = host / "conf.d" / "20-wal.conf"
    wal.write_text(wal.read_text().replace("checkpoint_segments = 64\n", ""))
    updated = runner.invoke(app, ["baseline", "update", str(host), "-o", str(baseline)])
    assert updated.exit_code == 0, updated.output
    assert updated.output == f"1 fixed entry removed, {len(recorded) - 1} remain in {baseline}\n"
    remaining = json.loads(baseline.read_text())["findings"]
    assert len(remaining) == len(recorded) - 1
    assert set(remaining) <= set(recorded)


def test_baseline_update_of_some_hosts_keeps_the_others_entries(tmp_path: Path) -> None:
    # `update hosts/alpha` removed every entry of bravo, not linted, as fixed: the next lint of the fleet failed
    # on all of bravo's accepted findings
    (tmp_path / "alpha").mkdir()
    (tmp_path / "bravo").mkdir()
    alpha = pg16_host(tmp_path / "alpha", "max_connections = 700\n")
    bravo = pg16_host(tmp_path / "bravo", "ssl = off\n")
    for host, cpus in ((alpha, 3), (bravo, 5)):
        (host / "host.yaml").write_text(f"pg_version: 16\ncpus: {cpus}\nname: {host.parent.name}\n")
    baseline = tmp_path / "baseline.json"
    assert runner.invoke(app, ["baseline", "create", str(alpha), str(bravo), "-o", str(baseline)]).exit_code == 0
    recorded = json.loads(baseline.read_text())["findings"]
    of_bravo = {key for key, entry in recorded.items() if entry["host"] == "bravo"}
    assert of_bravo and any(entry["rule"].endswith("too-many-connections") for entry in recorded.values())
    (alpha / "postgresql.conf").write_text("max_connections = 40\n")
    updated = runner.invoke(app, ["baseline", "update", str(alpha), "-o", str(baseline)])
    assert updated.exit_code == 0, updated.output
    remaining = json.loads(baseline.read_text())["findings"]
    assert of_bravo <= set(remaining)
    assert not any(entry["rule"].endswith("too-many-connections") for entry in remaining.values())
    assert runner.invoke(app, ["lint", str(alpha), str(bravo), "--baseline", str(baseline)]).exit_code == 0


def test_issue_30_baseline_update_takes_its_file_as_create_does(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    # `update` took a positional file and `create` -o; both take -o now, and default to the configuration's
    # `baseline` (what `lint` reads), else pgvet-baseline.json
    host = config_repo(tmp_path)
    monkeypatch.chdir(tmp_path)
    assert runner.invoke(app, ["baseline", "create", str(host)]).exit_code == 0
    assert (tmp_path / "pgvet-baseline.json").is_file()
    (tmp_path / ".pgvet.toml").write_text('baseline = "ci/accepted.json"\n')
    (tmp_path / "ci").mkdir()
    created = runner.invoke(app, ["baseline", "create", str(host)])
    assert created.exit_code == 0 and created.output.endswith(f"recorded in {tmp_path / 'ci' / 'accepted.json'}\n")
    assert runner.invoke(app, ["lint", str(host)]).exit_code == 0  # lint reads the same file
    updated = runner.invoke(app, ["baseline", "update", str(host)])
    assert updated.exit_code == 0 and updated.output.endswith(f"in {tmp_path / 'ci' / 'accepted.json'}\n")
    # the form of before still works, and says the new one
    old_form = runner.invoke(app, ["baseline", "update", "ci/accepted.json", str(host)])
    assert old_form.exit_code == 0 and "give the baseline with -o" in old_form.output


def test_issue_30_baseline_create_counts_what_it_writes(tmp_path: Path) -> None:
    # two hosts of one name share fingerprints: "52 recorded" while the file held 26
    for site in ("prod", "staging"):
        config_repo(tmp_path / site)
    hosts = [str(path) for path in sorted(tmp_path.glob("*/*")) if path.is_dir()]
    baseline = tmp_path / "b.json"
    created = runner.invoke(app, ["baseline", "create", *hosts, "-o", str(baseline)])
    written = len(json.loads(baseline.read_text())["findings"])
    assert created.exit_code == 0
    assert created.output.startswith(f"{written} findings recorded in {baseline} ({2 * written} found: hosts of one "
                                     "name share")


def test_fingerprints_survive_moved_lines_and_changed_values(tmp_path: Path) -> None:
    host = config_repo(tmp_path)
    before = {f.rule_id: f.fingerprint for f in lint([host], LintOptions()).hosts[0].findings}
    memory = host / "conf.d" / "10-memory.conf"
    memory.write_text("# moved down\n\n" + memory.read_text().replace("huge_pages = on", "huge_pages = on\n"))
    sysctl = host / "sysctl.d" / "10-postgresql.conf"
    sysctl.write_text(sysctl.read_text().replace("vm.nr_hugepages = 4096", "vm.nr_hugepages = 2000"))
    after = {f.rule_id: f.fingerprint for f in lint([host], LintOptions()).hosts[0].findings}
    assert after["PGV110"] == before["PGV110"]
    assert after["PGV404"] == before["PGV404"]


def test_bad_baseline_is_an_input_error(tmp_path: Path) -> None:
    bad = tmp_path / "b.json"
    bad.write_text("[1, 2]")
    result = runner.invoke(app, ["lint", str(FIXTURES / "small-vm"), "--baseline", str(bad)])
    assert result.exit_code == 2
    assert "not a pgvet baseline" in result.output


def test_suppressions_are_judged_on_the_text_that_was_linted(tmp_path: Path) -> None:
    """A file read when the host was loaded is not read again for its comments: one without "pgvet" has none,
    even if it changes in between (and one that has the mark is read again, as the suppressions need it)."""
    from pgvet.engine.evaluate import evaluate_host
    from pgvet.engine.loader import load_pack
    from pgvet.run.suppress import suppress_inline
    from pgvet.snapshot.load import load_host

    host = tmp_path / "h"
    (host / "conf.d").mkdir(parents=True)
    (host / "host.yaml").write_text("pg_version: 16\n")
    (host / "postgresql.conf").write_text("include_dir = 'conf.d'\nshared_buffer = 1\n")
    (host / "conf.d" / "a.conf").write_text("# pgvet: ignore[unknown-parameter] our fork's\nfsync_mode = 1\n")
    loaded = load_host(host)
    assert loaded.unmarked_files == {"host.yaml", "postgresql.conf"}
    pack = load_pack([])
    result = evaluate_host(pack, loaded)
    (host / "postgresql.conf").write_text("# pgvet: ignore[unknown-parameter] too late\nshared_buffer = 1\n")
    notices: list[str] = []
    names = {rule.id: rule.name for rule in pack.rules}
    suppress_inline(result, notices, names, {*names, *names.values()})
    unknown = {finding.path: finding.suppressed for finding in result.findings if finding.rule_id == "PGV401"}
    assert unknown == {"postgresql.conf": None, "conf.d/a.conf": "our fork's"}
    assert notices == []


def test_no_two_findings_of_a_host_share_a_fingerprint(tmp_path: Path) -> None:
    # the same rule on several lines of a file for the same subject (two missing includes, a parameter set
    # twice): one fingerprint would make them one ticket and one code scanning alert, and a baseline holding
    # the first would hide a second added later
    host = tmp_path / "db"
    host.mkdir()
    (host / "host.yaml").write_text("pg_version: 16\n")
    (host / "postgresql.conf").write_text("include 'missing1.conf'\ncheckpoint_segments = 3\n")
    first = [f for f in lint([host], LintOptions()).hosts[0].findings if f.rule_id in ("PGV402", "PGV407")]
    (host / "postgresql.conf").write_text("# a comment\ninclude 'missing1.conf'\ncheckpoint_segments = 3\n"
                                          "include 'missing2.conf'\ncheckpoint_segments = 4\n")
    second = [f for f in lint([host], LintOptions()).hosts[0].findings if f.rule_id in ("PGV402", "PGV407")]
    assert len(second) == 4 and len({finding.fingerprint for finding in second}) == 4
    # the first occurrence keeps the fingerprint it had alone (and the one of earlier pgvet versions)
    assert {finding.fingerprint for finding in first} <= {finding.fingerprint for finding in second}
    baseline = tmp_path / "baseline.json"
    (host / "postgresql.conf").write_text("include 'missing1.conf'\n")
    assert runner.invoke(app, ["baseline", "create", str(host), "-o", str(baseline)]).exit_code == 0
    (host / "postgresql.conf").write_text("include 'missing1.conf'\ninclude 'missing2.conf'\n")
    result = runner.invoke(app, ["lint", str(host), "--baseline", str(baseline), "--format", "json"])
    new = [finding["message"] for finding in json.loads(result.output)["findings"] if not finding["baseline"]]
    assert result.exit_code == 1 and any("missing2.conf" in message for message in new)


def test_a_baseline_is_not_written_when_a_host_cannot_be_read(tmp_path: Path) -> None:
    # update would count every entry of the unread host as fixed, create would silently leave it out
    good, other = config_repo(tmp_path), tmp_path / "other"
    shutil.copytree(FIXTURES / "small-vm", other)
    baseline = tmp_path / "baseline.json"
    assert runner.invoke(app, ["baseline", "create", str(good), str(other), "-o", str(baseline)]).exit_code == 0
    recorded = baseline.read_text()
    shutil.rmtree(other)
    other.mkdir()  # a snapshot not yet copied back: nothing to read
    updated = runner.invoke(app, ["baseline", "update", str(baseline), str(good), str(other)])
    assert updated.exit_code == 2 and "no inputs found" in updated.output
    assert baseline.read_text() == recorded
    fresh = tmp_path / "fresh.json"
    created = runner.invoke(app, ["baseline", "create", str(good), str(other), "-o", str(fresh)])
    assert created.exit_code == 2 and "no inputs found" in created.output and not fresh.exists()


def test_hostile_baselines(tmp_path: Path) -> None:
    deep = tmp_path / "deep.json"
    deep.write_text('{"format": 1, "findings": ' + "[" * 100_000 + "]" * 100_000 + "}")
    result = runner.invoke(app, ["lint", str(FIXTURES / "small-vm"), "--baseline", str(deep)])
    assert result.exit_code == 2 and "deep.json: not a pgvet baseline: arrays or objects nested too deep" in \
        " ".join(result.output.split()), result.output  # was a RecursionError
    huge = tmp_path / "huge.json"
    with huge.open("wb") as handle:
        handle.truncate(1024**3)  # sparse; /dev/zero never ended
    result = runner.invoke(app, ["lint", str(FIXTURES / "small-vm"), "--baseline", str(huge)])
    assert result.exit_code == 2 and "more than pgvet reads" in result.output, result.output
    # 23 MB of empty entries took 470 MB of memory (d1): the entries are bounded before they are made
    empty = tmp_path / "empty.json"
    empty.write_text('{"format": 1, "findings": {' + ",".join(f'"{i:x}":{{}}' for i in range(2_000_001)) + "}}")
    result = runner.invoke(app, ["lint", str(FIXTURES / "small-vm"), "--baseline", str(empty)])
    assert result.exit_code == 2 and "more than 2000000 findings, more than a pgvet baseline holds" in \
        " ".join(result.output.split()), result.output


def test_a_suppression_is_matched_at_the_line_postgresql_counts(tmp_path: Path) -> None:
    # a form feed is no line break for PostgreSQL (nor grep -n): the comment is on line 2 and covers lines 2 and
    # 3, not the finding on line 4 (counted at str.splitlines(), the comment moved down and hid it)
    host = pg16_host(tmp_path, "# page one\x0c page two\n# pgvet: ignore[unknown-parameter] our fork\n"
                               "port = 5432\nshared_buffer = 1\n")
    result = lint([host], LintOptions())
    (finding,) = [finding for finding in result.hosts[0].findings if finding.rule_id == "PGV401"]
    assert (finding.line, finding.suppressed) == (4, None)
    assert any("postgresql.conf:2: unused suppression [unknown-parameter]" in notice for notice in result.notices)


def test_a_suppression_above_the_sysctl_d_line_covers_the_running_value_it_sets(tmp_path: Path) -> None:
    # a snapshot holds sysctl.txt and the team's sysctl.d: the finding points at the running value, and the comment
    # above the sysctl.d line that sets it was "unused", the finding unsuppressed and the target changing the key
    host = fixture_with_sysctl_d(tmp_path, "big-server", "50-numa.conf",
                                 "# pgvet: ignore[zone-reclaim-enabled] the hypervisor pins each guest to one node "
                                 "(OPS-7)\nvm.zone_reclaim_mode = 1\n")
    result = lint([host], LintOptions())
    (finding,) = [finding for finding in result.hosts[0].findings if finding.rule_id == "PGV137"]
    assert (finding.path, finding.suppressed) == ("sysctl.txt", "the hypervisor pins each guest to one node (OPS-7)")
    assert not any("unused suppression" in notice for notice in result.notices), result.notices
    target = result.hosts[0].target
    assert target is not None and all(change.setting.name != "vm.zone_reclaim_mode" for change in target.changes)
    # nor one above a line that declares another value than the kernel runs (sysctl-declared-not-applied says so)
    (host / "sysctl.d" / "50-numa.conf").write_text(
        "# pgvet: ignore[zone-reclaim-enabled] 2 is what this host needs\nvm.zone_reclaim_mode = 2\n")
    result = lint([host], LintOptions())
    assert [finding.suppressed for finding in result.hosts[0].findings if finding.rule_id == "PGV137"] == [None]
    # a comment above a line that sets another key covers nothing of this one
    (host / "sysctl.d" / "50-numa.conf").write_text(
        "# pgvet: ignore[zone-reclaim-enabled] wrong line\nvm.swappiness = 1\nvm.zone_reclaim_mode = 1\n")
    result = lint([host], LintOptions())
    assert [finding.suppressed for finding in result.hosts[0].findings if finding.rule_id == "PGV137"] == [None]
    assert any("50-numa.conf:1: unused suppression [zone-reclaim-enabled]" in notice for notice in result.notices)


def test_a_suppression_above_a_sysctl_d_line_holds_for_what_fires_once_the_files_are_applied(tmp_path: Path) -> None:
    # small-vm runs dirty ratios 20 and 10; its sysctl.d keeps the background at 10 and lowers the foreground to 10:
    # once applied, the background is no longer below it (PGV134, located at the background's running line). The
    # comment above the background's line was "unused" and the fix still wrote both thresholds in bytes
    host = fixture_with_sysctl_d(tmp_path, "small-vm", "60-dirty.conf",
                                 "# pgvet: ignore[dirty-background-above-foreground] the array's controller flushes "
                                 "by itself (OPS-9)\nvm.dirty_background_ratio = 10\nvm.dirty_ratio = 10\n")
    result = lint([host], LintOptions())
    assert not any("unused suppression" in notice for notice in result.notices), result.notices
    target = result.hosts[0].target
    assert target is not None
    assert not {change.setting.name for change in target.changes} & {"vm.dirty_bytes", "vm.dirty_background_bytes"}


OWN_RULE = """rules:
  - id: OPS001
    name: ops-swappiness-not-one
    title: vm.swappiness is not 1
    severity: warning
    when: sysctl.vm.swappiness <> 1
    message: vm.swappiness = {sysctl.vm.swappiness}
    why: site policy
    examples:
      - facts: {sysctl.vm.swappiness: 60}
        expect: fire
      - facts: {sysctl.vm.swappiness: 1}
        expect: pass
"""


@pytest.mark.parametrize("from_config", [True, False])
def test_a_baseline_records_the_findings_of_the_rule_packs_lint_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                     from_config: bool) -> None:
    # `baseline create` linted with pgvet's pack alone: a pack of one's own (.pgvet.toml's `rules`, or
    # --rules) had its findings left out, and they failed the very next `lint --baseline`
    (tmp_path / "ops").mkdir()
    (tmp_path / "ops" / "site.yaml").write_text(OWN_RULE)
    shutil.copytree(FIXTURES / "small-vm", tmp_path / "db")
    monkeypatch.chdir(tmp_path)
    options = ["--rules", "ops"]
    if from_config:
        (tmp_path / ".pgvet.toml").write_text('rules = ["ops"]\n')
        options = []
    created = runner.invoke(app, ["baseline", "create", "db", *options])
    recorded = json.loads((tmp_path / "pgvet-baseline.json").read_text())["findings"]
    assert created.output == f"{len(recorded)} findings recorded in pgvet-baseline.json\n"
    assert any(entry["rule"] == "OPS001 ops-swappiness-not-one" for entry in recorded.values())
    result = runner.invoke(app, ["lint", "db", "--baseline", "pgvet-baseline.json", "-f", "concise", *options])
    assert result.exit_code == 0, result.output
    assert "OPS001 ops-swappiness-not-one" in result.output
    updated = runner.invoke(app, ["baseline", "update", "pgvet-baseline.json", "db", *options])
    assert updated.exit_code == 0 and "0 fixed entries removed" in updated.output, updated.output
