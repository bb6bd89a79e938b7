"""Where the host's RAM goes: a stacked bar built from the facts, for the text report.

Segments: PostgreSQL shared memory (inside the huge page pool when huge pages hold it), the rest of
the huge page pool, the worst-case work_mem budget, and what is left for the OS and its page cache;
the CommitLimit is marked when overcommit is strict. A budget beyond RAM is shown as overcommitted:
the bar is then scaled to everything promised and RAM's end is marked on it. Under a cgroup whose memory.max
is below the machine's RAM, the picture is of that limit, without the huge page pool (not charged to it).
This module only computes; text.py draws it with rich (kept out of here so tests need no console).
"""

from __future__ import annotations

from typing import NamedTuple

from pgvet.snapshot.facts import HostFacts


class Segment(NamedTuple):
    label: str
    size: int
    style: str
    char: str


def _number(host: HostFacts, name: str) -> float | None:
    value = host.value(name)
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


class MemoryPicture(NamedTuple):
    ram: int
    segments: list[Segment]
    commit_limit: int | None  # only when overcommit is strict (vm.overcommit_memory = 2)
    overcommitted: int  # bytes promised beyond RAM
    estimated: bool  # shared memory from shared_buffers, not the calibrated estimate
    cgroup: bool = False  # ``ram`` is a cgroup's memory.max, below the machine's RAM

    @property
    def total(self) -> int:
        """What the bar spans: RAM, or everything promised when that is more."""
        return max(self.ram, sum(segment.size for segment in self.segments))


def _huge_page_pool(host: HostFacts) -> float:
    # The pages the kernel really allocated (meminfo) hold RAM: Hugetlb counts every page size (1 GB pages
    # reserved at boot besides the default 2 MB ones), HugePages_Total the default size only. The declared pool
    # is the fallback for configuration repositories, which have no meminfo.
    every_size = _number(host, "meminfo.hugetlb")
    if every_size is not None:
        return every_size
    allocated = _number(host, "meminfo.hugepages_total")
    if allocated is not None:
        return allocated * (_number(host, "meminfo.hugepagesize") or 2 * 1024 * 1024)
    declared = _number(host, "derived.hugepages_pool")
    if declared is not None:
        return declared * (_number(host, "derived.hugepage_size") or 2 * 1024 * 1024)
    return 0.0


def memory_picture(host: HostFacts) -> MemoryPicture | None:
    """The picture from whichever facts exist; None without ``host.ram``."""
    ram = _number(host, "host.ram")
    if not ram:
        return None
    shared = _number(host, "derived.shared_memory_size")
    estimated = shared is None
    if shared is None:
        shared = _number(host, "pg.shared_buffers")
    pool = _huge_page_pool(host)
    huge_pages = host.value("pg.huge_pages")
    in_pool = shared is not None and pool > 0 and huge_pages in ("on", "try") and shared <= pool
    # Under a cgroup, host.ram is its memory.max, and huge pages are not charged to it (the hugetlb controller
    # counts them): neither the pool nor the shared memory it holds is part of that picture.
    limit, machine = _number(host, "cgroup.memory_max"), _number(host, "meminfo.mem_total")
    cgroup = limit is not None and machine is not None and limit < machine
    segments: list[Segment] = []
    if shared is not None and not (cgroup and in_pool):
        if in_pool:
            label = "PostgreSQL shared memory, in huge pages"
        elif pool > 0 and huge_pages == "on":
            label = "PostgreSQL shared memory (exceeds the pool)"
        else:
            label = "PostgreSQL shared memory"
        segments.append(Segment(label, int(shared), "bold magenta", "█"))
    if pool > 0 and not cgroup:
        rest = pool - shared if in_pool and shared is not None else pool
        if rest > 0:
            label = "huge page pool, unused" if in_pool or huge_pages == "off" else "huge page pool"
            segments.append(Segment(label, int(rest), "magenta", "▓"))
    budget = _number(host, "derived.work_mem_budget")
    if budget is not None:
        segments.append(Segment("work_mem budget, worst case", int(budget), "yellow", "▒"))
    used = sum(segment.size for segment in segments)
    segments.append(Segment("OS and page cache", int(max(0.0, ram - used)), "green", "░"))
    commit_limit = _number(host, "derived.commit_limit") if host.value("sysctl.vm.overcommit_memory") == 2 else None
    return MemoryPicture(int(ram), segments, int(commit_limit) if commit_limit else None,
                         int(max(0.0, used - ram)), estimated, cgroup)


def bar_cells(picture: MemoryPicture, width: int) -> list[int]:
    """How many cells each segment takes on a bar of ``width`` cells: largest remainders, so the cells
    add up to the width exactly, and a segment that is not empty gets at least one."""
    total = picture.total
    exact = [segment.size / total * width for segment in picture.segments]
    cells = [int(share) for share in exact]
    for index, segment in enumerate(picture.segments):
        if segment.size > 0 and cells[index] == 0:
            cells[index] = 1
    order = sorted(range(len(exact)), key=lambda index: exact[index] - int(exact[index]), reverse=True)
    for index in order:
        if sum(cells) >= width:
            break
        cells[index] += 1
    while sum(cells) > width:  # the minimum of one cell overshot: take from the largest
        cells[cells.index(max(cells))] -= 1
    return cells


def marker_line(picture: MemoryPicture, width: int) -> str:
    """Marks under the bar: ``┃`` the CommitLimit, ``▲`` the end of RAM when more is promised."""
    marks = [" "] * (width + 1)
    total = picture.total
    if picture.ram < total:
        marks[min(width, round(picture.ram / total * width))] = "▲"
    if picture.commit_limit is not None:
        marks[min(width, round(picture.commit_limit / total * width))] = "┃"
    return "".join(marks).rstrip()
