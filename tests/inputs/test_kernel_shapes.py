"""Kernels whose shapes the fixtures lack: other base page sizes, old /proc/meminfo layouts, pools of several
huge page sizes. Inputs written as those kernels print them."""

from __future__ import annotations

import pytest

from pgvet.inputs import sysfs


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
