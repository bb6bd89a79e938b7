"""The command line, on typer: the app (app.py, thin) and one module per command group — lint.py (lint, fix,
facts, explain), rules.py, baseline.py, live.py (collect, check). ``python -m pgvet`` and the ``pgvet`` command
run it (pgvet.__main__).

Exit codes: 0 nothing at or above --fail-on; 1 findings at or above it; 2 usage, input or rule-pack error.
"""

from pgvet.cli.app import app

__all__ = ["app"]
