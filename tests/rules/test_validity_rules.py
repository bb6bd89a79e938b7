"""Validity rules (PGV401-PGV420) on whole hosts, without a server: the config-repo fixture's findings and
small snapshots for each rule, with exact messages, values and file:line."""

from __future__ import annotations

from pathlib import Path

from conftest import FIXTURES
from pgvet.findings import Finding
from pgvet.run.lint import lint
from pgvet.run.options import LintOptions
from pgvet.snapshot.load import load_host

GIB = 1024**3


def findings(host: Path, select: str = "PGV4") -> list[Finding]:
    result = lint([host], LintOptions(select=[select]))
    assert not result.errors, result.errors
    return result.hosts[0].findings


def write_host(tmp_path: Path, conf: str, version: int = 16, auto: str | None = None) -> Path:
    (tmp_path / "postgresql.conf").write_text(conf)
    (tmp_path / "PG_VERSION").write_text(f"{version}\n")
    if auto is not None:
        (tmp_path / "postgresql.auto.conf").write_text(auto)
    return tmp_path


def test_config_repo_validity_findings() -> None:
    found = {finding.rule_id: finding for finding in findings(FIXTURES / "config-repo")}
    assert sorted(found) == ["PGV401", "PGV402", "PGV404"]
    unknown, removed, bare = found["PGV401"], found["PGV402"], found["PGV404"]
    assert (unknown.path, unknown.line, unknown.severity) == ("conf.d/30-planner.conf", 3, "error")
    assert "startup" in unknown.tags
    assert unknown.message == ('unrecognized configuration parameter "effective_io_concurency" for PostgreSQL 16; '
                               "did you mean effective_io_concurrency?")
    assert (removed.path, removed.line, removed.values["replacement"]) == ("conf.d/20-wal.conf", 3, "max_wal_size")
    assert removed.message == ('"checkpoint_segments" was removed in PostgreSQL 9.5 and is unknown to PostgreSQL 16; '
                               "its replacement is max_wal_size = '3072MB' (16 MB WAL segments).")
    assert (bare.path, bare.line, bare.severity, bare.values["bytes"]) == ("conf.d/10-memory.conf", 2, "info", 16 * GIB)
    assert "startup" not in bare.tags
    assert bare.message == ("shared_buffers = 2097152 has no unit, so it counts in 8kB units: it means 16.0 GiB "
                            "(17179869184 bytes). Write the unit to say so: shared_buffers = '16GB'.")
    assert bare.fix.text == "shared_buffers = '16GB' (the same value, with its unit)"


def test_bare_number_suggests_the_largest_exact_unit(tmp_path: Path) -> None:
    host = write_host(tmp_path, "shared_buffers = 16384\nwork_mem = 1536\neffective_cache_size = 0\n")
    found = {finding.subject or "": finding for finding in findings(host, "PGV404")}
    assert sorted(found) == ["shared_buffers", "work_mem"]  # 0 means 0 in any unit: nothing to say
    assert found["shared_buffers"].fix.text == "shared_buffers = '128MB' (the same value, with its unit)"
    assert found["work_mem"].fix.text == "work_mem = '1536kB' (the same value, with its unit)"


def test_invalid_value_carries_postgresql_message(tmp_path: Path) -> None:
    host = write_host(tmp_path, "work_mem = 64mb\ncheckpoint_timeout = 2\n", version=15)
    found = {finding.subject: finding for finding in findings(host, "PGV403")}
    assert found["work_mem"].message == ('invalid value for parameter "work_mem": "64mb" Valid units for this '
                                         'parameter are "B", "kB", "MB", "GB", and "TB".')
    assert found["checkpoint_timeout"].message == (
        '2 s is outside the valid range for parameter "checkpoint_timeout" (30 .. 86400) (the range in units of s)')
    assert [(f.line, f.severity, "startup" in f.tags) for f in found.values()] == [(1, "error", True),
                                                                                   (2, "error", True)]


def test_a_value_postgresql_refuses_is_not_judged_as_its_default(tmp_path: Path) -> None:
    """shared_buffers = '1Gb' (a CloudNativePG Cluster's, g2's sweep): PostgreSQL does not start with it, and pgvet
    called the same parameter too small at its default (PGV502, 128 MiB of 4 GiB); ssl = maybe was called off
    (PGV833, PGV832). The rules reading a refused value are not evaluated, with why."""
    host = write_host(tmp_path, "shared_buffers = 1Gb\nssl = maybe\nlisten_addresses = '*'\n")
    (tmp_path / "host.yaml").write_text("ram: 4GB\n")
    result = lint([host], LintOptions())
    assert not result.errors, result.errors
    rules = {finding.rule_id for finding in result.hosts[0].findings}
    assert "PGV403" in rules
    assert not rules & {"PGV502", "PGV833", "PGV832"}
    facts = result.hosts[0].host_facts
    assert "pg.shared_buffers" not in facts.facts
    assert "a value PostgreSQL refuses" in facts.unread["pg.ssl"]


def test_reserved_connections_cross_check(tmp_path: Path) -> None:
    host = write_host(tmp_path, "max_connections = 10\nreserved_connections = 5\nsuperuser_reserved_connections = 5\n")
    [finding] = findings(host, "PGV414")
    assert (finding.line, finding.values["minimum_max_connections"]) == (1, 11)
    assert finding.fix.postgresql == {"max_connections": "11"}
    write_host(tmp_path, "max_connections = 11\nreserved_connections = 5\nsuperuser_reserved_connections = 5\n")
    assert findings(host, "PGV414") == []


def test_reserved_connections_on_15_has_no_reserved_connections(tmp_path: Path) -> None:
    host = write_host(tmp_path, "max_connections = 3\n", version=15)  # superuser_reserved_connections = 3
    [finding] = findings(host, "PGV414")
    assert finding.values == {"max_connections": 3, "superuser_reserved_connections": 3, "reserved_connections": 0,
                              "minimum_max_connections": 4}


def test_multiple_recovery_targets(tmp_path: Path) -> None:
    host = write_host(tmp_path, "recovery_target_name = 'x'\nrecovery_target_time = '2024-01-01'\n")
    [finding] = findings(host, "PGV415")
    assert (finding.line, finding.values["targets"], finding.severity) == (2, 2, "error")
    write_host(tmp_path, "recovery_target_name = 'x'\nrecovery_target_time = ''\n")
    assert findings(host, "PGV415") == []


def test_restart_needed_after_alter_system(tmp_path: Path) -> None:
    host = write_host(tmp_path, "shared_buffers = 1GB\n",
                      auto="# Do not edit this file manually!\nshared_buffers = '4GB'\nwork_mem = '64MB'\n")
    found = findings(host, "PGV416")
    assert [(f.subject, f.path, f.line, f.severity) for f in found] == [
        ("shared_buffers", "postgresql.auto.conf", 2, "info")]
    overridden = findings(host, "PGV406")
    assert [(f.subject, f.path, f.line, f.severity) for f in overridden] == [
        ("shared_buffers", "postgresql.conf", 1, "warning")]


def test_overridden_line_fix_says_what_alter_system_reset_brings_back(tmp_path: Path) -> None:
    # A fix applied with ALTER SYSTEM leaves postgresql.conf's bad line overridden: 'ALTER SYSTEM RESET the
    # parameter', said alone, brought fsync = off back
    host = write_host(tmp_path, "fsync = off\nwork_mem = 1GB\nwork_mem = 2GB\n",
                      auto="# Do not edit this file manually!\nfsync = 'on'\nwork_mem = '4MB'\n")
    fixes = {(f.subject, f.line): " ".join(f.fix.text.split()) for f in findings(host, "PGV406")}
    assert "remove the line from postgresql.conf to keep postgresql.auto.conf:2's value, the one that runs" in (
        fixes[("fsync", 1)])
    assert fixes[("fsync", 1)].endswith("or ALTER SYSTEM RESET fsync to run postgresql.conf's off again.")
    assert fixes[("work_mem", 3)].endswith("ALTER SYSTEM RESET work_mem to run postgresql.conf's 2GB again.")
    assert fixes[("work_mem", 2)].endswith(
        "ALTER SYSTEM RESET work_mem to run the value of its last line in postgresql.conf (this one is repeated later) "
        "again.")


def test_wal_cross_checks(tmp_path: Path) -> None:
    host = write_host(tmp_path, "wal_level = minimal\n", version=17)
    assert [f.rule_id for f in findings(host, "startup")] == ["PGV410"]  # max_wal_senders defaults to 10
    write_host(tmp_path, "wal_level = minimal\nmax_wal_senders = 0\narchive_mode = on\nsummarize_wal = on\n", 17)
    assert sorted(f.rule_id for f in findings(host, "startup")) == ["PGV411", "PGV412"]
    write_host(tmp_path, "wal_level = minimal\nmax_wal_senders = 0\nmin_wal_size = 16MB\n", 17)
    [size] = findings(host, "startup")
    assert (size.rule_id, size.values["min_wal_size"], size.values["wal_segment_size"]) == ("PGV413", 16 * 2**20,
                                                                                           16 * 2**20)


def test_syntax_error_and_missing_include(tmp_path: Path) -> None:
    host = write_host(tmp_path, "work_mem = = 4MB\ninclude 'absent.conf'\ninclude_if_exists 'optional.conf'\n")
    found = [(f.rule_id, f.line) for f in findings(host)]
    assert ("PGV407", 1) in found


def test_no_setting_rule_is_left_unevaluated_on_the_fixture_hosts() -> None:
    """Every line of a valid postgresql.conf can be judged by the setting rules: PGV406 once reported 'not
    evaluated' for every line that no later line overrides (26 a host), its fact being absent then."""
    from pgvet.engine.loader import load_pack

    scopes = {rule.id: rule.scope for rule in load_pack().rules}
    hosts = sorted(path for path in FIXTURES.glob("**/") if (path / "postgresql.conf").exists())
    result = lint(hosts, LintOptions())
    assert len(result.hosts) > 10
    unevaluated = [(host.host_facts.name, item.rule_id) for host in result.hosts for item in host.not_evaluated
                   if scopes[item.rule_id] == "setting"]
    assert unevaluated == []


def test_no_rule_is_null_on_facts_that_are_all_there() -> None:
    """'Not evaluated' must mean an input is missing. A rule NULL with every fact present is a rule that
    forgot SQL's NULL (PGV207 and PGV208 compared an absent mount option with =, on every mount)."""
    hosts = sorted(path for path in FIXTURES.glob("**/") if (path / "host.yaml").exists())
    result = lint(hosts, LintOptions())
    assert len(result.hosts) > 30
    null_logic = [(host.host_facts.name, item.rule_id, item.reason) for host in result.hosts
                  for item in host.not_evaluated
                  if not item.missing and item.reason and item.reason.endswith("is NULL")]
    assert null_logic == []


def test_an_unknown_name_far_from_every_parameter_says_so(tmp_path: Path) -> None:
    (unknown,) = findings(write_host(tmp_path, "zzqx_frobnicate = on\n"), "PGV401")
    assert unknown.message == ('unrecognized configuration parameter "zzqx_frobnicate" for PostgreSQL 16, '
                               "and no known name is close to it.")  # not "the closest known name is (none)"


def test_a_version_newer_than_the_param_tables_gets_warnings_not_errors(tmp_path: Path) -> None:
    """PostgreSQL 19 may have added the name or the value pgvet's newest parameter table (18) refuses: no error
    claiming it will not start, but a warning that says which parameter table judged it."""
    conf = "shared_bufers = 1GB\nbrand_new_in_19 = on\nwal_level = bogus\nshared_buffers = 1GB\n"
    found = {(finding.rule_id, finding.subject): finding for finding in findings(write_host(tmp_path, conf, 19))}
    assert sorted(found) == [("PGV418", "brand_new_in_19"), ("PGV418", "shared_bufers"), ("PGV419", "wal_level")]
    typo, new = found["PGV418", "shared_bufers"], found["PGV418", "brand_new_in_19"]
    value = found["PGV419", "wal_level"]
    assert {typo.severity, new.severity, value.severity} == {"warning"}
    assert typo.message == ('"shared_bufers" is not a parameter of PostgreSQL 18, the newest version pgvet knows; '
                            "unless PostgreSQL 19 added it, PostgreSQL will not start (did you mean shared_buffers?).")
    assert new.values == {"parameter": "brand_new_in_19", "suggestion": None, "catalog_version": 18}
    assert value.message == ('PostgreSQL 18, the newest version pgvet knows, refuses it: invalid value for '
                             'parameter "wal_level": "bogus" Available values: minimal, replica, logical. Unless '
                             "PostgreSQL 19 changed what wal_level accepts, it will not start.")
    assert (value.path, value.line) == ("postgresql.conf", 3)


def test_versions_with_a_param_table_keep_their_errors(tmp_path: Path) -> None:
    conf = "brand_new = on\nwal_level = bogus\n"
    for version in (15, 18):
        found = sorted(finding.rule_id for finding in findings(write_host(tmp_path, conf, version)))
        assert found == ["PGV401", "PGV403"], version


def test_internal_parameter_is_refused_and_keeps_its_compiled_value(tmp_path: Path) -> None:
    """wal_segment_size = 32MB: PostgreSQL says 'parameter "wal_segment_size" cannot be changed' and does not
    start (even for the current value, or in postgresql.auto.conf); the value stays 16MB, so PGV413 judges
    min_wal_size = 32MB against 16 MB segments and says nothing."""
    host = write_host(tmp_path, "min_wal_size = 32MB\nwal_segment_size = 32MB\nBlock_Size = 8192\n", version=15,
                      auto="server_version = '15.0'\n")
    found = [(f.rule_id, f.path, f.line, f.subject, f.severity) for f in findings(host, "startup")]
    assert found == [("PGV420", "postgresql.conf", 2, "wal_segment_size", "error"),
                     ("PGV420", "postgresql.conf", 3, "block_size", "error"),
                     ("PGV420", "postgresql.auto.conf", 1, "server_version", "error")]
    [first] = findings(host, "PGV420")[:1]
    assert first.message == ('parameter "wal_segment_size" cannot be changed: it is read-only (fixed when '
                             "PostgreSQL was built or the cluster initialised), and PostgreSQL refuses a file that "
                             "sets it, even to its current value.")
    assert "startup" in first.tags
    facts = load_host(host).facts
    segment = facts["pg.wal_segment_size"]
    assert (segment.value, segment.source.path) == (16 * 2**20, "<default>")
    assert "pg.server_version" not in facts or facts["pg.server_version"].value != "15.0"


def test_internal_parameter_with_an_invalid_value_is_one_finding(tmp_path: Path) -> None:
    """PostgreSQL refuses the name before it reads the value: PGV420, not PGV403 as well."""
    host = write_host(tmp_path, "block_size = 4096\nwal_segment_size = abc\n", version=16)
    assert sorted(f.rule_id for f in findings(host, "startup")) == ["PGV420", "PGV420"]
    host = write_host(tmp_path, "block_size = 4096\n", version=19)  # newer than the parameter tables: still an error
    assert [(f.rule_id, f.severity) for f in findings(host, "startup")] == [("PGV420", "error")]
