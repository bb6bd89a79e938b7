"""pgvet on pgtune's own output (issue #26): hosts a DBA configured with pgtune (tests/pgtune.py,
tests/pgtune_hosts.py) on a sane kernel, linted in one run. Every warning must be one the DBA would act on, with
its reason here and in docs/pgtune.md; no verdict may hang on the RAM's rounding but at a rule's own threshold;
one work_mem for each host, the one the budget needs.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from test_plan_fixpoint import check_fixpoint

import pgtune
import pgtune_hosts
from conftest import PROJECT
from pgtune_hosts import GB_KB, PgtuneHost, build, grid, summary
from pgvet.engine.derived import derived_values
from pgvet.engine.loader import load_pack
from pgvet.engine.planner import Setting
from pgvet.findings import Finding, HostResult
from pgvet.provenance import Source
from pgvet.run.lint import lint
from pgvet.run.options import LintOptions
from pgvet.snapshot.facts import Fact, HostFacts
from pgvet.snapshot.load import load_host

GRID = grid()
MARGIN = 0.05  # PGV530's default margin beyond the RAM (none beyond CommitLimit), a share of the RAM
MIN_RAM_PAGE_TABLES = 7 * 1024**3  # PGV120's default min_ram


@dataclass
class Linted:
    host: PgtuneHost
    path: Path
    result: HostResult

    def findings(self, *severities: str) -> dict[str, Finding]:
        return {finding.rule_id: finding for finding in self.result.findings
                if not severities or finding.severity in severities}


@pytest.fixture(scope="module")
def linted(tmp_path_factory: pytest.TempPathFactory) -> list[Linted]:
    root = tmp_path_factory.mktemp("pgtune-grid")
    paths = [build(root, host) for host in GRID]
    result = lint(paths, LintOptions())
    assert not result.errors, result.errors
    return [Linted(host, path, host_result) for host, path, host_result in zip(GRID, paths, result.hosts, strict=True)]


# -- what pgtune wrote, as the DBA sees it -------------------------------------------------------------------------


def autovacuum_workers(host: PgtuneHost) -> int:
    return pgtune.autovacuum_max_workers(host.inputs) or 3


def worker_processes(host: PgtuneHost) -> int:
    return pgtune.parallel_settings(host.inputs).get("max_worker_processes", 8)


def at_floor(host: PgtuneHost) -> bool:
    """pgtune's work_mem is its 4 MB floor: its formula gave less."""
    return pgtune.work_mem_kb(host.inputs) == 4096


def page_tables_share(host: PgtuneHost) -> float:
    """PGV120's estimate over MemTotal, from pgtune's numbers: shared_buffers / 512 per process."""
    processes = host.inputs.connections or 0
    processes += autovacuum_workers(host) + worker_processes(host)
    return pgtune.shared_buffers_kb(host.inputs) / 512 * processes / host.mem_total_kb


def pool_in_service(host: PgtuneHost) -> bool:
    return host.huge_page_pool and pgtune.huge_pages(host.inputs) == "try"


def memory_budget_causes(host: PgtuneHost) -> list[str]:
    """What puts pgtune's worst case beyond what the kernel allows, by more than PGV530's margin."""
    causes = []
    if host.overcommit == "strict":
        causes.append("strict overcommit: CommitLimit leaves a fifth of the RAM to the cache")
    if at_floor(host):
        causes.append("work_mem at pgtune's 4 MB floor: its formula gave less for so many connections")
    if autovacuum_workers(host) > 3:
        causes.append("pgtune's extra autovacuum workers, each with maintenance_work_mem")
    if host.inputs.db_size == "less_ram":
        causes.append("pgtune's 30 % more work_mem for a database that fits in RAM")
    return causes


# Every warning and error pgvet gives on the grid, with when it must fire: (predicate, why).
WARNINGS: dict[str, tuple[Callable[[PgtuneHost], bool | None], str]] = {
    "PGV101": (lambda host: host.overcommit == "heuristic",
               "pgvet advises strict overcommit on a dedicated host (Dalibo J1); pgtune says nothing of the kernel"),
    "PGV112": (lambda host: pgtune.shared_buffers_kb(host.inputs) >= 8 * GB_KB and not host.huge_page_pool,
               "huge_pages = try without a pool: PostgreSQL runs on 4 kB pages"),
    "PGV120": (lambda host: not pool_in_service(host) and host.mem_total_kb * 1024 >= MIN_RAM_PAGE_TABLES
               and page_tables_share(host) > 0.1,
               "no huge pages in service, page tables could pass 10 % of the RAM, and the RAM is not small"),
    "PGV536": (lambda host: (host.inputs.connections or 0) > max(100, 10 * (host.inputs.cpus or 0)),
               "the connections the DBA typed exceed 10 a CPU: a pooler (Dalibo J1)"),
    # fires only with a cause; silent on the kernel's default without one (it may stay silent with one)
    "PGV530": (lambda host: None if memory_budget_causes(host) else False,
               "pgtune's worst case beyond the kernel's limit by more than 5 % of the RAM"),
}


def test_the_grid_covers_every_pair_of_values() -> None:
    dimensions: dict[str, Callable[[PgtuneHost], object]] = {
        "type": lambda host: host.inputs.db_type, "storage": lambda host: host.inputs.storage,
        "version": lambda host: host.inputs.db_version, "size": lambda host: host.inputs.db_size,
        "overcommit": lambda host: host.overcommit, "ram": lambda host: host.inputs.memory_gb,
        "cpus": lambda host: host.inputs.cpus, "connections": lambda host: host.inputs.connections}
    values = {name: {value(host) for host in GRID} for name, value in dimensions.items()}
    assert len(GRID) == 864 and len(values["ram"]) == 9 and len(values["cpus"]) == 8
    for first, second in ((a, b) for a in dimensions for b in dimensions if a < b):
        seen = {(dimensions[first](host), dimensions[second](host)) for host in GRID}
        assert len(seen) == len(values[first]) * len(values[second]), (first, second)
    # a pool wherever pgtune writes huge_pages = try, on every kernel
    pools = {(host.inputs.memory_gb, host.overcommit) for host in GRID if host.huge_page_pool}
    assert pools == {(ram, kernel) for ram in (8, 16, 32, 64, 128, 256, 512) for kernel in ("heuristic", "strict")}


@pytest.mark.slow  # the grid linted (the module's fixture, once)
def test_every_warning_on_pgtunes_output_is_one_the_dba_would_act_on(linted: list[Linted]) -> None:
    wrong = []
    for item in linted:
        fired = item.findings("warning", "error")
        for rule_id in fired.keys() - WARNINGS.keys():
            wrong.append(f"{item.host.name}: {rule_id} is not expected on pgtune's output: {fired[rule_id].message}")
        for rule_id, (expected, _) in WARNINGS.items():
            verdict = expected(item.host)
            if verdict is not None and verdict != (rule_id in fired):
                wrong.append(f"{item.host.name}: {rule_id} {'fires' if rule_id in fired else 'is silent'}")
    assert not wrong, "\n".join(wrong[:20])


# Info findings on pgtune's output: worth knowing, and each for a reason of its own.
INFOS = {
    "PGV302": "2 CPUs",
    "PGV531": "work_mem above 100 MB for a web, OLTP or mixed load (pgtune's, with few connections)",
    "PGV605": "checkpoint_timeout left at 5 min (pgtune does not set it)",
    "PGV702": "random_page_cost = 1.1 on HDDs: pgtune's choice for a database that fits in RAM",
    "PGV704": "maintenance_io_concurrency left below pgtune's effective_io_concurrency",
    "PGV804": "track_io_timing off", "PGV805": "no slow query log", "PGV806": "temporary files not logged",
    "PGV807": "lock waits not logged", "PGV811": "no pg_stat_statements", "PGV833": "ssl off",
    "PGV421": "wal_compression = lz4 (15+) and io_method = io_uring (18) need build options (pgtune warns of lz4 too)",
}


@pytest.mark.slow  # the grid linted (the module's fixture, once)
def test_infos_on_pgtunes_output_are_the_known_ones(linted: list[Linted]) -> None:
    found = {rule_id for item in linted for rule_id in item.findings("info")}
    assert found <= INFOS.keys(), found - INFOS.keys()


@pytest.mark.slow  # the grid linted (the module's fixture, once)
def test_a_verdict_never_hangs_on_the_rams_rounding_but_at_a_rules_threshold(linted: list[Linted]) -> None:
    # MemTotal 2 % under or over the RAM typed into pgtune: a verdict that differs is one whose quantity is at
    # the rule's own threshold on both hosts (the rounding moves it by about 4 % of the RAM).
    pack = load_pack()
    flips = []
    for under, over in zip(linted[::2], linted[1::2], strict=True):
        assert (under.host.mem_total_ratio, over.host.mem_total_ratio) == (0.98, 1.02)
        for rule_id in sorted(under.findings().keys() ^ over.findings().keys()):
            distances = []
            for item in (under, over):
                values = derived_values(pack, load_host(item.path), {
                    "derived.pg_memory_peak", "derived.memory_limit", "derived.page_tables_estimate"})
                ram = item.host.mem_total_kb * 1024
                if rule_id == "PGV530":  # beyond CommitLimit itself in strict overcommit, the kernel's own figure
                    excess = (values["derived.pg_memory_peak"].value - values["derived.memory_limit"].value) / ram
                    threshold = 0 if item.host.overcommit == "strict" else MARGIN
                    distances.append(abs(excess - threshold) < 0.05)
                elif rule_id == "PGV120":
                    distances.append(abs(values["derived.page_tables_estimate"].value / ram - 0.1) < 0.005)
                else:
                    distances.append(False)
            if not all(distances):
                flips.append(f"{under.host.name}: {rule_id}")
    assert not flips, flips


@pytest.mark.slow  # the grid linted (the module's fixture, once)
def test_no_two_rules_ask_for_different_work_mem(linted: list[Linted]) -> None:
    for item in linted:
        asked = {finding.rule_id: finding.fix.postgresql["work_mem"] for finding in item.result.findings
                 if "work_mem" in finding.fix.postgresql}
        assert len(set(asked.values())) <= 1, (item.host.name, asked)
        target = item.result.target
        change = target.change(Setting("postgresql", "work_mem")) if target is not None else None
        assert change is None or set(asked.values()) <= {change.target}, (item.host.name, asked)


@pytest.mark.parametrize("db_type", pgtune_hosts.TYPES)
def test_pgvets_pgtune_work_mem_is_what_pgtune_writes(db_type: pgtune.DbType) -> None:
    # With the RAM pgtune was told (host.yaml ram:) and pgtune's shared_buffers, to the kB, for every RAM, CPU
    # count and connection count of the grid (pgtune's form left at its default database size).
    pack = load_pack()
    for ram, cpus, connections in itertools.product(pgtune_hosts.RAMS_GB, pgtune_hosts.CPUS,
                                                    pgtune_hosts.CONNECTIONS):
        inputs = pgtune.Inputs(17, db_type, ram, cpus, connections, "ssd")
        host = HostFacts(name="typed", root=".")
        for name, value in {"host.ram": inputs.memory_kb * 1024, "host.cpus": cpus,
                            "host.workload": pgtune_hosts.WORKLOAD[db_type],
                            "pg.shared_buffers": pgtune.shared_buffers_kb(inputs) * 1024,
                            "pg.max_connections": connections}.items():
            host.add(Fact(name, value, Source("pgtune")))
        [suggested] = derived_values(pack, host, {"derived.suggested_work_mem_pgtune"}).values()
        assert suggested.value == pgtune.work_mem_kb(inputs) * 1024, inputs


@pytest.mark.slow  # the grid linted (the module's fixture, once)
def test_pgtunes_work_mem_in_messages_is_pgtunes_to_the_rams_rounding(linted: list[Linted]) -> None:
    for item in linted:
        for finding in item.result.findings:
            quoted = finding.values.get("work_mem_pgtune", finding.values.get("pgtune"))
            if quoted is None:
                continue
            written = pgtune.work_mem_kb(pgtune.Inputs(item.host.inputs.db_version, item.host.inputs.db_type,
                                                       item.host.inputs.memory_gb, item.host.inputs.cpus,
                                                       item.host.inputs.connections, item.host.inputs.storage))
            assert math.isclose(quoted, written * 1024, rel_tol=0.03), (item.host.name, finding.rule_id)


@pytest.mark.slow  # a fix written, applied and linted again on a sample of the hosts
def test_the_work_mem_fix_is_what_the_budget_needs_never_less(linted: list[Linted], tmp_path: Path) -> None:
    # Where the target lowers work_mem: once applied (and the kernel's files with it), it is the largest work_mem
    # under which the peak fits — PGV530's work_mem_that_fits on the fixed host — and the fix is a fixpoint.
    lowered = [item for item in linted if item.result.target is not None and any(
        change.setting.name == "work_mem" for change in item.result.target.changes)]
    assert len(lowered) > 100
    pack = load_pack()
    for item in lowered[::20]:
        host = tmp_path / item.host.name
        build(tmp_path, item.host)
        check_fixpoint(host)
        fixed = load_host(host)
        values = derived_values(pack, fixed, {"derived.work_mem_that_fits", "derived.pg_memory_peak",
                                              "derived.memory_limit"})
        work_mem = fixed.facts["pg.work_mem"].value
        assert work_mem == values["derived.work_mem_that_fits"].value, item.host.name
        assert values["derived.pg_memory_peak"].value <= values["derived.memory_limit"].value


@pytest.mark.slow  # the grid linted (the module's fixture, once)
def test_docs_give_the_grids_verdicts(linted: list[Linted]) -> None:
    text = (PROJECT / "docs" / "pgtune.md").read_text(encoding="utf-8")
    table = summary([(item.host, item.result) for item in linted])
    assert table in text, f"docs/pgtune.md is out of date; its table is now:\n{table}"
