"""The catalogue's worked numbers through the engine, and the fixture hosts linted into the right findings."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from conftest import FIXTURES, derived_of
from pgvet.cli import app
from pgvet.engine.loader import load_pack
from pgvet.findings import Finding
from pgvet.run.lint import lint
from pgvet.run.options import LintOptions
from pgvet.snapshot.facts import FactValue

GIB = 1024**3
MIB = 1024**2


derived = derived_of


@pytest.mark.parametrize("storage, level, disks, expected", [
    ("hdd", 1, 2, 2), ("hdd", 5, 6, 5), ("hdd", 6, 8, 7), ("hdd", 10, 8, 4), ("hdd", None, None, 2),
    ("ssd", None, None, 200), ("nvme", None, None, 500), ("san", None, None, 300),
])
def test_effective_io_concurrency_per_layout(storage: str, level: int | None, disks: int | None, expected: int) -> None:
    facts: dict[str, FactValue] = {"host.storage": storage, "pg.version": 16}
    if level is not None and disks is not None:
        facts |= {"host.raid_level": level, "host.raid_disks": disks}
    assert derived(facts)["derived.suggested_effective_io_concurrency"] == expected


def test_effective_io_concurrency_before_13_is_lower() -> None:
    assert derived({"host.storage": "ssd", "pg.version": 12})["derived.suggested_effective_io_concurrency"] == 66


def test_work_mem_suggestions_for_16_gb_4_gb_200_connections() -> None:
    values = derived({"host.ram": 16 * GIB, "pg.shared_buffers": 4 * GIB, "pg.max_connections": 200,
                      "pg.max_worker_processes": 8})
    assert round(values["derived.suggested_work_mem_pettus"] / MIB) == 246  # "about 240 MB"  # type: ignore[operator]
    assert round(values["derived.suggested_work_mem_conservative"] / MIB) == 82  # type: ignore[operator]
    assert round(values["derived.suggested_work_mem_pgtune"] / MIB) == 20  # type: ignore[operator]


def test_work_mem_suggestions_are_never_below_postgresql_minimum_nor_negative() -> None:
    # shared_buffers as large as the RAM: Pettus's and pgtune's formulas would suggest a negative work_mem
    values = derived({"host.ram": 4 * GIB, "pg.shared_buffers": 4 * GIB, "pg.max_connections": 100,
                      "pg.max_worker_processes": 8})
    assert "derived.suggested_work_mem_pettus" not in values  # NULL: no suggestion
    assert "derived.suggested_work_mem_pgtune" not in values
    assert values["derived.suggested_work_mem_conservative"] == 41943 * 1024  # 4 GiB / 100, whole kB
    # a little RAM left and many connections: PostgreSQL's minimum, 64 kB; pgtune's own floor, 4 MB
    values = derived({"host.ram": 4 * GIB, "pg.shared_buffers": 4 * GIB - 64 * MIB, "pg.max_connections": 5000,
                      "pg.max_worker_processes": 8})
    assert values["derived.suggested_work_mem_pgtune"] == 4 * MIB
    assert values["derived.suggested_work_mem_pettus"] == 65536


@pytest.mark.parametrize("ratio, expected_gb", [(50, 18), (75, 26)])
def test_commit_limit_worked_examples(ratio: int, expected_gb: int) -> None:
    values = derived({"sysctl.vm.overcommit_ratio": ratio, "meminfo.mem_total": 32 * GIB,
                      "meminfo.swap_total": 2 * GIB, "host.ram": 32 * GIB})
    assert values["derived.commit_limit"] == expected_gb * GIB


@pytest.mark.parametrize("version, autovacuum_work_mem, expected", [
    (16, 2 * GIB, 1 * GIB),  # the dead tuple array's 1 GB cap: more is never allocated
    (16, -1, 1 * GIB),  # maintenance_work_mem's 2 GB, capped as well
    (16, 512 * MIB, 512 * MIB),
    (17, 2 * GIB, 2 * GIB),  # a TidStore since 17: no cap
])
def test_autovacuum_worker_memory_is_capped_at_1_gb_before_17(version: int, autovacuum_work_mem: int,
                                                              expected: int) -> None:
    values = derived({"pg.version": version, "pg.autovacuum_work_mem": autovacuum_work_mem,
                      "pg.maintenance_work_mem": 2 * GIB})
    assert values["derived.autovacuum_worker_memory"] == expected


def findings_of(host: str) -> dict[str, Finding]:
    result = lint([FIXTURES / host], LintOptions())
    assert not result.errors
    return {finding.rule_id: finding for finding in result.hosts[0].findings}


def test_big_server_findings_and_numbers() -> None:
    found = findings_of("big-server")
    assert found["PGV110"].severity == "error"
    assert found["PGV703"].values == {"effective_io_concurrency": 1, "suggested": 4}  # RAID 10 of 8 HDDs
    assert found["PGV536"].values["suggested"] == 640  # 10 × 64 CPUs
    assert found["PGV604"].values == {"checkpoint_completion_target": 0.5}
    budget = found["PGV530"]
    assert budget.values["limit"] == found["PGV103"].values["commit_limit"]  # mode 2: CommitLimit is the limit
    assert budget.values["work_mem_budget"] == (1000 + 8) * 64 * MIB * 2 + 3 * 2 * GIB + 2 * GIB
    assert found["PGV137"].severity == "warning"
    assert found["PGV208"].subject == "/srv/pgdata"
    # Defaults are not flagged: log_checkpoints is set on, autovacuum is on by default.
    assert "PGV809" not in found and "PGV801" not in found


def test_config_repository_findings() -> None:
    found = findings_of("config-repo")
    assert found["PGV401"].values["suggestion"] == "effective_io_concurrency"
    assert found["PGV401"].path == "conf.d/30-planner.conf" and found["PGV401"].line == 3
    assert found["PGV402"].values["replacement"] == "max_wal_size"
    assert found["PGV404"].values["bytes"] == 16 * GIB
    huge = found["PGV110"]
    assert huge.values["available"] == 4096 and isinstance(huge.values["needed"], int)
    assert 8300 < huge.values["needed"] < 8500  # 16 GB of shared_buffers in 2 MB pages, plus the rest
    # RAID 10 of 8 HDDs; the misspelt line left effective_io_concurrency at its default, 1.
    assert found["PGV703"].values == {"effective_io_concurrency": 1, "suggested": 4}


def test_small_vm_findings() -> None:
    found = findings_of("small-vm")
    assert {"PGV101", "PGV130", "PGV139", "PGV406", "PGV831", "PGV832"} <= set(found)
    assert found["PGV101"].fix.sysctl == {"vm.overcommit_memory": "2", "vm.overcommit_ratio": "53"}


def test_well_tuned_host_is_silent() -> None:
    path = FIXTURES / "well-tuned"
    if not path.is_dir():
        pytest.skip("no well-tuned fixture")
    result = lint([path], LintOptions())
    assert [f"{finding.rule_id} {finding.message}" for finding in result.hosts[0].findings] == []


def test_end_of_life_follows_the_run_date(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    (tmp_path / "host.yaml").write_text("pg_version: 14\n")
    (tmp_path / "postgresql.conf").write_text("port = 5432\n")
    monkeypatch.setenv("PGVET_TODAY", "2026-10-31")
    assert "PGV841" not in {f.rule_id for f in lint([tmp_path], LintOptions()).hosts[0].findings}
    monkeypatch.setenv("PGVET_TODAY", "2026-11-22")
    assert "PGV841" in {f.rule_id for f in lint([tmp_path], LintOptions()).hosts[0].findings}
    # a PGVET_TODAY that is no date refuses the run: it was each host's "internal error, a bug in pgvet"
    monkeypatch.setenv("PGVET_TODAY", "22/11/2026")
    result = CliRunner().invoke(app, ["lint", str(tmp_path), "-f", "concise"])
    assert result.exit_code == 2 and "internal error" not in result.output
    assert "PGVET_TODAY must be a date such as 2026-11-22, not '22/11/2026'" in result.output


def test_declared_kernel_values_against_running_ones(tmp_path: Path) -> None:
    (tmp_path / "sysctl.txt").write_text("vm.swappiness = 60\nvm.overcommit_memory = 2\n")
    (tmp_path / "sysctl.d").mkdir()
    (tmp_path / "sysctl.d" / "90-pg.conf").write_text("vm.swappiness = 10\nvm.overcommit_memory = 2\n")
    (tmp_path / "meminfo.txt").write_text("MemTotal: 4025276 kB\n")
    (tmp_path / "host.yaml").write_text("ram: 8GB\n")
    findings = lint([tmp_path], LintOptions(select=["consistency"])).hosts[0].findings
    by_rule = {(finding.rule_id, finding.subject) for finding in findings}
    assert by_rule == {("PGV901", "vm.swappiness"), ("PGV902", None)}
    [declared] = [finding for finding in findings if finding.rule_id == "PGV901"]
    assert (declared.path, declared.line) == ("sysctl.d/90-pg.conf", 1)
    assert declared.values == {"key": "vm.swappiness", "declared": "10", "running": "60"}


def test_a_pool_smaller_than_the_need_wastes_nothing() -> None:
    # PGV113's values are shown for a pass too (pgvet check): on a pool short of the need, 0 and not minus
    from pgvet.engine.evaluate import evaluate_host
    from pgvet.snapshot.load import load_host

    host = load_host(FIXTURES / "rules" / "PGV110-huge-pages-on-pool-too-small", None)
    result = evaluate_host(load_pack(), host, record_passes=True)
    assert result.passed is not None
    passed = {record.rule_id: record for record in result.passed}
    assert passed["PGV113"].values["reserved"] < passed["PGV113"].values["needed"]  # type: ignore[operator]
    assert passed["PGV113"].values["wasted"] == 0


@pytest.mark.parametrize(("mount", "expected"), [
    ("tank/pg /srv/pgdata zfs rw,xattr,noacl 0 0", {"PGV607"}),  # catalogue F2: a warning on ZFS
    ("/dev/sdb1 /srv/pgdata ext4 rw,noatime 0 0", {"PGV602"}),  # an error where pages can tear
    (None, {"PGV602"}),  # the filesystem unknown: judged as one that tears
])
def test_full_page_writes_off_is_an_error_unless_pgdata_is_on_zfs(tmp_path: Path, mount: str | None,
                                                                    expected: set[str]) -> None:
    (tmp_path / "postgresql.conf").write_text("full_page_writes = off\n")
    (tmp_path / "host.yaml").write_text("pg_version: 17\ndata_directory: /srv/pgdata/17/main\n")
    if mount is not None:
        (tmp_path / "mounts.txt").write_text(f"/dev/sda1 / ext4 rw,relatime 0 0\n{mount}\n")
    result = lint([tmp_path], LintOptions())
    found = {finding.rule_id: finding for finding in result.hosts[0].findings}
    assert {"PGV602", "PGV607"} & set(found) == expected
    if mount is not None:
        [rule_id] = expected
        fstype = mount.split()[2]
        assert found[rule_id].severity == ("warning" if fstype == "zfs" else "error")
        assert ("host.data_fstype", fstype) in {(name, value) for name, value, _ in found[rule_id].evidence}
