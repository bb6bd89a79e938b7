"""The parameter tables, did_you_mean, removed parameters, format_native and parse_value without a server."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from pgvet.pgparams import (
    NEWEST_MAJOR,
    SUPPORTED_MAJORS,
    Param,
    did_you_mean,
    known_parameter_names,
    load_param_table,
    removed_parameter,
)
from pgvet.pgparams.removed import REMOVALS, version_key
from pgvet.pgparams.units import InvalidValue, ParsedValue, format_native, parse_value, shown_canonical

# Names that disappear between two generated parameter tables without being removed from PostgreSQL: a
# Debian patch (15 only) and a security fix that 16.2 predates (added in 16.4 and 17.0).
NOT_REMOVALS = {"extension_destdir", "restrict_nonsystem_relation_kind"}


def setting_text(native: int | float | bool | str) -> str:
    if isinstance(native, bool):
        return "on" if native else "off"
    if isinstance(native, float):
        return f"{native:g}"
    return str(native)


def test_supported_majors_and_unsupported() -> None:
    assert SUPPORTED_MAJORS == (12, 13, 14, 15, 16, 17, 18)
    assert NEWEST_MAJOR == 18
    with pytest.raises(ValueError, match="no parameter catalog for PostgreSQL 11"):
        load_param_table(11)


def test_param_table_is_cached_and_case_insensitive() -> None:
    param_table = load_param_table(16)
    assert load_param_table(16) is param_table
    assert param_table.major == 16
    assert param_table.get("SHARED_BUFFERS") is param_table.params["shared_buffers"]
    assert param_table.get("timezone") is param_table.get("TimeZone")
    assert param_table.get("TimeZone") is not None and param_table.get("TimeZone").name == "TimeZone"  # type: ignore[union-attr]
    assert param_table.get("no_such_parameter") is None


def test_shared_buffers_entry() -> None:
    param = load_param_table(18).params["shared_buffers"]
    assert (param.vartype, param.unit, param.min, param.max, param.boot_val, param.context) == (
        "integer", "8kB", 16, 1073741823, "16384", "postmaster")
    assert param.kind == "memory"
    assert load_param_table(18).params["checkpoint_timeout"].kind == "time"
    assert load_param_table(18).params["random_page_cost"].kind is None


def test_real_bounds_are_exact_doubles() -> None:
    assert load_param_table(15).params["random_page_cost"].max == 1.7976931348623157e308


def test_hidden_parameters_and_aliases() -> None:
    for major in SUPPORTED_MAJORS:
        param_table = load_param_table(major)
        hidden = sorted(name for name, param in param_table.params.items() if param.hidden)
        assert hidden == ["default_with_oids", "is_superuser", "role", "seed", "session_authorization",
                          "ssl_renegotiation_limit"]
        assert param_table.get("sort_mem") is param_table.params["work_mem"]
        assert param_table.get("vacuum_mem") is param_table.params["maintenance_work_mem"]
    assert load_param_table(18).get("ssl_ecdh_curve") is load_param_table(18).params["ssl_groups"]
    assert load_param_table(17).get("ssl_ecdh_curve") is load_param_table(17).params["ssl_ecdh_curve"]


def test_hidden_enum_values() -> None:
    wal_level = load_param_table(15).params["wal_level"]
    assert dict(wal_level.hidden_enumvals) == {"archive": "replica", "hot_standby": "replica"}
    assert parse_value(wal_level, "Hot_Standby") == ParsedValue("replica", "replica", False)
    huge_pages = load_param_table(18).params["huge_pages"]
    assert parse_value(huge_pages, "TRUE") == ParsedValue("on", "on", False)
    assert parse_value(huge_pages, "0") == ParsedValue("off", "off", False)
    assert parse_value(load_param_table(17).params["wal_compression"], "yes").native == "pglz"
    assert parse_value(load_param_table(16).params["client_min_messages"], "debug").native == "debug2"


@pytest.mark.parametrize("major", SUPPORTED_MAJORS)
def test_values_of_an_optional_library_are_valid_on_every_version(major: int) -> None:
    # The 16 and 18 wheels the parameter tables come from lack lz4 and zstd, Debian's 15 and the 17 wheel have them, no
    # wheel has liburing: what a configuration may say does not depend on which build generated the parameter table.
    param_table = load_param_table(major)
    for name, value in (("wal_compression", "lz4"), ("wal_compression", "ZSTD"), ("default_toast_compression", "lz4"),
                        ("io_method", "io_uring")):
        param = param_table.params.get(name)
        if param is None or param.vartype != "enum":  # io_method before 18, default_toast_compression before 14;
            continue                                  # wal_compression a boolean before 15
        assert parse_value(param, value).native == value.lower()
    if major >= 15:
        with pytest.raises(InvalidValue) as refused:
            parse_value(param_table.params["wal_compression"], "brotli")
        assert refused.value.hint == "Available values: pglz, lz4, zstd, on, off."


def test_known_parameter_names_is_the_union() -> None:
    names = known_parameter_names()
    assert {"vacuum_defer_cleanup_age", "old_snapshot_threshold", "io_method", "sort_mem", "datestyle",
            "stats_temp_directory", "wal_keep_segments"} <= names
    assert "checkpoint_segments" not in names and "trigger_file" not in names
    assert all(name == name.lower() for name in names)


@pytest.mark.parametrize("major", SUPPORTED_MAJORS)
def test_every_boot_value_parses_to_itself(major: int) -> None:
    for param in load_param_table(major).params.values():
        parsed = parse_value(param, param.boot_val)
        if param.vartype == "enum":
            assert parsed.native == param.boot_val, param.name
        else:
            assert setting_text(parsed.native) == param.boot_val, param.name
        assert parsed.had_unit is False


@pytest.mark.parametrize(("typo", "meant"), [
    ("shared_buffer", "shared_buffers"),
    ("effective_cash_size", "effective_cache_size"),
    ("checkpoint_completion_targets", "checkpoint_completion_target"),
    ("Shared_Bufers", "shared_buffers"),
    ("wrok_mem", "work_mem"),
    ("max_conections", "max_connections"),
])
def test_did_you_mean(typo: str, meant: str) -> None:
    assert did_you_mean(typo, load_param_table(17)) == meant


@pytest.mark.parametrize("name", ["completely_unrelated_name", "xyz", "ssl_renegotiation_limi"])
def test_did_you_mean_nothing_close_or_hidden(name: str) -> None:
    assert did_you_mean(name, load_param_table(17)) is None


def test_edit_distance_with_a_limit_agrees_up_to_it() -> None:
    from pgvet.pgparams import _edit_distance

    words = ["", "a", "ab", "ba", "abc", "acb", "work_mem", "wrok_mem", "work_men", "shared_buffers", "shard_bufers"]
    for left, right in itertools.product(words, repeat=2):
        full = _edit_distance(left, right)
        for limit in range(4):
            limited = _edit_distance(left, right, limit)
            assert limited == full if full <= limit else limited > limit, (left, right, limit)


def test_did_you_mean_is_worked_out_once_a_name() -> None:
    # a repository of hosts made from one template repeats its misspelt names: 50 ms each, host after host
    from pgvet.pgparams import _closest

    param_table = load_param_table(16)
    did_you_mean("effective_io_concurency", param_table)
    hits = _closest.cache_info().hits
    assert did_you_mean("Effective_IO_Concurency", param_table) == "effective_io_concurrency"
    assert _closest.cache_info().hits == hits + 1


def test_removed_parameter_rows() -> None:
    removal = removed_parameter("checkpoint_segments", 15)
    assert removal is not None
    assert (removal.name, removal.removed_in, removal.replacement) == ("checkpoint_segments", "9.5", "max_wal_size")
    wal_keep = removed_parameter("WAL_KEEP_SEGMENTS", 18)
    assert wal_keep is not None and (wal_keep.removed_in, wal_keep.replacement) == ("13", "wal_keep_size")
    assert removed_parameter("vacuum_defer_cleanup_age", 15) is None  # still there in 15
    assert removed_parameter("vacuum_defer_cleanup_age", 16) is not None
    assert removed_parameter("old_snapshot_threshold", 16) is None
    old = removed_parameter("old_snapshot_threshold", 17)
    assert old is not None and (old.removed_in, old.replacement) == ("17", None)
    assert removed_parameter("max_fsm_pages", 15).removed_in == "8.4"  # type: ignore[union-attr]
    assert removed_parameter("shared_buffers", 18) is None
    assert removed_parameter("ssl_renegotiation_limit", 18) is None


def test_removed_replacement_chain_is_followed() -> None:
    at_15 = removed_parameter("trigger_file", 15)
    assert at_15 is not None and at_15.replacement == "promote_trigger_file"
    at_16 = removed_parameter("trigger_file", 16)
    assert at_16 is not None and at_16.replacement is None
    assert "promote_trigger_file was removed in turn in 16" in at_16.note


def test_removed_names_are_absent_from_later_param_tables_and_replacements_exist() -> None:
    for removal in REMOVALS.values():
        for major in SUPPORTED_MAJORS:
            if version_key(removal.removed_in) <= (major,):
                assert load_param_table(major).get(removal.name) is None, (removal.name, major)
        if removal.replacement and removal.name not in ("trigger_file",):
            first = max(version_key(removal.removed_in), (min(SUPPORTED_MAJORS),))
            major = first[0]
            assert load_param_table(major).get(removal.replacement) is not None, removal


def test_every_disappearance_between_param_tables_is_in_the_table() -> None:
    for older, newer in itertools.pairwise(SUPPORTED_MAJORS):
        gone = set(load_param_table(older).params) - set(load_param_table(newer).params)
        gone = {name for name in gone if load_param_table(newer).get(name) is None} - NOT_REMOVALS
        for name in gone:
            removal = REMOVALS.get(name)
            assert removal is not None and removal.removed_in == str(newer), name


def _param(vartype: str = "integer", unit: str | None = None, low: float | None = 0, high: float | None = 100,
           major: int = 18) -> Param:
    return Param("p", vartype, unit, low, high, (), "0", "user", "c", "d", major=major)  # type: ignore[arg-type]


@pytest.mark.parametrize(("unit", "native", "shown"), [
    ("8kB", 16384, "128MB"),
    ("8kB", 1, "8kB"),
    ("8kB", 3, "24kB"),
    ("kB", 4096, "4MB"),
    ("kB", 1048576, "1GB"),
    ("kB", 1536, "1536kB"),
    ("B", 1024, "1kB"),
    ("B", 100, "100B"),
    ("MB", 1024, "1GB"),
    ("ms", 200, "200ms"),
    ("ms", 60000, "1min"),
    ("s", 300, "5min"),
    ("s", 86400, "1d"),
    ("min", 1440, "1d"),
    ("kB", -1, "-1"),
    ("ms", 0, "0"),
    (None, 42, "42"),
])
def test_format_native_integers(unit: str | None, native: int, shown: str) -> None:
    assert format_native(_param(unit=unit), native) == shown


def test_format_native_reals() -> None:
    assert format_native(_param("real", "ms"), 2.0) == "2ms"
    assert format_native(_param("real", "ms"), 0.5) == "500us"
    assert format_native(_param("real", None), 0.9) == "0.9"


@pytest.mark.parametrize(("text", "native", "canonical", "had_unit"), [
    ("16384", 16384, 134217728, False),
    ("128MB", 16384, 134217728, True),
    ("0.5GB", 65536, 536870912, True),
    ("0x10", 16, 131072, False),
    ("1 GB", 131072, 1073741824, True),
    ("1e3", 1000, 8192000, False),
])
def test_parse_shared_buffers(text: str, native: int, canonical: int, had_unit: bool) -> None:
    assert parse_value(load_param_table(18).params["shared_buffers"], text) == ParsedValue(native, canonical, had_unit)


def test_parse_time_canonical_seconds_and_special_values() -> None:
    param_table = load_param_table(18)
    assert parse_value(param_table.params["statement_timeout"], "1.5s") == ParsedValue(1500, 1.5, True)
    assert parse_value(param_table.params["checkpoint_timeout"], "5min") == ParsedValue(300, 300, True)
    assert parse_value(param_table.params["log_rotation_age"], "1d") == ParsedValue(1440, 86400, True)
    assert parse_value(param_table.params["log_min_duration_statement"], "-1") == ParsedValue(-1, -1, False)
    assert parse_value(param_table.params["autovacuum_work_mem"], "-1") == ParsedValue(-1, -1, False)
    assert parse_value(param_table.params["vacuum_cost_delay"], "2") == ParsedValue(2.0, 0.002, False)


# check_autovacuum_work_mem raises a value below maintenance_work_mem's minimum to it; -1 stays. What
# ``postgres -C autovacuum_work_mem`` printed (kB) on 15.18, 16.2, 17.10 and 18.6.
@pytest.mark.parametrize(("major", "text", "shown"), [
    (15, "0", 1024), (15, "500kB", 1024), (15, "1023", 1024), (15, "1MB", 1024), (15, "-1", -1), (15, "2MB", 2048),
    (16, "0", 1024), (16, "64", 1024),
    (17, "0", 64), (17, "63", 64), (17, "500kB", 500), (17, "1MB", 1024), (17, "-1", -1),
    (18, "0", 64), (18, "500kB", 500),
])
def test_autovacuum_work_mem_as_its_check_hook_sets_it(major: int, text: str, shown: int) -> None:
    parsed = parse_value(load_param_table(major).params["autovacuum_work_mem"], text)
    assert (parsed.native, parsed.canonical) == (shown, shown if shown < 0 else shown * 1024)


def test_autovacuum_work_mem_fact_is_the_servers(tmp_path: Path) -> None:
    """The pg.* fact is what SHOW gives: 0 is 1MB on 15, not 0 (which rules read as -1)."""
    from pgvet.snapshot.load import load_host

    (tmp_path / "postgresql.conf").write_text("autovacuum_work_mem = 0\n")
    (tmp_path / "host.yaml").write_text("pg_version: 15\n")
    assert load_host(tmp_path).facts["pg.autovacuum_work_mem"].value == 1048576


def test_parse_errors_worded_as_postgresql() -> None:
    param_table = load_param_table(15)
    with pytest.raises(InvalidValue) as bad_unit:
        parse_value(param_table.params["work_mem"], "4mb")
    assert bad_unit.value.message == 'invalid value for parameter "work_mem": "4mb"'
    assert bad_unit.value.hint == 'Valid units for this parameter are "B", "kB", "MB", "GB", and "TB".'
    with pytest.raises(InvalidValue) as time_unit:
        parse_value(param_table.params["statement_timeout"], "5 sec")
    assert time_unit.value.hint == 'Valid units for this parameter are "us", "ms", "s", "min", "h", and "d".'
    with pytest.raises(InvalidValue) as low:
        parse_value(param_table.params["work_mem"], "63")
    assert low.value.message == '63 kB is outside the valid range for parameter "work_mem" (64 .. 2147483647)'
    with pytest.raises(InvalidValue) as low_17:
        parse_value(load_param_table(17).params["work_mem"], "63")
    assert low_17.value.message == \
        '63 kB is outside the valid range for parameter "work_mem" (64 kB .. 2147483647 kB)'
    with pytest.raises(InvalidValue) as huge:
        parse_value(param_table.params["work_mem"], "3TB")
    assert huge.value.hint == "Value exceeds integer range."
    with pytest.raises(InvalidValue) as boolean:
        parse_value(param_table.params["fsync"], "o")
    assert (boolean.value.message, boolean.value.hint) == ('parameter "fsync" requires a Boolean value', None)
    with pytest.raises(InvalidValue) as enum:
        parse_value(param_table.params["wal_level"], "full")
    assert enum.value.hint == "Available values: minimal, replica, logical."
    with pytest.raises(InvalidValue) as no_unit:
        parse_value(param_table.params["max_connections"], "100MB")
    assert (no_unit.value.message, no_unit.value.hint) == (
        'invalid value for parameter "max_connections": "100MB"', None)


def test_older_boot_values_are_valid_and_differ_from_12() -> None:
    from pgvet.pgparams.older import older_boot_values

    param_table = load_param_table(12)
    older = older_boot_values(10)
    assert older == {"autovacuum_vacuum_cost_delay": "20ms", "jit": "off"}
    for name, value in older.items():
        param = param_table.params[name]
        assert parse_value(param, value).canonical != parse_value(param, param.boot_val).canonical, name
    assert older_boot_values(12) == {}


@pytest.mark.parametrize("major", [12, 14, 18])
def test_default_with_oids_on_is_refused_from_12(major: int) -> None:
    """12 removed WITH OIDS and kept default_with_oids to refuse on: 12, 14 and 18 do not start with
    ``default_with_oids = on`` (LOG:  tables declared WITH OIDS are not supported; FATAL: configuration file
    contains errors), and take off."""
    param = load_param_table(major).params["default_with_oids"]
    with pytest.raises(InvalidValue) as refused:
        parse_value(param, "on")
    assert refused.value.message == "tables declared WITH OIDS are not supported"
    assert parse_value(param, "off").native is False


@pytest.mark.parametrize(("major", "line", "refused"), [
    # each line tried with `postgres -C` and a start on 10.23, 11.22 and 12.22: refused (FATAL: configuration file
    # contains errors) where a rule fires, started where none does
    (10, "replacement_sort_tuples = 150000", ()),
    (10, "default_with_oids = on", ()),
    (11, "default_with_oids = on", ()),
    (11, "replacement_sort_tuples = 150000", ("PGV402",)),
    (12, "default_with_oids = on", ("PGV403",)),
    # 12's parameters that 10.23 or 11.22 do not have: "unrecognized configuration parameter", FATAL
    (10, "jit = off", ("PGV401",)),
    (11, "jit = off", ()),
    (11, "primary_conninfo = 'host=primary'", ("PGV401",)),
    (11, "restrict_nonsystem_relation_kind = ''", ("PGV401",)),  # 12.20's, a fix 11 never had
    (11, "allow_in_place_tablespaces = off", ()),  # backported to 10.21 and 11.16
    # 12 took dynamic_shared_memory_type's none away (Available values: posix, sysv, mmap)
    (11, "dynamic_shared_memory_type = none", ()),
    (12, "dynamic_shared_memory_type = none", ("PGV403",)),
    # 12 reads a fraction or an exponent in an integer parameter; 10 and 11 take what follows the integer for a
    # unit and refuse it (invalid value; HINT: Valid units for this parameter are "B", "kB", "MB", "GB", and "TB")
    (11, "maintenance_work_mem = '0.5GB'", ("PGV403",)),
    (10, "checkpoint_timeout = '0.25h'", ("PGV403",)),
    (11, "vacuum_cost_delay = '2.5ms'", ("PGV403",)),  # an integer before 12
    (11, "max_connections = 100.0", ("PGV403",)),
    (11, "effective_cache_size = '1e6'", ("PGV403",)),
    (11, "maintenance_work_mem = '512MB'", ()),
    (11, "temp_buffers = 0x400", ()),
    (11, "random_page_cost = 1.5", ()),  # a real
    (12, "maintenance_work_mem = '0.5GB'", ()),
    # a 9.x major is kept as 9 (PG_VERSION's 9.4, host.yaml's 9.6): what 9.x removed is said as removed from then
    # on, with its replacement, not as a name PostgreSQL never had
    (9, "checkpoint_segments = 32", ("PGV402",)),
    (9, "replacement_sort_tuples = 150000", ()),  # 9.6's
    (9, "wal_keep_segments = 32", ()),
    # units that came later: B in 11, us in 12
    (10, "work_mem = '1048576B'", ("PGV403",)),
    (11, "work_mem = '1048576B'", ()),
    (11, "statement_timeout = '500us'", ("PGV403",)),
    (12, "statement_timeout = '500us'", ()),
])
def test_an_older_server_is_judged_on_the_parameters_it_knows(tmp_path: Path, major: int, line: str,
                                                               refused: tuple[str, ...]) -> None:
    from pgvet.run.lint import lint
    from pgvet.run.options import LintOptions

    (tmp_path / "postgresql.conf").write_text(line + "\n")
    (tmp_path / "host.yaml").write_text(f"pg_version: {major}\n")
    [host] = lint([tmp_path], LintOptions(select=("startup",))).hosts
    assert tuple(finding.rule_id for finding in host.findings) == refused


@pytest.mark.parametrize(("major", "name", "boot"), [
    (12, "jit", True), (13, "hash_mem_multiplier", 1.0), (14, "hash_mem_multiplier", 1.0),
    (15, "hash_mem_multiplier", 2.0), (13, "password_encryption", "md5"), (14, "password_encryption", "scram-sha-256"),
    (13, "vacuum_cost_page_miss", 10), (14, "vacuum_cost_page_miss", 2), (14, "log_checkpoints", False),
    (15, "log_checkpoints", True),
])
def test_param_tables_of_12_to_14_hold_their_own_boot_values(major: int, name: str, boot: object) -> None:
    """What the release notes say changed, the parameter tables generated from the real servers show."""
    param = load_param_table(major).params[name]
    assert parse_value(param, param.boot_val).native == boot


@pytest.mark.parametrize(("major", "fires"), [(11, True), (13, True), (14, False), (16, False)])
def test_an_older_server_is_judged_with_its_own_defaults(tmp_path: Path, major: int, fires: bool) -> None:
    """Unset password_encryption is md5 before 14: PGV831 fires on 11 and 13, not on 14 or 16."""
    from pgvet.run.lint import lint
    from pgvet.run.options import LintOptions

    (tmp_path / "postgresql.conf").write_text("shared_buffers = 128MB\n")
    (tmp_path / "host.yaml").write_text(f"pg_version: {major}\n")
    [host] = lint([tmp_path], LintOptions(select=("PGV831",))).hosts
    assert [finding.rule_id for finding in host.findings] == (["PGV831"] if fires else [])



@pytest.mark.parametrize("name, value, shown", [
    ("effective_cache_size", 4294967296, "4GB"),  # 8kB pages
    ("work_mem", 4194304, "4MB"),  # kB
    ("shared_buffers", 134217728, "128MB"),
    ("checkpoint_timeout", 300, "5min"),  # s
    ("log_min_duration_statement", 1, "1s"),  # ms
    ("log_min_duration_statement", -1, "-1"),
    ("vacuum_cost_delay", 0.002, "2ms"),  # a real in ms
    ("track_io_timing", False, "off"),
    ("wal_level", "replica", "replica"),
    ("random_page_cost", 1.1, "1.1"),
])
def test_a_canonical_value_is_shown_as_show_writes_it(name: str, value: int | float | str | bool, shown: str) -> None:
    param = load_param_table(16).params[name]
    assert shown_canonical(param, value) == shown
    if not isinstance(value, bool | str):
        assert parse_value(param, shown).canonical == value


# check_datestyle stores a style and an order, the half not given from the default (German's order DMY):
# `SET DateStyle = …; SHOW DateStyle` on 15.18 (tests/differential holds every major to it).
@pytest.mark.parametrize(("text", "stored"), [
    ("iso, mdy", "ISO, MDY"), ("ISO", "ISO, MDY"), ("German", "German, DMY"), ("German, MDY", "German, MDY"),
    ("MDY, German", "German, MDY"), ("sql, dmy", "SQL, DMY"), ("European", "ISO, DMY"), ("NonEuropean", "ISO, MDY"),
    ("default, sql", "SQL, MDY"), ("", "ISO, MDY"),
])
def test_datestyle_as_postgresql_stores_it(text: str, stored: str) -> None:
    assert parse_value(load_param_table(15).params["datestyle"], text) == ParsedValue(stored, stored, False)


@pytest.mark.parametrize("text", ["iso, sql", "iso, sql, nonsense", "iso mdy", "iso,"])
def test_datestyle_postgresql_refuses(text: str) -> None:
    with pytest.raises(InvalidValue) as refused:
        parse_value(load_param_table(15).params["datestyle"], text)
    assert refused.value.message == f'invalid value for parameter "DateStyle": "{text}"'


def test_a_removal_within_9x_is_said_from_its_release_on(tmp_path: Path) -> None:
    from pgvet.run.lint import lint
    from pgvet.run.options import LintOptions

    (tmp_path / "postgresql.conf").write_text("checkpoint_segments = 32\n")
    (tmp_path / "PG_VERSION").write_text("9.4\n")
    [host] = lint([tmp_path], LintOptions(select=("PGV402",))).hosts
    [finding] = host.findings
    assert finding.message.startswith('"checkpoint_segments" was removed in PostgreSQL 9.5 and is unknown to '
                                      "PostgreSQL 9 from 9.5 on; its replacement is max_wal_size = '1536MB'")
