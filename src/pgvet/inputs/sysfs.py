"""The ``grep -H . <files>`` dump of sysfs: transparent huge pages, block queues, cgroup memory limit, the
huge page pools of every size.

Each line is ``/sys/…/file:value``. Lists with a bracketed entry give the active one
(``always madvise [never]`` → ``never``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from pgvet.errors import ParseError
from pgvet.provenance import Located, Source

_THP = re.compile(r"^/sys/kernel/mm/transparent_hugepage/(enabled|defrag)$")
# nr_hugepages here is the pool's every page, surplus ones included (h->nr_huge_pages, as HugePages_Total)
_POOL = re.compile(r"^/sys/kernel/mm/hugepages/hugepages-(\d{1,12})kB/nr_hugepages$")
_QUEUE = re.compile(r"^/sys/block/([^/]+)/queue/(scheduler|rotational|read_ahead_kb)$")
CGROUP_V1_LIMIT = "/sys/fs/cgroup/memory/memory.limit_in_bytes"
# cgroup v1 reports "no limit" as PAGE_COUNTER_MAX pages: LONG_MAX rounded down to the base page size, which is
# 4 kB on x86-64 but 16 or 64 kB on arm64 and ppc64le kernels. Anything from LONG_MAX rounded down to the largest
# base page Linux has (256 kB) up is that: no machine has 8 EiB of memory to limit.
_CGROUP_V1_UNLIMITED = (2**63 - 1) // (256 * 1024) * (256 * 1024)

# Devices that never hold a database's files: loop devices, RAM disks, compressed swap, CD-ROMs, floppies.
_VIRTUAL_PREFIXES = ("loop", "ram", "zram", "sr", "fd", "nbd")


def is_virtual_disk(name: str) -> bool:
    """True for block devices that are not storage for PGDATA (dm-* and md* are real: LVM, RAID)."""
    return name.startswith(_VIRTUAL_PREFIXES)


def active_value(text: str) -> str:
    """The bracketed choice of ``always madvise [never]``, or the whole text (found without a regular
    expression: one went quadratic on a line of brackets)."""
    start = text.find("[")
    while start >= 0:
        end = text.find("]", start + 1)
        if end < 0:
            break
        if end > start + 1:
            return text[start + 1:end].strip()
        start = text.find("[", end)
    return text.strip()


@dataclass(slots=True, eq=False, repr=False)
class SysfsDump:
    thp: dict[str, Located[str]] = field(default_factory=dict)
    cgroup_memory_max: Located[int] | None = None
    # bytes in the huge page pools of every size, as /proc/meminfo's Hugetlb (which kernels before 4.16 lack)
    hugetlb: Located[int] | None = None
    disks: dict[str, dict[str, Located[int | str | bool]]] = field(default_factory=dict)


def _integer(text: str, source: Source) -> int:
    try:
        return int(text.strip())
    except ValueError:
        raise ParseError(f"expected a number, found {text.strip()[:40]!r}", source) from None


def parse_sysfs(text: str, path: str) -> SysfsDump:
    dump = SysfsDump()
    recognised = 0
    for number, line in enumerate(text.split("\n"), 1):
        if not line.strip():
            continue
        file, separator, value = line.partition(":")
        if not separator or not file.startswith("/sys/"):
            raise ParseError("expected `/sys/…/file:value` lines (the output of `grep -H . FILES`)",
                             Source(path, number))
        source = Source(path, number)
        value = value.strip()
        if match := _THP.match(file):
            dump.thp[match.group(1)] = Located(active_value(value), source)
        elif match := _QUEUE.match(file):
            disk, attribute = match.groups()
            entry = dump.disks.setdefault(disk, {})
            if attribute == "scheduler":
                entry["scheduler"] = Located(active_value(value), source)
            elif attribute == "rotational":
                entry["rotational"] = Located(_integer(value, source) == 1, source)
            else:
                entry["read_ahead_kb"] = Located(_integer(value, source), source)
        elif match := _POOL.match(file):
            held = _integer(value, source) * int(match.group(1)) * 1024
            dump.hugetlb = Located(held + (dump.hugetlb.value if dump.hugetlb else 0),
                                   dump.hugetlb.source if dump.hugetlb else source)
        elif (file.startswith("/sys/fs/cgroup/") and file.endswith("/memory.max")) or file == CGROUP_V1_LIMIT:
            if value != "max":
                limit = _integer(value, source)
                if limit == 0:
                    # host.ram would be 0 and every share of RAM divide by it, as with a MemTotal of 0 (refused
                    # by meminfo): no process runs in such a cgroup, so it is not PostgreSQL's
                    raise ParseError(f"{file} is 0: no process can run in that cgroup; expected the limit of "
                                     "PostgreSQL's cgroup", source)
                if limit < _CGROUP_V1_UNLIMITED:
                    dump.cgroup_memory_max = Located(limit, source)
        else:
            continue  # other sysfs files are allowed and ignored
        recognised += 1
    if not recognised and text.strip():
        raise ParseError("no transparent_hugepage, block queue, cgroup or huge page pool file in this dump",
                         Source(path, 1))
    return dump
