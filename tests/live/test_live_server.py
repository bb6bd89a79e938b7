"""pgvet collect against real servers: one cluster per installed major, collected three times
(superuser, a pg_monitor role, a role without privileges) in a module-scoped fixture."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

import pgservers
from conftest import require_postgres
from livepg import LiveCluster, running_cluster
from pgvet.errors import InputError
from pgvet.inputs.pg_settings import LiveServer, live_facts, parse_pg_settings_json
from pgvet.live.commands import collect_command
from pgvet.live.redact import redact_setting
from pgvet.provenance import Located, Source

pytestmark = pytest.mark.postgres
pytest.importorskip("psycopg", exc_type=ImportError, reason="psycopg, with its libpq, reads the server")

MONITOR_PASSWORD = "Mon1tor-S3cret-xyzzy"
PLAIN_PASSWORD = "Pl41n-S3cret-plugh"
CONNINFO_PASSWORD = "Repl1c4-S3cret-frob"
SECRETS = (MONITOR_PASSWORD, PLAIN_PASSWORD, CONNINFO_PASSWORD)
OS_FILES = {"meminfo.txt", "sysctl.txt", "lscpu.txt", "mounts.txt", "sysfs.txt"}
CONFIG_FILES = {"postgresql.conf", "postgresql.auto.conf", "conf.d/10-memory.conf"}
MB = 1024 * 1024


@dataclass(frozen=True)
class Collected:
    cluster: LiveCluster
    superuser: Path
    monitor: Path
    plain: Path
    outside: Path
    granted: Path  # pg_monitor and EXECUTE on pg_show_all_file_settings()

    def server(self, snapshot: Path) -> LiveServer:
        return parse_pg_settings_json((snapshot / "pg_settings.json").read_text(), "pg_settings.json")


def _wait_for_pending_restart(cluster: LiveCluster) -> None:
    """pg_reload_conf() only signals: wait until new sessions see the reloaded files."""
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if cluster.sql("SELECT pending_restart FROM pg_settings WHERE name = 'shared_buffers'") == [(True,)]:
            return
        time.sleep(0.05)
    pytest.fail("the reload never made shared_buffers pending_restart")


@pytest.fixture(scope="module", params=pgservers.SUPPORTED_MAJORS, ids=lambda major: f"pg{major}")
def collected(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Collected]:
    major: int = request.param
    require_postgres(major)
    with running_cluster(major) as cluster:
        # An include directory beside postgresql.conf, and an included file outside it.
        outside = pgservers.make_tempdir("pgvet-live-outside-")
        (outside / "extra.conf").write_text("effective_cache_size = '3GB'\n")
        (cluster.data / "conf.d").mkdir()
        (cluster.data / "conf.d" / "10-memory.conf").write_text("# memory\nmaintenance_work_mem = '96MB'\n")
        with (cluster.data / "postgresql.conf").open("a") as conf:
            conf.write(f"include_dir = 'conf.d'\ninclude '{outside}/extra.conf'\n")
        pgservers.chown_tree(cluster.data)
        pgservers.chown_tree(outside)
        for statement in (
            "ALTER SYSTEM SET work_mem = '12MB'",
            f"ALTER SYSTEM SET primary_conninfo = 'host=replica.example user=rep password={CONNINFO_PASSWORD}'",
            "ALTER SYSTEM SET shared_buffers = '32MB'",
            f"CREATE ROLE watcher LOGIN PASSWORD '{MONITOR_PASSWORD}' IN ROLE pg_monitor",
            f"CREATE ROLE plain LOGIN PASSWORD '{PLAIN_PASSWORD}'",
            f"CREATE ROLE granted LOGIN PASSWORD '{MONITOR_PASSWORD}' IN ROLE pg_monitor",
            "GRANT EXECUTE ON FUNCTION pg_show_all_file_settings() TO granted",
            "SELECT pg_reload_conf()",
        ):
            cluster.sql(statement)
        _wait_for_pending_restart(cluster)
        base = tmp_path_factory.mktemp(f"collect{major}")
        yield Collected(
            cluster,
            collect_command(base / "superuser", cluster.dsn()),
            collect_command(base / "monitor", cluster.dsn("watcher", MONITOR_PASSWORD)),
            collect_command(base / "plain", f"postgresql://plain:{PLAIN_PASSWORD}@/postgres"
                                             f"?host={cluster.socket_dir}&port=5432"),
            outside,
            collect_command(base / "granted", cluster.dsn("granted", MONITOR_PASSWORD)),
        )
        shutil.rmtree(outside, ignore_errors=True)


def _snapshot_files(snapshot: Path) -> set[str]:
    return {path.relative_to(snapshot).as_posix() for path in snapshot.rglob("*") if path.is_file()}


def test_collect_writes_every_file(collected: Collected) -> None:
    snapshot = collected.superuser
    assert _snapshot_files(snapshot) == OS_FILES | CONFIG_FILES | {"collect.json", "pg_settings.json"}
    for name in _snapshot_files(snapshot):
        assert (snapshot / name).stat().st_size > 0, name
        assert (snapshot / name).stat().st_mode & 0o777 == 0o600, name
    assert {path.stat().st_mode & 0o777 for path in (snapshot, snapshot / "conf.d")} == {0o700}
    data = collected.cluster.data
    assert (snapshot / "postgresql.conf").read_bytes() == (data / "postgresql.conf").read_bytes()
    # Files are read only in the server's configuration directory (its data directory here): not the include
    # outside it, which the manifest names.
    manifest = json.loads((snapshot / "collect.json").read_text())
    assert manifest["failed"] == [{"what": f"{collected.outside}/extra.conf",
                                   "error": f"not copied: outside the server's configuration directory {data}"}]
    copies = {each["name"]: each for each in manifest["files"] if "server_file" in each}
    assert {name: each["server_file"] for name, each in copies.items()} == {
        "postgresql.conf": f"{data}/postgresql.conf", "postgresql.auto.conf": f"{data}/postgresql.auto.conf",
        "conf.d/10-memory.conf": f"{data}/conf.d/10-memory.conf"}


def test_pg_settings_parse_back_to_the_servers_settings(collected: Collected) -> None:
    import psycopg

    server = collected.server(collected.superuser)
    columns = ("name, setting, unit, vartype, context, source, sourcefile, sourceline, boot_val, reset_val, "
               "pending_restart")
    # Read as pgvet reads: the same application_name and session settings.
    options = ("-c default_transaction_read_only=on -c statement_timeout=10000 -c lock_timeout=2000 "
               "-c search_path=pg_catalog,pg_temp")
    with psycopg.connect(collected.cluster.dsn(), application_name="pgvet", options=options) as connection:
        expected = connection.execute(f"SELECT {columns} FROM pg_settings").fetchall()  # type: ignore[arg-type]
    assert len(server.settings) == len(expected)
    for name, setting, unit, vartype, context, source, sourcefile, sourceline, boot, reset, pending in expected:
        row = server.settings[name.lower()]
        setting, boot, reset = (redact_setting(name, value) for value in (setting, boot, reset))
        assert (row.name, row.setting, row.unit, row.vartype, row.context, row.source, row.sourcefile,
                row.sourceline, row.boot_val, row.reset_val, row.pending_restart) == (
            name, setting, unit, vartype, context, source, sourcefile, sourceline, boot, reset, pending)
    # 12 applies primary_conninfo only at a restart (13 made it reloadable): it still runs with none
    assert server.settings["primary_conninfo"].setting == (
        "" if server.major == 12 else "host=replica.example user=rep password=***")
    assert server.settings["archive_command"].setting == "***"  # PostgreSQL shows "(disabled)": a command's place
    assert server.major == collected.cluster.major
    assert not server.unavailable  # pgvet's own session settings are read as they show (source client)


def test_alter_system_setting_points_at_postgresql_auto_conf(collected: Collected) -> None:
    server = collected.server(collected.superuser)
    auto_conf = f"{collected.cluster.data}/postgresql.auto.conf"
    # ALTER SYSTEM writes two comment lines, then the settings in the order they were first set.
    assert server.settings["work_mem"].origin == Source(auto_conf, 3)
    assert live_facts(server)["pg.work_mem"] == Located(12 * MB, Source(auto_conf, 3))
    copied = (collected.superuser / "postgresql.auto.conf").read_text().splitlines()
    assert copied[2] == "work_mem = '12MB'"
    assert copied[3] == "primary_conninfo = 'host=replica.example user=rep password=***'"


def test_included_files_are_sources(collected: Collected) -> None:
    facts = live_facts(collected.server(collected.superuser))
    included = Source(f"{collected.cluster.data}/conf.d/10-memory.conf", 2)
    assert facts["pg.maintenance_work_mem"] == Located(96 * MB, included)
    assert facts["pg.effective_cache_size"] == Located(3 * 1024 * MB, Source(f"{collected.outside}/extra.conf", 1))
    copied = (collected.superuser / "conf.d" / "10-memory.conf").read_text().splitlines()
    assert copied[1] == "maintenance_work_mem = '96MB'"


def test_live_facts_of_a_real_server(collected: Collected) -> None:
    server = collected.server(collected.superuser)
    facts = {name: located.value for name, located in live_facts(server).items()}
    major = collected.cluster.major
    assert facts["pg.version"] == major
    assert facts["pg.server_version_num"] // 10000 == major
    assert facts["pg.shared_buffers"] == 128 * MB  # 32MB waits for a restart
    # 12 applies primary_conninfo only at a restart (13 made it reloadable)
    pending = ["primary_conninfo", "shared_buffers"] if major == 12 else ["shared_buffers"]
    assert facts["live.pending_restart"] == ",".join(pending)
    assert facts["live.pending_restart_count"] == len(pending)
    assert facts["live.connections"] == 1  # pgvet's own session
    assert facts["live.max_connections"] == 100
    assert facts["pg.data_directory"] == str(collected.cluster.data)
    if major >= 15:  # before, the server does not say: the estimate stands in (docs/calibration.md)
        assert facts["pg.shared_memory_size"] == int(server.settings["shared_memory_size"].setting or 0) * MB
        assert facts["pg.shared_memory_size_in_huge_pages"] == int(
            server.settings["shared_memory_size_in_huge_pages"].setting or 0)
    else:
        assert "pg.shared_memory_size" not in facts and "pg.shared_memory_size_in_huge_pages" not in facts
    if major >= 17:
        assert facts["pg.huge_pages_status"] in {"on", "off"}
    if major >= 15:  # before, the statistics collector reports late: a fresh server may have no figures yet
        assert 0 < float(facts["live.cache_hit_ratio"]) <= 1
    assert facts["live.checkpoints_timed"] == server.statistics["checkpoints_timed"].value
    assert server.statistics["checkpoints_view"].value == ("pg_stat_checkpointer" if major >= 17 else
                                                          "pg_stat_bgwriter")
    # pg_stat_wal (14+) counts the WAL since the cluster's creation, as the checkpoint counts do (14's statistics
    # collector may not have reported any yet)
    wal = server.statistics["checkpoints_wal_bytes"].value
    assert wal is None if major < 14 else isinstance(wal, int) and wal >= (1 if major >= 15 else 0)
    assert facts.get("live.checkpoints_wal_bytes") == wal
    # The reloaded postmaster-context change is the one pg_file_settings row in error.
    assert server.file_settings is not None
    errors = [(row.name, row.error) for row in server.file_settings if row.error]
    assert errors == [(name, "setting could not be applied") for name in pending]
    assert facts["live.file_settings_errors"] == len(pending)


def test_live_values_match_the_param_tables_conversion(collected: Collected) -> None:
    """Units converted from pg_settings agree with pgvet.pgparams's parsing of the same text."""
    from pgvet.pgparams import load_param_table
    from pgvet.pgparams.units import parse_value

    server = collected.server(collected.superuser)
    facts = live_facts(server)
    param_table = load_param_table(server.major)
    compared = 0
    for key, setting in server.settings.items():
        param = param_table.get(key)
        if param is None or setting.setting is None or param.vartype == "string":
            continue
        if setting.context != "internal" and setting.source in ("default", "override") \
                and setting.boot_val in ("-1", "0") and setting.setting != setting.boot_val:
            # a size the server chose itself (wal_buffers = -1): the automatic value, which the formulas size again
            assert facts[f"pg.{key}"].value == int(setting.boot_val), key
            continue
        assert facts[f"pg.{key}"].value == parse_value(param, setting.setting).canonical, key
        compared += 1
    assert compared > 240  # 12 has 322 parameters, 18 has 405


def test_pg_monitor_role_collects_without_pg_file_settings(collected: Collected) -> None:
    server = collected.server(collected.monitor)
    assert [(gap.what, gap.error, gap.fix) for gap in server.unavailable] == [
        ("pg_file_settings", "permission denied for function pg_show_all_file_settings",
                               "GRANT EXECUTE ON FUNCTION pg_show_all_file_settings() TO watcher")]
    assert server.file_settings is None
    facts = live_facts(server)
    assert "live.file_settings_errors" not in facts
    # pg_monitor includes pg_read_all_settings: sources and superuser-only settings are visible.
    assert server.settings["work_mem"].origin == Source(f"{collected.cluster.data}/postgresql.auto.conf", 3)
    assert facts["pg.data_directory"].value == str(collected.cluster.data)
    assert {"postgresql.conf", "postgresql.auto.conf", "conf.d/10-memory.conf"} <= _snapshot_files(collected.monitor)


def test_role_without_privileges_records_each_gap(collected: Collected) -> None:
    server = collected.server(collected.plain)
    gaps = {gap.what: gap.error for gap in server.unavailable}
    assert set(gaps) == {"data_directory", "config_file", "pg_settings.sourcefile", "pg_file_settings",
                         "sessions idle in a transaction"}
    assert gaps["pg_file_settings"] == "permission denied for function pg_show_all_file_settings"
    fixes = {gap.what: gap.fix for gap in server.unavailable}
    assert fixes["data_directory"] == fixes["pg_settings.sourcefile"] == "GRANT pg_read_all_settings TO plain, or " \
        "GRANT pg_monitor"
    assert fixes["sessions idle in a transaction"] == "GRANT pg_read_all_stats TO plain, or GRANT pg_monitor"
    for name in ("data_directory", "config_file"):
        # 15: 'must be superuser or have privileges of pg_read_all_settings to examine "NAME"';
        # 16+: 'permission denied to examine "NAME"; Only roles with privileges of the "pg_read_all_settings" …'
        assert f'to examine "{name}"' in gaps[name]
        assert "pg_read_all_settings" in gaps[name]
    work_mem = server.settings["work_mem"]
    assert (work_mem.sourcefile, work_mem.sourceline) == (None, None)
    assert work_mem.origin == work_mem.row and work_mem.row.path == "pg_settings.json"
    assert live_facts(server)["pg.work_mem"].value == 12 * MB
    assert "data_directory" not in server.settings
    # Where the files are is the OS's word, not the server's: the role's privileges do not matter.
    assert _snapshot_files(collected.plain) == OS_FILES | CONFIG_FILES | {"collect.json", "pg_settings.json"}


def test_one_grant_lets_pg_monitor_read_pg_file_settings(collected: Collected) -> None:
    """pgvet reads the function behind the pg_file_settings view: EXECUTE on it is the one grant a pg_monitor
    role needs (the view itself would need SELECT on it as well)."""
    server = collected.server(collected.granted)
    assert not server.unavailable
    assert server.file_settings is not None
    # the test's primary_conninfo applies at a reload from PostgreSQL 13 on, before that only at a restart
    restart_only = ["primary_conninfo"] if collected.cluster.major < 13 else []
    assert [(row.name, row.error) for row in server.file_settings if row.error] == [
        (name, "setting could not be applied") for name in (*restart_only, "shared_buffers")]


@pytest.mark.parametrize("role", ["monitor", "plain"])
def test_pending_restart_and_drift_without_pg_file_settings(collected: Collected, role: str) -> None:
    """Without pg_file_settings, the copied files tell what the files say now: the pending restart of
    ALTER SYSTEM's shared_buffers is reported from pg_settings.pending_restart and postgresql.auto.conf, and
    PGV416 (offline only) does not repeat it."""
    from pgvet.run.lint import lint
    from pgvet.run.options import LintOptions

    [host] = lint([getattr(collected, role)], LintOptions(record_passes=True)).hosts
    by_rule = {(finding.rule_id, finding.subject): finding for finding in host.findings}
    restart = by_rule[("PGV955", "shared_buffers")]
    assert restart.values == {"parameter": "shared_buffers", "in_files": "32MB", "running": "128MB"}
    assert restart.path == "postgresql.auto.conf"
    assert not [finding for finding in host.findings if finding.rule_id in ("PGV416", "PGV903")]
    skipped = {record.rule_id: record.reason for record in host.not_evaluated}
    assert "GRANT EXECUTE ON FUNCTION pg_show_all_file_settings()" in (skipped["PGV956"] or "")


def test_no_password_is_written(collected: Collected) -> None:
    for snapshot in (collected.superuser, collected.monitor, collected.plain):
        for name in _snapshot_files(snapshot):
            content = (snapshot / name).read_bytes()
            for secret in SECRETS:
                assert secret.encode() not in content, f"{secret} in {snapshot / name}"
    server = collected.server(collected.monitor)
    assert server.dsn == f"host={collected.cluster.socket_dir} port=5432 dbname=postgres user=watcher password=***"
    assert collected.server(collected.plain).dsn == (
        f"postgresql://plain:***@/postgres?host={collected.cluster.socket_dir}&port=5432")


def test_a_second_fix_of_a_snapshot_whose_copy_left_an_include_out_changes_nothing(collected: Collected,
                                                                                   tmp_path: Path) -> None:
    # the include outside the configuration directory was not copied: the pending values were the server's reading
    # of its files alone, and a second `pgvet fix` proposed again what `--write` had put into the copies
    snapshot = tmp_path / "snapshot"
    shutil.copytree(collected.granted, snapshot)
    lint = [sys.executable, "-m", "pgvet", "lint", str(snapshot), "--format", "json"]
    first = json.loads(subprocess.run(lint, capture_output=True, text=True, timeout=120).stdout)
    written = {change["setting"]: change["target"] for change in first["hosts"][0]["target"]["changes"]
               if change["kind"] == "postgresql"}
    assert written  # a default cluster: track_io_timing, log_lock_waits…
    fix = [sys.executable, "-m", "pgvet", "fix", str(snapshot), "--write"]
    assert subprocess.run(fix, capture_output=True, timeout=120).returncode in (0, 1)
    second = json.loads(subprocess.run(lint, capture_output=True, text=True, timeout=120).stdout)["hosts"][0]
    assert not [change for change in second["target"]["changes"] if change["kind"] == "postgresql"]
    declared = {change["setting"]: change["declared"] for change in second["target"]["declared_not_applied"]
                if change["kind"] == "postgresql"}
    assert {name: declared.get(name) for name in written} == written
    assert "effective_cache_size" not in declared  # the include's 3GB, which the server runs


def test_wrong_password_is_a_one_line_input_error(collected: Collected, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(InputError) as raised:
        collect_command(tmp_path / "out", collected.cluster.dsn("watcher", "Wr0ng-Guess-quux"))
    message = str(raised.value)
    assert 'password authentication failed for user "watcher"' in message
    assert "\n" not in message and "Wr0ng-Guess-quux" not in message
    assert "password=***" in message
    assert not (tmp_path / "out").exists()  # nothing half-written is left
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err == ""


def test_unreachable_port_fails_fast(tmp_path: Path) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed_port = probe.getsockname()[1]
    started = time.monotonic()
    with pytest.raises(InputError, match=r"cannot connect to PostgreSQL .*Connection refused"):
        collect_command(tmp_path / "refused", f"host=127.0.0.1 port={closed_port} user=x password=Secr3t-zork")
    assert time.monotonic() - started < 2


def test_silent_server_times_out(tmp_path: Path) -> None:
    """A port that accepts connections but never answers: connect_timeout ends the wait."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        port = listener.getsockname()[1]
        started = time.monotonic()
        with pytest.raises(InputError, match="cannot connect to PostgreSQL") as raised:
            collect_command(tmp_path / "silent", f"postgresql://x:Secr3t-zork@127.0.0.1:{port}/db", timeout=2)
        elapsed = time.monotonic() - started
    assert 1.5 < elapsed < 6
    assert "Secr3t-zork" not in str(raised.value)


def test_output_directory_must_be_new_or_empty(tmp_path: Path) -> None:
    (tmp_path / "keep.txt").write_text("mine")
    with pytest.raises(InputError, match="is not empty"):
        collect_command(tmp_path, None, host_only=True)
    assert [path.name for path in tmp_path.iterdir()] == ["keep.txt"]


# beyond PostgreSQL's longest statement_timeout (INT_MAX milliseconds): 1e308 seconds was an OverflowError's traceback
@pytest.mark.parametrize("timeout", ["nan", "inf", "0", "-3", "3e+06", "1e+308"])
def test_a_timeout_that_is_not_a_positive_number_is_a_usage_error(timeout: str, tmp_path: Path) -> None:
    for command in ("collect", "check"):
        done = subprocess.run([sys.executable, "-m", "pgvet", command, "--dsn", "host=/nonexistent user=x",
                               "--timeout", timeout, *(["--output", str(tmp_path / "out")] if command == "collect"
                                                       else ["--no-input"])],
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 2, done.stderr
        assert done.stderr == ("pgvet: error: --timeout must be a positive number of seconds, at most 2147483 "
                               f"(PostgreSQL's longest statement_timeout), not {timeout}\n")
        assert not (tmp_path / "out").exists()
