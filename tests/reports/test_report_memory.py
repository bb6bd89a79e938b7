"""The RAM picture: segments from whichever facts exist, the CommitLimit mark, overcommitment."""

from __future__ import annotations

from pathlib import Path

from pgvet.findings import HostResult, LintResult
from pgvet.numbers import size_text
from pgvet.provenance import Source
from pgvet.report import FORMATS, ReportOptions
from pgvet.report.memory import MemoryPicture, Segment, bar_cells, marker_line, memory_picture
from pgvet.snapshot.facts import Fact, FactValue, HostFacts
from report_samples import GIB, MIB, write_samples


def host_with(**facts: FactValue) -> HostFacts:
    host = HostFacts(name="h", root=".")
    for name, value in facts.items():
        host.add(Fact(name.replace("__", "."), value, Source("<test>")))
    return host


def sizes(picture: MemoryPicture) -> list[tuple[str, int]]:
    return [(segment.label, segment.size) for segment in picture.segments]


def test_no_picture_without_ram() -> None:
    assert memory_picture(host_with(derived__shared_memory_size=GIB)) is None


def test_shared_memory_in_the_huge_page_pool_and_the_rest_for_the_os() -> None:
    picture = memory_picture(host_with(host__ram=64 * GIB, derived__shared_memory_size=17 * GIB,
                                       meminfo__hugepages_total=9216, meminfo__hugepagesize=2 * MIB,
                                       pg__huge_pages="on", derived__work_mem_budget=16 * GIB,
                                       sysctl__vm__overcommit_memory=2, derived__commit_limit=48 * GIB))
    assert picture is not None
    assert sizes(picture) == [("PostgreSQL shared memory, in huge pages", 17 * GIB),
                              ("huge page pool, unused", 1 * GIB),
                              ("work_mem budget, worst case", 16 * GIB),
                              ("OS and page cache", 30 * GIB)]
    assert (picture.commit_limit, picture.overcommitted, picture.estimated) == (48 * GIB, 0, False)


def test_pages_of_every_size_count_in_the_pool() -> None:
    # 150 pages of 1 GB reserved at boot: HugePages_Total counts the default 2 MB size only (0 here), meminfo's
    # Hugetlb every size. The pool was drawn empty, and the shared memory it holds as ordinary memory.
    picture = memory_picture(host_with(host__ram=192 * GIB, derived__shared_memory_size=141 * GIB,
                                       meminfo__hugetlb=150 * GIB, meminfo__hugepages_total=0,
                                       meminfo__hugepagesize=2 * MIB, pg__huge_pages="on"))
    assert picture is not None
    assert sizes(picture) == [("PostgreSQL shared memory, in huge pages", 141 * GIB),
                              ("huge page pool, unused", 9 * GIB), ("OS and page cache", 42 * GIB)]


def test_declared_pool_when_there_is_no_meminfo_and_shared_buffers_as_estimate() -> None:
    picture = memory_picture(host_with(host__ram=64 * GIB, pg__shared_buffers=16 * GIB, pg__huge_pages="on",
                                       derived__hugepages_pool=4096, derived__hugepage_size=2 * MIB))
    assert picture is not None
    assert sizes(picture) == [("PostgreSQL shared memory (exceeds the pool)", 16 * GIB),
                              ("huge page pool", 8 * GIB), ("OS and page cache", 40 * GIB)]
    assert picture.estimated is True


def test_commit_limit_is_marked_only_when_overcommit_is_strict() -> None:
    picture = memory_picture(host_with(host__ram=4 * GIB, derived__commit_limit=3 * GIB,
                                       sysctl__vm__overcommit_memory=0))
    assert picture is not None and picture.commit_limit is None


def test_a_budget_beyond_ram_is_overcommitted(tmp_path: Path) -> None:
    samples = write_samples(tmp_path)
    picture = memory_picture(samples.small_vm.host_facts)
    assert picture is not None
    assert picture.overcommitted == 148 * MIB + 28 * GIB - 4 * GIB
    assert sizes(picture)[-1] == ("OS and page cache", 0)
    assert picture.total == 148 * MIB + 28 * GIB


def test_bar_cells_fill_the_width_exactly_and_keep_small_segments_visible() -> None:
    picture = MemoryPicture(100, [Segment("a", 1, "", "█"), Segment("b", 66, "", "▒"), Segment("c", 33, "", "░")],
                            None, 0, False)
    assert bar_cells(picture, 10) == [1, 6, 3]
    assert sum(bar_cells(picture, 72)) == 72
    strict = MemoryPicture(100, [Segment("a", 50, "", "█"), Segment("b", 150, "", "▒")], 40, 100, False)
    assert marker_line(strict, 20) == "    ┃     ▲"  # 40 and 100 of the 200 promised, on 20 cells


def test_size_text_uses_iec_units() -> None:
    assert [size_text(value) for value in (512, 2048, 148 * MIB, 151517146003, 3 * 1024**4)] == [
        "512 B", "2.0 KiB", "148.0 MiB", "141.1 GiB", "3.0 TiB"]


def test_the_drawn_picture_at_80_columns(tmp_path: Path) -> None:
    samples = write_samples(tmp_path)
    result = LintResult(hosts=[HostResult(host_facts=samples.big_server.host_facts)], rules={}, tool_version="0",
                        pack_version="0")
    lines = FORMATS["text"](result, ReportOptions(color=False, width=80, repo_root=tmp_path)).splitlines()
    start = lines.index("Where the RAM goes (188.4 GiB)")
    bar, markers = lines[start + 1], lines[start + 2]
    # 72 cells for 258.7 GiB promised: 39.28, 28.27 and 4.45 cells, the largest remainder rounded up
    assert bar == "  " + "█" * 39 + "▓" * 28 + "▒" * 5
    assert markers == "  " + " " * 23 + "┃" + " " * 28 + "▲"  # CommitLimit at 22.9 cells, RAM at 52.4
    assert lines[start + 3:start + 10] == [
        "  ██ PostgreSQL shared memory (exceeds the pool)    141.1 GiB  74.9 %",
        "  ▓▓ huge page pool                                 101.6 GiB  53.9 %",
        "  ▒▒ work_mem budget, worst case                     16.0 GiB   8.5 %",
        "  ░░ OS and page cache                           nothing left   0.0 %",
        "   ┃ CommitLimit (overcommit strict)                 82.2 GiB  43.6 %",
        "   ▲ end of RAM                                     188.4 GiB 100.0 %",
        "     promised beyond RAM, more than it holds        +70.3 GiB +37.3 %",
    ]  # issue #30: `▲ end of RAM; promised beyond it 188.3 GiB 100.0 %` read as the RAM's size


def test_under_a_cgroup_the_picture_is_its_memory_max_without_the_huge_page_pool() -> None:
    # host.ram is the cgroup's memory.max (64 GiB of a 256 GiB machine); its 100 GiB pool of huge pages,
    # and the shared memory they hold, are charged to the hugetlb controller, not to memory.max
    common = dict(host__ram=64 * GIB, cgroup__memory_max=64 * GIB, meminfo__mem_total=256 * GIB,
                  meminfo__hugepages_total=51200, meminfo__hugepagesize=2 * MIB, derived__shared_memory_size=17 * GIB,
                  derived__work_mem_budget=4 * GIB)
    in_pool = memory_picture(host_with(**common, pg__huge_pages="on"))
    assert in_pool is not None and in_pool.cgroup
    assert sizes(in_pool) == [("work_mem budget, worst case", 4 * GIB), ("OS and page cache", 60 * GIB)]
    assert in_pool.overcommitted == 0
    outside = memory_picture(host_with(**common, pg__huge_pages="off"))
    assert outside is not None
    assert sizes(outside) == [("PostgreSQL shared memory", 17 * GIB), ("work_mem budget, worst case", 4 * GIB),
                              ("OS and page cache", 43 * GIB)]
    result = LintResult(hosts=[HostResult(host_facts=host_with(**common, pg__huge_pages="off"))], rules={},
                        tool_version="0", pack_version="0")
    text = FORMATS["text"](result, ReportOptions(color=False, width=100))
    assert "Where the cgroup's memory goes (64.0 GiB, memory.max)" in text
    machine = memory_picture(host_with(**{**common, "cgroup__memory_max": 512 * GIB}, pg__huge_pages="off"))
    assert machine is not None and not machine.cgroup  # a limit above the RAM does not bind
