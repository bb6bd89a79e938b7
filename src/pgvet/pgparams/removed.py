"""Parameters PostgreSQL no longer knows, with the major version that dropped them and what replaced them.

From 15 on the table is checked against the generated parameter tables (tests/inputs/test_pgparams.py: every name
that disappears between two majors is here, and nothing here exists in a parameter table from its
``removed_in`` on). Older rows come from the release notes' "Migration" sections, cited per group.
Not listed because PostgreSQL still accepts them: ``sort_mem``, ``vacuum_mem`` and (18)
``ssl_ecdh_curve`` (old-name aliases), ``default_with_oids`` and ``ssl_renegotiation_limit``
(hidden, kept for compatibility; they only accept off and 0).
"""

from __future__ import annotations

from typing import NamedTuple

WAL_SEGMENT_MB = 16  # the default WAL segment size (initdb --wal-segsize), what segment counts were counted in


class Removal(NamedTuple):
    """A parameter removed in ``removed_in`` (a major version as PostgreSQL spells it: ``"9.5"``, ``"16"``).

    ``segments_per_unit``: for a count of WAL segments replaced by a size, the size's segments per counted
    segment (wal_keep_size = wal_keep_segments × 16MB: 1; max_wal_size ≈ 3 × checkpoint_segments × 16MB: 3);
    None for a renamed parameter, whose value carries over as written (``same_value``)."""

    name: str
    removed_in: str
    replacement: str | None
    note: str
    same_value: bool = False
    segments_per_unit: int | None = None

    def replacement_value(self, value: str) -> str | None:
        """The replacement's value for this parameter's ``value`` (``wal_keep_segments = 100`` → ``1600MB``),
        or None when there is no rule for it or the value is not a whole number of segments."""
        if self.replacement is None:
            return None
        if self.same_value:
            return value
        if self.segments_per_unit is not None and value.strip().isdigit():
            return f"{int(value) * self.segments_per_unit * WAL_SEGMENT_MB}MB"
        return None


def version_key(major: str) -> tuple[int, ...]:
    """``"9.5"`` → (9, 5), ``"16"`` → (16,): majors in release order."""
    return tuple(int(part) for part in major.split("."))


_ROWS: tuple[tuple[str, str, str | None, str], ...] = (
    # 8.0 release notes, E.x "Migration to Version 8.0".
    ("tcpip_socket", "8.0", "listen_addresses", "listen_addresses = '*' replaces tcpip_socket = true"),
    ("virtual_host", "8.0", "listen_addresses", "listen_addresses names the addresses to listen on"),
    # 8.2 release notes: preload_libraries renamed.
    ("preload_libraries", "8.2", "shared_preload_libraries", "renamed"),
    # 8.3 release notes, "Migration to Version 8.3": statistics and logging parameters renamed or merged.
    ("redirect_stderr", "8.3", "logging_collector", "renamed"),
    ("stats_command_string", "8.3", "track_activities", "renamed"),
    ("stats_block_level", "8.3", "track_counts", "merged with stats_row_level into track_counts"),
    ("stats_row_level", "8.3", "track_counts", "merged with stats_block_level into track_counts"),
    ("stats_start_collector", "8.3", None, "the statistics collector always runs"),
    ("stats_reset_on_server_start", "8.3", None, "use pg_stat_reset() instead"),
    # 8.4 release notes: the free space map is now kept on disk and sized automatically.
    ("max_fsm_pages", "8.4", None, "the free space map is sized automatically since 8.4"),
    ("max_fsm_relations", "8.4", None, "the free space map is sized automatically since 8.4"),
    ("explain_pretty_print", "8.4", None, "EXPLAIN output is always pretty-printed"),
    # 9.0 release notes, "Migration to Version 9.0".
    ("add_missing_from", "9.0", None, "missing FROM items are always an error"),
    ("regex_flavor", "9.0", None, "regular expressions are always advanced (ARE)"),
    # 9.2 release notes, "Migration to Version 9.2".
    ("custom_variable_classes", "9.2", None, "any prefix.name placeholder is accepted without declaring its class"),
    ("silent_mode", "9.2", None, "use pg_ctl or the service manager to detach the server"),
    ("wal_sender_delay", "9.2", None, "WAL senders are woken by latches"),
    # 9.3 release notes, "Migration to Version 9.3".
    ("unix_socket_directory", "9.3", "unix_socket_directories", "renamed; the new one takes a list"),
    ("replication_timeout", "9.3", "wal_sender_timeout", "renamed"),
    # 9.4 release notes: native Kerberos 5 authentication removed (GSSAPI remains).
    ("krb_srvname", "9.4", None, "native Kerberos 5 authentication was removed; use GSSAPI"),
    # 9.5 release notes, "Migration to Version 9.5".
    ("checkpoint_segments", "9.5", "max_wal_size",
     "max_wal_size (and min_wal_size) size the WAL between checkpoints; "
     "roughly max_wal_size = (3 × checkpoint_segments) × 16MB"),
    # 10 release notes, "Migration to Version 10".
    ("min_parallel_relation_size", "10", "min_parallel_table_scan_size", "renamed"),
    ("sql_inheritance", "10", None, "inheritance is always on; use ONLY to exclude child tables"),
    # 11 release notes.
    ("replacement_sort_tuples", "11", None, "replacement selection sort was removed"),
    # 12 release notes: recovery.conf merged into postgresql.conf; WITH OIDS removed.
    ("standby_mode", "12", None, "create standby.signal in the data directory instead"),
    ("trigger_file", "12", "promote_trigger_file", "renamed when recovery.conf was merged into postgresql.conf"),
    # 13 release notes.
    ("wal_keep_segments", "13", "wal_keep_size", "wal_keep_size = wal_keep_segments × wal_segment_size (16MB)"),
    # 14 release notes.
    ("operator_precedence_warning", "14", None, "the pre-9.5 operator precedence is long gone"),
    ("vacuum_cleanup_index_scale_factor", "14", None, "removed (a no-op since 13.3)"),
    # 15 release notes: the statistics collector was replaced by shared memory.
    ("stats_temp_directory", "15", None, "statistics are kept in shared memory"),
    # 16 release notes, "Migration to Version 16".
    ("vacuum_defer_cleanup_age", "16", None, "use hot_standby_feedback or a replication slot"),
    ("promote_trigger_file", "16", None, "promote with pg_ctl promote or pg_promote()"),
    ("force_parallel_mode", "16", "debug_parallel_query", "renamed"),
    ("lc_collate", "16", None, "read-only; the collation is a property of each database (pg_database)"),
    ("lc_ctype", "16", None, "read-only; the character classification is a property of each database (pg_database)"),
    # 17 release notes, "Migration to Version 17".
    ("old_snapshot_threshold", "17", None, "removed; there is no replacement"),
    ("db_user_namespace", "17", None, "removed; there is no replacement"),
    ("trace_recovery_messages", "17", None, "removed; use log_min_messages"),
)

# Renamed parameters whose values mean the same under the new name, and segment counts turned into sizes.
_SAME_VALUE = frozenset({"preload_libraries", "redirect_stderr", "stats_command_string", "unix_socket_directory",
                         "replication_timeout", "min_parallel_relation_size", "trigger_file", "force_parallel_mode"})
_SEGMENTS_PER_UNIT = {"wal_keep_segments": 1, "checkpoint_segments": 3}

REMOVALS: dict[str, Removal] = {
    name: Removal(name, removed_in, replacement, note, name in _SAME_VALUE, _SEGMENTS_PER_UNIT.get(name))
    for name, removed_in, replacement, note in _ROWS}
