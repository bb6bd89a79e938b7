"""Boot values of PostgreSQL 10 and 11 that differ from 12's, for the parameters pgvet's rules read.

pgvet's parameter tables start at 12 (they are generated from real servers), and an older server is
judged with 12's. Its unset parameters would then take 12's defaults: a PostgreSQL 11 would seem to run
with JIT and to delay autovacuum's cost-based pauses by 2 ms when it uses 20 ms. Each row: the parameter,
the first major that boots with 12's value, the value before it — from the release notes' "Migration"
sections and the parameter tables of 10 and 11 (scripts/gen_pgparams.py run on their servers). A parameter that did
not exist yet is given the value that behaves as its absence did (jit off before 11).
"""

from __future__ import annotations

_CHANGED: tuple[tuple[str, int, str], ...] = (
    # 12: "Change the default of autovacuum_vacuum_cost_delay to 2ms" (was 20ms); "Enable JIT by default".
    ("autovacuum_vacuum_cost_delay", 12, "20ms"),
    ("jit", 12, "off"),
)


def older_boot_values(major: int) -> dict[str, str]:
    """The boot values of ``major`` that differ from 12's, by parameter name (empty from 12 on)."""
    return {name: value for name, since, value in _CHANGED if major < since}
