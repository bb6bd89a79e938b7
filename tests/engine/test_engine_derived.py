"""rules/derived.yaml: the kernel's CommitLimit formula against worked numbers and this machine's kernel."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pgvet.engine.derived import derived_inputs, derived_values
from pgvet.engine.loader import load_pack
from pgvet.engine.pack import RulePack
from pgvet.provenance import Source
from pgvet.snapshot.facts import Fact, HostFacts

KB = 1024
GB = 1024**3


@pytest.fixture(scope="module")
def pack(tmp_path_factory: pytest.TempPathFactory) -> RulePack:
    mp = pytest.MonkeyPatch()
    mp.setenv("PGVET_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
    try:
        return load_pack()
    finally:
        mp.undo()


def host(**facts: object) -> HostFacts:
    result = HostFacts(name="h", root="/")
    for name, value in facts.items():
        fact_name = name.replace("__", ".")
        result.add(Fact(fact_name, value, Source("meminfo.txt", 1)))  # type: ignore[arg-type]
    return result


def derived(pack: RulePack, facts: HostFacts, name: str) -> object:
    fact = derived_values(pack, facts).get(f"derived.{name}")
    return None if fact is None else fact.value


def memory(total_kb: int, swap_kb: int, ratio: int, **extra: object) -> HostFacts:
    return host(meminfo__mem_total=total_kb * KB, meminfo__swap_total=swap_kb * KB, host__ram=total_kb * KB,
                sysctl__vm__overcommit_ratio=ratio, **extra)


@pytest.mark.parametrize(("total", "swap", "ratio", "expected"), [
    (32 * GB // KB, 2 * GB // KB, 50, 18 * GB),
    (32 * GB // KB, 2 * GB // KB, 75, 26 * GB),
    # Dalibo's exercise: the kernel showed 3289716 kB; 3735244 × 0.6 + 1048572 = 3289718.4 by hand —
    # the kernel drops the 0.6 page of 933811 × 60 / 100 pages.
    (3735244, 1048572, 60, 3289716 * KB),
    # Dalibo's 16 GB example: the kernel showed 15743308 kB.
    (16473548, 1740796, 85, 15743308 * KB),
])
def test_commit_limit_worked_numbers(pack: RulePack, total: int, swap: int, ratio: int, expected: int) -> None:
    assert derived(pack, memory(total, swap, ratio), "commit_limit") == expected


def test_hand_formula_gives_dalibo_3289718(pack: RulePack) -> None:
    by_hand = 3735244 * 60 / 100 + 1048572
    assert int(by_hand) == 3289718
    assert derived(pack, memory(3735244, 1048572, 60), "commit_limit") == (3289718 - 2) * KB


def test_huge_pages_leave_the_base(pack: RulePack) -> None:
    facts = memory(32 * GB // KB, 0, 50, meminfo__hugepages_total=4096, meminfo__hugepagesize=2 * 1024 * KB)
    assert derived(pack, facts, "hugetlb_pool") == 8 * GB
    assert derived(pack, facts, "commit_limit") == 12 * GB
    # Hugetlb (every page size) wins over HugePages_Total × Hugepagesize.
    facts.add(Fact("meminfo.hugetlb", 10 * GB, Source("meminfo.txt", 2)))
    assert derived(pack, facts, "commit_limit") == 11 * GB


def test_declared_nr_hugepages_is_the_fallback(pack: RulePack) -> None:
    facts = host(host__ram=64 * GB, host__swap=0, sysctl__vm__overcommit_ratio=80, sysctl__vm__nr_hugepages=4096)
    assert derived(pack, facts, "hugetlb_pool") == 8 * GB
    assert derived(pack, facts, "commit_limit") == int(56 * GB * 0.8) // 4096 * 4096


def test_overcommit_kbytes_wins_over_the_ratio(pack: RulePack) -> None:
    facts = memory(32 * GB // KB, 2 * GB // KB, 50, sysctl__vm__overcommit_kbytes=20 * 1024 * 1024 + 3)
    assert derived(pack, facts, "commit_limit") == 20 * GB + 2 * GB


def test_missing_swap_means_no_value(pack: RulePack) -> None:
    facts = host(meminfo__mem_total=32 * GB, host__ram=32 * GB, sysctl__vm__overcommit_ratio=50)
    values = derived_values(pack, facts)
    assert "derived.commit_limit" not in values
    assert "derived.suggested_overcommit_ratio" not in values
    assert values["derived.hugetlb_pool"].value == 0


def test_suggested_ratio_and_commit_limit_ratio(pack: RulePack) -> None:
    facts = memory(16473548, 1740796, 85)
    assert derived(pack, facts, "suggested_overcommit_ratio") == 69
    assert derived(pack, facts, "commit_limit_ratio") == pytest.approx(15743308 / 16473548)
    big_swap = memory(8 * GB // KB, 8 * GB // KB, 50)  # the swap alone is more than 80 % of RAM: no ratio can do it
    assert derived(pack, big_swap, "suggested_overcommit_ratio") is None


def test_derived_values_carry_their_inputs(pack: RulePack) -> None:
    facts = memory(3735244, 1048572, 60)
    names = [item.fact for item in derived_inputs(pack, facts, "derived.commit_limit")]
    assert names[:4] == ["derived.base_page_size", "derived.swap_size", "meminfo.swap_total",
                         "derived.commit_base_pages_in_service"]
    assert "sysctl.vm.overcommit_ratio" in names
    assert "sysctl.vm.overcommit_kbytes" not in names  # absent facts are not evidence
    assert all(fact.source == Source("<derived>") for fact in derived_values(pack, facts).values())


def _meminfo() -> dict[str, int]:
    values: dict[str, int] = {}
    for line in Path("/proc/meminfo").read_text().splitlines():
        match = re.match(r"(\w+(?:\(\w+\))?):\s+(\d+)( kB)?", line)
        if match:
            values[match.group(1)] = int(match.group(2)) * (KB if match.group(3) else 1)
    return values


def test_formula_equals_this_kernels_commit_limit(pack: RulePack) -> None:
    proc = Path("/proc/sys/vm/overcommit_ratio")
    if not proc.exists() or not Path("/proc/meminfo").exists():
        pytest.skip("not a Linux host")
    import os

    for _ in range(3):  # values read a moment apart: retry if a sysctl changed between the reads
        meminfo = _meminfo()
        facts = host(
            meminfo__mem_total=meminfo["MemTotal"], meminfo__swap_total=meminfo["SwapTotal"],
            meminfo__hugepages_total=meminfo.get("HugePages_Total", 0),
            meminfo__hugepagesize=meminfo.get("Hugepagesize", 2048 * KB),
            host__ram=meminfo["MemTotal"], host__page_size=os.sysconf("SC_PAGE_SIZE"),
            sysctl__vm__overcommit_ratio=int(proc.read_text()),
            sysctl__vm__overcommit_kbytes=int(Path("/proc/sys/vm/overcommit_kbytes").read_text()),
        )
        if "Hugetlb" in meminfo:
            facts.add(Fact("meminfo.hugetlb", meminfo["Hugetlb"], Source("meminfo.txt", 1)))
        if derived(pack, facts, "commit_limit") == meminfo["CommitLimit"]:
            return
    assert derived(pack, facts, "commit_limit") == meminfo["CommitLimit"]
