"""Where the host's RAM goes: a stacked bar built from the facts, for the text report.

Segments: PostgreSQL shared memory (inside the huge page pool when huge pages hold it), the rest of
the huge page pool, the worst-case work_mem budget, and what is left for the OS and its page cache;
the CommitLimit is marked when overcommit is strict. A budget beyond RAM is shown as overcommitted.
"""

from __future__ import annotations

from dataclasses import dataclass

from pgvet.facts import HostFacts


@dataclass(frozen=True, slots=True)
class Segment:
    label: str
    size: int
    style: str
    char: str


def size_text(size: float) -> str:
    for unit, factor in (("TiB", 1024**4), ("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if abs(size) >= factor:
            return f"{size / factor:.1f} {unit}"
    return f"{int(size)} B"


def _number(host: HostFacts, name: str) -> float | None:
    value = host.value(name)
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


@dataclass(frozen=True, slots=True)
class MemoryPicture:
    ram: int
    segments: list[Segment]
    commit_limit: int | None
    overcommitted: int  # bytes asked for beyond RAM
    estimated: bool  # shared memory from shared_buffers, not the calibrated estimate


def memory_picture(host: HostFacts) -> MemoryPicture | None:
    ram = _number(host, "host.ram")
    if not ram:
        return None
    shared = _number(host, "derived.shared_memory_size")
    estimated = shared is None
    if shared is None:
        shared = _number(host, "pg.shared_buffers")
    pool_pages = _number(host, "meminfo.hugepages_total")
    page_size = _number(host, "meminfo.hugepagesize") or 2 * 1024 * 1024
    pool = pool_pages * page_size if pool_pages is not None else None
    if pool is None:
        pool_derived = _number(host, "derived.hugepages_pool")
        size_derived = _number(host, "derived.hugepage_size") or page_size
        pool = pool_derived * size_derived if pool_derived is not None else 0.0
    budget = _number(host, "derived.work_mem_budget")
    segments: list[Segment] = []
    huge_pages = host.value("pg.huge_pages")
    in_pool = shared is not None and pool > 0 and huge_pages in ("on", "try") and shared <= pool
    if shared is not None:
        label = "PostgreSQL shared memory" + (" (in huge pages)" if in_pool else "")
        segments.append(Segment(label, int(shared), "bold magenta", "█"))
    if pool > 0:
        rest = pool - shared if in_pool and shared is not None else pool
        if rest > 0:
            segments.append(Segment("huge page pool" + (", unused" if in_pool else ""), int(rest), "magenta", "▓"))
    if budget is not None:
        segments.append(Segment("work_mem budget (worst case)", int(budget), "yellow", "▒"))
    used = sum(segment.size for segment in segments)
    if used < ram:
        segments.append(Segment("OS and page cache", int(ram - used), "green", "░"))
    commit_limit = _number(host, "derived.commit_limit") if host.value("sysctl.vm.overcommit_memory") == 2 else None
    return MemoryPicture(int(ram), segments, int(commit_limit) if commit_limit else None,
                         int(max(0.0, used - ram)), estimated)


def render_bar(picture: MemoryPicture, width: int) -> tuple[list[tuple[str, str]], str]:
    """The bar as (text, style) runs, scaled to RAM (or to the total when overcommitted), and a marker line."""
    total = max(picture.ram, sum(segment.size for segment in picture.segments))
    runs: list[tuple[str, str]] = []
    drawn = 0
    for index, segment in enumerate(picture.segments):
        cells = round(segment.size / total * width) if index < len(picture.segments) - 1 else width - drawn
        cells = max(cells, 1 if segment.size > 0 else 0)
        cells = min(cells, width - drawn)
        runs.append((segment.char * cells, segment.style))
        drawn += cells
    markers = [" "] * (width + 1)
    if picture.ram < total:
        markers[round(picture.ram / total * width)] = "▲"
    if picture.commit_limit is not None:
        markers[min(width, round(picture.commit_limit / total * width))] = "┃"
    return runs, "".join(markers).rstrip()
