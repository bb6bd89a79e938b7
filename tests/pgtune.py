"""pgtune's algorithm, written again in Python for the tests: what https://pgtune.leopard.in.ua prints for a
Linux host, from le0pard/pgtune's src/features/configuration/configurationSlice.js (formulas) and
src/common/components/configurationView/index.jsx (which lines are printed, and how: formatValue), as of
commit 830d3bb (9 June 2026, "Fix #142"; neither file changed up to 7caef27, 30 July 2026).

pgtune counts memory in kB and divides with JavaScript doubles, flooring where it floors: Python floats are
the same doubles, so the numbers are the same to the kB. Only Linux is modelled (pgvet reads Linux hosts):
the Windows caps and the macOS exceptions are left out. The database size (dbSize, "less_ram", "mid_ram" or
"greater_ram", the form's default "mid_ram") moves work_mem and random_page_cost.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

DbType = Literal["web", "oltp", "dw", "desktop", "mixed"]
Storage = Literal["ssd", "hdd", "san", "nvme"]
DbSize = Literal["less_ram", "mid_ram", "greater_ram"]

MB_KB = 1024
GB_KB = 1024 * 1024
# the "default connections" of each type when the form's field is left empty
DEFAULT_CONNECTIONS = {"web": 200, "oltp": 300, "dw": 40, "desktop": 20, "mixed": 100}
# PostgreSQL's own max_worker_processes: pgtune's work_mem counts it when it writes no parallel settings
DEFAULT_WORKER_PROCESSES = 8


@dataclass(frozen=True)
class Inputs:
    """pgtune's form: the PostgreSQL version, the type of application, the RAM (typed in GB), CPUs,
    connections (None: the type's default) and the data storage."""

    db_version: int
    db_type: DbType
    memory_gb: int
    cpus: int | None
    connections: int | None
    storage: Storage
    db_size: DbSize = "mid_ram"

    @property
    def memory_kb(self) -> int:
        return self.memory_gb * GB_KB


def max_connections(inputs: Inputs) -> int:
    return inputs.connections or DEFAULT_CONNECTIONS[inputs.db_type]


def shared_buffers_kb(inputs: Inputs) -> int:
    share = 16 if inputs.db_type == "desktop" else 4
    return math.floor(inputs.memory_kb / share)


def huge_pages(inputs: Inputs) -> str:
    # "try" from 2 GB of shared_buffers
    return "try" if shared_buffers_kb(inputs) >= 2 * GB_KB else "off"


def effective_cache_size_kb(inputs: Inputs) -> int:
    if inputs.db_type == "desktop":
        return math.floor(inputs.memory_kb / 4)
    return math.floor(inputs.memory_kb * 3 / 4)


def maintenance_work_mem_kb(inputs: Inputs) -> int:
    share = 8 if inputs.db_type == "dw" else 16
    return min(math.floor(inputs.memory_kb / share), 8 * GB_KB)


def wal_sizes_kb(inputs: Inputs) -> tuple[int, int]:
    """(min_wal_size, max_wal_size)."""
    sizes_mb = {"web": (1024, 4096), "oltp": (2048, 8192), "dw": (4096, 16384), "desktop": (100, 2048),
                "mixed": (1024, 4096)}[inputs.db_type]
    return sizes_mb[0] * MB_KB, sizes_mb[1] * MB_KB


def wal_buffers_kb(inputs: Inputs) -> int:
    """3 % of shared_buffers, at most 16 MB, rounded up to 16 MB from 14 MB, at least 32 kB."""
    value = math.floor(3 * shared_buffers_kb(inputs) / 100)
    value = min(value, 16 * MB_KB)
    if 14 * MB_KB < value < 16 * MB_KB:
        value = 16 * MB_KB
    return max(value, 32)


def default_statistics_target(inputs: Inputs) -> int:
    return 500 if inputs.db_type == "dw" else 100


def random_page_cost(inputs: Inputs) -> float:
    # a database held in RAM reads from the page cache; spinning disks, and data warehouses larger than the
    # RAM (whatever the storage: index scans over large ranges), keep PostgreSQL's 4
    if inputs.db_size == "less_ram":
        return 1.1
    if inputs.storage == "hdd" or inputs.db_type == "dw":
        return 4
    return 1.1


def effective_io_concurrency(inputs: Inputs) -> int:
    return {"hdd": 2, "ssd": 200, "san": 300, "nvme": 1000}[inputs.storage]


def parallel_settings(inputs: Inputs) -> dict[str, int]:
    """Written from 4 CPUs on only."""
    cpus = inputs.cpus
    if not cpus or cpus < 4:
        return {}
    per_gather = math.ceil(cpus / 2)
    if inputs.db_type != "dw":
        per_gather = min(per_gather, 4)
    settings = {"max_worker_processes": cpus, "max_parallel_workers_per_gather": per_gather}
    if inputs.db_version >= 10:
        settings["max_parallel_workers"] = cpus
    if inputs.db_version >= 11:
        settings["max_parallel_maintenance_workers"] = min(math.ceil(cpus / 2), 4)
    return settings


def work_mem_kb(inputs: Inputs) -> int:
    """(RAM − shared_buffers) / (3 × (max_connections + worker processes)), divided by the type's factor,
    moved by the database size, at least 4 MB."""
    workers = parallel_settings(inputs).get("max_worker_processes", DEFAULT_WORKER_PROCESSES)
    per_operation = (inputs.memory_kb - shared_buffers_kb(inputs)) / ((max_connections(inputs) + workers) * 3)
    divisor = {"web": 1, "oltp": 1, "dw": 2, "desktop": 6, "mixed": 2}[inputs.db_type]
    value = math.floor(per_operation / divisor)
    if inputs.db_size == "less_ram":
        value = math.floor(value * 1.3)
    elif inputs.db_size == "greater_ram":
        value = math.floor(value * 0.9)
    return max(value, 4 * MB_KB)


def jit(inputs: Inputs) -> str | None:
    return "off" if inputs.db_version >= 12 and inputs.db_type in ("web", "oltp", "mixed") else None


def wal_compression(inputs: Inputs) -> str | None:
    if inputs.db_version >= 15:
        return "lz4"
    return "on" if inputs.db_version >= 10 else None


def autovacuum_max_workers(inputs: Inputs) -> int | None:
    if not inputs.cpus:
        return None
    if inputs.cpus >= 32:
        return 5
    return 4 if inputs.cpus >= 16 else None


def autovacuum_work_mem_kb(inputs: Inputs) -> int | None:
    # set to 2 GB once maintenance_work_mem reaches it
    return 2 * GB_KB if maintenance_work_mem_kb(inputs) >= 2 * GB_KB else None


def io_method(inputs: Inputs) -> str | None:
    return "io_uring" if inputs.db_version >= 18 else None


def format_kb(value_kb: int) -> str:
    """pgtune's formatValue: GB or MB when the value is a whole number of them, else kB."""
    if value_kb % GB_KB == 0:
        return f"{value_kb // GB_KB}GB"
    if value_kb % MB_KB == 0:
        return f"{value_kb // MB_KB}MB"
    return f"{value_kb}kB"


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


def configuration(inputs: Inputs) -> dict[str, str]:
    """The lines pgtune prints, in its order, each value as it prints it (io_workers is never printed on
    Linux: pgtune writes it only beside io_method = worker)."""
    min_wal, max_wal = wal_sizes_kb(inputs)
    autovacuum_work_mem = autovacuum_work_mem_kb(inputs)
    lines: dict[str, str | None] = {
        "max_connections": str(max_connections(inputs)),
        "shared_buffers": format_kb(shared_buffers_kb(inputs)),
        "effective_cache_size": format_kb(effective_cache_size_kb(inputs)),
        "maintenance_work_mem": format_kb(maintenance_work_mem_kb(inputs)),
        "checkpoint_completion_target": "0.9",
        "wal_buffers": format_kb(wal_buffers_kb(inputs)),
        "default_statistics_target": str(default_statistics_target(inputs)),
        "random_page_cost": _number(random_page_cost(inputs)),
        "effective_io_concurrency": str(effective_io_concurrency(inputs)),
        "work_mem": format_kb(work_mem_kb(inputs)),
        "huge_pages": huge_pages(inputs),
        "jit": jit(inputs),
        "wal_compression": wal_compression(inputs),
        "autovacuum_max_workers": _optional(autovacuum_max_workers(inputs)),
        "autovacuum_work_mem": None if autovacuum_work_mem is None else format_kb(autovacuum_work_mem),
        "io_method": io_method(inputs),
        "min_wal_size": format_kb(min_wal),
        "max_wal_size": format_kb(max_wal),
        **{name: str(value) for name, value in parallel_settings(inputs).items()},
    }
    if inputs.db_type == "desktop":
        lines.update({"wal_level": "minimal", "max_wal_senders": "0"})
    return {name: value for name, value in lines.items() if value is not None}


def _optional(value: int | None) -> str | None:
    return None if value is None else str(value)


def warnings(inputs: Inputs) -> list[str]:
    """The warning lines pgtune prints above the configuration (as comments)."""
    lines: list[str] = []

    def paragraph(*texts: str) -> None:
        if lines:
            lines.append("")
        lines.extend(texts)

    if inputs.memory_gb > 100:
        paragraph("this tool not being optimal", "for very high memory systems")
    if wal_compression(inputs) == "lz4":
        paragraph("wal_compression = lz4 requires PostgreSQL", "to be compiled with --with-lz4")
    if io_method(inputs) == "io_uring":
        paragraph("io_method = io_uring requires PostgreSQL", "to be compiled with --with-liburing")
    if inputs.db_type == "dw" and inputs.storage != "hdd" and inputs.db_size != "less_ram":
        drive = {"ssd": "SSDs", "nvme": "NVMe drives", "san": "SAN storage"}[inputs.storage]
        paragraph(f"Cost parameters for Data Warehouses on {drive} are left at defaults",
                  "to avoid catastrophic index scan selections",
                  "Monitor query planner behavior and adjust random_page_cost if necessary")
    return ["WARNING", *lines] if lines else []


def postgresql_conf(inputs: Inputs) -> str:
    """The postgresql.conf tab of pgtune's page: its warnings and the inputs as comments, then the settings."""
    header = [("DB Version", str(inputs.db_version)), ("OS Type", "linux"), ("DB Type", inputs.db_type),
              ("Total Memory (RAM)", f"{inputs.memory_gb} GB"), ("CPUs num", _optional(inputs.cpus)),
              ("Connections num", _optional(inputs.connections)), ("Data Storage", inputs.storage)]
    lines = [f"# {line}" for line in warnings(inputs)]
    if lines:
        lines.append("")
    lines.extend(f"# {label}: {value}" for label, value in header if value)
    lines.append("")
    lines.extend(f"{name} = {value}" for name, value in configuration(inputs).items())
    return "\n".join(lines) + "\n"
