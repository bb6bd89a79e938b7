"""The target on real servers, applied as written: what the fix sizes for the server restarted with it is what that
server asks for."""

from __future__ import annotations

from pathlib import Path

import pytest

import pgservers
from conftest import require_postgres
from livepg import running_cluster
from pgvet.live.commands import collect_command
from pgvet.run.lint import lint
from pgvet.run.options import LintOptions

pytest.importorskip("psycopg", exc_type=ImportError, reason="psycopg, with its libpq, reads the server")

pytestmark = pytest.mark.postgres

MEMINFO = ("MemTotal: 33554432 kB\nSwapTotal: 0 kB\nCommitLimit: 16777216 kB\nCommitted_AS: 1048576 kB\n"
           "HugePages_Total: 0\nHugePages_Free: 0\nHugePages_Rsvd: 0\nHugePages_Surp: 0\nHugepagesize: 2048 kB\n"
           "Hugetlb: 0 kB\n")


@pytest.mark.parametrize("major", [major for major in pgservers.SUPPORTED_MAJORS if major >= 15],
                         ids=lambda major: f"pg{major}")
def test_the_pool_for_a_pending_shared_buffers_holds_what_the_restarted_server_asks(major: int,
                                                                                     tmp_path: Path) -> None:
    # 128kB of shared_buffers running, 1GB and huge_pages = on in the files: the server sized wal_buffers (and 18
    # io_max_concurrency) for 128kB, and those sizes taken as settings left the pool short of what the server
    # restarted with 1GB asks for (PostgreSQL 18: 610 pages against the 641 it needs; it would not start; a1)
    require_postgres(major)
    with running_cluster(major) as cluster:
        conf = cluster.data / "postgresql.conf"
        with conf.open("a") as lines:
            lines.write("max_connections = 3000\nshared_buffers = 128kB\nhuge_pages = try\n")
        cluster.restart()
        with conf.open("a") as lines:
            lines.write("shared_buffers = 1GB\nhuge_pages = on\n")
        snapshot = collect_command(tmp_path / "snapshot", cluster.dsn())
        (snapshot / "meminfo.txt").write_text(MEMINFO)
        [host] = lint([snapshot], LintOptions()).hosts
        assert host.target is not None
        pool = int({change.setting.name: change.target for change in host.target.changes}["vm.nr_hugepages"])
        conf.write_text(conf.read_text().replace("huge_pages = on\n", "huge_pages = try\n"))  # no pool here
        cluster.restart()
        [(needed,)] = cluster.sql("SELECT setting::int FROM pg_settings"
                                  " WHERE name = 'shared_memory_size_in_huge_pages'")
    assert needed <= pool <= needed + max(8, needed // 50) + 2  # the pool's margin, and the estimate's own error
