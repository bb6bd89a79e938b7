"""Run postgresqltuner.pl and ``pgvet check`` on the same real cluster and print the comparison, check by check.

    python scripts/compare_postgresqltuner.py [--major 15] [--tuner PATH] [--runs 11]

postgresqltuner.pl is not part of pgvet: give its path with --tuner or PGVET_POSTGRESQLTUNER, else it is
downloaded from its repository (without network and without a copy, the script says so and exits 0). It
needs Perl with DBI and DBD::Pg (Debian: libdbd-pg-perl). The cluster is a fresh one of the given major
(scripts/pgservers.py), configured to deserve findings, with a little activity (a sort that spills to
temporary files, forced checkpoints, open sessions, a planner method disabled for a database, a prepared
transaction, an invalid index, a replication slot nothing consumes). Both are timed over ``--runs``
interleaved runs (medians; each a new process, as a user runs them): the time until it ends, and the CPU time
of the process itself (user and system), which a busy machine stretches less; the server's own work is in
the first only. Prints Markdown: the cluster's
settings, the times, and one row per postgresqltuner check with both verdicts (docs/postgresqltuner.md keeps
a run).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import NamedTuple

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench
import pgservers

TUNER_URL = "https://raw.githubusercontent.com/jfcoz/postgresqltuner/master/postgresqltuner.pl"
PORT = 5432
# Written to postgresql.conf before the start, so that both tools see them where an administrator would.
SETTINGS = {
    "max_connections": "20",
    "superuser_reserved_connections": "0",
    "checkpoint_completion_target": "0.5",
    "autovacuum": "off",
    "password_encryption": "md5",
    "log_statement": "all",
    "synchronize_seqscans": "off",
    "enable_nestloop": "off",
    "maintenance_work_mem": "16MB",
    "random_page_cost": "4",
    "log_min_duration_statement": "-1",
    "max_prepared_transactions": "2",
}
# What both tools are told about the host (postgresqltuner: --ssd).
ANSWERS = "storage: ssd\nworkload: oltp\ndedicated: true\n"
LINE = re.compile(r"^\[(OK|WARN|BAD|INFO|UNKNOWN)\]\s+(.*)$")

# postgresqltuner's checks (in the order of its report), the pattern of its verdict line, the pgvet rules
# that answer the same question, and a note on who is right. docs/postgresqltuner.md explains each.
CHECKS: tuple[tuple[str, str, tuple[str, ...], str], ...] = (
    ("reporting account is superuser", r"superuser rights", (),
     "pgvet needs no superuser: pg_monitor reads all but pg_file_settings, which one grant adds (EXECUTE on "
     "pg_show_all_file_settings()); what a role cannot read, pgvet says, with the grant"),
    ("vm.overcommit_memory = 2", r"overcommitment is allowed|vm.overcommit_memory is adequate", ("PGV101",),
     "same verdict; pgvet also checks the resulting CommitLimit (PGV102-105)"),
    ("vm.overcommit_ratio", r"overcommit_ratio is too", ("PGV103", "PGV104"),
     "postgresqltuner judges the ratio when overcommit_memory ≠ 2, where the kernel ignores it; pgvet judges "
     "the CommitLimit the ratio gives, in strict mode, and suggests a ratio"),
    ("hypervisor", r"hypervisor|physical machine", ("PGV301",), "same"),
    ("I/O scheduler", r"scheduler", ("PGV212", "PGV217"),
     "both flag CFQ in a VM (pgvet on the disks that hold PGDATA); pgvet also flags bfq/cfq on solid-state disks"),
    ("SSD or not", r"--ssd|SSD storage", ("PGV213", "PGV701", "PGV702"),
     "postgresqltuner needs --ssd; pgvet asks (or reads host.yaml) and cross-checks the rotational flag"),
    ("version", r"PostreSQL (major )?version|Development Snapshot|unsupported", ("PGV841",),
     "postgresqltuner calls 15 'the latest major version' (its table stops at 13); pgvet knows each major's "
     "end of life"),
    ("uptime under a day", r"Uptime less than", (), "pgvet's live rules need a minimum of activity instead"),
    ("pg_stat_statements", r"pg_stat_statements", ("PGV811",), "same"),
    ("accounts expiring within 7 days", r"expire", (), "not covered (roles, not configuration)"),
    ("password = user name", r"password=username", (), "not covered (needs superuser to read pg_authid)"),
    ("password_encryption", r"[Pp]assword encryption", ("PGV831",),
     "postgresqltuner only tests on/off (md5 passes as 'enabled'); pgvet flags md5"),
    ("connections in use (70 % / 90 %)", r"used connections|connections slots|connection slots", ("PGV950",),
     "pgvet warns from 80 % of the slots open to ordinary roles (max_connections less the reserved ones), says so "
     "with the numbers and suggests a pooler"),
    ("superuser_reserved_connections", r"reserved for (the )?super ?user", ("PGV537",), "same"),
    ("average connection age", r"average connection age", (), "not covered"),
    ("pre/post_auth_delay", r"auth_delay", ("PGV812",), "same"),
    ("maintenance_work_mem ≤ 64 MB", r"maintenance_work_mem is less", ("PGV535",),
     "pgvet suggests a size from RAM and only on hosts of 8 GB or more"),
    ("maximum memory use vs RAM", r"maximum amount of memory|may try to use more than (the amount of RAM|80%)|"
     r"potential max memory|will not use more than 60%", ("PGV530",),
     "postgresqltuner assumes 150 % of work_mem per connection against RAM; pgvet sums shared memory and "
     "work_mem × (connections + parallel workers) × hash_mem_multiplier against the kernel's CommitLimit"),
    ("shared_buffers > 40 % of RAM", r"40% of the amount of RAM", ("PGV501",), "same threshold"),
    ("shared_buffers vs databases' size", r"too big for the total databases size", ("PGV957",),
     "postgresqltuner warns on any server larger than 1.4 × its data, even the 128 MB default; pgvet from "
     "1 GB and twice the data"),
    ("effective_cache_size", r"effective_cache_size", ("PGV533", "PGV534"), "same questions"),
    ("huge pages", r"Huge Pages|huge_pages", ("PGV110", "PGV111", "PGV112", "PGV954"),
     "postgresqltuner sizes the pool from its own backend's VmPeak and says 'huge_pages=on' for try; pgvet uses "
     "PostgreSQL's shared_memory_size_in_huge_pages and warns only where huge pages matter (8 GB+, or a "
     "fallback PostgreSQL 17 reports)"),
    ("log_hostname", r"log_hostname", ("PGV810",), "same"),
    ("slow query logging", r"[Ll]og of long queries|log_min_duration_statement|Long queries", ("PGV805",), "same"),
    ("log_statement", r"log_statement", ("PGV813",),
     "postgresqltuner also warns on 'mod' (a common audit setting); pgvet on 'all'"),
    ("prepared transactions", r"two-phase", ("PGV962",),
     "postgresqltuner warns while any exists; pgvet names each one older than 5 minutes, its age in seconds and "
     "transactions, and the COMMIT/ROLLBACK PREPARED that ends it"),
    ("autovacuum", r"autovacuum is", ("PGV801",), "same"),
    ("checkpoint_completion_target", r"checkpoint_completion_target|Checkpoint_completion_target", ("PGV604",),
     "postgresqltuner still calls 0.5 the default (0.9 since PostgreSQL 14)"),
    ("fsync", r"fsync is", ("PGV601",), "same"),
    ("wal_sync_method", r"wal_sync_method", (),
     "on macOS only, postgresqltuner asks for fsync_writethrough; pgvet is for Linux hosts, where the default is safe"),
    ("synchronize_seqscans", r"synchronize_seqscans", ("PGV715",), "same"),
    ("wal_level minimal", r"wal_level", ("PGV606",), "same"),
    ("I/O cost settings changed", r"I/O cost settings", ("PGV706",), "pgvet judges each against the storage"),
    ("random_page_cost vs storage", r"random_page_cost", ("PGV701", "PGV702"), "same question"),
    ("planner methods disabled", r"plan features", ("PGV705", "PGV709"),
     "postgresqltuner reads its own session (a database's or role's setting looks global) and counts "
     "enable_partitionwise_* (off by default) as disabled: BAD on every server; pgvet judges the files (PGV705) "
     "and each ALTER DATABASE / ALTER ROLE … SET at its scope (PGV709)"),
    ("tablespaces in PGDATA", r"tablespace", (), "not covered"),
    ("buffer cache hit rate", r"hit rate", ("PGV952",), "same question; pgvet reads pg_stat_database"),
    ("invalid and unused indexes", r"invalid index|unused indexes", ("PGV964",),
     "both see the connected database's invalid indexes; unused indexes are not covered by pgvet (schema "
     "statistics, not configuration)"),
    ("functions with default costs", r"procedures", (), "not covered (schema, not configuration)"),
)


def locate_tuner(given: str | None) -> Path | None:
    path = given or os.environ.get("PGVET_POSTGRESQLTUNER")
    if path:
        return Path(path)
    target = Path(tempfile.gettempdir()) / "postgresqltuner.pl"
    if target.exists():
        return target
    try:
        with urllib.request.urlopen(TUNER_URL, timeout=10) as response:
            target.write_bytes(response.read())
    except OSError as error:
        print(f"postgresqltuner.pl is not available ({error}): give its path with --tuner; comparison skipped")
        return None
    return target


@contextmanager
def cluster(major: int) -> Iterator[tuple[Path, Path]]:
    """A started cluster with SETTINGS in its postgresql.conf: (data directory, socket directory)."""
    data = pgservers.fresh_cluster(major)
    with (data / "postgresql.conf").open("a") as conf:
        conf.write("".join(f"{name} = '{value}'\n" for name, value in SETTINGS.items()))
    socket_dir = pgservers.make_tempdir("pgvet-compare-sock-")
    pgservers.chown_tree(data)
    options = f"-k {socket_dir} -p {PORT} -c listen_addresses=''"
    started = pgservers.run(major, "pg_ctl", ["start", "-w", "-t", "60", "-D", str(data), "-l",
                                              str(data.parent / "server.log"), "-o", options], timeout=90)
    if started.returncode != 0:
        raise SystemExit(f"PostgreSQL {major} did not start: {started.stderr}")
    try:
        yield data, socket_dir
    finally:
        pgservers.run(major, "pg_ctl", ["stop", "-w", "-m", "immediate", "-D", str(data)], timeout=60)
        shutil.rmtree(data.parent, ignore_errors=True)
        shutil.rmtree(socket_dir, ignore_errors=True)


def activity(dsn: str) -> list[object]:
    """A sort that spills to disk, ten forced checkpoints, a planner method disabled for the database, a
    prepared transaction, an invalid index, a slot nothing consumes; returns five open sessions (close them
    after; the prepared transaction is left to the cluster's removal)."""
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as connection:
        connection.execute("CREATE TABLE big AS SELECT g, md5(g::text) AS h FROM generate_series(1, 200000) g")
        connection.execute("SET work_mem = '64kB'")
        connection.execute("SELECT count(*) FROM (SELECT * FROM big ORDER BY h) sorted")
        for _ in range(10):
            connection.execute("CHECKPOINT")
        connection.execute("ALTER DATABASE postgres SET enable_hashjoin = off")
        connection.execute("CREATE TABLE dupes AS SELECT 1 AS x FROM generate_series(1, 2)")
        with contextlib.suppress(psycopg.errors.UniqueViolation):  # the failure leaves the index invalid
            connection.execute("CREATE UNIQUE INDEX CONCURRENTLY dupes_x ON dupes (x)")
        connection.execute("SELECT pg_create_physical_replication_slot('gone_standby', true)")
    with psycopg.connect(dsn) as preparing:
        preparing.execute("INSERT INTO big VALUES (0, 'prepared')")
        preparing.execute("PREPARE TRANSACTION 'forgotten'")
        preparing.commit()
    return [psycopg.connect(dsn) for _ in range(5)]


class Timing(NamedTuple):
    seconds: float  # until the process ended
    cpu: float  # the process's user and system CPU time


def timed(argv: list[str], cwd: str | None = None) -> tuple[Timing, subprocess.CompletedProcess[str]]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300, cwd=cwd)
    seconds = time.monotonic() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)  # the child is waited for: its usage is counted
    return Timing(seconds, after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime), done


def medians(timings: list[Timing]) -> Timing:
    return Timing(statistics.median(each.seconds for each in timings), statistics.median(each.cpu for each in timings))


def pgvet_verdicts(snapshot: Path) -> dict[str, str]:
    """rule id → fired (severity) / passed / not evaluated, for the kept snapshot (the same as check's)."""
    from pgvet.run.lint import lint
    from pgvet.run.options import LintOptions

    [host] = lint([snapshot], LintOptions(record_passes=True)).hosts
    verdicts: dict[str, str] = {}
    for skipped in host.not_evaluated:
        verdicts[skipped.rule_id] = "not evaluated"
    for passed in host.passed or []:
        verdicts[passed.rule_id] = "passed"
    for finding in host.findings:
        verdicts[finding.rule_id] = f"**{finding.severity}**"
    return verdicts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--major", type=int, default=min(pgservers.SUPPORTED_MAJORS))
    parser.add_argument("--tuner", help="path of postgresqltuner.pl")
    parser.add_argument("--runs", type=int, default=11, help="timed runs of each, interleaved (medians)")
    options = parser.parse_args()
    tuner = locate_tuner(options.tuner)
    if tuner is None:
        return
    if pgservers.bindir(options.major) is None:
        raise SystemExit(f"PostgreSQL {options.major} is not installed")
    with cluster(options.major) as (_, socket_dir):
        dsn = f"host={socket_dir} port={PORT} dbname=postgres user=postgres"
        sessions = activity(dsn)
        try:
            scratch = Path(tempfile.mkdtemp(prefix="pgvet-compare-"))
            answers = scratch / "answers.yaml"
            answers.write_text(ANSWERS)
            tuner_argv = ["perl", str(tuner), f"--host={socket_dir}", f"--port={PORT}", "--user=postgres",
                          "--database=postgres", "--nocolor", "--ssd"]
            check_argv = [sys.executable, "-m", "pgvet", "check", "--dsn", dsn, "--no-input", "--answers",
                          str(answers)]
            timed(check_argv)  # once untimed: Python's bytecode and pgvet's rule cache are written then
            # What no work of pgvet's can go below: Python's start and importing the dependencies a check uses.
            used = bench.used_dependencies(sys.executable, bench.dependencies(), check_argv[3:], {})
            floor_argv = [sys.executable, "-c", f"import {', '.join(used)}"]
            tuner_times: list[Timing] = []
            check_times: list[Timing] = []
            floor_times: list[Timing] = []
            for _ in range(options.runs):
                tuner_times.append(timed(tuner_argv, cwd=str(scratch))[0])
                check_times.append(timed(check_argv)[0])
                floor_times.append(timed(floor_argv)[0])
            _, tuner_run = timed(tuner_argv, cwd=str(scratch))
            snapshot = scratch / "db"
            _, check_run = timed([*check_argv, "--snapshot", str(snapshot), "--format", "json"])
            tuner_time, check_time, floor_time = medians(tuner_times), medians(check_times), medians(floor_times)
        finally:
            for session in sessions:
                session.close()  # type: ignore[attr-defined]
    if tuner_run.returncode != 0:
        raise SystemExit(f"postgresqltuner.pl failed: {tuner_run.stderr.strip()}")
    if check_run.returncode not in (0, 1):
        raise SystemExit(f"pgvet check failed: {check_run.stderr.strip()}")
    tuner_lines = [(match.group(1), match.group(2)) for match in map(LINE.match, tuner_run.stdout.splitlines())
                   if match]
    verdicts = pgvet_verdicts(snapshot)
    findings = json.loads(check_run.stdout)["findings"]
    shutil.rmtree(scratch, ignore_errors=True)

    print(f"PostgreSQL {options.major}, settings in postgresql.conf: "
          + ", ".join(f"`{name} = {value}`" for name, value in SETTINGS.items()) + ".\n")
    def ratio(of: Timing) -> str:
        return f"{of.seconds / tuner_time.seconds:.1f} × its time, {of.cpu / tuner_time.cpu:.1f} × its CPU"

    print(f"postgresqltuner.pl: {tuner_time.seconds:.3f} s ({tuner_time.cpu:.3f} s CPU), {len(tuner_lines)} verdict "
          f"lines ({sum(1 for level, _ in tuner_lines if level in ('WARN', 'BAD'))} WARN/BAD). "
          f"pgvet check: {check_time.seconds:.3f} s ({check_time.cpu:.3f} s CPU; collect + lint, a new Python "
          f"process: {ratio(check_time)}; a new Python importing the dependencies a check uses, {', '.join(used)}, "
          f"and doing nothing else takes {floor_time.seconds:.3f} s ({floor_time.cpu:.3f} s CPU), "
          f"{ratio(floor_time)}), {len(findings)} findings "
          f"({sum(1 for finding in findings if finding['severity'] != 'info')} errors/warnings). Times are the "
          f"medians of {options.runs} interleaved runs of each.\n")
    print("| postgresqltuner check | its verdict here | pgvet rules | pgvet's verdict here | note |")
    print("|---|---|---|---|---|")
    for topic, pattern, rule_ids, note in CHECKS:
        matched = [f"{level}: {text}" for level, text in tuner_lines if re.search(pattern, text)]
        said = "<br>".join(line[:110] + ("…" if len(line) > 110 else "") for line in matched[:2]) or "—"
        answered = "<br>".join(f"{rule_id} {verdicts.get(rule_id, 'does not apply')}" for rule_id in rule_ids) or "—"
        print(f"| {topic} | {said.replace('|', '/')} | {', '.join(rule_ids) or '—'} | {answered} | {note} |")
    compared = {rule_id for _, _, rule_ids, _ in CHECKS for rule_id in rule_ids}
    others = sorted({(finding["rule_id"], finding["severity"], finding["title"]) for finding in findings
                     if finding["rule_id"] not in compared})
    print(f"\npgvet's other findings on this cluster and host ({len(others)}), which postgresqltuner does not check:\n")
    for rule_id, severity, title in others:
        print(f"- {rule_id} ({severity}): {title}")


if __name__ == "__main__":
    main()
