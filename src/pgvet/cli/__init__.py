"""The command line, on typer: the app (app.py, thin) and one module per command group — lint.py (lint, fix,
facts, explain), rules.py, baseline.py, live.py (collect, check). ``python -m pgvet`` and the ``pgvet`` command
run it (pgvet.__main__). These modules do not postpone their annotations (no ``from __future__ import
annotations``): typer reads every command's signature at each start, and annotations kept as strings would be
compiled again each time.

Exit codes: 0 nothing at or above --fail-on; 1 findings at or above it; 2 usage, input or rule-pack error.
"""

from pgvet.cli.app import app

__all__ = ["app"]
