"""pgvet check against a real cluster set up to deserve findings: the live-only rules (catalogue M, D7/D8/L3
live), the sectioned report, the JSON output, the kept snapshot linting to the same findings offline,
a pg_monitor role, the questions on a terminal, and no password anywhere."""

from __future__ import annotations

import json
import os
import pty
import select
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

PASSWORD = "Ch3ck-S3cret-quux"
MAJOR = 15  # Debian's, what CI always installs (12 would not reload primary_conninfo)


def pgvet(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pgvet", *args], capture_output=True, text=True, input=stdin,
                          timeout=120, env={**os.environ, "NO_COLOR": "1", "COLUMNS": "120"})


@dataclass(frozen=True)
class Checked:
    cluster: LiveCluster
    report: subprocess.CompletedProcess[str]  # text report, kept snapshot
    snapshot: Path
    document: dict[str, Any]  # check --format json
    monitor: subprocess.CompletedProcess[str]  # as a pg_monitor role, JSON

    def findings(self, rule_id: str) -> list[dict[str, Any]]:
        return [finding for finding in self.document["findings"] if finding["rule_id"] == rule_id]


def _wait_until(cluster: LiveCluster, query: str, expected: list[tuple[Any, ...]]) -> None:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if cluster.sql(query) == expected:
            return
        time.sleep(0.05)
    pytest.fail(f"{query} never returned {expected}")


@pytest.fixture(scope="module")
def checked(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Checked]:
    require_postgres(MAJOR)
    settings = {"max_connections": "12", "checkpoint_completion_target": "0.5"}
    with running_cluster(MAJOR, settings) as cluster:
        cluster.sql(f"CREATE ROLE watcher LOGIN PASSWORD '{PASSWORD}' IN ROLE pg_monitor")
        # Temporary files: a sort larger than work_mem.
        cluster.sql("CREATE TABLE big AS SELECT g, md5(g::text) AS h FROM generate_series(1, 100000) g")
        cluster.sql("SET work_mem = '64kB'; SELECT count(*) FROM (SELECT * FROM big ORDER BY h) sorted")
        # Requested checkpoints: every CHECKPOINT command counts as one, which no larger max_wal_size prevents.
        for _ in range(10):
            cluster.sql("CHECKPOINT")
        # The files now say something else than what runs: a reload-able change and a restart-only one
        # (not reloaded), then an invalid line that pg_file_settings reports.
        with (cluster.data / "postgresql.conf").open("a") as conf:
            conf.write("random_page_cost = 1.1\nshared_buffers = '256MB'\n")
        cluster.sql("SELECT pg_reload_conf()")
        _wait_until(cluster, "SELECT pending_restart FROM pg_settings WHERE name = 'shared_buffers'", [(True,)])
        with (cluster.data / "postgresql.conf").open("a") as conf:
            conf.write("effective_io_concurrency = 'lots'\nwork_mem = '32MB'\nshared_buffer = '1GB'\n")
        # Connections: 9 more sessions of 12 (the limit, 3 reserved for superusers).
        import psycopg

        sessions = [psycopg.connect(cluster.dsn()) for _ in range(9)]
        try:
            snapshot = tmp_path_factory.mktemp("check") / "db1"
            report = pgvet("check", "--dsn", cluster.dsn(), "--no-input", "--snapshot", str(snapshot), "--verbose")
            document = json.loads(pgvet("check", "--dsn", cluster.dsn(), "--no-input", "--format", "json").stdout)
        finally:
            for session in sessions:
                session.close()
        monitor = pgvet("check", "--dsn", cluster.dsn("watcher", PASSWORD), "--no-input", "--format", "json")
        yield Checked(cluster, report, snapshot, document, monitor)


def test_live_rules_fire_on_what_the_cluster_deserves(checked: Checked) -> None:
    [connections] = checked.findings("PGV950")
    assert connections["values"]["max_connections"] == 12
    assert connections["values"]["connections"] >= 10  # the 9 sessions and pgvet's own
    [temp_files] = checked.findings("PGV951")
    assert temp_files["values"]["temp_files"] >= 1 and temp_files["values"]["temp_bytes"] > 1024 * 1024
    assert not checked.findings("PGV953")  # the checkpoints CHECKPOINT commands requested (test_live_checkpoints)


def test_drift_between_files_and_server(checked: Checked) -> None:
    [restart] = checked.findings("PGV955")
    assert restart["subject"] == "shared_buffers"
    assert restart["values"] == {"parameter": "shared_buffers", "in_files": "256MB", "running": "128MB"}
    assert restart["path"].endswith("postgresql.conf")
    drifted = {finding["subject"]: finding for finding in checked.findings("PGV903")}
    assert "random_page_cost" not in drifted  # reloaded: the server runs with the file's value
    assert drifted["work_mem"]["values"] == {"parameter": "work_mem", "in_files": "32MB", "running": "4MB"}
    assert drifted["work_mem"]["severity"] == "info"


def test_file_the_server_refuses_is_an_error_at_its_line(checked: Checked) -> None:
    # pg_file_settings names an unknown parameter, and then checks no value (every line not applied, no
    # error): pgvet finds the invalid value in the copied file instead.
    [refused] = checked.findings("PGV956")
    assert refused["severity"] == "error" and refused["subject"] == "shared_buffer"
    assert "unrecognized configuration parameter" in refused["message"]
    conf = Path(refused["path"])
    assert conf.read_text().splitlines()[refused["line"] - 1] == "shared_buffer = '1GB'"
    [invalid] = [finding for finding in checked.findings("PGV403") if finding["subject"] == "effective_io_concurrency"]
    assert invalid["severity"] == "error"
    assert invalid["path"].endswith("postgresql.conf") and invalid["line"] == refused["line"] - 2



def test_temporary_snapshot_places_point_at_the_servers_files(checked: Checked) -> None:
    """Without --snapshot the copies are removed: a finding on a copied file names the server's file (the
    copies keep every line where it was), not a place in a directory that no longer exists."""
    conf = (checked.cluster.data / "postgresql.conf").resolve()
    [invalid] = [finding for finding in checked.findings("PGV403") if finding["subject"] == "effective_io_concurrency"]
    assert Path(invalid["path"]).resolve() == conf
    assert conf.read_text().splitlines()[invalid["line"] - 1] == "effective_io_concurrency = 'lots'"
    assert all("pgvet-check-" not in str(finding["path"]) for finding in checked.document["findings"]
               if finding["path"] and not finding["path"].endswith(("pg_settings.json", ".txt", ".json")))
    text = pgvet("check", "--dsn", checked.cluster.dsn(), "--no-input", "--select", "PGV403").stdout
    assert f"at     {conf}:{invalid['line']}" in text, text

def test_report_has_sections_verdicts_and_values(checked: Checked) -> None:
    text = checked.report.stdout
    assert checked.report.returncode == 1, checked.report.stderr
    for section in ("== Huge pages ==", "== Configuration files ==", "== WAL and checkpoints ==", "== Memory ==",
                    "== Connections and activity ==", "== OS =="):
        assert section in text
    for verdict in ("[BAD]    PGV956", "[BAD]    PGV403", "[WARN]   PGV950", "[WARN]   PGV604"):
        assert verdict in text
    assert "[OK]" in text and "checkpoint_completion_target = 0.5" in text
    assert "not asked (--no-input): storage, raid, workload, dedicated" in text
    assert f"snapshot kept in {checked.snapshot}" in text


def test_kept_snapshot_lints_offline_to_the_same_findings(checked: Checked) -> None:
    offline = json.loads(pgvet("lint", str(checked.snapshot), "--format", "json").stdout)
    check = json.loads(pgvet("check", "--no-input", "--format", "json", "--snapshot",
                             str(checked.snapshot.parent / "again"), "--dsn", checked.cluster.dsn()).stdout)

    def keyed(document: dict[str, Any]) -> dict[tuple[str, str | None], str]:
        return {(finding["rule_id"], finding.get("subject")): finding["severity"] for finding in document["findings"]}

    # The same rules on the same subjects; the second check differs only in what changed meanwhile.
    first_check = keyed(checked.document)
    assert keyed(offline).keys() - {("PGV950", None), ("PGV951", None), ("PGV953", None)} == \
        first_check.keys() - {("PGV950", None), ("PGV951", None), ("PGV953", None)}
    assert {rule for rule, _ in keyed(check)} >= {"PGV956", "PGV955", "PGV903"}
    # And exactly the same findings, values included, from the snapshot that check kept.
    kept_again = json.loads(pgvet("lint", str(checked.snapshot), "--format", "json").stdout)
    assert kept_again["findings"] == offline["findings"]


def test_kept_snapshot_equals_check_json(tmp_path: Path) -> None:
    require_postgres(MAJOR)
    with running_cluster(MAJOR, {"checkpoint_completion_target": "0.5"}) as cluster:
        snapshot = tmp_path / "db2"
        checked_now = json.loads(pgvet("check", "--dsn", cluster.dsn(), "--no-input", "--format", "json",
                                       "--snapshot", str(snapshot)).stdout)
    offline = json.loads(pgvet("lint", str(snapshot), "--format", "json").stdout)
    assert checked_now["findings"] == offline["findings"]
    assert checked_now["findings"]


def test_pg_monitor_role_checks_and_says_what_it_missed(checked: Checked) -> None:
    assert checked.monitor.returncode in (0, 1), checked.monitor.stderr
    document = json.loads(checked.monitor.stdout)
    warnings = document["hosts"][0].get("warnings", [])
    assert any("pg_file_settings" in warning for warning in warnings), warnings
    rule_ids = {finding["rule_id"] for finding in document["findings"]}
    assert "PGV951" in rule_ids and "PGV956" not in rule_ids  # no pg_file_settings for pg_monitor


def test_no_password_in_any_output(checked: Checked) -> None:
    assert PASSWORD not in checked.monitor.stdout + checked.monitor.stderr
    for file in checked.snapshot.rglob("*"):
        if file.is_file():
            assert PASSWORD not in file.read_text(errors="replace")


def test_unreachable_server_is_a_one_line_error(tmp_path: Path) -> None:
    done = pgvet("check", "--dsn", f"host={tmp_path} port=1 user=nobody password={PASSWORD}", "--no-input",
                 "--timeout", "2")
    assert done.returncode == 2
    notice, error = done.stderr.splitlines()
    # the password on the command line is in the process list for every user to read (ps): said
    assert notice.startswith("pgvet: notice: --dsn holds a password") and "~/.pgpass" in notice
    assert error.startswith("pgvet: error: cannot connect to PostgreSQL") and "Traceback" not in done.stderr
    assert PASSWORD not in done.stderr + done.stdout
    done = pgvet("check", "--dsn", f"host={tmp_path} port=1 user=nobody", "--no-input", "--timeout", "2")
    assert done.returncode == 2 and "notice" not in done.stderr


def test_answers_file_is_used_and_checked(tmp_path: Path) -> None:
    require_postgres(MAJOR)
    answers = tmp_path / "host.yaml"
    answers.write_text("storage: ssd\nraid: {level: 10, disks: 4}\nworkload: oltp\ndedicated: true\n")
    bad = tmp_path / "bad.yaml"
    bad.write_text("storage: ssd\nstorrage: hdd\n")
    with running_cluster(MAJOR) as cluster:
        done = pgvet("check", "--dsn", cluster.dsn(), "--no-input", "--answers", str(answers), "--format", "json")
        refused = pgvet("check", "--dsn", cluster.dsn(), "--no-input", "--answers", str(bad))
    rule_ids = {finding["rule_id"] for finding in json.loads(done.stdout)["findings"]}
    assert "PGV701" in rule_ids  # random_page_cost = 4 on SSD
    assert refused.returncode == 2 and f"{bad}:2" in refused.stderr and "did you mean 'storage'" in refused.stderr


def _run_on_terminal(args: list[str], answers: list[str], cwd: Path) -> tuple[int, str]:
    """Run pgvet with a pseudo-terminal as standard input and error, answering each prompt in turn."""
    controller, terminal = pty.openpty()
    # standard output to a file: a report larger than a pipe's buffer, never read while the dialogue goes on,
    # would block pgvet until the deadline
    with open(cwd / "stdout.txt", "wb") as output:
        process = subprocess.Popen([sys.executable, "-m", "pgvet", *args], stdin=terminal, stderr=terminal,
                                   stdout=output, cwd=cwd, env={**os.environ, "NO_COLOR": "1"})
    os.close(terminal)
    seen = b""
    pending = list(answers)
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        ready, _, _ = select.select([controller], [], [], 0.2)
        if ready:
            try:
                chunk = os.read(controller, 4096)
            except OSError:
                break
            seen += chunk
            if pending and (seen.rstrip().endswith(b":") or seen.rstrip().endswith(b"]:")):
                os.write(controller, (pending.pop(0) + "\n").encode())
                seen += b"\n"
        elif process.poll() is not None:
            break
    code = process.wait(timeout=30)
    os.close(controller)
    return code, seen.decode(errors="replace")


@pytest.mark.slow  # a whole dialogue on a pseudo-terminal, with a real cluster
def test_questions_on_a_terminal_and_saved_answers(tmp_path: Path) -> None:
    require_postgres(MAJOR)
    with running_cluster(MAJOR) as cluster:
        # storage, RAID level, disks, workload, dedicated, save?, file name
        code, dialogue = _run_on_terminal(["check", "--dsn", cluster.dsn(), "--format", "json"],
                                          ["nvme", "10", "6", "oltp", "no", "y", "answers.yaml"], tmp_path)
    assert code in (0, 1), dialogue
    assert "Storage that holds the data directory" in dialogue and "RAID level" in dialogue
    saved = (tmp_path / "answers.yaml").read_text()
    assert "storage: nvme" in saved and "level: 10" in saved and "disks: 6" in saved
    assert "workload: oltp" in saved and "dedicated: false" in saved


@pytest.mark.parametrize("major", [major for major in pgservers.SUPPORTED_MAJORS if major >= 17])
def test_huge_pages_try_that_fell_back(major: int) -> None:
    require_postgres(major)
    if int(Path("/proc/sys/vm/nr_hugepages").read_text()) > 0:
        pytest.skip("this machine reserves huge pages: PostgreSQL may get them")
    with running_cluster(major) as cluster:
        # in postgresql.conf: a value from the postmaster's command line (-c) is one no fix can change
        with (cluster.data / "postgresql.conf").open("a") as conf:
            conf.write("huge_pages = try\n")
        cluster.restart()
        done = pgvet("check", "--dsn", cluster.dsn(), "--no-input", "--format", "json", "--select", "PGV954")
        pages = cluster.sql("SHOW shared_memory_size_in_huge_pages")[0][0]
    [finding] = json.loads(done.stdout)["findings"]
    # PostgreSQL's own count replaces pgvet's estimate when the server gives it.
    assert finding["values"]["needed"] == int(pages) and finding["values"]["pool"] == 0
    assert finding["fix"]["postgresql"] == {"huge_pages": "on"}
    assert finding["fix"]["alter_system"] == ["ALTER SYSTEM SET huge_pages = 'on';"]


def test_invalid_value_the_server_cannot_apply_is_refused_without_the_files(pg_major: int, tmp_path: Path) -> None:
    """pg_file_settings says "setting could not be applied" both for a restart-only change and for an
    invalid value (when no unknown parameter stops its check first): only the first waits for a restart.
    Without the copied files (a remote server), pg_file_settings is all that shows the invalid line."""
    with running_cluster(pg_major) as cluster:
        with (cluster.data / "postgresql.conf").open("a") as conf:
            conf.write("seq_page_cost = 'abc'\nshared_buffers = '256MB'\n")
        cluster.sql("SELECT pg_reload_conf()")
        _wait_until(cluster, "SELECT pending_restart FROM pg_settings WHERE name = 'shared_buffers'", [(True,)])
        rows = cluster.sql("SELECT name, error FROM pg_file_settings WHERE error IS NOT NULL ORDER BY name")
        assert rows == [("seq_page_cost", "setting could not be applied"),
                        ("shared_buffers", "setting could not be applied")]
        snapshot = tmp_path / "db3"
        assert pgvet("collect", "--dsn", cluster.dsn(), "--output", str(snapshot)).returncode == 0
    for copied in ("postgresql.conf", "postgresql.auto.conf"):  # as for a server on another machine
        (snapshot / copied).unlink()
    document = json.loads(pgvet("lint", str(snapshot), "--format", "json").stdout)
    by_rule = {(finding["rule_id"], finding["subject"]): finding for finding in document["findings"]}
    refused = by_rule[("PGV956", "seq_page_cost")]
    assert refused["severity"] == "error" and refused["path"].endswith("postgresql.conf")
    assert 'invalid value for parameter "seq_page_cost": "abc"' in refused["message"]
    assert ("PGV956", "shared_buffers") not in by_rule and ("PGV955", "shared_buffers") in by_rule


def test_internal_parameter_in_the_files_is_refused(pg_major: int, tmp_path: Path) -> None:
    """wal_segment_size in postgresql.conf: the reload refuses it ("setting could not be applied" in
    pg_file_settings, "cannot be changed" in the log) and SHOW keeps the cluster's value; pgvet says so from
    pg_file_settings (PGV956) and from the file (PGV420)."""
    with running_cluster(pg_major) as cluster:
        with (cluster.data / "postgresql.conf").open("a") as conf:
            conf.write("wal_segment_size = '32MB'\n")
        cluster.sql("SELECT pg_reload_conf()")
        _wait_until(cluster, "SELECT error FROM pg_file_settings WHERE name = 'wal_segment_size'",
                    [("setting could not be applied",)])
        assert cluster.sql("SHOW wal_segment_size") == [("16MB",)]
        snapshot = tmp_path / "db5"
        assert pgvet("collect", "--dsn", cluster.dsn(), "--output", str(snapshot)).returncode == 0
    document = json.loads(pgvet("lint", str(snapshot), "--format", "json").stdout)
    by_rule = {(finding["rule_id"], finding["subject"]): finding for finding in document["findings"]}
    refused = by_rule[("PGV956", "wal_segment_size")]
    assert refused["severity"] == "error" and refused["path"].endswith("postgresql.conf")
    assert 'parameter "wal_segment_size" cannot be changed' in refused["message"]
    assert by_rule[("PGV420", "wal_segment_size")]["path"].endswith("postgresql.conf")


@pytest.mark.parametrize(("options", "message"), [
    (["--format", "bogus"], "unknown --format 'bogus'"),
    (["--format", "json", "--format", "sarif"], "only one --format can go to standard output"),
    (["--format", "json", "--output", "a.json", "--output", "b.json"], "each --output needs its --format"),
])
def test_bad_report_options_fail_before_anything_is_collected(options: list[str], message: str,
                                                              tmp_path: Path) -> None:
    """A typo in --format must not cost a collection, nor leave a --snapshot directory that the corrected
    command then refuses as not empty."""
    snapshot = tmp_path / "db4"
    done = pgvet("check", "--dsn", f"host={tmp_path} port=1 user=nobody", "--no-input", "--snapshot", str(snapshot),
                 *options)
    assert done.returncode == 2
    assert done.stderr.startswith("pgvet: error: ") and message in done.stderr, done.stderr
    assert not snapshot.exists()


def test_saved_answers_are_private_and_never_written_through_a_link(tmp_path: Path) -> None:
    from pgvet.errors import PgvetError
    from pgvet.live.check import _save

    _save(tmp_path / "answers.yaml", "storage: ssd\n")
    assert (tmp_path / "answers.yaml").stat().st_mode & 0o777 == 0o600
    victim = tmp_path / "victim"
    victim.write_text("kept\n")
    (tmp_path / "link.yaml").symlink_to(victim)
    with pytest.raises(PgvetError):
        _save(tmp_path / "link.yaml", "storage: ssd\n")
    assert victim.read_text() == "kept\n"


def test_pg_stat_statements_settings_are_read_and_its_shared_memory_counted(tmp_path: Path) -> None:
    """Its settings were redacted as custom ones (***): pg_size_bytes('***') made the memory rules not evaluated,
    and crashed the fix of a target that changes shared memory (the estimate then reads pg_stat_statements.max)."""
    require_postgres(MAJOR)
    settings = {"shared_preload_libraries": "pg_stat_statements", "pg_stat_statements.max": "7000",
                "shared_buffers": "16MB"}
    with running_cluster(MAJOR, settings) as cluster:
        snapshot = tmp_path / "db3"
        done = pgvet("check", "--dsn", cluster.dsn(), "--no-input", "--format", "json", "--snapshot", str(snapshot))
    assert done.returncode == 1 and "internal error" not in done.stderr, done.stderr
    document = json.loads(done.stdout)
    assert not [skipped for skipped in document["not_evaluated"] if "***" in json.dumps(skipped)]
    rows = {row["name"]: row for row in json.loads((snapshot / "pg_settings.json").read_text())["settings"]}
    assert rows["pg_stat_statements.max"]["setting"] == "7000"
    facts = pgvet("facts", str(snapshot), "--format", "json")
    assert '"pg.pg_stat_statements.max"' in facts.stdout


def test_settings_hidden_from_a_plain_role_are_the_files_not_the_defaults(tmp_path: Path) -> None:
    """pg_settings hides superuser-only parameters from a role without pg_read_all_settings: they took their boot
    value (shared_preload_libraries = '', so "pg_stat_statements is not loaded" on a server that loads it)."""
    require_postgres(MAJOR)
    with running_cluster(MAJOR) as cluster:
        with (cluster.data / "postgresql.conf").open("a") as conf:
            conf.write("shared_preload_libraries = 'pg_stat_statements'\n")
        cluster.restart()
        cluster.sql(f"CREATE ROLE plain LOGIN PASSWORD '{PASSWORD}'")
        snapshot = tmp_path / "plain"
        done = pgvet("check", "--dsn", cluster.dsn("plain", PASSWORD), "--no-input", "--format", "json",
                     "--snapshot", str(snapshot))
    assert "PGV811" not in {finding["rule_id"] for finding in json.loads(done.stdout)["findings"]}
    fact = json.loads(pgvet("facts", str(snapshot), "--format", "json").stdout)["facts"]["pg.shared_preload_libraries"]
    assert fact["value"] == "pg_stat_statements" and fact["source"]["path"].endswith("postgresql.conf")


def test_answers_given_and_none_asked_are_written_as_they_are(tmp_path: Path) -> None:
    from pgvet.errors import ParseError
    from pgvet.live.check import load_answers, render_answers

    given = tmp_path / "answers.yaml"
    given.write_text("# rack 4\nstorage: ssd   # the SAN was retired\nraid: {level: 10, disks: 4}\n")
    text, keys = load_answers(given)
    assert keys == ["storage", "raid"]
    assert render_answers(text, {}) == given.read_text()
    merged = render_answers(text, {"workload": "oltp", "dedicated": True})
    assert "# the SAN was retired" in merged and merged.endswith("workload: oltp\ndedicated: true\n")
    assert render_answers(None, {"storage": "hdd"}) == "storage: hdd\n"
    (tmp_path / "bad.yaml").write_text("storage: ssd\nraid: {level: 7}\n")
    with pytest.raises(ParseError) as refused:
        load_answers(tmp_path / "bad.yaml")
    assert refused.value.source.line == 2
