"""Boot values of PostgreSQL 10–14 that differ from 15's, for the parameters pgvet's rules read.

pgvet's parameter catalogs start at 15 (they are generated from real servers), and an older server is
judged with 15's. Its unset parameters would then take 15's defaults: a PostgreSQL 11 would seem to hash
passwords with SCRAM when it uses MD5, and to spread checkpoints over 90 % of the interval when it uses 50 %.
Each row: the parameter, the first major that boots with 15's value, the value before it — from the
release notes' "Migration" sections. A parameter that did not exist yet is given the value that behaves
as its absence did (jit off before 11, hash_mem_multiplier 1 before 13).
"""

from __future__ import annotations

_CHANGED: tuple[tuple[str, int, str], ...] = (
    # 12: "Change the default of autovacuum_vacuum_cost_delay to 2ms" (was 20ms); "Enable JIT by default".
    ("autovacuum_vacuum_cost_delay", 12, "20ms"),
    ("jit", 12, "off"),
    # 14: "Change the default of password_encryption to scram-sha-256"; checkpoint_completion_target
    # 0.5 → 0.9; vacuum_cost_page_miss 10 → 2.
    ("password_encryption", 14, "md5"),
    ("checkpoint_completion_target", 14, "0.5"),
    ("vacuum_cost_page_miss", 14, "10"),
    # 15: hash_mem_multiplier 1.0 → 2.0; log_autovacuum_min_duration -1 → 10min; log_checkpoints on.
    ("hash_mem_multiplier", 15, "1"),
    ("log_autovacuum_min_duration", 15, "-1"),
    ("log_checkpoints", 15, "off"),
)


def older_boot_values(major: int) -> dict[str, str]:
    """The boot values of ``major`` that differ from 15's, by parameter name (empty from 15 on)."""
    return {name: value for name, since, value in _CHANGED if major < since}
