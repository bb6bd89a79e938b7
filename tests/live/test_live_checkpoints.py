"""PGV953 on real clusters: requested checkpoints that CHECKPOINT commands asked for do not blame max_wal_size;
those WAL volume asked for do, and the bound the WAL written sets is never below them."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from conftest import require_postgres
from livepg import LiveCluster, running_cluster
from pgvet.run.lint import lint
from pgvet.run.options import LintOptions

pytestmark = pytest.mark.postgres
pytest.importorskip("psycopg", exc_type=ImportError, reason="psycopg, with its libpq, reads the server")

# pg_stat_wal (the WAL written) comes with 14; the checkpoint counts moved to pg_stat_checkpointer in 17
MAJORS = (14, 18)


def verdict(cluster: LiveCluster, tmp_path: Path, minimum: int = 10) -> tuple[str, dict[str, Any]]:
    """PGV953's verdict on the cluster, as `pgvet collect` reads it, and its values (``minimum``: the checkpoints
    it needs to judge)."""
    snapshot = tmp_path / "snapshot"
    done = subprocess.run([sys.executable, "-m", "pgvet", "collect", "--dsn", cluster.dsn(), "--output", str(snapshot)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    [host] = lint([snapshot], LintOptions(record_passes=True, params={"PGV953": {"minimum": minimum}})).hosts
    for finding in host.findings:
        if finding.rule_id == "PGV953":
            return "fired", dict(finding.values)
    for passed in host.passed or []:
        if passed.rule_id == "PGV953":
            return "passed", dict(passed.values)
    raise AssertionError(f"PGV953 neither fired nor passed: {host.not_evaluated}")


def requested_checkpoints(cluster: LiveCluster, at_least: int) -> int:
    """The requested checkpoints the server counts, once they reach ``at_least`` (before 15 the statistics collector
    shows them after a delay)."""
    query = ("SELECT num_requested FROM pg_stat_checkpointer" if cluster.major >= 17 else
             "SELECT checkpoints_req FROM pg_stat_bgwriter")
    deadline = time.monotonic() + 20
    while (count := int(cluster.sql(query)[0][0])) < at_least and time.monotonic() < deadline:
        time.sleep(0.1)
    return count


@pytest.mark.parametrize("major", MAJORS)
def test_checkpoint_commands_do_not_blame_max_wal_size(major: int, tmp_path: Path) -> None:
    require_postgres(major)
    with running_cluster(major) as cluster:
        for _ in range(10):
            cluster.sql("CHECKPOINT")
        assert requested_checkpoints(cluster, 10) >= 10
        outcome, values = verdict(cluster, tmp_path)
    assert outcome == "passed"
    assert values["requested"] >= 10 and values["wal_requested_at_most"] <= 2


@pytest.mark.parametrize("major", MAJORS)
def test_checkpoints_wal_volume_requested_fire(major: int, tmp_path: Path) -> None:
    require_postgres(major)
    # 96 MB: 6 segments / 1.9 = 3, a checkpoint requested once 2 segments are entered, the smallest max_wal_size
    # whose distance (a segment) bounds the count; a few checkpoints judged (a checkpoint under way takes the
    # requests made meanwhile: ten would need a GB of WAL)
    with running_cluster(major, {"max_wal_size": "96MB", "checkpoint_completion_target": "0.9",
                                 "checkpoint_timeout": "1h"}) as cluster:
        cluster.sql("CREATE TABLE filler (id int, pad text)")
        for _ in range(3):
            cluster.sql("INSERT INTO filler SELECT g, repeat('x', 900) FROM generate_series(1, 120000) g")
        requested = requested_checkpoints(cluster, 3)
        outcome, values = verdict(cluster, tmp_path, minimum=3)
    assert requested >= 3, "the WAL written should have requested checkpoints"
    assert outcome == "fired"
    # every requested checkpoint was WAL's: the bound never counts fewer
    assert values["wal_requested_at_most"] == values["requested"]
