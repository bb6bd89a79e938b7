"""Kernels whose shapes the fixtures lack: other base page sizes, old /proc/meminfo layouts, pools of several
huge page sizes. Inputs written as those kernels print them."""

from __future__ import annotations

from pathlib import Path

import pytest

from pgvet.inputs import sysfs
from pgvet.live.host import read_sysfs
from pgvet.run.lint import lint
from pgvet.run.options import LintOptions

KB = 1024
GIB = 1024**3

# /proc/meminfo of a RHEL 7 kernel (3.10): no Hugetlb line (added in 4.16), so the pools of sizes other than
# the default are not in it; 64 GB of 1 GB pages (default_hugepagesz=1G) and 2048 pages of 2 MB.
RHEL7_MEMINFO = """\
MemTotal:       263856128 kB
MemFree:        180000000 kB
MemAvailable:   185000000 kB
SwapTotal:        8388604 kB
SwapFree:         8388604 kB
CommitLimit:    123918572 kB
Committed_AS:     3000000 kB
VmallocTotal:   34359738367 kB
HardwareCorrupted:     0 kB
AnonHugePages:         0 kB
HugePages_Total:      64
HugePages_Free:       64
HugePages_Rsvd:        0
HugePages_Surp:        0
Hugepagesize:    1048576 kB
DirectMap4k:      300000 kB
DirectMap2M:    10000000 kB
DirectMap1G:    260046848 kB
"""
HUGEPAGE_POOLS = """\
/sys/kernel/mm/hugepages/hugepages-1048576kB/nr_hugepages:64
/sys/kernel/mm/hugepages/hugepages-1048576kB/nr_overcommit_hugepages:0
/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages:2048
/sys/kernel/mm/hugepages/hugepages-2048kB/nr_overcommit_hugepages:0
"""


@pytest.mark.parametrize("page_size", [4096, 16384, 65536])
def test_cgroup_v1_no_limit_is_none_whatever_the_base_page_size(page_size: int) -> None:
    # memory.limit_in_bytes without a limit is PAGE_COUNTER_MAX pages, LONG_MAX / PAGE_SIZE, times PAGE_SIZE:
    # 0x7FFFFFFFFFFF0000 on an arm64 or ppc64le kernel with 64 kB pages (RHEL 8 on arm64 keeps cgroup v1)
    unlimited = (2**63 - 1) // page_size * page_size
    dump = sysfs.parse_sysfs(f"{sysfs.CGROUP_V1_LIMIT}:{unlimited}\n", "sysfs.txt")
    assert dump.cgroup_memory_max is None


def test_cgroup_v1_real_limit_is_kept() -> None:
    dump = sysfs.parse_sysfs(f"{sysfs.CGROUP_V1_LIMIT}:{16 * 1024**3}\n", "sysfs.txt")
    assert dump.cgroup_memory_max is not None and dump.cgroup_memory_max.value == 16 * 1024**3


def _host(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).write_text(text)
    return root


def test_sysfs_pools_of_every_size_sum_as_meminfos_hugetlb() -> None:
    dump = sysfs.parse_sysfs(HUGEPAGE_POOLS, "sysfs.txt")
    assert dump.hugetlb is not None and dump.hugetlb.value == 64 * GIB + 2048 * 2048 * KB
    assert dump.hugetlb.source.line == 1


def test_an_old_kernels_pools_of_other_sizes_come_out_of_commit_limit(tmp_path: Path) -> None:
    # vm_commit_limit subtracts hugetlb_total_pages(), every size: without the 2 MB pool pgvet's CommitLimit was
    # 2.4 GB too high and commit-limit-mismatch blamed sysctl values that are applied
    host = _host(tmp_path, {"meminfo.txt": RHEL7_MEMINFO, "sysfs.txt": HUGEPAGE_POOLS,
                            "sysctl.txt": "vm.overcommit_memory = 2\nvm.overcommit_ratio = 60\n"
                                          "vm.overcommit_kbytes = 0\nvm.nr_hugepages = 64\n"})
    result = lint([host], LintOptions(select=["PGV102"]))
    assert result.errors == []
    outcome = result.hosts[0]
    assert [finding.rule_id for finding in outcome.findings] == []
    assert [skipped.rule_id for skipped in outcome.not_evaluated] == []


def test_collect_reads_the_pools_of_every_size(tmp_path: Path) -> None:
    for size, pages in (("1048576kB", "4\n"), ("2048kB", "512\n")):
        pool = tmp_path / "kernel/mm/hugepages" / f"hugepages-{size}"
        pool.mkdir(parents=True)
        (pool / "nr_hugepages").write_text(pages)
    text = read_sysfs(tmp_path).text
    dump = sysfs.parse_sysfs(text, "sysfs.txt")
    assert dump.hugetlb is not None and dump.hugetlb.value == 4 * GIB + 512 * 2048 * KB
