"""The fix of a live server's snapshot is one target and a fixpoint too: `pgvet collect` from a real server of the
oldest and the newest installed major, then variants of it drawn by hypothesis — the kernel's overcommit and swap
settings, a sysctl.d file, and postgresql.conf lines the server does not run yet (pending a reload or a restart) —
each fixed, applied (kernelsim: `sysctl --system` and a reboot; PostgreSQL restarted on its files), linted again
(check_fixpoint), and held to the target's promises (hold_invariants) against the host as its own files start it."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_plan_fixpoint import check_fixpoint, hold_invariants, restart_postgresql

import pgservers
from livepg import running_cluster

pytestmark = [pytest.mark.postgres, pytest.mark.slow]

MAJORS = sorted({min(pgservers.available_majors(), default=0), max(pgservers.available_majors(), default=0)} - {0})

KERNEL = {"vm.overcommit_memory": ["0", "1", "2"], "vm.overcommit_ratio": ["50", "80", "95"],
          "vm.swappiness": ["1", "10", "60"]}
SYSCTL_D = {"vm.nr_hugepages": ["500", "3000", "6000"], "vm.overcommit_memory": ["0", "2"],
            "vm.overcommit_ratio": ["60", "90"]}
POSTGRESQL = {"shared_buffers": ["128MB", "2GB", "6GB", "10GB", "16GB"], "huge_pages": ["on", "off", "try"],
              "work_mem": ["4MB", "64MB", "512MB"], "max_connections": ["20", "100", "500"],
              "max_wal_size": ["1GB", "8GB"], "min_wal_size": ["80MB", "2GB"],
              "maintenance_work_mem": ["64MB", "2GB"]}


@pytest.fixture(scope="module")
def snapshots(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[Path]]:
    """What `pgvet collect` gives of a real server of each major in MAJORS, taken as root would on this machine."""
    if not MAJORS:
        pytest.skip("no PostgreSQL server binaries are installed")
    taken = []
    for major in MAJORS:
        snapshot = tmp_path_factory.mktemp(f"live{major}") / f"pg{major}"
        with running_cluster(major) as cluster:
            done = subprocess.run([sys.executable, "-m", "pgvet", "collect", "--dsn", cluster.dsn(), "--output",
                                   str(snapshot)], capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        taken.append(snapshot)
    yield taken


def _some(choices: dict[str, list[str]]) -> st.SearchStrategy[dict[str, str]]:
    return st.fixed_dictionaries({}, optional={name: st.sampled_from(values) for name, values in choices.items()})


@settings(max_examples=int(os.environ.get("PGVET_FIXPOINT_EXAMPLES", "20")), deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(which=st.integers(0, 1), kernel=_some(KERNEL), sysctl_d=_some(SYSCTL_D), postgresql=_some(POSTGRESQL))
def test_the_fix_of_a_live_server_s_snapshot_is_a_safe_fixpoint(snapshots: list[Path], which: int,
                                                                 kernel: dict[str, str], sysctl_d: dict[str, str],
                                                                 postgresql: dict[str, str]) -> None:
    source = snapshots[which % len(snapshots)]
    with tempfile.TemporaryDirectory() as directory:
        host, original = Path(directory) / source.name, Path(directory) / "original"
        shutil.copytree(source, host)
        sysctl = (host / "sysctl.txt").read_text()
        for key, value in kernel.items():
            sysctl = re.sub(rf"(?m)^{re.escape(key)} = .*$", f"{key} = {value}", sysctl)
        (host / "sysctl.txt").write_text(sysctl)
        if sysctl_d:
            (host / "sysctl.d").mkdir(exist_ok=True)
            (host / "sysctl.d" / "90-postgresql.conf").write_text(
                "".join(f"{key} = {value}\n" for key, value in sysctl_d.items()))
        with (host / "postgresql.conf").open("a") as conf:  # set in the files, not yet run by the server
            conf.write("".join(f"{name} = '{value}'\n" for name, value in postgresql.items()))
        shutil.copytree(host, original)
        # the promises are held against the host as its own files start it: a max_connections they lower is theirs
        restart_postgresql(original)
        try:
            check_fixpoint(host)
            hold_invariants(original, host)
        except AssertionError as error:
            raise AssertionError(f"{error}\nvariant of {source.name}: kernel {kernel}, sysctl.d {sysctl_d}, "
                                 f"postgresql.conf {postgresql}") from None
