"""Kernels whose shapes the fixtures lack: other base page sizes, old /proc/meminfo layouts, pools of several
huge page sizes. Inputs written as those kernels print them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import derived_of
from pgvet.errors import ParseError
from pgvet.inputs import lscpu, sysfs
from pgvet.live.host import read_sysfs
from pgvet.run.lint import lint
from pgvet.run.options import LintOptions
from pgvet.snapshot.load import load_host

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


# `LANG=de_DE.UTF-8 lscpu` (util-linux 2.38): "CPU(s):" is the same in German, every other label is not
GERMAN_LSCPU = """\
Architektur:                     x86_64
CPU Operationsmodus:             32-bit, 64-bit
Byte-Reihenfolge:                Little Endian
CPU(s):                          64
Liste der Online-CPU(s):         0-63
Anbieterkennung:                 GenuineIntel
Modellname:                      Intel(R) Xeon(R) Gold 6142 CPU @ 2.60GHz
Thread(s) pro Kern:              2
Kern(e) pro Sockel:              16
Sockel:                          2
NUMA-Knoten:                     2
NUMA-Knoten0 CPU(s):             0-15,32-47
NUMA-Knoten1 CPU(s):             16-31,48-63
"""


def test_lscpu_in_a_locale_that_keeps_the_cpu_count_label_is_refused() -> None:
    # read, it gave the count alone: a 2-socket, 2-node host judged as one node and one socket
    with pytest.raises(ParseError, match="LC_ALL=C lscpu"):
        lscpu.parse_lscpu(GERMAN_LSCPU, "lscpu.txt")
    as_json = {"lscpu": [{"field": label + ":", "data": data.strip()}
                         for label, _, data in (line.partition(":") for line in GERMAN_LSCPU.splitlines())]}
    with pytest.raises(ParseError, match="LC_ALL=C lscpu"):
        lscpu.parse_lscpu(json.dumps(as_json), "lscpu.json")


@pytest.mark.parametrize("text", ["CPU(s): 4\n", "CPU(s): 4\nSocket(s): 1\n"])
def test_a_few_lines_of_lscpu_in_the_c_locale_are_read(text: str) -> None:
    assert lscpu.parse_lscpu(text, "lscpu.txt")["count"].value == 4


def test_arm_lscpu_without_sockets_or_model_name() -> None:
    # an arm64 server (util-linux 2.37+): cores counted per cluster, "Socket(s): -", no Model name line
    text = ("Architecture: aarch64\nCPU op-mode(s): 64-bit\nCPU(s): 80\nOn-line CPU(s) list: 0-79\n"
            "Vendor ID: ARM\nModel: 1\nThread(s) per core: 1\nCore(s) per cluster: 80\nSocket(s): -\n"
            "Cluster(s): 1\nNUMA node(s): 1\nNUMA node0 CPU(s): 0-79\n")
    values = {key: located.value for key, located in lscpu.parse_lscpu(text, "lscpu.txt").items()}
    assert values == {"architecture": "aarch64", "count": 80, "online": "0-79", "vendor": "ARM",
                      "threads_per_core": 1, "cores_per_socket": 80, "numa_nodes": 1}


@pytest.mark.parametrize(("lscpu_text", "says", "never"), [
    # arm64: "Socket(s): -", the nodes known (the message said "1 socket(s)", and "1 NUMA node(s)" without lscpu)
    ("Architecture: aarch64\nCPU(s): 80\nCore(s) per cluster: 80\nSocket(s): -\nNUMA node(s): 2\n",
     "on 2 NUMA node(s):", "socket"),
    # no lscpu at all: neither is known, neither is invented
    (None, "vm.zone_reclaim_mode = 1:", "NUMA node"),
])
def test_zone_reclaim_message_says_only_the_known_nodes_and_sockets(tmp_path: Path, lscpu_text: str | None,
                                                                    says: str, never: str) -> None:
    files = {"meminfo.txt": "MemTotal: 16777216 kB\n", "sysctl.txt": "vm.zone_reclaim_mode = 1\n"}
    if lscpu_text is not None:
        files["lscpu.txt"] = lscpu_text
    result = lint([_host(tmp_path, files)], LintOptions(select=["PGV137"]))
    assert result.errors == []
    [finding] = result.hosts[0].findings
    assert says in finding.message and never not in finding.message.split(":")[0], finding.message


# an arm64 server whose kernel has 64 kB base pages (RHEL 9's kernel-64k): its PMD-sized huge pages are 512 MB
ARM64_64K_MEMINFO = """\
MemTotal:       132031488 kB
SwapTotal:        4194240 kB
CommitLimit:     69929600 kB
Committed_AS:     3000000 kB
PageTables:         20000 kB
HugePages_Total:        0
HugePages_Free:         0
HugePages_Rsvd:         0
HugePages_Surp:         0
Hugepagesize:      524288 kB
Hugetlb:                0 kB
"""
ARM64_LSCPU = "Architecture: aarch64\nCPU(s): 64\nOn-line CPU(s) list: 0-63\nCore(s) per cluster: 64\nSocket(s): -\n"
BUSY_POSTGRESQL = "shared_buffers = 32GB\nmax_connections = 500\nhuge_pages = off\n"


def test_page_tables_are_estimated_in_the_kernels_base_pages(tmp_path: Path) -> None:
    # 32 GB of shared_buffers is 8 Mi pages of 4 kB but 512 Ki pages of 64 kB: 4 MB of page tables a process, not
    # 64 MB, 2 GB for 511 processes, 1.6 % of the RAM, not 26 %
    host = _host(tmp_path, {"meminfo.txt": ARM64_64K_MEMINFO, "lscpu.txt": ARM64_LSCPU,
                            "postgresql.conf": BUSY_POSTGRESQL, "host.yaml": "pg_version: 16\n"})
    result = lint([host], LintOptions(select=["PGV120"]))
    assert result.errors == []
    assert result.hosts[0].findings == [] and result.hosts[0].not_evaluated == []


def test_commit_limit_counts_in_the_kernels_base_pages(tmp_path: Path) -> None:
    # vm_commit_limit: overcommit_kbytes >> (PAGE_SHIFT - 10), in 64 kB pages here: 100 kB is one page, 64 kB
    host = _host(tmp_path, {"meminfo.txt": ARM64_64K_MEMINFO, "lscpu.txt": ARM64_LSCPU,
                            "sysctl.txt": "vm.overcommit_memory = 2\nvm.overcommit_kbytes = 100\n"
                                          "vm.overcommit_ratio = 0\n"})
    facts = load_host(host).facts
    assert derived_of({name: fact.value for name, fact in facts.items()})["derived.commit_limit"] \
        == 64 * KB + 4194240 * KB


@pytest.mark.parametrize(("declared", "says"), [
    ("page_size: 64kB\n", None), ("page_size: 64 kB\n", None), ("page_size: 12kB\n", "page_size must be"),
])
def test_host_yaml_page_size(tmp_path: Path, declared: str, says: str | None) -> None:
    (tmp_path / "host.yaml").write_text(declared)
    if says is None:
        assert load_host(tmp_path).facts["host.page_size"].value == 64 * KB
    else:
        with pytest.raises(ParseError, match=says):
            load_host(tmp_path)


def test_dirty_bytes_fix_is_in_whole_base_pages(tmp_path: Path) -> None:
    # 10 % of the dirtyable memory binds (below 512 MB on this 3 GB host): it is rounded down to whole pages of the
    # kernel's base size, 64 kB here (the kernel counts dirty_bytes in pages and refuses less than two)
    meminfo = ARM64_64K_MEMINFO.replace("MemTotal:       132031488 kB", "MemTotal:         3000000 kB")
    host = _host(tmp_path, {"meminfo.txt": meminfo, "lscpu.txt": ARM64_LSCPU,
                            "sysctl.txt": "vm.dirty_ratio = 10\nvm.dirty_background_ratio = 20\n"
                                          "vm.dirty_bytes = 0\nvm.dirty_background_bytes = 0\n"})
    result = lint([host], LintOptions(select=["PGV134"]))
    [finding] = result.hosts[0].findings
    dirty, background = (int(finding.fix.sysctl[key]) for key in ("vm.dirty_bytes", "vm.dirty_background_bytes"))
    assert dirty % (64 * KB) == 0 and background % (64 * KB) == 0
    assert 3000000 * KB * 0.1 - 64 * KB < dirty <= 3000000 * KB * 0.1


def test_huge_pages_off_message_counts_page_tables_in_base_pages(tmp_path: Path) -> None:
    # 32 GB of shared_buffers in 64 kB pages: 4 MB of page tables a process, not the 64 MB of 4 kB pages
    host = _host(tmp_path, {"meminfo.txt": ARM64_64K_MEMINFO, "lscpu.txt": ARM64_LSCPU,
                            "postgresql.conf": BUSY_POSTGRESQL, "host.yaml": "pg_version: 16\n"})
    result = lint([host], LintOptions(select=["PGV520"]))
    [finding] = result.hosts[0].findings
    assert "with 64 kB pages (4.0 MiB of page tables each)" in finding.message, finding.message
