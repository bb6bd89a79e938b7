"""The test suite cleans up after itself (issue #30: it left directories in /tmp, one empty cache a session)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from conftest import PROJECT, require_postgres


def test_a_session_leaves_nothing_in_the_temporary_directory(tmp_path: Path) -> None:
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    environ = {key: value for key, value in os.environ.items() if key != "PGVET_CACHE_DIR"}
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           f"--basetemp={tmp_path / 'base'}", "tests/rules/test_rules_examples.py", "-k", "PGV101",
                           "tests/cli/test_lint_cli.py::test_an_error_is_said_with_its_control_characters_escaped"],
                          cwd=PROJECT, capture_output=True, text=True, timeout=600, check=False,
                          env={**environ, "TMPDIR": str(temporary)})
    assert done.returncode == 0, done.stdout[-3000:]
    assert sorted(os.listdir(temporary)) == []


def test_the_template_cluster_goes_with_its_process() -> None:
    require_postgres(15)
    probe = "import sys; sys.path.insert(0, 'scripts'); import pgservers; print(pgservers.template_cluster(15))"
    done = subprocess.run([sys.executable, "-c", probe], cwd=PROJECT, capture_output=True, text=True, timeout=300,
                          check=True)
    data = Path(done.stdout.strip())
    assert data.name == "data" and data.parent.name.startswith("pgvet-template-15-")
    assert not data.parent.exists()
