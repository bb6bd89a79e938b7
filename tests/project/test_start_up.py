"""What a one-host lint compiles when it starts: Python 3.11 compiles each method a dataclass generates from source
when its module is imported (docs/decisions.md, "Immutable records are named tuples"; docs/performance.md)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# Run by a new interpreter: a lint of one host, then the dataclasses of the pgvet modules it imported.
PROBE = """
import atexit, dataclasses, io, json, runpy, sys

def report():
    found = {}
    for name, module in list(sys.modules.items()):
        if name.startswith("pgvet"):
            for value in vars(module).values():
                if isinstance(value, type) and value.__module__ == name and dataclasses.is_dataclass(value):
                    params = value.__dataclass_params__
                    found[f"{name}.{value.__qualname__}"] = [params.frozen, params.eq, params.repr]
    sys.__stdout__.write(json.dumps(found))

atexit.register(report)
sys.argv = ["pgvet", "lint", "fixtures/big-server", "--format", "json"]
sys.stdout = io.StringIO()
runpy.run_module("pgvet", run_name="__main__")
"""

# Frozen and kept so: a pack's Compiled caches its function in a field; Source and Located are hashed and must not
# equal a tuple of their values.
FROZEN = {"pgvet.engine.interpreter.Compiled", "pgvet.provenance.Source", "pgvet.provenance.Located"}
# Mutable records something compares or prints: the tests compare findings, fixes and planner targets (whose
# steps they print), and snapshot/declared_hosts.py removes a DeclaredHost from a list by equality.
COMPARED = {"pgvet.findings.Finding", "pgvet.findings.Fix", "pgvet.engine.planner.target.Target",
            "pgvet.engine.planner.target.Change", "pgvet.engine.planner.target.HandStep",
            "pgvet.inputs.documents.DeclaredHost"}


def test_a_warm_lint_compiles_no_method_a_record_does_not_use() -> None:
    # the rule pack compiled first, as a lint after the first finds it (compiling it imports the compiler)
    subprocess.run([sys.executable, "-m", "pgvet", "lint", "fixtures/big-server", "--format", "json"], cwd=ROOT,
                   capture_output=True, check=False)
    done = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, capture_output=True, text=True, check=False)
    found = json.loads(done.stdout)
    assert "pgvet.findings.Finding" in found, done.stderr  # the probe saw the lint's modules
    assert {name for name, (frozen, _, _) in found.items() if frozen} <= FROZEN
    compared = {name for name, (frozen, eq, shown) in found.items() if not frozen and (eq or shown)}
    assert compared <= COMPARED
