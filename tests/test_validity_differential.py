"""PostgreSQL is the judge of validity: start a real server on each configuration file and compare
"did it start" with "does pgvet report a finding tagged startup".

What this machine may lack is overridden on the command line (memory, huge pages, port and socket,
preload libraries, paths, SSL files); PostgreSQL still parses and validates every line of the file.
The ``lc_*``, ``timezone``/``log_timezone`` and ``ssl`` lines are taken out: locales, the time zone
database and SSL support depend on the machine and the build, which no offline tool can know.
"""

from __future__ import annotations

import re
import shutil
import socket
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

import pgservers
from conftest import CORPUS
from pgvet.lint import LintOptions, lint

CONF_CORPUS = CORPUS / "postgresql-conf"
# Lines whose validity depends on the machine or the build, not on the file: locales installed, the
# time zone database compiled in (a wheel's build lacks "localtime"), SSL support compiled in.
_MACHINE_LINE = re.compile(r"^\s*(lc_(messages|monetary|numeric|time|collate|ctype)|timezone|log_timezone|ssl)\b",
                           re.IGNORECASE)
# Settings this machine may not satisfy; the file's own lines are still validated by PostgreSQL.
OVERRIDES = {
    "listen_addresses": "",
    "shared_buffers": "16MB",
    "huge_pages": "off",
    "shared_preload_libraries": "",
    "session_preload_libraries": "",
    "local_preload_libraries": "",
    "ssl": "off",
    "logging_collector": "off",
    "external_pid_file": "",
    "max_connections": "40",
    "superuser_reserved_connections": "3",
}


@dataclass(frozen=True, slots=True)
class Verdict:
    name: str
    postgres_started: bool
    postgres_log: str
    pgvet_startup: list[str]


def corpus_files() -> list[Path]:
    if not CONF_CORPUS.is_dir():
        return []
    return sorted(path for path in CONF_CORPUS.rglob("*") if path.is_file() and "include-trees" not in path.parts)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _without_machine_lines(text: str) -> str:
    return "".join("#" + line if _MACHINE_LINE.match(line) else line for line in text.splitlines(keepends=True))


def _start(major: int, data: Path, socket_dir: Path) -> tuple[bool, str]:
    options = [f"-c {name}='{value}'" for name, value in OVERRIDES.items()]
    options += [f"-c port={_free_port()}", f"-c unix_socket_directories='{socket_dir}'",
                f"-c data_directory='{data}'", f"-c hba_file='{data}/pg_hba.conf'",
                f"-c ident_file='{data}/pg_ident.conf'"]
    log = data.parent / "start.log"
    log.unlink(missing_ok=True)  # pg_ctl -l appends: keep only this start's messages
    started = pgservers.run(major, "pg_ctl", ["start", "-w", "-t", "30", "-D", str(data), "-l", str(log),
                                              "-o", " ".join(options)], timeout=60)
    text = log.read_text(errors="replace") if log.exists() else started.stderr
    if started.returncode == 0:
        pgservers.run(major, "pg_ctl", ["stop", "-m", "immediate", "-w", "-D", str(data)], timeout=60)
        return True, text
    return False, text


def _judge(major: int, files: list[Path], worker: int) -> Iterator[Verdict]:
    base = pgservers.make_tempdir(f"pgvet-validity-{major}-{worker}-")
    data = base / "data"
    shutil.copytree(pgservers.template_cluster(major), data, symlinks=True)
    socket_dir = base / "socket"
    socket_dir.mkdir()
    original_auto = (data / "postgresql.auto.conf").read_text()
    for path in files:
        (data / "postgresql.conf").write_text(_without_machine_lines(path.read_text(errors="surrogateescape")),
                                               errors="surrogateescape")
        (data / "postgresql.auto.conf").write_text(original_auto)
        (data / "PG_VERSION").write_text(f"{major}\n")
        pgservers.chown_tree(base)
        data.chmod(0o700)
        started, log = _start(major, data, socket_dir)
        host = base / "host"
        if host.exists():
            shutil.rmtree(host)
        host.mkdir()
        shutil.copy(data / "postgresql.conf", host / "postgresql.conf")
        (host / "PG_VERSION").write_text(f"{major}\n")
        result = lint([host], LintOptions(select=["startup"]))
        startup = [] if result.errors else [
            f"{finding.rule_id}:{finding.line}" for finding in result.hosts[0].findings
        ]
        yield Verdict(path.name, started, log, startup)


def judge_corpus(major: int) -> list[Verdict]:
    files = corpus_files()
    halves = [files[0::2], files[1::2]]
    with ThreadPoolExecutor(max_workers=2) as pool:
        batches = list(pool.map(lambda pair: list(_judge(major, pair[1], pair[0])), enumerate(halves)))
    return [verdict for batch in batches for verdict in batch]


@pytest.mark.slow
def test_corpus_verdicts_match_postgresql(pg_major: int) -> None:
    if not corpus_files():
        pytest.skip("the postgresql.conf corpus is absent")
    verdicts = judge_corpus(pg_major)
    disagreements = [
        f"{verdict.name}: PostgreSQL {'started' if verdict.postgres_started else 'refused'}, pgvet startup "
        f"findings {verdict.pgvet_startup}; log: {' | '.join(verdict.postgres_log.splitlines()[-4:])}"
        for verdict in verdicts
        if verdict.postgres_started == bool(verdict.pgvet_startup)
    ]
    started = sum(verdict.postgres_started for verdict in verdicts)
    print(f"PostgreSQL {pg_major}: started with {started} of {len(verdicts)} files, refused {len(verdicts) - started}")
    assert not disagreements, "\n".join(disagreements)


def _refusal_lines(log: str) -> set[int]:
    return {int(match) for match in re.findall(r'line (\d+)', log)}


@pytest.mark.slow
def test_refusals_point_at_the_lines_postgresql_names(pg_major: int) -> None:
    if pg_major != 15 and pgservers.bindir(15) is not None:
        pytest.skip("line comparison runs on 15 (the verdicts are compared on every version)")
    if not corpus_files():
        pytest.skip("the postgresql.conf corpus is absent")
    for verdict in judge_corpus(pg_major):
        named = _refusal_lines(verdict.postgres_log)
        if verdict.postgres_started or not named:
            continue
        ours = {int(item.split(":")[1]) for item in verdict.pgvet_startup if item.split(":")[1] != "None"}
        assert named & ours, f"{verdict.name}: PostgreSQL names lines {sorted(named)}, pgvet {sorted(ours)}"


# Generated files: real parameters with valid and broken values, typos, removed names and the
# wal_level / max_wal_senders / archive_mode combinations PostgreSQL checks when it starts.
VALID_VALUES = {
    "work_mem": ["4MB", "64MB", "65536", "1GB"],
    "maintenance_work_mem": ["256MB", "1GB"],
    "effective_cache_size": ["4GB", "524288"],
    "random_page_cost": ["1.1", "4"],
    "checkpoint_timeout": ["5min", "900", "1h"],
    "checkpoint_completion_target": ["0.9", "0.5"],
    "wal_level": ["replica", "minimal", "logical"],
    "max_wal_senders": ["0", "10"],
    "archive_mode": ["off", "on"],
    "jit": ["on", "off", "yes", "0"],
    "max_wal_size": ["1GB", "4GB"],
    "min_wal_size": ["80MB", "1GB"],
    "synchronous_commit": ["on", "off", "local"],
    "deadlock_timeout": ["1s", "200ms"],
    "default_statistics_target": ["100", "1000"],
}
BROKEN_VALUES = {
    "work_mem": ["64mb", "64 XB", "-5"],
    "checkpoint_timeout": ["5 minutes", "2"],
    "checkpoint_completion_target": ["1.5"],
    "wal_level": ["hot standby"],
    "jit": ["maybe"],
    "default_statistics_target": ["0"],
}
BROKEN_NAMES = ["shared_buffer", "work_mem_size", "checkpoint_segments", "wal_keep_segments", "stats_temp_directory"]


def _generated_files() -> object:
    from hypothesis import strategies as st

    valid = st.sampled_from(sorted(VALID_VALUES)).flatmap(
        lambda name: st.sampled_from(VALID_VALUES[name]).map(lambda value: f"{name} = '{value}'"))
    broken = st.sampled_from(sorted(BROKEN_VALUES)).flatmap(
        lambda name: st.sampled_from(BROKEN_VALUES[name]).map(lambda value: f"{name} = '{value}'"))
    unknown = st.sampled_from(BROKEN_NAMES).map(lambda name: f"{name} = 10")
    line = st.one_of(valid, valid, valid, broken, unknown)
    return st.lists(line, min_size=1, max_size=8).map(lambda lines: "\n".join(lines) + "\n")


@pytest.mark.slow
def test_generated_files_get_postgresql_verdict(pg_major: int, tmp_path: Path) -> None:
    from hypothesis import HealthCheck, given, settings

    @settings(max_examples=15, deadline=None, derandomize=True,
              suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
    @given(text=_generated_files())  # type: ignore[arg-type]
    def check(text: str) -> None:
        source = tmp_path / "generated.conf"
        source.write_text(text)
        [verdict] = list(_judge(pg_major, [source], 7))
        assert verdict.postgres_started != bool(verdict.pgvet_startup), (
            f"PostgreSQL {'started' if verdict.postgres_started else 'refused'}, pgvet {verdict.pgvet_startup}\n"
            f"{text}\n{verdict.postgres_log[-600:]}"
        )

    check()
