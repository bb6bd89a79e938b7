"""Hand-built lint results for the reporter tests, independent of the engine and the rule pack.

``write_samples(base)`` writes three host directories under ``base`` (real files, so reporters can
show the offending line) and returns their results:

- ``web-db-01`` (small-vm/): 4 GiB VM, overcommit not strict and THP always (warnings), a swappiness
  finding suppressed, a too-many-connections finding in the baseline, one rule not evaluated;
- ``db-prod-03`` (big-server/): 188 GiB, huge_pages = on with a pool too small (error, with the needed
  pages, the pool and the shared memory size), overcommit strict with its CommitLimit;
- ``reporting-db`` (config-repo/): a configuration repository whose postgresql.conf line 12 holds an
  unknown parameter (a startup error), no host.yaml so that findings without a file point at the directory;
- a host that could not be read (``broken-host``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pgvet.findings import Evidence, Finding, Fix, HostError, HostResult, LintResult, NotEvaluated, RuleMeta
from pgvet.provenance import Source
from pgvet.snapshot.facts import Fact, FactValue, HostFacts

GIB = 1024**3
MIB = 1024**2

SMALL_VM_SYSCTL = """\
kernel.sched_autogroup_enabled = 1
vm.dirty_ratio = 20
vm.overcommit_memory = 0
vm.overcommit_ratio = 50
vm.swappiness = 60
"""
SMALL_VM_SYSFS = """\
/sys/kernel/mm/transparent_hugepage/enabled:[always] madvise never
/sys/kernel/mm/transparent_hugepage/defrag:always defer defer+madvise [madvise] never
"""
SMALL_VM_CONF = """\
# small VM
listen_addresses = '*'
max_connections = 200
shared_buffers = 128MB
work_mem = 64MB
"""
SMALL_VM_HOST = "pg_version: 17\nworkload: web\nstorage: ssd\ndedicated: true\n"

BIG_SERVER_CONF = """\
max_connections = 1000
shared_buffers = 138GB
huge_pages = on                 # was try: pages must be used, not silently skipped
work_mem = 64MB
"""
BIG_SERVER_SYSCTL = """\
vm.nr_hugepages = 60000
vm.overcommit_memory = 2
vm.overcommit_ratio = 90
"""
BIG_SERVER_MEMINFO = """\
MemTotal:       197568400 kB
SwapTotal:        4194300 kB
CommitLimit:     86159460 kB
HugePages_Total:    52000
Hugepagesize:        2048 kB
"""

CONFIG_REPO_CONF = "".join(f"# reporting database, line {number}\n" for number in range(1, 12)) + (
    "effective_io_concurency = 200\n"  # line 12: misspelt, PostgreSQL refuses to start
    "shared_buffers = 16GB\n"
)

RULES: dict[str, RuleMeta] = {
    meta.id: meta
    for meta in (
        RuleMeta("PGV101", "overcommit-not-strict", "Overcommit is not strict: the OOM killer may kill a backend",
                 "warning", ("os", "memory", "overcommit"),
                 "With the default heuristic overcommit the kernel promises memory it does not have; when it runs "
                 "out the OOM killer kills a backend and the postmaster restarts the whole instance.",
                 ("Dalibo J1 — Configuration de la surréservation mémoire",)),
        RuleMeta("PGV110", "huge-pages-on-pool-too-small",
                 "huge_pages = on but the huge page pool is smaller than the shared memory", "error",
                 ("os", "memory", "huge-pages", "startup"),
                 "With huge_pages = on PostgreSQL refuses to start when the kernel cannot give it enough huge pages.",
                 ("PostgreSQL documentation — Managing Kernel Resources, Linux Huge Pages",)),
        RuleMeta("PGV104", "commit-limit-too-low", "CommitLimit is below what PostgreSQL may ask for", "warning",
                 ("os", "memory", "overcommit"), "", ()),
        RuleMeta("PGV130", "swappiness-too-high", "vm.swappiness above 10", "warning", ("os", "memory"),
                 "A high swappiness swaps out PostgreSQL's memory while the page cache is kept.", ()),
        RuleMeta("PGV139", "transparent-huge-pages-always", "Transparent huge pages are always on", "warning",
                 ("os", "memory", "thp"), "THP cause latency spikes and never back PostgreSQL's shared memory.", ()),
        RuleMeta("PGV142", "sched-migration-cost-low", "kernel.sched_migration_cost_ns below 5 ms", "info",
                 ("os", "cpu"), "", ()),
        RuleMeta("PGV401", "unknown-parameter", "Unknown configuration parameter: PostgreSQL will not start",
                 "error", ("postgresql", "validity", "startup"),
                 "PostgreSQL logs 'unrecognized configuration parameter' with the file and line and refuses to start.",
                 ("PostgreSQL documentation — Setting Parameters",)),
        RuleMeta("PGV536", "too-many-connections", "max_connections far above what the CPUs can serve", "warning",
                 ("postgresql", "connections"), "A core serves 1 to 20 queries at once; use a pooler.", ()),
        RuleMeta("PGV605", "checkpoint-timeout-default", "checkpoint_timeout at its 5 min default", "info",
                 ("postgresql", "wal"), "15 min is common for write-heavy loads, but measured effects vary.", ()),
    )
}


@dataclass(frozen=True, slots=True)
class Samples:
    small_vm: HostResult
    big_server: HostResult
    config_repo: HostResult
    host_error: HostError

    def result(self, *hosts: HostResult, errors: tuple[HostError, ...] = ()) -> LintResult:
        return LintResult(hosts=list(hosts), rules=RULES, tool_version="0.1.0", pack_version="2026.11",
                          errors=list(errors), compared_with_baseline=True)

    def fleet(self) -> LintResult:
        """All three hosts, the unreadable one and a notice: every kind of thing a report shows."""
        result = self.result(self.small_vm, self.big_server, self.config_repo, errors=(self.host_error,))
        result.notices.append("suppression for PGV999 in .pgvet.toml matched nothing")
        return result


def _facts(host: HostFacts, values: dict[str, tuple[FactValue, str, int | None]]) -> None:
    for name, (value, path, line) in values.items():
        host.add(Fact(name, value, Source(path, line)))


def _write(directory: Path, files: dict[str, str]) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (directory / name).write_text(text, encoding="utf-8")


def small_vm(directory: Path) -> HostResult:
    _write(directory, {"sysctl.txt": SMALL_VM_SYSCTL, "sysfs.txt": SMALL_VM_SYSFS,
                       "postgresql.conf": SMALL_VM_CONF, "host.yaml": SMALL_VM_HOST})
    host = HostFacts(name="web-db-01", root=str(directory))
    _facts(host, {
        "host.ram": (4 * GIB, "meminfo.txt", 1),
        "sysctl.vm.overcommit_memory": (0, "sysctl.txt", 3),
        "meminfo.hugepages_total": (0, "meminfo.txt", 4),
        "meminfo.hugepagesize": (2 * MIB, "meminfo.txt", 5),
        "pg.huge_pages": ("try", "<default>", None),
        "derived.shared_memory_size": (148 * MIB, "<derived>", None),
        "derived.work_mem_budget": (28 * GIB, "<derived>", None),
        "derived.commit_limit": (3 * GIB, "<derived>", None),
    })
    overcommit = Finding(
        "PGV101", "overcommit-not-strict", "warning", RULES["PGV101"].title,
        "vm.overcommit_memory = 0: the kernel overcommits and the OOM killer may kill a backend; "
        "set 2 with vm.overcommit_ratio = 53 (CommitLimit = 3.2 GiB of 4.0 GiB).",
        "web-db-01", "507e5400853b53b5", tags=RULES["PGV101"].tags, path="sysctl.txt", line=3,
        values={"overcommit_memory": 0, "suggested_ratio": 53, "commit_limit": 3435973836},
        evidence=[Evidence("sysctl.vm.overcommit_memory", 0, Source("sysctl.txt", 3)),
                  Evidence("host.dedicated", True, Source("host.yaml", 4)),
                  Evidence("derived.suggested_overcommit_ratio", 53, Source("<derived>"))],
        fix=Fix(sysctl={"vm.overcommit_memory": "2", "vm.overcommit_ratio": "53"},
                text="Set both in /etc/sysctl.d/ and apply with `sysctl --system`."),
        help=RULES["PGV101"].why, references=list(RULES["PGV101"].references))
    thp = Finding(
        "PGV139", "transparent-huge-pages-always", "warning", RULES["PGV139"].title,
        "Transparent huge pages are enabled = always: latency spikes, and they never back shared memory.",
        "web-db-01", "7990a9748143e1da", tags=RULES["PGV139"].tags, path="sysfs.txt", line=1,
        values={"enabled": "always"},
        evidence=[Evidence("thp.enabled", "always", Source("sysfs.txt", 1))],
        fix=Fix(text="Add transparent_hugepage=never to the kernel command line."), help=RULES["PGV139"].why)
    swappiness = Finding(
        "PGV130", "swappiness-too-high", "warning", RULES["PGV130"].title, "vm.swappiness = 60; use 10.",
        "web-db-01", "4f7d7f5cfcab25f0", tags=RULES["PGV130"].tags, path="sysctl.txt", line=5,
        values={"swappiness": 60}, evidence=[Evidence("sysctl.vm.swappiness", 60, Source("sysctl.txt", 5))],
        fix=Fix(sysctl={"vm.swappiness": "10"}), suppressed="a 1 GiB swap on a VM that is rebuilt nightly")
    connections = Finding(
        "PGV536", "too-many-connections", "warning", RULES["PGV536"].title,
        "max_connections = 200 on 2 CPUs; suggested 100 behind a pooler.",
        "web-db-01", "c48324ac6a7b85ed", tags=RULES["PGV536"].tags, path="postgresql.conf", line=3,
        values={"max_connections": 200, "cpus": 2, "suggested": 100},
        evidence=[Evidence("pg.max_connections", 200, Source("postgresql.conf", 3))],
        fix=Fix(postgresql={"max_connections": "100"}), baseline=True)
    checkpoint = Finding(
        "PGV605", "checkpoint-timeout-default", "info", RULES["PGV605"].title,
        "checkpoint_timeout = 5min (the default); 15min is common for write-heavy loads, measure it.",
        "web-db-01", "e75e87bcf4816488", tags=RULES["PGV605"].tags,
        values={"checkpoint_timeout": 300},
        evidence=[Evidence("pg.checkpoint_timeout", 300, Source("<default>"))])
    return HostResult(host_facts=host, findings=[overcommit, thp, swappiness, connections, checkpoint],
                      not_evaluated=[NotEvaluated("PGV142", "sched-migration-cost-low",
                                                  ("sysctl.kernel.sched_migration_cost_ns",))])


def big_server(directory: Path) -> HostResult:
    _write(directory, {"postgresql.conf": BIG_SERVER_CONF, "sysctl.txt": BIG_SERVER_SYSCTL,
                       "meminfo.txt": BIG_SERVER_MEMINFO, "host.yaml": "pg_version: 17\n"})
    host = HostFacts(name="db-prod-03", root=str(directory))
    shared_memory = 151517146003.13538
    _facts(host, {
        "host.ram": (197568400 * 1024, "meminfo.txt", 1),
        "sysctl.vm.overcommit_memory": (2, "sysctl.txt", 2),
        "meminfo.hugepages_total": (52000, "meminfo.txt", 4),
        "meminfo.hugepagesize": (2 * MIB, "meminfo.txt", 5),
        "pg.huge_pages": ("on", "postgresql.conf", 3),
        "derived.shared_memory_size": (shared_memory, "<derived>", None),
        "derived.hugepages_pool": (60000, "<derived>", None),
        "derived.hugepage_size": (2 * MIB, "<derived>", None),
        "derived.work_mem_budget": (16 * GIB, "<derived>", None),
        "derived.commit_limit": (86159460 * 1024, "<derived>", None),
    })
    huge_pages = Finding(
        "PGV110", "huge-pages-on-pool-too-small", "error", RULES["PGV110"].title,
        "huge_pages = on: PostgreSQL 17 needs 72250 huge pages of 2.0 MiB for 141 GiB of shared memory, "
        "but the kernel has 52000: the server will not start.",
        "db-prod-03", "a1b2c3d4e5f60718", tags=RULES["PGV110"].tags, path="postgresql.conf", line=3,
        values={"needed": 72250, "available": 52000, "shared_memory_size": shared_memory,
                "hugepage_size": 2 * MIB, "suggested": 73695},
        evidence=[Evidence("pg.huge_pages", "on", Source("postgresql.conf", 3)),
                  Evidence("meminfo.hugepages_total", 52000, Source("meminfo.txt", 4)),
                  Evidence("sysctl.vm.nr_hugepages", 60000, Source("sysctl.txt", 1)),
                  Evidence("derived.hugepages_needed", 72250, Source("<derived>"))],
        fix=Fix(sysctl={"vm.nr_hugepages": "73695"}, postgresql={"huge_pages": "on"},
                text="Reserve the pages at boot so that fragmentation cannot prevent their allocation."),
        help=RULES["PGV110"].why, references=list(RULES["PGV110"].references))
    commit_limit = Finding(
        "PGV104", "commit-limit-too-low", "warning", RULES["PGV104"].title,
        "CommitLimit = 82.2 GiB is 43.6 % of RAM (188 GiB): queries fail with \"out of memory\" long before.",
        "db-prod-03", "29a0d3d385e8bd46", tags=RULES["PGV104"].tags, path="sysctl.txt", line=3,
        values={"commit_limit": 86159460 * 1024, "commit_limit_ratio": 0.436, "suggested_ratio": 100,
                "expected": 160000000000, "actual": 86159460 * 1024},
        evidence=[Evidence("sysctl.vm.overcommit_ratio", 90, Source("sysctl.txt", 3))],
        fix=Fix(sysctl={"vm.overcommit_ratio": "100"}))
    return HostResult(host_facts=host, findings=[commit_limit, huge_pages])


def config_repo(directory: Path) -> HostResult:
    _write(directory, {"postgresql.conf": CONFIG_REPO_CONF})
    host = HostFacts(name="reporting-db", root=str(directory))
    unknown = Finding(
        "PGV401", "unknown-parameter", "error", RULES["PGV401"].title,
        "unrecognized configuration parameter \"effective_io_concurency\"; did you mean effective_io_concurrency?",
        "reporting-db", "90f52e0ac0da4440", tags=RULES["PGV401"].tags, subject="effective_io_concurency",
        path="postgresql.conf", line=12,
        values={"parameter": "effective_io_concurency", "suggestion": "effective_io_concurrency"},
        evidence=[Evidence("setting.known", False, Source("postgresql.conf", 12))],
        fix=Fix(text="Correct the name (or remove the line)."), help=RULES["PGV401"].why,
        references=list(RULES["PGV401"].references))
    checkpoint = Finding(
        "PGV605", "checkpoint-timeout-default", "info", RULES["PGV605"].title,
        "checkpoint_timeout = 5min (the default); 15min is common for write-heavy loads, measure it.",
        "reporting-db", "5cc557e5b9fae783", tags=RULES["PGV605"].tags, values={"checkpoint_timeout": 300})
    return HostResult(host_facts=host, findings=[unknown, checkpoint])


def write_samples(base: Path) -> Samples:
    return Samples(
        small_vm=small_vm(base / "small-vm"),
        big_server=big_server(base / "big-server"),
        config_repo=config_repo(base / "config-repo"),
        host_error=HostError("broken-host", "permission denied", Source("meminfo.txt"), root=str(base / "broken-host")),
    )
