"""The verdicts issue #29 found wrong, each on a real cluster brought into that state: temporary files of an
index build, swappiness without swap, PGV111's and PGV603's OK lines, kernel findings' provenance, PGV405
beside PGV406, and PGV416 beside PGV955 before and after the restart."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import pgservers
from conftest import require_postgres
from livepg import LiveCluster, running_cluster

pytestmark = pytest.mark.postgres
pytest.importorskip("psycopg", exc_type=ImportError, reason="psycopg, with its libpq, reads the server")

MAJOR = min(pgservers.SUPPORTED_MAJORS)
CONNECTIONS = 10 * (os.cpu_count() or 1) + 150  # above PGV536's max(100, 10 × CPUs)


def pgvet(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pgvet", *args], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "NO_COLOR": "1", "COLUMNS": "120"})


@dataclass(frozen=True)
class Checked:
    text: str  # the check report, while shared_buffers waits for a restart
    document: dict[str, Any]  # the same, JSON
    restarted: dict[str, Any]  # JSON, after the restart

    def findings(self, rule_id: str, document: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        return [finding for finding in (document or self.document)["findings"] if finding["rule_id"] == rule_id]


def _reloaded(cluster: LiveCluster, query: str, expected: list[tuple[Any, ...]]) -> None:
    cluster.sql("SELECT pg_reload_conf()")
    deadline = time.monotonic() + 20
    while cluster.sql(query) != expected:
        assert time.monotonic() < deadline, f"{query} never returned {expected}"
        time.sleep(0.05)


@pytest.fixture(scope="module")
def checked() -> Iterator[Checked]:
    require_postgres(MAJOR)
    with running_cluster(MAJOR) as cluster:
        # Temporary files from a parallel index build only: no query spills.
        cluster.sql("CREATE TABLE big AS SELECT g, md5(g::text) AS h FROM generate_series(1, 200000) g")
        cluster.sql("SET maintenance_work_mem = '1MB'; SET max_parallel_maintenance_workers = 2; "
                    "CREATE INDEX ON big (h)")
        # Set in postgresql.conf and by ALTER SYSTEM (PGV406, not PGV405), and twice in postgresql.conf (PGV405).
        with (cluster.data / "postgresql.conf").open("a") as conf:
            conf.write("checkpoint_timeout = '10min'\ncheckpoint_timeout = '15min'\n")
            # an include beside the configuration directory, not copied (PGV408)
            conf.write("include_if_exists '../beside.conf'\n")

        cluster.sql("ALTER SYSTEM SET max_wal_size = '2GB'")
        # A restart-only change by ALTER SYSTEM, waiting.
        cluster.sql("ALTER SYSTEM SET shared_buffers = '64MB'")
        _reloaded(cluster, "SELECT pending_restart FROM pg_settings WHERE name = 'shared_buffers'", [(True,)])
        text = pgvet("check", "--dsn", cluster.dsn(), "--no-input").stdout
        document = json.loads(pgvet("check", "--dsn", cluster.dsn(), "--no-input", "--format", "json").stdout)
        cluster.restart()
        restarted = json.loads(pgvet("check", "--dsn", cluster.dsn(), "--no-input", "--format", "json").stdout)
    yield Checked(text, document, restarted)


def test_temporary_files_of_an_index_build_do_not_blame_work_mem(checked: Checked) -> None:
    [temp] = checked.findings("PGV951")
    assert temp["values"]["temp_files"] >= 1 and temp["values"]["maintenance_work_mem"] == 64 * 1024 * 1024
    message = " ".join(temp["message"].split())
    assert "maintenance_work_mem" in message and "CREATE INDEX" in message
    assert "maintenance_work_mem" in temp["fix"]["text"]


def test_swappiness_is_not_judged_without_swap(checked: Checked) -> None:
    if any(line.split()[1] != "0" for line in Path("/proc/meminfo").read_text().splitlines()
           if line.startswith("SwapTotal:")):
        pytest.skip("this machine has swap")
    assert not checked.findings("PGV130")
    assert "PGV130" not in checked.text


def test_no_ok_line_claims_huge_pages_are_used(checked: Checked) -> None:
    if int(Path("/proc/sys/vm/nr_hugepages").read_text()) > 0:
        pytest.skip("this machine reserves huge pages")
    # huge_pages = try and no pool: the server runs without huge pages; PGV111 (a pool too small) does not apply.
    assert "PGV111" not in checked.text


def test_synchronous_commit_ok_line_shows_synchronous_commit(checked: Checked) -> None:
    [line] = [line for line in checked.text.splitlines() if "PGV603" in line]
    assert line.startswith("[OK]") and "synchronous_commit = on" in line


def test_kernel_findings_name_the_kernel_files(checked: Checked) -> None:
    """A temporary snapshot's places name where they were read: /proc/sys for a sysctl value, not a line of
    postgresql.conf that a derived value read far down its chain."""
    kernel = [finding for finding in checked.document["findings"]
              if finding["evidence"] and finding["evidence"][0]["fact"].startswith("sysctl.")]
    if not kernel:
        pytest.skip("no kernel setting deserves a finding on this machine")
    blocks = checked.text.split("\n\n")
    for finding in kernel:
        key = finding["evidence"][0]["fact"].removeprefix("sysctl.")
        assert (finding["path"], finding["line"]) == ("/proc/sys/" + key.replace(".", "/"), None)
        [block] = [block for block in blocks if f"{finding['rule_id']} {finding['title']}" in block]
        assert f"at     {finding['path']}" in block
        assert "postgresql.conf" not in block and "pg_settings.json" not in block


def test_a_line_alter_system_overrides_is_not_a_repeat(checked: Checked) -> None:
    # initdb writes both in postgresql.conf, ALTER SYSTEM in postgresql.auto.conf
    assert {finding["subject"] for finding in checked.findings("PGV406")} == {"max_wal_size", "shared_buffers"}
    [repeat] = checked.findings("PGV405")
    assert repeat["subject"] == "checkpoint_timeout" and repeat["values"]["occurrences"] == 2


def test_messages_name_the_servers_files_not_the_temporary_snapshots(checked: Checked) -> None:
    # PGV405 said "at postgresql.conf:822" (the copy's name) and PGV408 resolved '../beside.conf' beside the
    # temporary snapshot (/tmp/pgvet-check-…/beside.conf), where the other findings name the server's files
    [repeat] = checked.findings("PGV405")
    assert f"at {repeat['path']}:{repeat['line']}." in " ".join(repeat["message"].split())
    [beside] = [finding for finding in checked.findings("PGV408") if finding["subject"] == "../beside.conf"]
    expected = os.path.normpath(os.path.join(os.path.dirname(beside["path"]), "../beside.conf"))
    assert f"include outside the snapshot: {expected}; not read" in " ".join(beside["message"].split())
    assert "pgvet-check-" not in checked.text


def test_a_warning_the_restart_brings_is_said_before_it() -> None:
    # max_connections raised in postgresql.conf, not restarted: PGV536 fired only once the server ran it
    require_postgres(MAJOR)
    with running_cluster(MAJOR) as cluster:
        conf = cluster.data / "postgresql.conf"
        conf.write_text(conf.read_text().replace("\nmax_connections = 100", f"\nmax_connections = {CONNECTIONS}", 1))
        _reloaded(cluster, "SELECT pending_restart FROM pg_settings WHERE name = 'max_connections'", [(True,)])
        before = json.loads(pgvet("check", "--dsn", cluster.dsn(), "--no-input", "--format", "json").stdout)
        cluster.restart()
        after = json.loads(pgvet("check", "--dsn", cluster.dsn(), "--no-input", "--format", "json").stdout)
    [pending] = [finding for finding in before["findings"] if finding["rule_id"] == "PGV536"]
    message = " ".join(pending["message"].split())
    assert message.startswith("After applying the values PostgreSQL's configuration files already set")
    assert f"max_connections (100 → {CONNECTIONS})" in message
    [running] = [finding for finding in after["findings"] if finding["rule_id"] == "PGV536"]
    assert running["message"].startswith(f"max_connections = {CONNECTIONS} for ")


def test_restart_pending_is_said_once_and_not_after_the_restart(checked: Checked) -> None:
    [pending] = checked.findings("PGV955")
    assert pending["subject"] == "shared_buffers" and pending["path"].endswith("postgresql.auto.conf")
    assert not checked.findings("PGV416")  # offline only: PGV955 says it on a live server
    assert not [finding for finding in checked.restarted["findings"]
                if finding["rule_id"] in ("PGV416", "PGV955", "PGV903") and finding["subject"] == "shared_buffers"]


def test_a_restart_only_change_not_reloaded_waits_for_a_restart() -> None:
    """A postmaster-context value the files change before any reload (pending_restart is set by a reload) was
    PGV903, 'Reload the configuration', which does not apply it: it waits for a restart, read by a superuser or
    by a pg_monitor role that sees the copied files only; a removed line names the default it brings back."""
    require_postgres(MAJOR)
    with running_cluster(MAJOR) as cluster:
        cluster.sql("CREATE ROLE watcher LOGIN PASSWORD 'w' IN ROLE pg_monitor")
        conf = cluster.data / "postgresql.conf"
        conf.write_text(conf.read_text() + "wal_buffers = '1MB'\n")
        cluster.restart()
        conf.write_text(conf.read_text().replace("wal_buffers = '1MB'\n", ""))
        cluster.sql("ALTER SYSTEM SET shared_buffers = '64MB'")
        documents = [json.loads(pgvet("check", "--dsn", dsn, "--no-input", "--format", "json").stdout)
                     for dsn in (cluster.dsn(), cluster.dsn("watcher", "w"))]
    for document in documents:
        pending = {finding["subject"]: finding for finding in document["findings"] if finding["rule_id"] == "PGV955"}
        assert pending["shared_buffers"]["values"] == {"parameter": "shared_buffers", "in_files": "64MB",
                                                       "running": "128MB"}
        assert pending["wal_buffers"]["values"] == {"parameter": "wal_buffers", "in_files": "-1", "running": "1MB"}
        assert "(the default: its line was removed)" in " ".join(pending["wal_buffers"]["message"].split())
        assert not [finding for finding in document["findings"] if finding["rule_id"] == "PGV903"
                    and finding["subject"] in ("shared_buffers", "wal_buffers")]


def test_an_empty_include_dir_is_no_error(tmp_path: Path) -> None:
    """Debian's postgresql.conf ends with include_dir = 'conf.d', an empty directory: no file was copied from it, so
    the snapshot had no conf.d and every check of such a server said PGV407, 'could not open configuration
    directory' (PostgreSQL will not start), of a server that runs."""
    require_postgres(MAJOR)
    with running_cluster(MAJOR) as cluster:
        (cluster.data / "conf.d").mkdir()
        with (cluster.data / "postgresql.conf").open("a") as conf:
            conf.write("include_dir = 'conf.d'\n")
        pgservers.chown_tree(cluster.data)
        snapshot = tmp_path / "db1"
        checked = json.loads(pgvet("check", "--dsn", cluster.dsn(), "--no-input", "--format", "json",
                                   "--snapshot", str(snapshot)).stdout)
    assert not [finding for finding in checked["findings"] if finding["rule_id"] == "PGV407"]
    assert (snapshot / "conf.d").is_dir() and not list((snapshot / "conf.d").iterdir())
    assert (snapshot / "conf.d").stat().st_mode & 0o777 == 0o700
    manifest = json.loads((snapshot / "collect.json").read_text())
    assert "conf.d" not in {each["name"] for each in manifest["files"]}  # a directory, not a file read


def test_ssl_on_without_its_certificate_is_said_before_the_restart() -> None:
    """ALTER SYSTEM SET ssl = on and a reload with no server.crt: the reload only logs that SSL was not reloaded,
    pg_settings shows ssl = on, and the next start fails ("could not load server certificate file"); pgvet said
    nothing (PGV833's OK line, ssl = true). A file that exists, even one pgvet cannot judge, is not said missing."""
    require_postgres(MAJOR)
    with running_cluster(MAJOR) as cluster:
        cluster.sql("ALTER SYSTEM SET ssl = on")
        _reloaded(cluster, "SELECT setting FROM pg_settings WHERE name = 'ssl'", [("on",)])
        before = json.loads(pgvet("check", "--dsn", cluster.dsn(), "--no-input", "--format", "json").stdout)
        (cluster.data / "server.crt").write_text("")
        (cluster.data / "server.key").symlink_to("/nonexistent/server.key")  # a link: not followed, not judged
        pgservers.chown_tree(cluster.data)
        after = json.loads(pgvet("check", "--dsn", cluster.dsn(), "--no-input", "--format", "json").stdout)
        for name in ("server.crt", "server.key"):
            (cluster.data / name).unlink()  # the stop at teardown needs no certificate, but no stray files either
    [missing] = [finding for finding in before["findings"] if finding["rule_id"] == "PGV966"]
    assert missing["severity"] == "error"
    assert missing["values"]["missing"] == "ssl_cert_file,ssl_key_file"
    assert "ssl_cert_file = server.crt and ssl_key_file = server.key name no file" in " ".join(
        missing["message"].split())
    assert not [finding for finding in after["findings"] if finding["rule_id"] == "PGV966"]


def test_random_page_cost_below_seq_page_cost_for_a_database_is_said() -> None:
    # ALTER DATABASE … SET random_page_cost = 0.5 changed every plan of that database and nothing said it: PGV710
    # judges the server-wide value, which pgvet's own session (in that database) no longer takes for the server's
    require_postgres(MAJOR)
    with running_cluster(MAJOR) as cluster:
        cluster.sql("ALTER DATABASE postgres SET random_page_cost = 0.5")
        checked = json.loads(pgvet("check", "--dsn", cluster.dsn(), "--no-input", "--format", "json").stdout)
    [below] = [finding for finding in checked["findings"] if finding["rule_id"] == "PGV716"]
    assert below["subject"] == "random_page_cost for database postgres"
    assert below["values"] == {"parameter": "random_page_cost", "for": "database postgres", "value": 0.5,
                               "seq_page_cost": 1}
    assert below["fix"]["text"].startswith("ALTER DATABASE postgres RESET random_page_cost")
    assert not [finding for finding in checked["findings"] if finding["rule_id"] == "PGV710"]
