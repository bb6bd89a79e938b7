"""tuned profiles (pgvet.inputs.documents.tuned) on tuned's own profiles, and copies of them with planted mistakes."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pgvet.cli import app
from pgvet.errors import ParseError
from pgvet.inputs.documents import DeclaredHost, recognise
from pgvet.inputs.documents.tuned import parse_tuned
from pgvet.run.lint import lint
from pgvet.run.options import LintOptions

CORPUS = Path(__file__).parent.parent / "data" / "documents" / "tuned"
PROFILES = sorted(CORPUS.glob("*/tuned.conf"))
POSTGRESQL = CORPUS / "postgresql" / "tuned.conf"
THROUGHPUT = CORPUS / "throughput-performance" / "tuned.conf"


def _line(text: str, fragment: str) -> int:
    return next(number for number, line in enumerate(text.split("\n"), 1) if fragment in line)


def _sysctl(host: DeclaredHost) -> dict[str, tuple[int | str, int | None]]:
    return {setting.key: (setting.value, setting.source.line) for setting in host.sysctl}


def test_the_corpus_holds_the_profiles() -> None:
    assert [path.parent.name for path in PROFILES] == [
        "latency-performance", "mssql", "oracle", "postgresql", "throughput-performance"]


@pytest.mark.parametrize("path", PROFILES, ids=lambda path: path.parent.name)
def test_every_profile_is_machine_settings_named_after_its_folder(path: Path) -> None:
    [host] = parse_tuned(path.read_text(), str(path))
    assert host.name == path.parent.name and not host.hosting and not host.problems and host.sysctl


def test_the_postgresql_profile_gives_its_sysctl_vm_and_scheduler_settings_at_their_lines() -> None:
    text = POSTGRESQL.read_text()
    [host] = parse_tuned(text, str(POSTGRESQL))
    assert _sysctl(host) == {
        "vm.dirty_background_bytes": (67108864, _line(text, "dirty_background_bytes = ")),
        "vm.dirty_bytes": (536870912, _line(text, "dirty_bytes = 536870912")),
        "vm.swappiness": (3, _line(text, "vm.swappiness=3")),
        "kernel.sched_autogroup_enabled": (0, _line(text, "kernel.sched_autogroup_enabled")),
        "kernel.sched_min_granularity_ns": (10000000, _line(text, "sched_min_granularity_ns =")),
        "kernel.sched_migration_cost_ns": (50000000, _line(text, "sched_migration_cost_ns =")),
    }
    assert host.notes == [
        f"{POSTGRESQL}:{_line(text, 'include=')}: include=throughput-performance: that profile applies first and is "
        "not read here (give its tuned.conf to pgvet too)",
    ]
    assert {name: (located.value, located.source.line) for name, located in host.machine.items()} == {
        "thp.enabled": ("never", _line(text, "transparent_hugepages"))}


def test_percentages_are_ratios_and_conditional_sections_variables_and_assignments_are_notes() -> None:
    text = THROUGHPUT.read_text()
    [host] = parse_tuned(text, str(THROUGHPUT))
    assert _sysctl(host) == {"vm.dirty_ratio": (40, _line(text, "dirty_bytes = 40%")),
                             "vm.dirty_background_ratio": (10, _line(text, "dirty_background_bytes = 10%")),
                             "vm.swappiness": (10, _line(text, "vm.swappiness=10"))}
    assert "kernel.numa_balancing" not in _sysctl(host)  # [sysctl.thunderx]: Marvell ThunderX only
    assert f"{THROUGHPUT}:{_line(text, '[sysctl.thunderx]')}: [sysctl.thunderx] applies only where cpuinfo_regex and " \
           "uname_regex match: not read" in host.notes
    assert f"{THROUGHPUT}:{_line(text, 'somaxconn')}: net.core.somaxconn=>2048 is set only if it is greater than the " \
           "running value: not read" in host.notes


def test_planted_mistakes_in_a_copy_are_read_at_their_lines(tmp_path: Path) -> None:
    text = POSTGRESQL.read_text().replace("vm.swappiness=3", "vm.swappiness=60").replace(
        "kernel.sched_autogroup_enabled = 0", "kernel.sched_autogroup_enabled = ${f:autogroup}")
    text = text.replace("[sysctl]\n", "[sysctl]\nvm.overcommit_memory = 1  # planted\n")
    path = tmp_path / "pg" / "tuned.conf"
    path.parent.mkdir()
    path.write_text(text)
    [host] = parse_tuned(text, str(path))
    assert _sysctl(host)["vm.swappiness"] == (60, _line(text, "vm.swappiness=60"))
    assert _sysctl(host)["vm.overcommit_memory"] == (1, _line(text, "overcommit_memory"))
    assert "kernel.sched_autogroup_enabled" not in _sysctl(host)
    line = _line(text, "autogroup_enabled")
    assert host.notes[-1] == f"{path}:{line}: kernel.sched_autogroup_enabled=${{f:autogroup}} uses a tuned variable: " \
                             "not read"


def test_duplicates_continuations_quotes_and_a_disabled_section() -> None:
    text = """[sysctl]
vm.swappiness = 10
vm.swappiness = "1"
kernel.sem = 250
  32000 100 128
[my_vm]
type = vm
enabled = false
dirty_bytes = 5%
[disk]
elevator = none
"""
    [host] = parse_tuned(text, "profiles/pg/tuned.conf")
    assert [(setting.key, setting.value, setting.source.line) for setting in host.sysctl] == [
        ("vm.swappiness", 10, 2), ("vm.swappiness", 1, 3), ("kernel.sem", "250 32000 100 128", 4)]
    assert host.notes == ["profiles/pg/tuned.conf:11: [disk] elevator=none: would be disk.scheduler, which documents "
                          "do not declare yet: not read"]


@pytest.mark.parametrize(("text", "line"), [("vm.swappiness = 1\n", 1), ("[sysctl]\n# x\nvm.swappiness\n", 3)])
def test_what_tuned_refuses_is_a_parse_error_at_its_line(text: str, line: int) -> None:
    with pytest.raises(ParseError) as error:
        parse_tuned(text, "tuned.conf")
    assert error.value.source.line == line


def test_a_file_without_tuned_sections_is_not_recognised() -> None:
    assert recognise("etc/tuned/tuned.conf", "[global]\ndaemon = 1\n") is None


def test_pgvet_lint_finds_a_planted_kernel_mistake_of_a_profile_at_its_line(tmp_path: Path) -> None:
    text = POSTGRESQL.read_text().replace("vm.swappiness=3", "vm.swappiness=60")
    directory = tmp_path / "db1"
    directory.mkdir()
    (directory / "postgresql.conf").write_text("shared_buffers = 1GB\n")
    (directory / "tuned.conf").write_text(text)
    result = CliRunner().invoke(app, ["lint", str(directory), "--format", "json"])
    assert result.exit_code in (0, 1), result.output
    found = {(finding["host"], finding["rule_id"], Path(str(finding["path"])).name, finding["line"])
             for finding in json.loads(result.output)["findings"] if finding["path"]}
    assert ("db1", "PGV130", "tuned.conf", _line(text, "vm.swappiness=60")) in found


def test_transparent_huge_pages_of_a_profile_are_judged_where_no_snapshot_measured_them(tmp_path: Path) -> None:
    # mssql's profile sets transparent_hugepages=always: a configuration repository holding it was not judged (a
    # note said documents could not declare thp.enabled); a snapshot's sysfs, what runs, still comes first
    repository = tmp_path / "db"
    repository.mkdir()
    shutil.copy(CORPUS / "mssql" / "tuned.conf", repository / "tuned.conf")
    (repository / "postgresql.conf").write_text("shared_buffers = 1GB\n")
    result = lint([repository], LintOptions())
    [finding] = [finding for finding in result.hosts[0].findings if finding.rule_id == "PGV139"]
    assert finding.path == "tuned.conf" and finding.line == _line((repository / "tuned.conf").read_text(),
                                                                   "transparent_hugepages")
    (repository / "sysfs.txt").write_text("/sys/kernel/mm/transparent_hugepage/enabled:always madvise [never]\n")
    assert "PGV139" not in {finding.rule_id for finding in lint([repository], LintOptions()).hosts[0].findings}
    bad = parse_tuned("[vm]\ntransparent_hugepages=sometimes\n", "tuned.conf")[0]
    assert not bad.machine and bad.notes == ["tuned.conf:2: [vm] transparent_hugepages=sometimes: not a value the "
                                             "kernel takes (always, madvise, never): not read"]
