"""Outage checks, each on a real cluster brought into that state and read by a pg_monitor role: transaction ID
and multixact age past their freeze limits (held back by an open transaction), a replication slot retaining WAL,
an old prepared transaction, a session idle in a transaction, an invalid index; pg_db_role_setting judged per
role and database. The 2-billion limit cannot be reached by consuming transactions in a test: a real cluster is
moved near it with pg_resetwal, and its arithmetic past it is checked on a fake server's answer."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import pgservers
from conftest import require_postgres
from fakepg import FakeServer, Rows, answers_with, standard_answers
from livepg import running_cluster
from pgvet.live.commands import collect_command
from pgvet.run.lint import lint
from pgvet.run.options import LintOptions
from pgvet.snapshot.load import load_host

pytestmark = pytest.mark.postgres
psycopg = pytest.importorskip("psycopg", exc_type=ImportError, reason="psycopg, with its libpq, reads the server")

MAJOR = min(pgservers.SUPPORTED_MAJORS)
PASSWORD = "Outage-Watch-3r"
# The thresholds lowered so that a test cluster reaches them (the defaults hold on production servers).
CONFIG = """
[params.PGV958]
ratio = 1.0
[params.PGV959]
ratio = 1.0
[params.PGV961]
minimum = "1MB"
[params.PGV962]
max_age = 0
[params.PGV963]
max_idle = 0
"""
MB = 1024 * 1024


def pgvet(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pgvet", *args], capture_output=True, text=True, timeout=180,
                          env={**os.environ, "NO_COLOR": "1", "COLUMNS": "120"})


@dataclass(frozen=True)
class Checked:
    document: dict[str, Any]  # pgvet check --format json, as the pg_monitor role
    text: str  # the same as a text report
    holder_pid: int

    def findings(self, rule_id: str) -> list[dict[str, Any]]:
        return [finding for finding in self.document["findings"] if finding["rule_id"] == rule_id]


@pytest.fixture(scope="module")
def checked(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Checked]:
    require_postgres(MAJOR)
    config = tmp_path_factory.mktemp("outages") / "pgvet.toml"
    config.write_text(CONFIG)
    settings = {"max_prepared_transactions": "4", "autovacuum_freeze_max_age": "100000",
                "autovacuum_multixact_freeze_max_age": "10000"}
    with running_cluster(MAJOR, settings) as cluster:
        cluster.sql(f"CREATE ROLE watcher LOGIN PASSWORD '{PASSWORD}' IN ROLE pg_monitor")
        cluster.sql("CREATE TABLE locked (id int PRIMARY KEY); INSERT INTO locked VALUES (1)")
        cluster.sql("CREATE TABLE ledger (id int)")
        # A transaction left open, idle: it holds an old transaction ID and a share lock, so vacuum can freeze
        # nothing newer — ages then grow with what the cluster consumes.
        holder = psycopg.connect(cluster.dsn())
        holder.execute("SELECT id FROM locked WHERE id = 1 FOR SHARE")
        holder.execute("SELECT txid_current()")
        holder_pid = holder.info.backend_pid
        # A transaction that failed and waits for its ROLLBACK: it holds no lock and no snapshot any more.
        # (The INSERT INTO ledger below would wait for its lock otherwise.)
        failed = psycopg.connect(cluster.dsn())
        failed.execute("LOCK TABLE ledger")
        with pytest.raises(psycopg.errors.DivisionByZero):
            failed.execute("SELECT 1 / 0")
        # Past autovacuum_freeze_max_age (100 000) and autovacuum_multixact_freeze_max_age (10 000): every
        # iteration a transaction ID, and a multixact (the row shared with the holder's lock).
        cluster.sql("""CREATE PROCEDURE consume(n int) LANGUAGE plpgsql AS $$
                       BEGIN FOR i IN 1..n LOOP
                         PERFORM id FROM locked WHERE id = 1 FOR SHARE; COMMIT;
                       END LOOP; END $$""")
        cluster.sql("CALL consume(12000)")
        cluster.sql("CREATE PROCEDURE burn(n int) LANGUAGE plpgsql AS $$ "
                    "BEGIN FOR i IN 1..n LOOP PERFORM txid_current(); COMMIT; END LOOP; END $$")
        cluster.sql("CALL burn(100000)")
        # An inactive slot reserving WAL from now, then some WAL.
        cluster.sql("SELECT pg_create_physical_replication_slot('gone_standby', true)")
        cluster.sql("INSERT INTO ledger SELECT generate_series(1, 100000)")
        cluster.sql("SELECT pg_switch_wal()")
        # A prepared transaction its manager forgot.
        with psycopg.connect(cluster.dsn()) as preparer:
            preparer.execute("INSERT INTO ledger VALUES (0)")
            preparer.execute("PREPARE TRANSACTION 'forgotten-2pc'")
            preparer.commit()
        # A failed CREATE INDEX CONCURRENTLY leaves an invalid index.
        cluster.sql("CREATE TABLE dupes (x int); INSERT INTO dupes VALUES (1), (1)")
        with pytest.raises(psycopg.errors.UniqueViolation):
            cluster.sql("CREATE UNIQUE INDEX CONCURRENTLY dupes_x ON dupes (x)")
        # Settings of a role and of a database (pg_db_role_setting): the monitoring role's own work_mem
        # must not become the server's.
        cluster.sql("ALTER ROLE watcher SET work_mem = '2GB'")
        cluster.sql("ALTER DATABASE postgres SET enable_nestloop = off")
        try:
            dsn = cluster.dsn("watcher", PASSWORD)
            document = json.loads(pgvet("check", "--dsn", dsn, "--no-input", "--format", "json", "--config",
                                        str(config)).stdout)
            text = pgvet("check", "--dsn", dsn, "--no-input", "--config", str(config)).stdout
        finally:
            holder.close()
            failed.close()
            cluster.sql("ROLLBACK PREPARED 'forgotten-2pc'")
    yield Checked(document, text, holder_pid)


def test_transaction_id_age_past_autovacuum_freeze_max_age(checked: Checked) -> None:
    ages = {finding["subject"]: finding for finding in checked.findings("PGV958")}
    postgres = ages["postgres"]
    assert postgres["values"]["autovacuum_freeze_max_age"] == 100000
    assert postgres["values"]["xid_age"] > 100000
    margin = 3_000_000 if MAJOR >= 14 else 1_000_000  # varsup.c: PostgreSQL 14 raised the stop margin
    assert postgres["values"]["left"] == 2**31 - 1 - margin - postgres["values"]["xid_age"]
    assert "VACUUM (FREEZE" in postgres["fix"]["text"]


def test_multixact_age_past_its_freeze_max_age(checked: Checked) -> None:
    ages = {finding["subject"]: finding for finding in checked.findings("PGV959")}
    assert ages["postgres"]["values"]["mxid_age"] > 10000
    assert ages["postgres"]["values"]["autovacuum_multixact_freeze_max_age"] == 10000


def test_inactive_slot_retaining_wal(checked: Checked) -> None:
    [slot] = checked.findings("PGV961")
    assert slot["subject"] == "gone_standby" and slot["values"]["active"] is False
    assert slot["values"]["retained"] > MB
    if MAJOR >= 13:
        assert slot["values"]["max_slot_wal_keep_size"] == -1
    else:  # the setting came in 13: nothing caps the slot, and the message says so
        assert slot["values"]["max_slot_wal_keep_size"] is None
        assert "before PostgreSQL 13 nothing caps it" in slot["message"]
    assert slot["values"]["wal_filesystem_free"] > 0  # pgvet runs as root on the server's host
    assert "pg_drop_replication_slot('gone_standby')" in slot["fix"]["text"]


def test_old_prepared_transaction(checked: Checked) -> None:
    [prepared] = checked.findings("PGV962")
    assert prepared["subject"] == "forgotten-2pc" and prepared["values"]["database"] == "postgres"
    assert "ROLLBACK PREPARED 'forgotten-2pc'" in prepared["fix"]["text"]
    # the server's now() - prepared has microseconds: shown in whole seconds
    assert re.search(r"has waited \d+(s|min|h|d) for", prepared["message"]), prepared["message"]


def test_session_idle_in_a_transaction(checked: Checked) -> None:
    sessions = {finding["subject"]: finding for finding in checked.findings("PGV963")}
    assert list(sessions) == [f"pid {checked.holder_pid}"]  # not the failed transaction, which holds nothing
    idle = sessions[f"pid {checked.holder_pid}"]
    assert idle["values"]["user"] == "postgres" and idle["values"]["xmin_age"] > 100000
    assert idle["fix"]["postgresql"] == {"idle_in_transaction_session_timeout": "10min"}
    assert f"pg_terminate_backend({checked.holder_pid})" in idle["fix"]["text"]
    assert re.search(r"for \d+(s|min|h|d), in a transaction open for \d+(s|min|h|d):", idle["message"]), idle["message"]


def test_invalid_index(checked: Checked) -> None:
    [index] = checked.findings("PGV964")
    assert index["subject"] == "public.dupes_x" and index["values"] == {"table": "dupes", "database": "postgres"}



@pytest.mark.parametrize("major", sorted({MAJOR, max(pgservers.SUPPORTED_MAJORS)}))
@pytest.mark.parametrize("build", ["CREATE INDEX CONCURRENTLY orders_ref ON orders (ref)",
                                   "REINDEX INDEX CONCURRENTLY orders_id"])
def test_index_being_built_concurrently_is_not_invalid(major: int, build: str, tmp_path: Path) -> None:
    """While CREATE INDEX CONCURRENTLY or REINDEX CONCURRENTLY runs, the index it builds is in pg_index with
    indisvalid false: a build in progress, not a failed one (DROP INDEX would be the wrong advice); a failed
    build on the same table still is."""
    require_postgres(major)
    with running_cluster(major) as cluster:
        cluster.sql("CREATE TABLE orders (id int, ref int); INSERT INTO orders VALUES (1, 1), (2, 1); "
                    "CREATE INDEX orders_id ON orders (id)")
        with pytest.raises(psycopg.errors.UniqueViolation):
            cluster.sql("CREATE UNIQUE INDEX CONCURRENTLY orders_ref_key ON orders (ref)")
        # A writer's open transaction makes the next build wait ("waiting for writers before build"), its index
        # already in pg_index.
        with psycopg.connect(cluster.dsn()) as writer, psycopg.connect(cluster.dsn(), autocommit=True) as builder:
            writer.execute("INSERT INTO orders VALUES (3, 2)")
            builder.pgconn.send_query(build.encode())
            waiting = "SELECT count(*) FROM pg_index WHERE NOT indisvalid"
            while cluster.sql(waiting)[0][0] < 2:
                pass
            snapshot = collect_command(tmp_path / "snapshot", cluster.dsn())
            writer.rollback()
            while builder.pgconn.get_result() is not None:  # the build finishes once the writer is gone
                pass
    invalid = json.loads((snapshot / "pg_settings.json").read_text())["invalid_indexes"]
    assert [index["name"] for index in invalid] == ["orders_ref_key"]


def test_slot_holding_no_wal_is_judged_not_unknown(tmp_path: Path) -> None:
    """A slot whose restart_lsn is NULL (created without reserving WAL, or lost: its WAL removed) holds no WAL:
    PGV961 passes on it, rather than being not evaluated for a missing value."""
    require_postgres(MAJOR)
    with running_cluster(MAJOR) as cluster:
        cluster.sql("SELECT pg_create_physical_replication_slot('not_yet_used')")
        assert cluster.sql("SELECT restart_lsn FROM pg_replication_slots") == [(None,)]
        snapshot = collect_command(tmp_path / "snapshot", cluster.dsn())
    [slot] = json.loads((snapshot / "pg_settings.json").read_text())["replication_slots"]
    assert slot["name"] == "not_yet_used" and slot["retained_bytes"] == 0
    [host] = lint([snapshot], LintOptions(select=["PGV961"])).hosts
    assert host.findings == [] and host.not_evaluated == []

def test_outage_risks_have_their_section(checked: Checked) -> None:
    section = checked.text.split("== Outage risks ==")[1].split("\n== ")[0]
    for rule_id in ("PGV958", "PGV959", "PGV961", "PGV962", "PGV963", "PGV964"):
        assert rule_id in section


def test_settings_of_roles_and_databases_are_judged_at_their_scope(checked: Checked) -> None:
    """ALTER ROLE watcher SET work_mem = '2GB' is pgvet's own session's: the memory rules judge the server's
    4 MB, and PGV538 names the role; ALTER DATABASE postgres SET enable_nestloop = off is a finding for that
    database."""
    [budget] = [finding for finding in checked.document["findings"] if finding["rule_id"] == "PGV530"] or [None]
    assert budget is None  # the server-wide 4 MB fits
    [role] = checked.findings("PGV538")
    assert role["subject"] == "work_mem for role watcher"
    assert role["values"]["value"] == 2 * 1024 * MB and role["values"]["server_value"] == 4 * MB
    assert "ALTER ROLE watcher RESET work_mem" in role["fix"]["text"]
    [planner] = checked.findings("PGV709")
    assert planner["subject"] == "enable_nestloop for database postgres"
    assert "ALTER DATABASE postgres RESET enable_nestloop" in planner["fix"]["text"]
    assert not [finding for finding in checked.document["findings"] if finding["rule_id"] in ("PGV531", "PGV705")]


def test_wraparound_arithmetic_near_the_limit(tmp_path: Path) -> None:
    """Two billion transactions cannot be consumed in a test: a fake server answers the ages, and PGV960 counts
    what is left before PostgreSQL refuses writes."""
    answers = standard_answers()
    answers["FROM pg_database d"] = Rows(answers_rows_of_database(), (
        ("postgres", "7500000", "0", "0", "900", "100", "2100000000", "5"),
        ("app", "7500000", "0", "0", "900", "100", "1000", "1700000000")))
    with FakeServer(answers_with(answers)) as server:
        snapshot = collect_command(tmp_path / "fake", server.dsn())
    [host] = lint([snapshot], LintOptions()).hosts
    near = {finding.subject: finding for finding in host.findings if finding.rule_id == "PGV960"}
    assert near["postgres"].values["left"] == 2**31 - 1 - 3_000_000 - 2_100_000_000 == 44_483_647
    assert near["app"].values["left"] == 2**31 - 1 - 3_000_000 - 1_700_000_000
    assert near["postgres"].severity == "error"
    assert "transaction IDs old" in near["postgres"].message and "multixacts old" in near["app"].message



RESETWAL_MAJOR = next((major for major in (15, 16, 17, 18) if (directory := pgservers.bindir(major)) is not None
                       and (directory / "pg_resetwal").is_file()), None)
CLOG_XIDS_PER_SEGMENT = 32 * 8192 * 4  # 32 pages of 8 kB, 4 transactions a byte


def test_a_real_cluster_near_wraparound_and_vacuumed(tmp_path: Path) -> None:
    """A real cluster moved near wraparound: pg_resetwal -x 1 700 000 000 on the stopped cluster, with the pg_xact
    segment that transaction ID falls in made (zeros, as PostgreSQL's documentation of -x says), autovacuum's
    anti-wraparound vacuum held off by autovacuum_freeze_max_age at its 2 billion maximum. Every database is then
    1.7 billion transactions old, past the failsafe age: PGV960 counts what is left as PostgreSQL does (2³¹ − 1
    less its 3 million margin, less the age); VACUUM FREEZE in each clears it."""
    if RESETWAL_MAJOR is None:
        pytest.skip("no PostgreSQL 15 or later with pg_resetwal")
    next_xid = 1_700_000_000
    settings = {"autovacuum": "off", "autovacuum_freeze_max_age": "2000000000"}
    with running_cluster(RESETWAL_MAJOR, settings) as cluster:
        pgservers.run(RESETWAL_MAJOR, "pg_ctl", ["stop", "-w", "-m", "fast", "-D", str(cluster.data)])
        (cluster.data / "pg_xact" / f"{next_xid // CLOG_XIDS_PER_SEGMENT:04X}").write_bytes(bytes(32 * 8192))
        pgservers.chown_tree(cluster.data)
        reset = pgservers.run(RESETWAL_MAJOR, "pg_resetwal", ["-x", str(next_xid), str(cluster.data)])
        assert reset.returncode == 0, reset.stderr
        cluster.restart()
        near = json.loads(pgvet("check", "--dsn", cluster.dsn(), "--no-input", "--format", "json").stdout)
        cluster.sql("ALTER DATABASE template0 ALLOW_CONNECTIONS true")  # as the fix says
        for database in ("postgres", "template0", "template1"):
            with psycopg.connect(cluster.dsn().replace("dbname=postgres", f"dbname={database}"),
                                 autocommit=True) as connection:
                connection.execute("VACUUM (FREEZE)")
        vacuumed = json.loads(pgvet("check", "--dsn", cluster.dsn(), "--no-input", "--format", "json").stdout)
    findings = {finding["subject"]: finding for finding in near["findings"] if finding["rule_id"] == "PGV960"}
    assert set(findings) == {"postgres", "template0", "template1"}
    for finding in findings.values():
        age = finding["values"]["xid_age"]
        assert next_xid - 1000 < age < next_xid
        assert finding["values"]["left"] == 2**31 - 1 - 3_000_000 - age
        assert finding["severity"] == "error"
    assert "ALLOW_CONNECTIONS true" in findings["template0"]["fix"]["text"]
    assert not [finding for finding in vacuumed["findings"] if finding["rule_id"] in ("PGV958", "PGV960")]


def answers_rows_of_database() -> tuple[tuple[str, int], ...]:
    from fakepg import INT4, INT8, TEXT

    return (("datname", TEXT), ("size", INT8), ("temp_files", INT8), ("temp_bytes", INT8), ("blks_hit", INT8),
            ("blks_read", INT8), ("age", INT4), ("mxid_age", INT4))


def test_a_slot_on_a_standby_that_receives_nothing_is_evaluated(tmp_path: Path) -> None:
    # A standby holds WAL from a slot's restart_lsn up to what it received, or replayed when it receives none
    # (restoring from an archive, or its primary gone before it connected): pg_last_wal_receive_lsn() is NULL
    # there, and the slot was "not evaluated"
    require_postgres(MAJOR)
    config = tmp_path / "pgvet.toml"
    config.write_text(CONFIG)
    with running_cluster(MAJOR) as cluster:
        cluster.sql("CHECKPOINT")
        (cluster.data / "standby.signal").write_text("")
        cluster.restart()
        assert cluster.sql("SELECT pg_is_in_recovery(), pg_last_wal_receive_lsn()") == [(True, None)]
        cluster.sql("SELECT pg_create_physical_replication_slot('cascade', true)")
        document = json.loads(pgvet("check", "--dsn", cluster.dsn(), "--no-input", "--format", "json",
                                    "--config", str(config)).stdout)
    assert [skipped for skipped in document["not_evaluated"] if skipped["rule_id"] == "PGV961"] == []
    assert [finding for finding in document["findings"] if finding["rule_id"] == "PGV961"] == []  # 0 bytes held


def test_a_value_of_the_command_line_under_a_setting_of_pgvets_role_is_the_servers(tmp_path: Path) -> None:
    """`postgres -c work_mem=512MB`, and ALTER ROLE postgres SET work_mem for the role pgvet connects as: the
    session shows 8MB, and the server runs 512MB from its command line, which overrides the files (where pgvet
    took the 4MB default from, and where a fix written would change nothing)."""
    require_postgres(MAJOR)
    with running_cluster(MAJOR, {"work_mem": "512MB"}) as cluster:
        cluster.sql("ALTER ROLE postgres SET work_mem = '8MB'")
        snapshot = collect_command(tmp_path / "snapshot", cluster.dsn())
    document = json.loads((snapshot / "pg_settings.json").read_text())
    assert document["command_line"]["work_mem"] == "512MB"
    facts = load_host(snapshot)
    assert facts.facts["pg.work_mem"].value == 512 * MB
    assert "work_mem" in facts.set_outside_files
    [host] = lint([snapshot], LintOptions()).hosts
    assert "PGV532" not in {finding.rule_id for finding in host.findings}  # "work_mem left at the 4 MB default"
    assert host.target is not None and "work_mem" not in {change.setting.name for change in host.target.changes}


def test_pgvets_own_session_settings_give_way_to_the_servers(tmp_path: Path) -> None:
    """pgvet's connection sets statement_timeout, lock_timeout, default_transaction_read_only and search_path for
    its own session (source client in pg_settings): the rules judge the server's values — the files'
    statement_timeout = 30s, the command line's lock_timeout — and no check says it could not read them."""
    require_postgres(MAJOR)
    with running_cluster(MAJOR, {"lock_timeout": "3s"}) as cluster:
        with (cluster.data / "postgresql.conf").open("a") as conf:
            conf.write("statement_timeout = '30s'\n")
        cluster.sql("SELECT pg_reload_conf()")
        snapshot = collect_command(tmp_path / "snapshot", cluster.dsn())
    document = json.loads((snapshot / "pg_settings.json").read_text())
    rows = {row["name"]: row for row in document["settings"]}
    assert rows["statement_timeout"]["source"] == rows["lock_timeout"]["source"] == "client"
    assert not [gap for gap in document["unavailable"] if "statement_timeout" in gap["what"]]
    facts = load_host(snapshot).facts
    assert (facts["pg.statement_timeout"].value, facts["pg.lock_timeout"].value) == (30, 3)
    assert facts["pg.statement_timeout"].source.path.endswith("postgresql.conf")
    [host] = lint([snapshot], LintOptions()).hosts
    assert not [warning for warning in host.host_facts.warnings if "its own session" in warning]
    assert {"PGV816", "PGV817"} <= {finding.rule_id for finding in host.findings}
