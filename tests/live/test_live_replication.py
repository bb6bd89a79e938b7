"""A primary and its streaming standby (pg_basebackup -R), both real: what pgvet check says of each."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

import pgservers
from livepg import PORT, LiveCluster, running_cluster

pytestmark = pytest.mark.postgres
psycopg = pytest.importorskip("psycopg", exc_type=ImportError, reason="psycopg, with its libpq, reads the server")


def _replicating_major() -> int | None:
    """The first major with pg_basebackup (the npm packages of 12–14 carry only the server) and a replay that
    pauses itself (14+: 12 and 13 shut the standby down instead)."""
    for major in pgservers.SUPPORTED_MAJORS:
        directory = pgservers.bindir(major)
        if major >= 14 and directory is not None and (directory / "pg_basebackup").is_file():
            return major
    return None


MAJOR = _replicating_major()


def pgvet(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pgvet", *args], capture_output=True, text=True, timeout=180,
                          env={**os.environ, "NO_COLOR": "1", "COLUMNS": "120"})


def check(cluster: LiveCluster) -> dict[str, Any]:
    document: dict[str, Any] = json.loads(pgvet("check", "--dsn", cluster.dsn(), "--no-input", "--format",
                                                "json").stdout)
    return document


@contextmanager
def standby_of(primary: LiveCluster) -> Iterator[LiveCluster]:
    """A streaming standby of ``primary`` (pg_basebackup -R, its own socket directory), stopped and removed
    afterwards."""
    assert MAJOR is not None
    with (primary.data / "pg_hba.conf").open("a") as hba:
        hba.write("local replication postgres trust\n")
    primary.sql("SELECT pg_reload_conf()")
    base = pgservers.make_tempdir("pgvet-standby-")
    data = base / "data"
    socket_dir = pgservers.make_tempdir("pgvet-standby-sock-")
    copied = pgservers.run(MAJOR, "pg_basebackup", ["-h", str(primary.socket_dir), "-p", str(PORT), "-U", "postgres",
                                                    "-D", str(data), "-R", "-X", "stream"], timeout=120)
    options = f"-k {socket_dir} -p {PORT} -c listen_addresses=''"
    started = copied.returncode == 0 and pgservers.run(
        MAJOR, "pg_ctl", ["start", "-w", "-t", "60", "-D", str(data), "-l", str(base / "server.log"), "-o", options],
        timeout=90).returncode == 0
    try:
        if not started:
            log = (base / "server.log").read_text(errors="replace") if (base / "server.log").exists() else ""
            pytest.fail(f"the standby did not start: {copied.stderr}\n{log}")
        yield LiveCluster(MAJOR, data, socket_dir, options)
    finally:
        pgservers.run(MAJOR, "pg_ctl", ["stop", "-w", "-m", "immediate", "-D", str(data)], timeout=60)
        shutil.rmtree(base, ignore_errors=True)
        shutil.rmtree(socket_dir, ignore_errors=True)


def replay_state(standby: LiveCluster, wanted: str) -> str:
    """The standby's pg_get_wal_replay_pause_state() once it is ``wanted``, or the last seen after 60 s."""
    state = ""
    for _ in range(120):
        [(state,)] = standby.sql("SELECT pg_get_wal_replay_pause_state()")
        if state == wanted:
            break
        time.sleep(0.5)
    return state


def _raise_max_connections(primary: LiveCluster) -> int:
    """The primary's max_connections raised by 20 with ALTER SYSTEM (not applied yet): the new value."""
    [(primary_connections,)] = primary.sql("SHOW max_connections")
    raised = int(primary_connections) + 20
    primary.sql(f"ALTER SYSTEM SET max_connections = {raised}")
    return raised


def test_a_standby_whose_replay_paused_for_its_primarys_parameters_is_reported() -> None:
    """The primary restarts with more max_connections than its standby has: from 14 the standby pauses replay
    ("hot standby is not possible because of insufficient parameter settings") and runs on, serving ever older
    data, and a resume shuts it down. pgvet said nothing of it; once the standby has as much and restarts, replay
    goes on and the finding clears."""
    if MAJOR is None:
        pytest.skip("no PostgreSQL 14 or later with pg_basebackup")
    with running_cluster(MAJOR) as primary, standby_of(primary) as standby:
        raised = _raise_max_connections(primary)
        primary.restart()
        primary.sql("CREATE TABLE after_the_change (id int)")
        assert replay_state(standby, "paused") == "paused"

        paused = check(standby)
        [finding] = [finding for finding in paused["findings"] if finding["rule_id"] == "PGV967"]
        assert finding["severity"] == "warning"
        assert "paused" in finding["message"] and "max_connections" in finding["fix"]["text"]
        assert not [skipped for skipped in check(primary)["not_evaluated"] if skipped["rule_id"] == "PGV967"]
        assert not [finding for finding in check(primary)["findings"] if finding["rule_id"] == "PGV967"]

        standby.sql(f"ALTER SYSTEM SET max_connections = {raised}")
        standby.restart()
        assert replay_state(standby, "not paused") == "not paused"
        resumed = check(standby)
    assert not [finding for finding in resumed["findings"] if finding["rule_id"] == "PGV967"]
    assert not [skipped for skipped in resumed["not_evaluated"] if skipped["rule_id"] == "PGV967"]


def test_a_slot_lost_to_max_slot_wal_keep_size_is_reported_until_dropped() -> None:
    """max_slot_wal_keep_size caps the WAL an inactive slot holds by invalidating the slot: its standby can never
    resume from it (wal_status lost). PGV961 stops firing then (the slot holds nothing), and pgvet said nothing
    of a standby that must now be rebuilt; dropping the slot clears it."""
    if MAJOR is None:
        pytest.skip("no PostgreSQL 14 or later with pg_basebackup")
    with running_cluster(MAJOR, {"max_slot_wal_keep_size": "32MB", "max_wal_size": "64MB"}) as cluster:
        cluster.sql("SELECT pg_create_physical_replication_slot('gone_standby', true)")
        cluster.sql("CREATE TABLE ledger (id int, pad text)")
        for _ in range(3):
            cluster.sql("INSERT INTO ledger SELECT g, repeat('x', 200) FROM generate_series(1, 200000) g")
            cluster.sql("CHECKPOINT")
        assert cluster.sql("SELECT wal_status FROM pg_replication_slots") == [("lost",)]
        lost = check(cluster)
        cluster.sql("SELECT pg_drop_replication_slot('gone_standby')")
        dropped = check(cluster)
    [finding] = [finding for finding in lost["findings"] if finding["rule_id"] == "PGV968"]
    assert finding["subject"] == "gone_standby" and finding["severity"] == "warning"
    assert "max_slot_wal_keep_size = 32.0 MiB" in finding["message"]
    assert "pg_drop_replication_slot('gone_standby')" in finding["fix"]["text"]
    assert not [finding for finding in dropped["findings"] if finding["rule_id"] == "PGV968"]


def test_a_primary_about_to_restart_with_more_than_its_standbys_is_warned() -> None:
    """max_connections raised in the primary's files, not yet restarted, with a standby streaming from it: the
    restart would pause the standby's replay (PGV967), and pgvet said only that a restart was pending (PGV955).
    Once the standby has as much and the primary has restarted, nothing is pending and nothing pauses."""
    if MAJOR is None:
        pytest.skip("no PostgreSQL 14 or later with pg_basebackup")
    with running_cluster(MAJOR) as primary, standby_of(primary) as standby:
        raised = _raise_max_connections(primary)
        primary.sql("SELECT pg_reload_conf()")
        pending = check(primary)
        standby.sql(f"ALTER SYSTEM SET max_connections = {raised}")
        standby.restart()
        primary.restart()
        primary.sql("CREATE TABLE after_the_change (id int)")
        assert replay_state(standby, "not paused") == "not paused"
        restarted = check(primary)
    [finding] = [finding for finding in pending["findings"] if finding["rule_id"] == "PGV969"]
    assert finding["subject"] == "max_connections" and finding["severity"] == "warning"
    assert f"max_connections = {raised}" in finding["message"] and "1 standby" in finding["message"]
    assert f"at least {raised}" in finding["fix"]["text"]
    assert not [finding for finding in restarted["findings"] if finding["rule_id"] == "PGV969"]
    assert not [skipped for skipped in restarted["not_evaluated"] if skipped["rule_id"] == "PGV969"]


def test_a_slot_cap_larger_than_the_free_wal_space_is_no_cap(tmp_path: Path) -> None:
    """An inactive slot holding WAL under max_slot_wal_keep_size = 1000TB: PGV961 said the cap would invalidate
    the slot before harm, while the WAL filesystem fills long before that, and PostgreSQL stops."""
    if MAJOR is None:
        pytest.skip("no PostgreSQL 14 or later with pg_basebackup")
    config = tmp_path / "pgvet.toml"
    config.write_text('[params.PGV961]\nminimum = "1MB"\n')
    with running_cluster(MAJOR, {"max_slot_wal_keep_size": "1000TB"}) as capped:
        capped.sql("SELECT pg_create_physical_replication_slot('gone_standby', true)")
        capped.sql("CREATE TABLE ledger (id int)")
        capped.sql("INSERT INTO ledger SELECT generate_series(1, 100000)")
        document = json.loads(pgvet("check", "--dsn", capped.dsn(), "--no-input", "--format", "json",
                                    "--config", str(config)).stdout)
    [finding] = [finding for finding in document["findings"] if finding["rule_id"] == "PGV961"]
    assert "fills before the slot is invalidated" in finding["message"]
    assert "max_slot_wal_keep_size = 1000 TiB lets it hold" in finding["message"]


def test_a_disabled_subscription_is_reported_on_its_subscriber() -> None:
    """A logical replication subscriber whose subscription is disabled (by hand, or from 15 by disable_on_error
    after an apply error) applies nothing and lets its publisher's slot hold WAL: pgvet said nothing of it on the
    subscriber. Enabled again, the finding clears."""
    if MAJOR is None:
        pytest.skip("no PostgreSQL 14 or later with pg_basebackup")
    with running_cluster(MAJOR, {"wal_level": "logical"}) as publisher, running_cluster(MAJOR) as subscriber:
        for cluster in (publisher, subscriber):
            cluster.sql("CREATE TABLE orders (id int PRIMARY KEY)")
        publisher.sql("CREATE PUBLICATION shop FOR TABLE orders")
        subscriber.sql(f"CREATE SUBSCRIPTION shop_copy CONNECTION 'host={publisher.socket_dir} port={PORT} "
                       "user=postgres dbname=postgres' PUBLICATION shop")
        enabled_before = check(subscriber)
        subscriber.sql("ALTER SUBSCRIPTION shop_copy DISABLE")
        disabled = check(subscriber)
        subscriber.sql("ALTER SUBSCRIPTION shop_copy ENABLE")
        enabled = check(subscriber)
        subscriber.sql("DROP SUBSCRIPTION shop_copy")
    [finding] = [finding for finding in disabled["findings"] if finding["rule_id"] == "PGV970"]
    assert finding["severity"] == "warning" and "shop_copy" in finding["message"]
    assert "ALTER SUBSCRIPTION shop_copy ENABLE" in finding["fix"]["text"]
    for document in (enabled_before, enabled):
        assert not [finding for finding in document["findings"] if finding["rule_id"] == "PGV970"]
        assert not [skipped for skipped in document["not_evaluated"] if skipped["rule_id"] == "PGV970"]
