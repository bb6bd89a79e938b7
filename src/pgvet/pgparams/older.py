"""What PostgreSQL 10 and 11 read otherwise than 12: boot values that differ from 12's, for the parameters
pgvet's rules read; parameters 12 no longer has, and those it added; values 12 refuses that they accept, and
integers 12 reads that they refuse.

pgvet's parameter tables start at 12 (they are generated from real servers), and an older server is
judged with 12's. Its unset parameters would then take 12's defaults: a PostgreSQL 11 would seem to run
with JIT and to delay autovacuum's cost-based pauses by 2 ms when it uses 20 ms. Each row: the parameter,
the first major that boots with 12's value, the value before it — from the release notes' "Migration"
sections and the parameter tables of 10 and 11 (scripts/gen_pgparams.py run on their servers). A parameter that did
not exist yet is given the value that behaves as its absence did (jit off before 11).
"""

from __future__ import annotations

import re

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

# Parameters of 12's table that 10 or 11 do not have, with the first major that has each: every name of 12's table
# that `postgres -C name` on 10.23 and 11.22 answers with "unrecognized configuration parameter", which a
# postgresql.conf line setting it makes fatal (allow_in_place_tablespaces, backported to 10.21, is known to both;
# restrict_nonsystem_relation_kind came to 12.20, and to no 11).
_ADDED_IN_11 = ("data_directory_mode", "enable_parallel_append", "enable_parallel_hash", "enable_partition_pruning",
                "enable_partitionwise_aggregate", "enable_partitionwise_join", "jit", "jit_above_cost",
                "jit_debugging_support", "jit_dump_bitcode", "jit_expressions", "jit_inline_above_cost",
                "jit_optimize_above_cost", "jit_profiling_support", "jit_provider", "jit_tuple_deforming",
                "max_parallel_maintenance_workers", "parallel_leader_participation", "ssl_passphrase_command",
                "ssl_passphrase_command_supports_reload", "vacuum_cleanup_index_scale_factor")
_ADDED_IN_12 = ("archive_cleanup_command", "default_table_access_method", "log_transaction_sample_rate",
                "plan_cache_mode", "primary_conninfo", "primary_slot_name", "promote_trigger_file",
                "recovery_end_command", "recovery_min_apply_delay", "recovery_target", "recovery_target_action",
                "recovery_target_inclusive", "recovery_target_lsn", "recovery_target_name", "recovery_target_time",
                "recovery_target_timeline", "recovery_target_xid", "restore_command",
                "restrict_nonsystem_relation_kind", "shared_memory_type", "ssl_library", "ssl_max_protocol_version",
                "ssl_min_protocol_version", "tcp_user_timeout", "wal_init_zero", "wal_recycle")
_FIRST_MAJOR = {**dict.fromkeys(_ADDED_IN_11, 11), **dict.fromkeys(_ADDED_IN_12, 12)}

# Values 10 and 11 accept that 12 refuses, by parameter (lower-cased; None: every Boolean): default_with_oids = on
# (12's check hook refuses it: 12 removed tables WITH OIDS), dynamic_shared_memory_type = none (12 took it away).
# Tried with `postgres -C` on 11.22 and 12.22.
_REFUSED_FROM_12: dict[str, frozenset[str] | None] = {"default_with_oids": None,
                                                      "dynamic_shared_memory_type": frozenset({"none"})}


def known_before_12(name: str, major: int) -> bool:
    """Whether ``major`` (older than 12) has the parameter ``name``, which 12 no longer has."""
    return major <= _GONE_IN_12.get(name.lower(), 0)


def added_after(name: str, major: int) -> bool:
    """Whether the parameter ``name`` of 12's table came after ``major``, which does not know it."""
    return major < _FIRST_MAJOR.get(name.lower(), 0)


def accepted_before_12(name: str, major: int, value: str) -> bool:
    """Whether ``major`` accepts ``value`` for ``name`` where 12 refuses it (a Boolean, for a parameter whose
    every Boolean it accepts)."""
    if major >= 12 or (key := name.lower()) not in _REFUSED_FROM_12:
        return False
    values = _REFUSED_FROM_12[key]
    return values is None or value.strip().lower() in values


# 12 reads a fraction or an exponent in an integer parameter (0.5GB, 1e6, 100.0) as a number and rounds it; 10 and
# 11 read the integer strtol reads and take the rest for a unit: refused. vacuum_cost_delay and
# autovacuum_vacuum_cost_delay were integers before 12 (reals from 12). Tried with `postgres -C` on 10.23 and 11.22.
_NOT_AN_INTEGER = re.compile(r"[ \t\n\r\f\v]*[+-]?(?:[0-9]+[.eE]|\.)")
# and the units that came later: B (bytes) in 11, us (microseconds) in 12
_UNIT = re.compile(r"[ \t\n\r\f\v]*[+-]?(?:0[xX][0-9a-fA-F]+|[0-9]+)[ \t\n\r\f\v]*([A-Za-z]+)[ \t\n\r\f\v]*")
_UNIT_SINCE: dict[tuple[str | None, str], int] = {("memory", "B"): 11, ("time", "us"): 12}
_INTEGERS_BEFORE_12 = frozenset({"vacuum_cost_delay", "autovacuum_vacuum_cost_delay"})
_UNITS_HINT = {"memory": ('Valid units for this parameter are "kB", "MB", "GB", and "TB".',  # 10
                          'Valid units for this parameter are "B", "kB", "MB", "GB", and "TB".'),  # 11
               "time": ('Valid units for this parameter are "ms", "s", "min", "h", and "d".',) * 2}


def refused_before_12(name: str, vartype: str, kind: str | None, major: int, value: str,
                      ) -> tuple[str, str | None] | None:
    """PostgreSQL's message and hint where ``major`` (older than 12) refuses a value 12 reads: a number that is
    no integer in an integer parameter, or a unit it did not have yet."""
    if major >= 12 or not (vartype == "integer" or name.lower() in _INTEGERS_BEFORE_12):
        return None
    unit = _UNIT.fullmatch(value)
    if not _NOT_AN_INTEGER.match(value) and (unit is None or major >= _UNIT_SINCE.get((kind, unit.group(1)), 0)):
        return None
    hint = None if kind is None else _UNITS_HINT[kind][1 if major >= 11 else 0]
    return f'invalid value for parameter "{name}": "{value}"', hint
