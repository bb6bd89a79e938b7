"""`pgvet fix`: the consolidated change, conflicts resolved, written only when asked."""

from __future__ import annotations

import shutil
from pathlib import Path

from typer.testing import CliRunner

from conftest import FIXTURES
from pgvet.cli import app

runner = CliRunner()


def test_fix_prints_sysctl_postgresql_and_alter_system_without_writing(tmp_path: Path) -> None:
    host = tmp_path / "host"
    shutil.copytree(FIXTURES / "big-server", host)
    before = (host / "postgresql.conf").read_text()
    result = runner.invoke(app, ["fix", str(host)])
    assert result.exit_code == 0, result.output
    assert "vm.zone_reclaim_mode = 0" in result.output
    assert "ALTER SYSTEM SET shared_buffers = '48234MB';" in result.output
    # The ratio variants would zero the byte ones: the bytes win and the ratios are shown as overruled.
    assert "vm.dirty_bytes = 536870912" in result.output and "\nvm.dirty_ratio = " not in result.output
    assert "also suggested: vm.dirty_ratio = 10" in result.output
    assert (host / "postgresql.conf").read_text() == before
    assert not (host / "sysctl.d").exists()


def test_fix_write_edits_in_place_with_a_backup(tmp_path: Path) -> None:
    host = tmp_path / "host"
    shutil.copytree(FIXTURES / "small-vm", host)
    original = (host / "postgresql.conf").read_text()
    result = runner.invoke(app, ["fix", str(host), "--write"])
    assert result.exit_code == 0, result.output
    assert (host / "postgresql.conf.bak").read_text() == original
    edited = (host / "postgresql.conf").read_text().splitlines()
    assert "max_connections = '100'\t\t\t# (change requires restart)" in edited  # value replaced, comment kept
    assert "password_encryption = 'scram-sha-256'" in edited
    declared = (host / "sysctl.d" / "90-postgresql.conf").read_text()
    assert "vm.overcommit_memory = 2\n" in declared and "vm.swappiness = 10\n" in declared
    # What was written is now declared: the declared-vs-running rule sees it until sysctl --system runs.
    relint = runner.invoke(app, ["lint", str(host), "--format", "concise", "--select", "PGV901"])
    assert "vm.swappiness is declared 10 but the running kernel has 60" in relint.output
