"""``/proc/meminfo``: every line, names in snake case, kB values in bytes, page counts as counts."""

from __future__ import annotations

import re
from collections.abc import Set as AbstractSet
from functools import lru_cache

from pgvet.errors import ParseError
from pgvet.provenance import Located, Source

_LINE = re.compile(r"^([A-Za-z0-9_()]+):\s+(\d+)(?:\s+(kB))?\s*$")

# Names the general rule (split CamelCase, drop parentheses) would spell differently from docs/facts.md.
_NAMES = {
    "MemTotal": "mem_total",
    "MemFree": "mem_free",
    "MemAvailable": "mem_available",
    "SwapTotal": "swap_total",
    "SwapFree": "swap_free",
    "SwapCached": "swap_cached",
    "CommitLimit": "commit_limit",
    "Committed_AS": "committed_as",
    "HugePages_Total": "hugepages_total",
    "HugePages_Free": "hugepages_free",
    "HugePages_Rsvd": "hugepages_rsvd",
    "HugePages_Surp": "hugepages_surp",
    "Hugepagesize": "hugepagesize",
    "Hugetlb": "hugetlb",
    "AnonHugePages": "anon_huge_pages",
    "ShmemHugePages": "shmem_huge_pages",
    "ShmemPmdMapped": "shmem_pmd_mapped",
    "FileHugePages": "file_huge_pages",
    "FilePmdMapped": "file_pmd_mapped",
    "PageTables": "page_tables",
    "SecPageTables": "sec_page_tables",
    "KernelStack": "kernel_stack",
    "NFS_Unstable": "nfs_unstable",
    "VmallocTotal": "vmalloc_total",
    "VmallocUsed": "vmalloc_used",
    "VmallocChunk": "vmalloc_chunk",
    "DirectMap4k": "direct_map_4k",
    "DirectMap2M": "direct_map_2m",
    "DirectMap4M": "direct_map_4m",
    "DirectMap1G": "direct_map_1g",
}


@lru_cache(maxsize=1024)  # a few dozen keys, on every host
def fact_name(key: str) -> str:
    """``Active(anon)`` → ``active_anon``; ``SReclaimable`` → ``s_reclaimable``; exceptions in _NAMES."""
    if key in _NAMES:
        return _NAMES[key]
    plain = key.replace("(", "_").replace(")", "")
    snake = re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", plain)
    return re.sub(r"_+", "_", snake).strip("_").lower()


def parse_meminfo(text: str, path: str, names: AbstractSet[str] | None = None) -> dict[str, Located[int]]:
    """Every line's value by its fact name; ``names``: only these are returned (every line is read and
    checked all the same)."""
    values = _line_values(text, path)
    if "mem_total" not in values:
        raise ParseError("no MemTotal line: expected a copy of /proc/meminfo", Source(path, 1))
    if values["mem_total"].value == 0:
        # No kernel reports it (MemTotal is totalram_pages): every ratio of RAM would divide by zero, and
        # CommitLimit's base (MemTotal − huge page pool) would be negative. Refused as a missing line is.
        raise ParseError("MemTotal is 0 kB: no kernel reports that; expected a copy of /proc/meminfo",
                         values["mem_total"].source)
    total, free, reserved = (values.get(name) for name in ("hugepages_total", "hugepages_free", "hugepages_rsvd"))
    if total is not None and free is not None and reserved is not None:
        # What the pool's users map or were promised now (hugetlbpage.rst: Rsvd pages are promised, still Free).
        # Measured once: a fix that resizes the pool predicts HugePages_Total, never what others hold.
        values["hugepages_in_use"] = Located(max(0, total.value - free.value + reserved.value), total.source)
    if names is None:
        return values
    return {name: located for name, located in values.items() if name in names}


def _line_values(text: str, path: str) -> dict[str, Located[int]]:
    values: dict[str, Located[int]] = {}
    for number, line in enumerate(text.split("\n"), 1):
        if not line.strip():
            continue
        match = _LINE.match(line.strip())
        if match is None:
            raise ParseError(f"not a /proc/meminfo line: {line.strip()[:80]!r}", Source(path, number))
        key, amount, unit = match.groups()
        if len(amount) > 20:  # more than 2^64: not a kernel's counter
            raise ParseError(f"{key}: value too large", Source(path, number))
        value = int(amount) * 1024 if unit == "kB" else int(amount)
        values[fact_name(key)] = Located(value, Source(path, number))
    return values
