"""tests/pgtune.py against pgtune itself: the expectations of le0pard/pgtune's own test suite
(src/features/configuration/__tests__/configurationSlice.test.js) for Linux, and one whole configuration."""

from __future__ import annotations

import pytest

import pgtune
from pgtune import Inputs


def test_a_whole_configuration_as_pgtune_prints_it() -> None:
    # (16 GiB − 4 GiB) / (3 × (200 + 4)) = 20560.3 kB; 3 % of 4 GiB is above 16 MB
    assert pgtune.postgresql_conf(Inputs(17, "web", 16, 4, 200, "ssd")) == """\
# WARNING
# wal_compression = lz4 requires PostgreSQL
# to be compiled with --with-lz4

# DB Version: 17
# OS Type: linux
# DB Type: web
# Total Memory (RAM): 16 GB
# CPUs num: 4
# Connections num: 200
# Data Storage: ssd

max_connections = 200
shared_buffers = 4GB
effective_cache_size = 12GB
maintenance_work_mem = 1GB
checkpoint_completion_target = 0.9
wal_buffers = 16MB
default_statistics_target = 100
random_page_cost = 1.1
effective_io_concurrency = 200
work_mem = 20560kB
huge_pages = try
jit = off
wal_compression = lz4
min_wal_size = 1GB
max_wal_size = 4GB
max_worker_processes = 4
max_parallel_workers_per_gather = 2
max_parallel_workers = 4
max_parallel_maintenance_workers = 2
"""


def test_default_connections_and_statistics_per_type() -> None:
    for db_type, connections, target in (("web", 200, 100), ("oltp", 300, 100), ("dw", 40, 500), ("desktop", 20, 100),
                                         ("mixed", 100, 100)):
        inputs = Inputs(17, db_type, 16, None, None, "ssd")  # type: ignore[arg-type]
        assert pgtune.max_connections(inputs) == connections
        assert pgtune.default_statistics_target(inputs) == target


@pytest.mark.parametrize(("storage", "db_type", "db_size", "cost"), [
    ("hdd", "web", "mid_ram", 4), ("ssd", "web", "mid_ram", 1.1), ("san", "web", "mid_ram", 1.1),
    ("nvme", "web", "mid_ram", 1.1), ("hdd", "web", "less_ram", 1.1), ("ssd", "dw", "mid_ram", 4),
    ("ssd", "dw", "less_ram", 1.1),
])
def test_random_page_cost(storage: pgtune.Storage, db_type: pgtune.DbType, db_size: pgtune.DbSize,
                          cost: float) -> None:
    assert pgtune.random_page_cost(Inputs(17, db_type, 16, 4, 100, storage, db_size)) == cost


def test_effective_io_concurrency() -> None:
    assert [pgtune.effective_io_concurrency(Inputs(17, "web", 16, 4, 100, storage))
            for storage in ("hdd", "ssd", "san", "nvme")] == [2, 200, 300, 1000]


def test_parallel_settings() -> None:
    assert pgtune.parallel_settings(Inputs(14, "web", 16, 1, 100, "ssd")) == {}
    assert pgtune.parallel_settings(Inputs(13, "web", 16, 12, 100, "ssd")) == {
        "max_worker_processes": 12, "max_parallel_workers_per_gather": 4, "max_parallel_workers": 12,
        "max_parallel_maintenance_workers": 4}
    assert pgtune.parallel_settings(Inputs(10, "web", 16, 31, 100, "ssd")) == {
        "max_worker_processes": 31, "max_parallel_workers_per_gather": 4, "max_parallel_workers": 31}
    assert pgtune.parallel_settings(Inputs(12, "dw", 16, 31, 100, "ssd")) == {
        "max_worker_processes": 31, "max_parallel_workers_per_gather": 16, "max_parallel_workers": 31,
        "max_parallel_maintenance_workers": 4}


def test_memory_settings() -> None:
    assert pgtune.maintenance_work_mem_kb(Inputs(17, "web", 256, None, None, "ssd")) == 8388608  # capped at 8 GB
    assert pgtune.maintenance_work_mem_kb(Inputs(15, "web", 16, None, None, "ssd")) == 1048576
    assert pgtune.huge_pages(Inputs(15, "web", 4, None, None, "ssd")) == "off"
    assert pgtune.huge_pages(Inputs(15, "web", 16, None, None, "ssd")) == "try"
    assert pgtune.work_mem_kb(Inputs(15, "web", 4, 4, 9999, "ssd")) == 4096  # the 4 MB floor
    standard = pgtune.work_mem_kb(Inputs(15, "web", 64, None, None, "ssd", "mid_ram"))
    assert pgtune.work_mem_kb(Inputs(15, "web", 64, None, None, "ssd", "less_ram")) == int(standard * 1.3)
    assert pgtune.work_mem_kb(Inputs(15, "web", 64, None, None, "ssd", "greater_ram")) == int(standard * 0.9)
    assert pgtune.autovacuum_work_mem_kb(Inputs(15, "web", 4, None, None, "ssd")) is None
    assert pgtune.autovacuum_work_mem_kb(Inputs(15, "web", 256, None, None, "ssd")) == 2097152


def test_version_and_cpu_dependent_settings() -> None:
    assert pgtune.jit(Inputs(12, "web", 16, 4, 100, "ssd")) == "off"
    assert pgtune.jit(Inputs(15, "oltp", 16, 4, 100, "ssd")) == "off"
    assert pgtune.jit(Inputs(15, "dw", 16, 4, 100, "ssd")) is None
    assert pgtune.jit(Inputs(11, "web", 16, 4, 100, "ssd")) is None
    assert [pgtune.wal_compression(Inputs(version, "web", 16, 4, 100, "ssd")) for version in (10, 14, 15, 17)] == [
        "on", "on", "lz4", "lz4"]
    assert [pgtune.autovacuum_max_workers(Inputs(17, "web", 16, cpus, 100, "ssd")) for cpus in (32, 16, 8)] == [
        5, 4, None]
    assert pgtune.io_method(Inputs(17, "web", 16, 4, 100, "ssd")) is None
    assert pgtune.io_method(Inputs(18, "web", 16, 4, 100, "ssd")) == "io_uring"


def test_warnings() -> None:
    assert pgtune.warnings(Inputs(14, "web", 4, None, None, "ssd")) == []
    assert pgtune.warnings(Inputs(14, "web", 256, None, None, "ssd")) == [
        "WARNING", "this tool not being optimal", "for very high memory systems"]
    assert pgtune.warnings(Inputs(18, "web", 4, None, None, "ssd")) == [
        "WARNING", "wal_compression = lz4 requires PostgreSQL", "to be compiled with --with-lz4", "",
        "io_method = io_uring requires PostgreSQL", "to be compiled with --with-liburing"]
    assert pgtune.warnings(Inputs(15, "dw", 64, None, None, "nvme")) == [
        "WARNING", "wal_compression = lz4 requires PostgreSQL", "to be compiled with --with-lz4", "",
        "Cost parameters for Data Warehouses on NVMe drives are left at defaults",
        "to avoid catastrophic index scan selections",
        "Monitor query planner behavior and adjust random_page_cost if necessary"]


def test_format_kb() -> None:
    assert [pgtune.format_kb(value) for value in (1048576, 2048, 20560, 32)] == ["1GB", "2MB", "20560kB", "32kB"]
