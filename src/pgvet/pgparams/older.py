"""What PostgreSQL 10 and 11 read otherwise than 12: boot values that differ from 12's, for the parameters
pgvet's rules read; parameters 12 no longer has; values 12 refuses that they accept.

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


# Parameters of 10 or 11 that 12 no longer has, with the last major that has each: the servers' --describe-config
# beside 12's (default_with_oids, which 12 keeps hidden, aside).
_GONE_IN_12 = {"replacement_sort_tuples": 10}

# Parameters whose every Boolean 10 and 11 accept and 12's check hook refuses some of (default_with_oids = on:
# 12 removed tables WITH OIDS).
_REFUSED_FROM_12 = frozenset({"default_with_oids"})


def known_before_12(name: str, major: int) -> bool:
    """Whether ``major`` (older than 12) has the parameter ``name``, which 12 no longer has."""
    return major <= _GONE_IN_12.get(name.lower(), 0)


def accepted_before_12(name: str, major: int) -> bool:
    """Whether ``major`` accepts every value of ``name`` that its type allows, though 12 refuses some."""
    return major < 12 and name.lower() in _REFUSED_FROM_12
