"""Hosts a DBA configured with pgtune (tests/pgtune.py): snapshot directories with pgtune's postgresql.conf, on a
sane Linux kernel, for the grid of tests/plan/test_pgtune_grid.py and docs/pgtune.md.

What the DBA has beside pgtune's file:

- The RAM pgtune was told is the machine's, in whole GB; the kernel's MemTotal is a little off it: 2 % under
  (the RAM installed, of which the kernel keeps its memory map and image) or 2 % over (a `free -g` reading
  rounded down). Both are drawn for every point of the grid: no verdict may depend on which.
- Swap: a quarter of the RAM, at most 2 GB. Transparent huge pages on madvise, a data disk on XFS (noatime)
  whose rotational flag and scheduler fit the storage pgtune was told, dirty memory in bytes, swappiness 10:
  what the PostgreSQL and kernel documentation advise, so that only PostgreSQL's settings are on trial.
- Overcommit: the kernel's default heuristic, or strict (PostgreSQL's documentation, 18.4.4) with the ratio
  that leaves a fifth of the RAM to the page cache once the huge page pool is counted (Dalibo J1).
- Huge pages: where pgtune writes huge_pages = try, a pool of exactly what PostgreSQL asks for
  (`postgres -C shared_memory_size_in_huge_pages`, which pgvet's shared memory model reproduces: docs/calibration.md),
  or none — the DBA did not reserve one and PostgreSQL falls back to 4 kB pages.
- host.yaml: the workload and storage pgtune was told (pgtune's dw is pgvet's olap), the PostgreSQL version, a
  dedicated host.

The grid: every RAM, CPU count and connection count of the issue (432 combinations), each with a type of
application, a storage, a PostgreSQL version, a database size, a kernel and a pool drawn so that every pair of
their values meets (tests/plan/test_pgtune_grid.py checks it), and both MemTotals: 864 hosts.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import pgtune
from pgvet.engine.derived import derived_values
from pgvet.engine.loader import load_pack
from pgvet.findings import HostResult
from pgvet.snapshot.load import load_host

GB_KB = 1024 * 1024
WORKLOAD = {"web": "web", "oltp": "oltp", "dw": "olap", "mixed": "mixed", "desktop": "desktop"}
Overcommit = Literal["heuristic", "strict"]

RAMS_GB = (2, 4, 8, 16, 32, 64, 128, 256, 512)
CPUS = (2, 4, 6, 8, 16, 32, 64, 96)
CONNECTIONS = (20, 100, 200, 500, 1000, 2000)
TYPES: tuple[pgtune.DbType, ...] = ("web", "oltp", "dw", "mixed")
STORAGES: tuple[pgtune.Storage, ...] = ("ssd", "hdd", "san")
VERSIONS = (15, 16, 17, 18)
DB_SIZES: tuple[pgtune.DbSize, ...] = ("mid_ram", "less_ram", "greater_ram")
OVERCOMMITS: tuple[Overcommit, ...] = ("heuristic", "strict")
MEM_TOTAL_RATIOS = (0.98, 1.02)


@dataclass(frozen=True)
class PgtuneHost:
    """A point of the grid: pgtune's inputs, and what the host has beside them."""

    inputs: pgtune.Inputs
    mem_total_ratio: float  # MemTotal / the RAM typed into pgtune
    overcommit: Overcommit
    huge_page_pool: bool  # a pool sized for PostgreSQL (only where pgtune writes huge_pages = try)

    @property
    def name(self) -> str:
        i = self.inputs
        return (f"pg{i.db_version}-{i.db_type}-{i.storage}-{i.db_size.replace('_', '-')}-{i.memory_gb}gb-{i.cpus}cpu-"
                f"{i.connections}conn-mem{round(self.mem_total_ratio * 100)}-{self.overcommit}"
                f"{'-pool' if self.huge_page_pool else ''}")

    @property
    def mem_total_kb(self) -> int:
        return int(self.inputs.memory_kb * self.mem_total_ratio) // 4 * 4

    @property
    def swap_kb(self) -> int:
        return min(2 * GB_KB, self.inputs.memory_kb // 4)


def grid() -> list[PgtuneHost]:
    """The hosts of the grid, the two MemTotals of a point side by side."""
    hosts = []
    for (r, ram), (c, cpus), (n, connections) in itertools.product(enumerate(RAMS_GB), enumerate(CPUS),
                                                                   enumerate(CONNECTIONS)):
        inputs = pgtune.Inputs(db_version=VERSIONS[(c + n + r // 3) % 4], db_type=TYPES[(r + c + n) % 4],
                               memory_gb=ram, cpus=cpus, connections=connections,
                               storage=STORAGES[(r + 2 * c + n) % 3], db_size=DB_SIZES[(2 * r + c + n) % 3])
        overcommit = OVERCOMMITS[(r // 2 + c // 2) % 2]
        pool = pgtune.huge_pages(inputs) == "try" and (c + n // 2) % 2 == 0
        hosts.extend(PgtuneHost(inputs, ratio, overcommit, pool) for ratio in MEM_TOTAL_RATIOS)
    return hosts


def build(root: Path, host: PgtuneHost) -> Path:
    """Write ``host`` under ``root``: its pool, when it has one, is what pgvet's shared memory model says
    PostgreSQL asks for on it (`postgres -C shared_memory_size_in_huge_pages`, docs/calibration.md)."""
    path = write(root / host.name, files(host))
    if host.huge_page_pool:
        write(path, files(host, _huge_pages_needed(host.inputs, path)))
    return path


_needed: dict[pgtune.Inputs, int] = {}


def _huge_pages_needed(inputs: pgtune.Inputs, path: Path) -> int:
    """Huge pages PostgreSQL asks for with pgtune's settings (the same for both MemTotals of a point)."""
    if inputs not in _needed:
        needed = derived_values(load_pack(), load_host(path), {"derived.hugepages_needed"})["derived.hugepages_needed"]
        assert isinstance(needed.value, int)
        _needed[inputs] = needed.value
    return _needed[inputs]


def meminfo(mem_total_kb: int, swap_kb: int, *, pages: int, overcommit: Overcommit, ratio: int) -> str:
    hugetlb_kb = pages * 2048
    if overcommit == "strict":
        limit_kb = ((mem_total_kb // 4 - hugetlb_kb // 4) * ratio // 100 + swap_kb // 4) * 4
    else:
        limit_kb = ((mem_total_kb // 4 - hugetlb_kb // 4) * 50 // 100 + swap_kb // 4) * 4
    committed_kb = min(limit_kb, mem_total_kb) // 5
    lines = [("MemTotal", mem_total_kb), ("MemFree", mem_total_kb // 10), ("MemAvailable", mem_total_kb // 2),
             ("Cached", mem_total_kb // 3), ("SwapTotal", swap_kb), ("SwapFree", swap_kb), ("AnonHugePages", 0),
             ("PageTables", mem_total_kb // 400), ("CommitLimit", limit_kb), ("Committed_AS", committed_kb),
             ("HugePages_Total", pages), ("HugePages_Free", pages), ("HugePages_Rsvd", 0), ("HugePages_Surp", 0),
             ("Hugepagesize", 2048), ("Hugetlb", hugetlb_kb)]
    counts = {"HugePages_Total", "HugePages_Free", "HugePages_Rsvd", "HugePages_Surp"}
    return "".join(f"{name}: {value}{'' if name in counts else ' kB'}\n" for name, value in lines)


def strict_ratio(mem_total_kb: int, swap_kb: int, pool_kb: int) -> int:
    """The ratio that makes CommitLimit plus the pool 80 % of MemTotal (Dalibo J1), at most 100."""
    return min(100, int(100 * (0.8 * mem_total_kb - swap_kb - pool_kb) / (mem_total_kb - pool_kb)))


def sysctl(*, overcommit: Overcommit, ratio: int, pages: int, mem_total_kb: int) -> str:
    dirty_bytes = min(1 << 30, mem_total_kb * 1024 // 20) // 4096 * 4096
    values = {
        "vm.overcommit_memory": 2 if overcommit == "strict" else 0, "vm.overcommit_ratio": ratio,
        "vm.overcommit_kbytes": 0, "vm.nr_hugepages": pages, "vm.nr_overcommit_hugepages": 0,
        "vm.dirty_ratio": 0, "vm.dirty_background_ratio": 0, "vm.dirty_bytes": dirty_bytes,
        "vm.dirty_background_bytes": dirty_bytes // 4 // 4096 * 4096, "vm.swappiness": 10,
        "vm.zone_reclaim_mode": 0, "kernel.numa_balancing": 0, "vm.vfs_cache_pressure": 50,
        "kernel.sched_migration_cost_ns": 5000000, "kernel.sched_autogroup_enabled": 0,
    }
    return "".join(f"{key} = {value}\n" for key, value in sorted(values.items()))


def files(host: PgtuneHost, pages: int = 0) -> dict[str, str]:
    """The snapshot of ``host`` with a huge page pool of ``pages`` pages of 2 MB."""
    inputs = host.inputs
    cpus = inputs.cpus or 1
    sockets = 2 if cpus >= 32 else 1
    mem_total_kb, swap_kb = host.mem_total_kb, host.swap_kb
    ratio = strict_ratio(mem_total_kb, swap_kb, pages * 2048) if host.overcommit == "strict" else 50
    rotational = 1 if inputs.storage in ("hdd", "san") else 0
    scheduler = "[mq-deadline] none" if rotational else "mq-deadline [none]"
    host_yaml = {"name": host.name, "pg_version": inputs.db_version, "workload": WORKLOAD[inputs.db_type],
                 "storage": inputs.storage, "dedicated": "true", "data_directory": "/srv/pgdata/main"}
    return {
        "meminfo.txt": meminfo(mem_total_kb, swap_kb, pages=pages, overcommit=host.overcommit, ratio=ratio),
        "sysctl.txt": sysctl(overcommit=host.overcommit, ratio=ratio, pages=pages, mem_total_kb=mem_total_kb),
        "lscpu.txt": (f"Architecture: x86_64\nCPU(s): {cpus}\nThread(s) per core: 1\n"
                      f"Core(s) per socket: {cpus // sockets}\nSocket(s): {sockets}\nNUMA node(s): {sockets}\n"),
        "mounts.txt": "/dev/sda1 / ext4 rw,relatime 0 0\n/dev/sdb1 /srv/pgdata xfs rw,noatime,attr2,inode64 0 0\n",
        "sysfs.txt": ("/sys/kernel/mm/transparent_hugepage/enabled:always [madvise] never\n"
                      "/sys/kernel/mm/transparent_hugepage/defrag:always defer defer+madvise [madvise] never\n"
                      f"/sys/block/sdb/queue/scheduler:{scheduler}\n/sys/block/sdb/queue/rotational:{rotational}\n"
                      "/sys/block/sdb/queue/read_ahead_kb:128\n"),
        "postgresql.conf": pgtune.postgresql_conf(inputs),
        "host.yaml": "".join(f"{key}: {value}\n" for key, value in host_yaml.items()),
    }


def write(root: Path, file_map: dict[str, str]) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for name, text in file_map.items():
        (root / name).write_text(text, encoding="utf-8")
    return root


def summary(linted: list[tuple[PgtuneHost, HostResult]]) -> str:
    """docs/pgtune.md's table: how many hosts of the grid each rule fires on, by kernel, and how many of the
    grid's points it fires on under one MemTotal and not the other."""
    fired: dict[str, list[PgtuneHost]] = {}
    severity: dict[str, str] = {}
    for host, result in linted:
        for finding in result.findings:
            severity[finding.rule_id] = finding.severity
        for rule_id in dict.fromkeys(finding.rule_id for finding in result.findings):  # a host counts once
            fired.setdefault(rule_id, []).append(host)
    points = [linted[index:index + 2] for index in range(0, len(linted), 2)]
    rows = [f"| rule | severity | hosts (of {len(linted)}) | kernel's default overcommit | strict overcommit | "
            "points where the RAM's rounding changes the verdict |",
            "|---|---|---|---|---|---|"]
    order = {"error": 0, "warning": 1, "info": 2}
    for rule_id in sorted(fired, key=lambda rule: (order[severity[rule]], rule)):
        hosts = fired[rule_id]
        flips = sum(1 for point in points
                    if len({any(finding.rule_id == rule_id for finding in result.findings) for _, result in point}) > 1)
        rows.append(f"| {rule_id} | {severity[rule_id]} | {len(hosts)} | "
                    f"{sum(host.overcommit == 'heuristic' for host in hosts)} | "
                    f"{sum(host.overcommit == 'strict' for host in hosts)} | {flips} |")
    return "\n".join(rows) + "\n"
