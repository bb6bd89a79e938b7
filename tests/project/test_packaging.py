"""The wheel carries the rule pack and the parameter tables: a non-editable install must find them."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from conftest import PROJECT


def test_wheel_ships_rules_and_param_tables(tmp_path: Path) -> None:
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
        assert f"pgvet/pgparams/data/pg{major}.json" in names
    # `pip install pgvet` gives all four uses: psycopg (collect, check) is no extra to know of
    [metadata] = [name for name in names if name.endswith(".dist-info/METADATA")]
    requires = [line.split(":", 1)[1].strip() for line in zipfile.ZipFile(wheel).read(metadata).decode().splitlines()
                if line.startswith("Requires-Dist:")]
    assert "psycopg>=3.1" in requires
    binary = [line for line in requires if line.startswith("psycopg[binary]")]
    assert binary and "extra ==" not in binary[0] and "platform_machine == 'x86_64'" in binary[0]
    assert not any("extra == 'live'" in line for line in requires)


def _other_pythons() -> list[str]:
    """Interpreters of the versions pgvet supports (3.11 and later) that this machine has besides the one
    running the tests: on PATH, Debian's, pyenv's."""
    import glob
    import os
    import shutil

    candidates = [shutil.which(f"python3.{minor}") for minor in range(11, 16)]
    candidates += glob.glob("/usr/bin/python3.1[1-9]")
    pyenv_root = os.environ.get("PYENV_ROOT", os.path.expanduser("~/.pyenv"))
    candidates += glob.glob(os.path.join(pyenv_root, "versions", "3.1[1-9]*", "bin", "python3"))
    found: dict[str, str] = {}
    for candidate in candidates:
        if candidate is None or os.path.realpath(candidate) == os.path.realpath(sys.executable):
            continue
        probe = subprocess.run([candidate, "-c", "import sys; print(sys.version.split()[0])"],
                               capture_output=True, text=True, check=False, timeout=60)
        if probe.returncode == 0 and tuple(int(part) for part in probe.stdout.split(".")[:2]) >= (3, 11):
            found.setdefault(probe.stdout.strip(), candidate)  # a pyenv shim of a version not selected fails
    return sorted(found.values())


_COMPILE_ALL = """
import pathlib, sys
failed = []
for path in sorted(pathlib.Path(sys.argv[1]).rglob("*.py")):
    try:
        compile(path.read_text(encoding="utf-8"), str(path), "exec")
    except Exception as error:  # what the interpreter refuses, whatever it is
        failed.append(f"{path}: {type(error).__name__}: {error}")
print("\\n".join(failed))
"""


def test_sources_compile_on_every_supported_python_here() -> None:
    """CI runs the suite on one interpreter; the others pgvet claims (requires-python >= 3.11) that the machine
    has must at least compile it: CPython 3.13.0 refused a lone surrogate escape in a docstring, and importing
    pgvet.report failed there."""
    pythons = _other_pythons()
    if not pythons:
        pytest.skip("no other Python 3.11+ on this machine")
    for python in pythons:
        compiled = subprocess.run([python, "-c", _COMPILE_ALL, str(PROJECT / "src" / "pgvet")],
                                  capture_output=True, text=True, check=False, timeout=300)
        assert compiled.returncode == 0, compiled.stderr
        assert compiled.stdout.strip() == "", f"{python}:\n{compiled.stdout}"
