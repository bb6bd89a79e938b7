"""Hosts drawn by hypothesis for the planner's tests: whole snapshot directories, consistent as a real host's.

RAM from 1 GB to 1 TB, CPUs and NUMA nodes, swap (none, a disk, zram), huge pages (none, a pool of the
default size — some of it not found at boot —, a dynamic pool, 1 GB pages reserved at boot beside a 2 MB
default, a 1 GB default), a cgroup memory limit,
several instances, every overcommit mode, PostgreSQL 15–18 with its memory settings, and a sysctl.d file whose
values the running kernel may not hold yet. meminfo's CommitLimit
is the kernel's (kernelsim), Committed_AS below it in strict mode.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hypothesis import strategies as st

GB_KB = 1024 * 1024


@dataclass
class Host:
    files: dict[str, str] = field(default_factory=dict)
    description: str = ""


def _kb(size_kb: int) -> str:
    if size_kb % GB_KB == 0:
        return f"{size_kb // GB_KB}GB"
    if size_kb % 1024 == 0:
        return f"{size_kb // 1024}MB"
    return f"{size_kb}kB"


@st.composite
def hosts(draw: st.DrawFn) -> Host:
    ram_gb = draw(st.sampled_from([1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024]))
    mem_kb = ram_gb * GB_KB - draw(st.integers(0, min(200_000, ram_gb * 40_000)))
    swap = draw(st.sampled_from(["none", "disk", "zram"]))
    swap_kb = {"none": 0, "disk": int(mem_kb * draw(st.sampled_from([0.02, 0.05, 0.1, 0.25, 0.5, 1.0, 1.5]))),
               "zram": int(mem_kb * draw(st.sampled_from([0.25, 0.5, 1.0])))}[swap]
    cpus = draw(st.sampled_from([1, 2, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96]))
    sockets = draw(st.sampled_from([s for s in (1, 2, 4) if cpus % s == 0 and cpus // s >= 1]))
    instances = draw(st.sampled_from([1, 1, 1, 2, 3]))
    version = draw(st.sampled_from([15, 16, 17, 18]))
    cgroup_kb = draw(st.one_of(st.none(), st.sampled_from([0.25, 0.5, 0.75, 1.0]).map(lambda f: int(mem_kb * f))))

    huge = draw(st.sampled_from(["none", "none", "default", "default", "dynamic", "fragmented", "gigantic",
                                 "default-1g"]))
    default_size_kb = GB_KB if huge == "default-1g" else 2048
    per_instance_kb = mem_kb // instances
    shared_buffers_kb = draw(st.one_of(
        st.just(128 * 1024),
        st.sampled_from([0.05, 0.1, 0.15, 0.25, 0.3, 0.4, 0.5, 0.7]).map(
            lambda f: max(128 * 1024, int(per_instance_kb * f) // 1024 * 1024))))
    pool_pages = 0
    other_kb = 0
    huge_page_size = "0"
    surplus_pages = 0
    allocated = 1.0
    if huge in ("default", "default-1g", "fragmented"):
        fraction = draw(st.sampled_from([0.05, 0.2, 0.3, 0.45, 0.6]))
        pool_pages = int(mem_kb * fraction) // default_size_kb
        allocated = 0.8 if huge == "fragmented" else 1.0  # the kernel found memory for part of the pool only
    elif huge == "dynamic":  # vm.nr_overcommit_hugepages: pages taken when PostgreSQL starts
        surplus_pages = int(mem_kb * draw(st.sampled_from([0.1, 0.3]))) // default_size_kb
    elif huge == "gigantic":
        other_kb = int(mem_kb * draw(st.sampled_from([0.0, 0.1, 0.3]))) // GB_KB * GB_KB
        huge_page_size = "1GB"
    huge_pages = draw(st.sampled_from(["off", "try", "on"]))

    mode = draw(st.sampled_from([0, 0, 1, 2, 2]))
    ratio = draw(st.sampled_from([0, 20, 50, 60, 70, 80, 90, 100]))
    kbytes = draw(st.sampled_from([0, 0, 0, int(mem_kb * 0.7)]))
    if kbytes:
        ratio = 0
    held_pages = int(pool_pages * allocated)
    hugetlb_kb = held_pages * default_size_kb + other_kb
    if kbytes:
        commit_limit_kb = kbytes // 4 * 4 + swap_kb // 4 * 4
    else:
        commit_limit_kb = ((mem_kb // 4 - hugetlb_kb // 4) * ratio // 100 + swap_kb // 4) * 4
    committed_fraction = draw(st.sampled_from([0.05, 0.2, 0.5, 0.8, 0.95]))
    committed_kb = int((commit_limit_kb if mode == 2 else mem_kb) * committed_fraction)

    dirty = draw(st.sampled_from(["ratios", "high-ratios", "bytes", "inverted"]))
    dirty_values = {"ratios": (10, 5, 0, 0), "high-ratios": (20, 10, 0, 0), "bytes": (0, 0, 536870912, 67108864),
                    "inverted": (10, 20, 0, 0)}[dirty]
    sysctl = {
        "vm.overcommit_memory": mode, "vm.overcommit_ratio": ratio, "vm.overcommit_kbytes": kbytes,
        "vm.nr_hugepages": pool_pages, "vm.nr_overcommit_hugepages": surplus_pages,
        "vm.dirty_ratio": dirty_values[0], "vm.dirty_background_ratio": dirty_values[1],
        "vm.dirty_bytes": dirty_values[2], "vm.dirty_background_bytes": dirty_values[3],
        "vm.swappiness": draw(st.sampled_from([1, 10, 30, 60])),
        "vm.zone_reclaim_mode": draw(st.sampled_from([0, 1])) if sockets > 1 else 0,
        "kernel.numa_balancing": draw(st.sampled_from([0, 1])),
        "vm.vfs_cache_pressure": draw(st.sampled_from([50, 100])),
        "kernel.sched_migration_cost_ns": 5000000, "kernel.sched_autogroup_enabled": 0,
    }
    meminfo = [
        ("MemTotal", mem_kb), ("MemFree", mem_kb // 10), ("MemAvailable", mem_kb // 2), ("Cached", mem_kb // 3),
        ("SwapTotal", swap_kb), ("SwapFree", swap_kb), ("AnonHugePages", 0), ("PageTables", mem_kb // 500),
        ("CommitLimit", commit_limit_kb), ("Committed_AS", committed_kb),
        ("HugePages_Total", held_pages), ("HugePages_Free", held_pages), ("HugePages_Rsvd", 0),
        ("HugePages_Surp", 0), ("Hugepagesize", default_size_kb), ("Hugetlb", hugetlb_kb),
    ]
    counts = {"HugePages_Total", "HugePages_Free", "HugePages_Rsvd", "HugePages_Surp"}
    max_connections = draw(st.sampled_from([20, 50, 100, 200, 300, 500, 1000, 2000]))
    settings = {
        "max_connections": str(max_connections),
        "shared_buffers": _kb(shared_buffers_kb),
        "huge_pages": huge_pages,
        "huge_page_size": huge_page_size if huge_page_size != "0" else "0",
        "work_mem": draw(st.sampled_from(["4MB", "16MB", "64MB", "256MB"])),
        "maintenance_work_mem": draw(st.sampled_from(["64MB", "512MB", "2GB"])),
        "effective_cache_size": draw(st.sampled_from(["4GB", f"{max(1, ram_gb // 2)}GB", f"{ram_gb * 2}GB"])),
        "max_worker_processes": str(draw(st.sampled_from([8, cpus, max(8, cpus + 4)]))),
        "max_parallel_workers": str(min(8, cpus)),
        "autovacuum_max_workers": "3",
        "checkpoint_completion_target": "0.9",
        "max_wal_size": draw(st.sampled_from(["1GB", "8GB"])),
        "min_wal_size": draw(st.sampled_from(["80MB", "2GB"])),
        "random_page_cost": draw(st.sampled_from(["1.1", "4"])),
        "shared_preload_libraries": draw(st.sampled_from(["", "pg_stat_statements"])),
    }
    postgresql_conf = "".join(f"{name} = '{value}'\n" for name, value in settings.items())
    host_yaml = {"name": "generated", "pg_version": version, "pg_instances": instances,
                 "workload": draw(st.sampled_from(["oltp", "olap", "mixed", "web"])),
                 "storage": draw(st.sampled_from(["ssd", "hdd", "nvme", "san"])), "dedicated": True}
    sysfs = ["/sys/kernel/mm/transparent_hugepage/enabled:always [madvise] never",
             "/sys/kernel/mm/transparent_hugepage/defrag:always defer defer+madvise [madvise] never",
             f"/sys/fs/cgroup/memory.max:{cgroup_kb * 1024 if cgroup_kb is not None else 'max'}"]
    # the host's own sysctl.d, which the running kernel may not run yet (edited since boot, or a pool the kernel
    # could not find): the target is worked out on the host as these files boot it
    declared = draw(st.dictionaries(
        st.sampled_from(["vm.overcommit_memory", "vm.overcommit_ratio", "vm.nr_hugepages", "vm.dirty_ratio",
                         "vm.dirty_background_ratio", "vm.dirty_bytes", "vm.dirty_background_bytes", "vm.swappiness"]),
        st.integers(0, 3), max_size=4))
    declared_values = {
        key: [sysctl[key], {"vm.overcommit_memory": 2, "vm.overcommit_ratio": 80,
                            "vm.nr_hugepages": int(mem_kb * 0.3) // default_size_kb, "vm.dirty_ratio": 20,
                            "vm.dirty_background_ratio": 10, "vm.dirty_bytes": 268435456,
                            "vm.dirty_background_bytes": 134217728, "vm.swappiness": 10}[key], 0,
              {"vm.overcommit_memory": 0, "vm.overcommit_ratio": 50,
               "vm.nr_hugepages": int(mem_kb * 0.1) // default_size_kb, "vm.dirty_ratio": 5,
               "vm.dirty_background_ratio": 3, "vm.dirty_bytes": 1073741824, "vm.dirty_background_bytes": 33554432,
               "vm.swappiness": 60}[key]][choice]
        for key, choice in declared.items()}
    files = {
        "meminfo.txt": "".join(f"{name}: {value}{'' if name in counts else ' kB'}\n" for name, value in meminfo),
        "sysctl.txt": "".join(f"{key} = {value}\n" for key, value in sorted(sysctl.items())),
        "lscpu.txt": (f"Architecture: x86_64\nCPU(s): {cpus}\nThread(s) per core: 1\n"
                      f"Core(s) per socket: {cpus // sockets}\nSocket(s): {sockets}\nNUMA node(s): {sockets}\n"),
        "sysfs.txt": "".join(line + "\n" for line in sysfs),
        "postgresql.conf": postgresql_conf,
        "PG_VERSION": f"{version}\n",
        "host.yaml": "".join(f"{key}: {str(value).lower() if isinstance(value, bool) else value}\n"
                             for key, value in host_yaml.items()),
    }
    if declared_values:
        files["sysctl.d/90-tuning.conf"] = "".join(f"{key} = {value}\n" for key, value in declared_values.items())
    description = (f"sysctl.d {declared_values}, {ram_gb} GB, swap {swap} {swap_kb // 1024} MB, "
                   f"{cpus} CPUs/{sockets} sockets, huge {huge} "
                   f"({pool_pages} pages of {default_size_kb} kB, {held_pages} held, {surplus_pages} surplus, "
                   f"{other_kb // GB_KB} GB other), cgroup {cgroup_kb}, "
                   f"{instances} instance(s), PG {version}, overcommit {mode}/{ratio}/{kbytes}, "
                   f"committed {committed_kb // 1024} MB, {settings}")
    return Host(files, description)
