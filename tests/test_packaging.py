"""The wheel carries the rule pack and the parameter catalogs: a non-editable install must find them."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from conftest import PROJECT


def test_wheel_ships_rules_and_catalogs(tmp_path: Path) -> None:
    pytest.importorskip("hatchling")
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(tmp_path),
         str(PROJECT)],
        capture_output=True, text=True, check=False, timeout=300,
    )
    assert built.returncode == 0, built.stderr
    [wheel] = tmp_path.glob("pgvet-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    rule_files = sorted(path.name for path in (PROJECT / "rules").glob("*.yaml"))
    assert rule_files
    for name in rule_files:
        assert f"pgvet/_rules/{name}" in names
    for major in (15, 16, 17, 18):
        assert f"pgvet/catalog/data/pg{major}.json" in names
