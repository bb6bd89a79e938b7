"""scripts/pgservers.py, which finds and runs the real servers the differential tests judge with."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import pgservers
from conftest import PROJECT, require_postgres


def test_the_template_cluster_goes_with_its_process() -> None:
    """One initdb'd template per process and major: it must not outlive the process that made it."""
    require_postgres(15)
    made = subprocess.run([sys.executable, "-c", "import sys; sys.path.insert(0, sys.argv[1]); import pgservers; "
                           "print(pgservers.template_cluster(15).parent)", str(PROJECT / "scripts")],
                          capture_output=True, text=True, check=True)
    base = Path(made.stdout.strip())
    assert base.name.startswith("pgvet-template-15-") and not base.exists()


def test_the_npm_servers_are_found_where_ci_unpacks_them() -> None:
    """12–14 come from the npm registry's builds, unpacked under /opt/pgnpm/N/native (.ci/run)."""
    unpacked = {major: pgservers.NPM_ROOT / str(major) / "native" / "bin" for major in (12, 13, 14)}
    installed = {major: path for major, path in unpacked.items() if (path / "postgres").is_file()}
    if not installed:
        pytest.skip(f"no server unpacked under {pgservers.NPM_ROOT}")
    for major, path in installed.items():
        assert pgservers.bindir(major) == path
