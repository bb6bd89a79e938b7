"""Build the pgtune grid of docs/pgtune.md — hosts configured with pgtune's own output — lint it, and print the
table of verdicts that docs/pgtune.md holds.

    python scripts/pgtune_grid.py             # the table (the hosts are built in a temporary directory)
    python scripts/pgtune_grid.py DIR         # and keep the hosts in DIR, to lint one: pgvet lint DIR/<host>

The hosts and the table come from tests/pgtune_hosts.py (pgtune itself is tests/pgtune.py);
tests/plan/test_pgtune_grid.py holds each verdict to its reason and checks that docs/pgtune.md has this table.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from pgtune_hosts import build, grid, summary
from pgvet.run.lint import lint
from pgvet.run.options import LintOptions


def main(arguments: list[str]) -> int:
    if len(arguments) > 1:
        print("usage: python scripts/pgtune_grid.py [DIR]", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="pgtune-grid-") as scratch:
        root = Path(arguments[0]) if arguments else Path(scratch)
        root.mkdir(parents=True, exist_ok=True)
        hosts = grid()
        result = lint([build(root, host) for host in hosts], LintOptions())
        for error in result.errors:
            print(error, file=sys.stderr)
        print(summary(list(zip(hosts, result.hosts, strict=True))), end="")
    return 1 if result.errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
