"""Real PostgreSQL clusters for the live tests: a fresh copy of the template cluster, started on a
private Unix-socket directory (no TCP), stopped and removed at teardown.

Authentication: ``postgres`` is trusted; every other role logs in with scram-sha-256, so a wrong
password is refused as on a real server.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import pgservers

PORT = 5432  # the socket lives in a private directory, so the port number cannot clash
HBA = "local all postgres trust\nlocal all all scram-sha-256\n"


@dataclass(frozen=True)
class LiveCluster:
    major: int
    data: Path
    socket_dir: Path
    options: str = ""  # the postgres options it was started with (pg_ctl -o)

    def dsn(self, user: str = "postgres", password: str | None = None) -> str:
        secret = f" password={password}" if password is not None else ""
        return f"host={self.socket_dir} port={PORT} dbname=postgres user={user}{secret}"

    def sql(self, statement: str) -> list[tuple[Any, ...]]:
        """Run one statement as the superuser; rows when it returns any."""
        import psycopg

        with psycopg.connect(self.dsn(), autocommit=True) as connection, connection.cursor() as cursor:
            cursor.execute(statement)  # type: ignore[arg-type]
            return list(cursor.fetchall()) if cursor.description else []

    def restart(self) -> None:
        """Stop and start the server again, with the options it was started with."""
        done = pgservers.run(self.major, "pg_ctl", ["restart", "-w", "-t", "60", "-m", "fast", "-D", str(self.data),
                                                    "-l", str(self.data.parent / "server.log"), "-o", self.options],
                             timeout=90)
        if done.returncode != 0:
            pytest.fail(f"PostgreSQL {self.major} did not restart: {done.stderr}")


@contextmanager
def running_cluster(major: int, settings: dict[str, str] | None = None) -> Iterator[LiveCluster]:
    """A started cluster of ``major`` with extra ``-c name=value`` settings; stopped and removed afterwards."""
    data = pgservers.fresh_cluster(major)
    (data / "pg_hba.conf").write_text(HBA)
    socket_dir = pgservers.make_tempdir("pgvet-live-sock-")
    pgservers.chown_tree(data)
    # scram-sha-256, the default from 14: before, passwords would be hashed with MD5, which HBA refuses
    options = f"-k {socket_dir} -p {PORT} -c listen_addresses='' -c password_encryption=scram-sha-256"
    options += "".join(f" -c {name}={value}" for name, value in (settings or {}).items())
    started = pgservers.run(major, "pg_ctl", ["start", "-w", "-t", "60", "-D", str(data), "-l",
                                              str(data.parent / "server.log"), "-o", options], timeout=90)
    if started.returncode != 0:
        log = (data.parent / "server.log").read_text(errors="replace") if (data.parent / "server.log").exists() else ""
        shutil.rmtree(data.parent, ignore_errors=True)
        shutil.rmtree(socket_dir, ignore_errors=True)
        pytest.fail(f"PostgreSQL {major} did not start: {started.stderr}\n{log}")
    try:
        yield LiveCluster(major, data, socket_dir, options)
    finally:
        pgservers.run(major, "pg_ctl", ["stop", "-w", "-m", "immediate", "-D", str(data)], timeout=60)
        shutil.rmtree(data.parent, ignore_errors=True)
        shutil.rmtree(socket_dir, ignore_errors=True)
