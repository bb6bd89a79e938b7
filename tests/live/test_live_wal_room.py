"""PGV965 on a real cluster: a wal_keep_size larger than the filesystem that holds pg_wal, whose size pgvet reads
as root or as the server's OS user (statvfs of pg_wal). Reloaded, not restarted: the rule reads what runs."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time

import pytest

import pgservers
from conftest import require_postgres
from livepg import running_cluster

pytestmark = pytest.mark.postgres
pytest.importorskip("psycopg", exc_type=ImportError, reason="psycopg, with its libpq, reads the server")

MAJOR = max(pgservers.SUPPORTED_MAJORS)


def _check(dsn: str) -> list[dict[str, object]]:
    done = subprocess.run([sys.executable, "-m", "pgvet", "check", "--dsn", dsn, "--no-input", "--format", "json"],
                          capture_output=True, text=True, timeout=180, env={**os.environ, "NO_COLOR": "1"})
    return [finding for finding in json.loads(done.stdout)["findings"] if finding["rule_id"] == "PGV965"]


def test_wal_kept_beyond_the_filesystem() -> None:
    require_postgres(MAJOR)
    with running_cluster(MAJOR) as cluster:
        if os.geteuid() != 0 and os.geteuid() != cluster.data.stat().st_uid:
            pytest.skip("pgvet reads the WAL filesystem's size as root or as the server's OS user")
        size = shutil.disk_usage(cluster.data / "pg_wal").total
        assert _check(cluster.dsn()) == []  # the defaults: 0 kept, max_wal_size 1GB
        cluster.sql(f"ALTER SYSTEM SET wal_keep_size = '{size // 2**30 + 1}GB'")
        cluster.sql("SELECT pg_reload_conf()")
        deadline = time.monotonic() + 30  # the postmaster rereads its files a moment after the signal
        while cluster.sql("SHOW wal_keep_size") == [("0",)] and time.monotonic() < deadline:
            time.sleep(0.05)
        [finding] = _check(cluster.dsn())
    values = finding["values"]
    assert values["wal_filesystem"] == size  # type: ignore[index]
    assert values["wal_keep"] == (size // 2**30 + 1) * 2**30  # type: ignore[index]
    assert finding["severity"] == "error"
