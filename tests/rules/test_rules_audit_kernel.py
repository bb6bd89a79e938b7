"""The kernel and memory rules against the kernel's own behaviour (audit of catalogue section A and L1).

- CommitLimit leaves the huge page pool out (mm/util.c vm_commit_limit: totalram − hugetlb_total_pages, surplus
  pages included) and PostgreSQL's shared memory in huge pages is not charged to Committed_AS: the rules judge
  CommitLimit *and* the pool against the RAM, and the suggested ratio is (0.8·RAM − swap − pool)/(RAM − pool).
- In a cgroup, memory.max binds before CommitLimit when it is lower, whatever the overcommit mode.
- Writing one of a ratio/bytes pair sets the other to 0 (mm/page-writeback.c, mm/util.c): in sysctl.d the
  last write wins, a refused write (dirty_bytes below two pages, a bytes value of 0) changes nothing.
- HugePages_Total counts surplus pages; vm.nr_hugepages reads back the persistent pages the kernel holds.
- A meminfo whose MemTotal is 0 is refused, naming the file.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from conftest import FIXTURES, derived_of
from pgvet.cli import app
from pgvet.engine.derived import derived_values
from pgvet.engine.loader import load_pack
from pgvet.errors import ParseError
from pgvet.findings import Finding
from pgvet.inputs.meminfo import parse_meminfo
from pgvet.inputs.sysctl import SysctlSetting, paired_values, parse_sysctl_conf
from pgvet.provenance import Source
from pgvet.run.lint import lint
from pgvet.run.options import LintOptions
from pgvet.snapshot.facts import FactValue
from pgvet.snapshot.load import load_host

KB = 1024
MIB = 1024**2
GIB = 1024**3


def derived(facts: dict[str, FactValue]) -> dict[str, FactValue]:
    return {name.removeprefix("derived."): value for name, value in derived_of(facts).items()}


def write_host(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def findings(host: Path) -> dict[str, list[Finding]]:
    result = lint([host], LintOptions())
    assert result.errors == []
    found: dict[str, list[Finding]] = {}
    for finding in result.hosts[0].findings:
        found.setdefault(finding.rule_id, []).append(finding)
    return found


def meminfo(total_kb: int, swap_kb: int, *, hugepages: int = 0, surplus: int = 0, size_kb: int = 2048,
            hugetlb_kb: int | None = None, commit_limit_kb: int | None = None) -> str:
    lines = [f"MemTotal: {total_kb} kB", f"SwapTotal: {swap_kb} kB"]
    if commit_limit_kb is not None:
        lines.append(f"CommitLimit: {commit_limit_kb} kB")
    lines += [f"HugePages_Total: {hugepages}", f"HugePages_Surp: {surplus}", f"Hugepagesize: {size_kb} kB",
              f"Hugetlb: {hugepages * size_kb if hugetlb_kb is None else hugetlb_kb} kB"]
    return "\n".join(lines) + "\n"


# --- 1. the suggested vm.overcommit_ratio and the CommitLimit rules ---------------------------------------


def test_suggested_ratio_takes_out_the_pool_and_the_swap() -> None:
    # Dalibo: 32 GB, 2 GB of swap, a quarter of the RAM in huge pages → "entre 60 et 72"
    values = derived({"meminfo.mem_total": 32 * GIB, "meminfo.swap_total": 2 * GIB, "meminfo.hugetlb": 8 * GIB,
                      "host.ram": 32 * GIB})
    assert values["overcommit_ratio_for_80pct"] == pytest.approx(100 * (0.8 * 32 - 2 - 8) / (32 - 8))
    assert values["suggested_overcommit_ratio"] == 65
    # without huge pages the catalogue's 70–80 (Dalibo's 75 for 32 GB and 2 GB of swap)
    plain = derived({"meminfo.mem_total": 32 * GIB, "meminfo.swap_total": 2 * GIB, "meminfo.hugetlb": 0,
                     "host.ram": 32 * GIB})
    assert plain["suggested_overcommit_ratio"] == 73


def test_the_suggested_ratio_brings_commit_limit_and_pool_to_80_percent() -> None:
    facts: dict[str, FactValue] = {"meminfo.mem_total": 197568400 * KB, "meminfo.swap_total": 4194300 * KB,
                                   "meminfo.hugetlb": 106496000 * KB, "host.ram": 197568400 * KB,
                                   "sysctl.vm.overcommit_memory": 2}
    ratio = derived(facts)["suggested_overcommit_ratio"]
    assert ratio == 52  # big-server: 90 today
    after = derived({**facts, "sysctl.vm.overcommit_ratio": ratio})
    assert isinstance(after["reservable_ratio"], float)
    assert 0.79 < after["reservable_ratio"] <= 0.8
    # one more point would pass 80 %
    above = derived({**facts, "sysctl.vm.overcommit_ratio": ratio + 1})
    assert above["reservable_ratio"] > 0.8  # type: ignore[operator]


def test_big_server_commit_limit_with_its_pool_is_too_high_not_too_low() -> None:
    found = findings(FIXTURES / "big-server")
    assert "PGV104" not in found
    [high] = found["PGV103"]
    assert high.values == {"commit_limit": 86159460 * KB, "commit_limit_ratio": 0.436,
                           "hugetlb_pool": 106496000 * KB, "reservable_ratio": 0.975}
    # the ratio of the host's target, whose pool is sized for the shared_buffers the target lowers (not 52, the
    # ratio for today's pool, which the same fix shrinks)
    assert high.fix.sysctl == {"vm.overcommit_ratio": "70"}
    assert "shared_buffers (138GB → 48234MB)" in (high.fix.text or "")
    assert "with the huge page pool, which it leaves out (102 GiB), processes may be given 184 GiB" in high.message
    # PGV530 compares the peak (shared memory outside huge pages + work_mem budget) with CommitLimit alone
    [budget] = found["PGV530"]
    assert budget.values["limit"] == 86159460 * KB


def test_well_tuned_ratio_is_the_suggested_one_and_meminfo_agrees() -> None:
    host = load_host(FIXTURES / "well-tuned")
    values = {name[8:]: fact.value for name, fact in derived_values(load_pack(), host).items()}
    assert host.facts["sysctl.vm.overcommit_ratio"].value == 63
    assert values["suggested_overcommit_ratio"] == 63
    assert values["commit_limit"] == host.facts["meminfo.commit_limit"].value == 17224080 * KB
    assert findings(FIXTURES / "well-tuned") == {}


def test_a_dynamic_pool_counts_while_postgresql_runs() -> None:
    # vm.nr_overcommit_hugepages = 4400, captured with PostgreSQL stopped (no surplus page yet): the 4300 pages
    # it takes when it starts leave CommitLimit's base then
    stopped: dict[str, FactValue] = {
        "meminfo.mem_total": 32 * GIB, "meminfo.swap_total": 0, "meminfo.hugetlb": 0, "meminfo.hugepages_total": 0,
        "meminfo.hugepages_surp": 0, "meminfo.hugepagesize": 2 * MIB, "sysctl.vm.nr_hugepages": 0,
        "sysctl.vm.nr_overcommit_hugepages": 4400, "sysctl.vm.overcommit_ratio": 80, "pg.huge_pages": "on",
        "pg.huge_page_size": 0, "pg.shared_memory_size_in_huge_pages": 4300, "host.ram": 32 * GIB}
    values = derived(stopped)
    assert values["hugepages_surplus_for_postgresql"] == 4300
    assert values["hugetlb_pool"] == 0  # the snapshot: what its CommitLimit line is computed from
    assert values["hugetlb_pool_in_service"] == 4300 * 2 * MIB
    assert values["commit_limit"] == (8388608 - 4300 * 512) * 80 // 100 * 4096
    assert values["declared_commit_limit"] == 8388608 * 80 // 100 * 4096
    # the same host captured with PostgreSQL running: the surplus pages are in meminfo, counted once
    running = {**stopped, "meminfo.hugetlb": 4300 * 2 * MIB, "meminfo.hugepages_total": 4300,
               "meminfo.hugepages_surp": 4300}
    values_running = derived(running)
    assert values_running["hugetlb_pool_in_service"] == 4300 * 2 * MIB
    assert values_running["commit_limit"] == values["commit_limit"] == values_running["declared_commit_limit"]
    assert values_running["hugepages_available"] == 4400  # 0 persistent + 4400 surplus allowed, not 4300 + 4400
    # with huge_pages = off PostgreSQL takes none
    assert derived({**stopped, "pg.huge_pages": "off"})["hugetlb_pool_in_service"] == 0


def test_overcommit_rules_judge_the_hosts_memtotal_not_a_cgroups_limit() -> None:
    facts: dict[str, FactValue] = {"meminfo.mem_total": 32 * GIB, "meminfo.swap_total": 2 * GIB,
                                   "meminfo.hugetlb": 0, "host.ram": 8 * GIB, "cgroup.memory_max": 8 * GIB}
    values = derived(facts)
    assert values["kernel_mem_total"] == 32 * GIB
    assert values["suggested_overcommit_ratio"] == 73  # as on the bare host, not (0.8·8 − 2)/32


# --- 2. the memory budget's limit in a cgroup with strict overcommit ---------------------------------------

BUDGET = """\
max_connections = 200
shared_buffers = 16GB
huge_pages = off
work_mem = 16MB
maintenance_work_mem = 1GB
max_parallel_workers = 8
max_worker_processes = 8
"""


def cgroup_host(root: Path, ratio: int) -> Path:
    return write_host(root, {
        "meminfo.txt": meminfo(256 * 1024 * 1024, 0, hugepages=51200),
        "sysctl.txt": f"vm.overcommit_memory = 2\nvm.overcommit_ratio = {ratio}\nvm.overcommit_kbytes = 0\n"
                      "vm.nr_hugepages = 51200\nvm.nr_overcommit_hugepages = 0\n",
        "sysfs.txt": f"/sys/fs/cgroup/memory.max:{24 * GIB}\n",
        "postgresql.conf": BUDGET,
        "host.yaml": "pg_version: 16\n",
    })


def test_strict_overcommit_in_a_cgroup_the_lower_limit_binds_and_is_named(tmp_path: Path) -> None:
    [budget] = findings(cgroup_host(tmp_path / "a", 80))["PGV530"]
    assert budget.values["limit"] == 24 * GIB  # CommitLimit would allow 124.8 GiB
    assert "while the kernel allows 24.0 GiB (the cgroup's memory.max: its OOM killer strikes)" in budget.message
    [budget] = findings(cgroup_host(tmp_path / "b", 10))["PGV530"]
    assert budget.values["limit"] == (67108864 - 51200 * 512) * 10 // 100 * 4096  # CommitLimit, 15.6 GiB
    assert "(CommitLimit: queries fail with out of memory)" in budget.message


# --- 3. ratio/bytes pairs in sysctl.d ---------------------------------------------------------------------


def settings(text: str, path: str = "sysctl.d/90.conf") -> list[SysctlSetting]:
    return parse_sysctl_conf(text, path)


@pytest.mark.parametrize("text, expected", [
    # the last written of a pair wins
    ("vm.dirty_ratio = 10\nvm.dirty_bytes = 536870912\n", {"vm.dirty_ratio": 0, "vm.dirty_bytes": 536870912}),
    ("vm.dirty_bytes = 536870912\nvm.dirty_ratio = 10\n", {"vm.dirty_ratio": 10, "vm.dirty_bytes": 0}),
    # dirty_ratio zeroes dirty_bytes only when its value changes: bytes, then ratio 0 (already 0), keeps the bytes
    ("vm.dirty_bytes = 536870912\nvm.dirty_ratio = 0\n", {"vm.dirty_ratio": 0, "vm.dirty_bytes": 536870912}),
    # the default ratio written again (20 at boot) leaves a later bytes value alone, and is then zeroed by it
    ("vm.dirty_ratio = 20\nvm.dirty_bytes = 268435456\n", {"vm.dirty_ratio": 0, "vm.dirty_bytes": 268435456}),
    # the background handlers always zero: bytes then ratio 0 leaves both at 0
    ("vm.dirty_background_bytes = 67108864\nvm.dirty_background_ratio = 0\n",
     {"vm.dirty_background_bytes": 0, "vm.dirty_background_ratio": 0}),
    ("vm.dirty_background_ratio = 5\nvm.dirty_background_bytes = 67108864\n",
     {"vm.dirty_background_bytes": 67108864, "vm.dirty_background_ratio": 0}),
    # refused writes change nothing: dirty_bytes below two pages, a bytes value of 0, a ratio above 100
    ("vm.dirty_bytes = 536870912\nvm.dirty_bytes = 0\n", {"vm.dirty_ratio": 0, "vm.dirty_bytes": 536870912}),
    ("vm.dirty_bytes = 4096\n", {"vm.dirty_bytes": 0}),
    ("vm.dirty_background_bytes = 0\n", {"vm.dirty_background_bytes": 0}),
    ("vm.dirty_ratio = 150\n", {"vm.dirty_ratio": 20}),
    # overcommit_kbytes = 0 is accepted and zeroes the ratio: CommitLimit is then the swap alone
    ("vm.overcommit_ratio = 80\nvm.overcommit_kbytes = 0\n", {"vm.overcommit_ratio": 0, "vm.overcommit_kbytes": 0}),
    ("vm.overcommit_kbytes = 0\nvm.overcommit_ratio = 80\n", {"vm.overcommit_ratio": 80, "vm.overcommit_kbytes": 0}),
    ("vm.overcommit_kbytes = 25165824\n", {"vm.overcommit_ratio": 0, "vm.overcommit_kbytes": 25165824}),
])
def test_the_kernel_keeps_one_of_each_pair(text: str, expected: dict[str, int]) -> None:
    outcome = paired_values(settings(text))
    assert {key: value.value for key, value in outcome.items()} == expected


@pytest.mark.parametrize(("text", "running", "expected"), [
    # the host runs bytes (ratio 0): writing the ratio changes it, which zeroes the bytes; the refused bytes = 0 that
    # follows leaves them at 0 (from the boot values the ratio write changed nothing, and the bytes kept 512 MB)
    ("vm.dirty_ratio = 20\nvm.dirty_bytes = 0\n", {"vm.dirty_ratio": 0, "vm.dirty_bytes": 536870912},
     {"vm.dirty_ratio": 20, "vm.dirty_bytes": 0}),
    # the same ratio as it runs: no change, the bytes it runs are kept (0, beside a ratio)
    ("vm.dirty_ratio = 20\n", {"vm.dirty_ratio": 20, "vm.dirty_bytes": 0}, {"vm.dirty_ratio": 20}),
    # a refused write alone keeps what runs, not the boot value
    ("vm.dirty_bytes = 1\n", {"vm.dirty_ratio": 0, "vm.dirty_bytes": 536870912}, {"vm.dirty_bytes": 536870912}),
])
def test_pairs_are_written_over_what_the_kernel_runs(text: str, running: dict[str, int],
                                                     expected: dict[str, int]) -> None:
    outcome = paired_values(settings(text), running=running)
    assert {key: value.value for key, value in outcome.items()} == expected


def test_pairs_follow_the_order_sysctl_system_applies_the_files(tmp_path: Path) -> None:
    # 10-… then 99-…: the ratio of the later file wins over the bytes of the earlier one; in a configuration
    # repository (no sysctl.txt) the rules see the values the kernel will hold
    host = write_host(tmp_path / "h", {
        "sysctl.d/10-postgresql.conf": "vm.dirty_background_bytes = 67108864\nvm.dirty_bytes = 536870912\n",
        "sysctl.d/99-tuning.conf": "vm.dirty_ratio = 20\nvm.dirty_background_ratio = 10\n",
        "host.yaml": "ram: 16GB\nswap: 2GB\n",
    })
    facts = load_host(host).facts
    assert facts["sysctl_conf.vm.dirty_bytes"].value == 0
    assert facts["sysctl_conf.vm.dirty_bytes"].source == Source("sysctl.d/99-tuning.conf", 1)
    assert facts["sysctl_conf.vm.dirty_bytes"].occurrences == (Source("sysctl.d/10-postgresql.conf", 2),
                                                                Source("sysctl.d/99-tuning.conf", 1))
    assert facts["sysctl.vm.dirty_ratio"].value == 20
    found = findings(host)
    # the ratios are in force: PGV135 sees them (before, the bytes lines hid them)
    [ratios] = found["PGV135"]
    assert ratios.values["dirty_ratio"] == 20 and ratios.values["dirty_background_ratio"] == 10
    assert sorted(finding.subject or "" for finding in found["PGV904"]) == ["vm.dirty_background_bytes",
                                                                              "vm.dirty_bytes"]
    [undone] = [finding for finding in found["PGV904"] if finding.subject == "vm.dirty_bytes"]
    assert (undone.path, undone.line) == ("sysctl.d/10-postgresql.conf", 2)
    assert undone.message.startswith("vm.dirty_bytes = 536870912 will not hold: vm.dirty_ratio = 20, written after "
                                     "it at sysctl.d/99-tuning.conf:1, sets it to 0 in the kernel")


def test_a_zeroed_overcommit_ratio_gives_commit_limit_the_swap_alone(tmp_path: Path) -> None:
    host = write_host(tmp_path / "h", {
        "sysctl.d/10-postgresql.conf": "vm.overcommit_memory = 2\nvm.overcommit_ratio = 72\n",
        "sysctl.d/20-site.conf": "vm.overcommit_kbytes = 0\n",
        "host.yaml": "ram: 64GB\nswap: 2GB\n",
    })
    found = findings(host)
    [low] = found["PGV104"]
    assert low.values["commit_limit"] == 2 * GIB
    assert (low.path, low.line) == ("sysctl.d/20-site.conf", 1)  # the line that set the ratio to 0
    [undone] = found["PGV904"]
    assert undone.subject == "vm.overcommit_ratio"


def test_committed_memory_against_a_commit_limit_of_zero_is_said_as_it_is(tmp_path: Path) -> None:
    """Strict overcommit with vm.overcommit_ratio = 0 and no swap: CommitLimit is 0 kB, and PGV105 said
    "Committed_AS = 1.0 GiB is unknown of CommitLimit (0 B)" — the share is no unknown, there is nothing to share."""
    host = write_host(tmp_path / "h", {
        "sysctl.txt": "vm.overcommit_memory = 2\nvm.overcommit_ratio = 0\n",
        "meminfo.txt": "MemTotal: 4194304 kB\nSwapTotal: 0 kB\nCommitLimit: 0 kB\nCommitted_AS: 1048576 kB\n",
        "host.yaml": "ram: 4GB\n",
    })
    [near] = findings(host)["PGV105"]
    assert "unknown" not in near.message
    assert near.message.startswith("Committed_AS = 1.0 GiB against CommitLimit (0 B): strict overcommit "
                                   "(vm.overcommit_memory = 2) with nothing the kernel may promise")
    assert near.message.endswith("the kernel refuses every new reservation with \"out of memory\".")
    # a CommitLimit above 0 is compared as it was
    host = write_host(tmp_path / "h", {"meminfo.txt": "MemTotal: 4194304 kB\nSwapTotal: 0 kB\n"
                                       "CommitLimit: 1048576 kB\nCommitted_AS: 1002438 kB\n"})
    [near] = findings(host)["PGV105"]
    assert near.message.startswith("Committed_AS = 979 MiB is 95.6 % of CommitLimit (1.0 GiB): new reservations")


def test_declared_pair_applied_is_not_declared_not_applied(tmp_path: Path) -> None:
    # the kernel shows what the files make: vm.dirty_ratio 0 after vm.dirty_bytes — PGV901 stays silent,
    # PGV904 says the ratio line does nothing
    host = write_host(tmp_path / "h", {
        "sysctl.txt": "vm.dirty_ratio = 0\nvm.dirty_bytes = 536870912\nvm.dirty_background_ratio = 0\n"
                      "vm.dirty_background_bytes = 67108864\n",
        "sysctl.d/90-pg.conf": "vm.dirty_ratio = 10\nvm.dirty_bytes = 536870912\n"
                               "vm.dirty_background_bytes = 67108864\n",
        "meminfo.txt": meminfo(16 * 1024 * 1024, 2 * 1024 * 1024),
    })
    found = findings(host)
    assert "PGV901" not in found
    [undone] = found["PGV904"]
    assert undone.subject == "vm.dirty_ratio" and undone.values["effective"] == "0"


def test_declared_not_applied_on_a_pair_says_what_the_files_give(tmp_path: Path) -> None:
    host = write_host(tmp_path / "h", {
        "sysctl.txt": "vm.dirty_ratio = 20\nvm.dirty_bytes = 0\n",
        "sysctl.d/90-pg.conf": "vm.dirty_ratio = 10\nvm.dirty_bytes = 536870912\n",
        "meminfo.txt": meminfo(16 * 1024 * 1024, 2 * 1024 * 1024),
    })
    found = findings(host)
    by_key = {finding.subject: finding for finding in found["PGV901"]}
    assert by_key["vm.dirty_ratio"].values == {"key": "vm.dirty_ratio", "declared": "0", "running": "20"}
    assert by_key["vm.dirty_ratio"].message.startswith(
        "vm.dirty_ratio will be 0 once the files are applied (they write 10, then vm.dirty_bytes = 536870912 at "
        "sysctl.d/90-pg.conf:2, which sets it to 0) but the running kernel has 20")
    assert by_key["vm.dirty_bytes"].message.startswith("vm.dirty_bytes is declared 536870912 but the running kernel")


# --- 4. huge pages: surplus pages, the persistent pool, page sizes -----------------------------------------


def test_not_allocated_counts_only_persistent_pages(tmp_path: Path) -> None:
    # 4000 surplus pages in use make HugePages_Total reach vm.nr_hugepages; 2000 persistent ones are missing
    host = write_host(tmp_path / "h", {
        "meminfo.txt": meminfo(64 * 1024 * 1024, 0, hugepages=10000, surplus=4000),
        "sysctl.txt": "vm.nr_hugepages = 8000\nvm.nr_overcommit_hugepages = 4000\n",
    })
    [missing] = findings(host)["PGV114"]
    assert missing.values == {"requested": 8000, "allocated": 6000, "surplus": 4000}
    assert "holds 6000 persistent huge pages" in missing.message and "for 2000 pages" in missing.message
    assert missing.message.endswith("for 2000 pages (fragmentation).")  # no declared value to doubt


def test_not_allocated_compares_the_declared_request(tmp_path: Path) -> None:
    # the kernel reads vm.nr_hugepages back as what it could allocate (3900); sysctl.d asked for 4400
    host = write_host(tmp_path / "h", {
        "meminfo.txt": meminfo(32 * 1024 * 1024, 0, hugepages=3900),
        "sysctl.txt": "vm.nr_hugepages = 3900\nvm.nr_overcommit_hugepages = 0\n",
        "sysctl.d/30-hugepages.conf": "vm.nr_hugepages = 4400\n",
    })
    found = findings(host)
    [missing] = found["PGV114"]
    assert missing.values == {"requested": 4400, "allocated": 3900, "surplus": 0}
    assert (missing.path, missing.line) == ("sysctl.d/30-hugepages.conf", 1)
    # the request is the declared one, which may simply not be applied: the kernel reads back 3900 in both cases
    assert missing.message.endswith("it found no contiguous memory for 500 pages (fragmentation), unless the "
                                    "declared value was never applied (`sysctl --system`): the kernel reads "
                                    "vm.nr_hugepages back as the pages it holds either way.")
    [declared] = found["PGV901"]
    assert "could not find the memory" in declared.message  # not only "declared but not applied"


def test_pool_too_large_and_off_with_pool_count_in_the_default_page_size() -> None:
    # PostgreSQL asks for 1 GB pages; 3000 pages of the 2 MB default serve it nothing
    facts: dict[str, FactValue] = {"pg.huge_pages": "on", "pg.huge_page_size": GIB, "pg.shared_memory_size": 8400 * MIB,
                                   "meminfo.hugepagesize": 2 * MIB, "sysctl.vm.nr_hugepages": 3000}
    values = derived(facts)
    assert values["hugepage_size"] == GIB and values["default_hugepage_size"] == 2 * MIB
    assert values["hugepages_reserved_bytes"] == 3000 * 2 * MIB
    assert values["hugepages_needed_in_default_pool"] == 0
    assert "hugepages_pool" not in values  # NULL: sysctl shows no pool of PostgreSQL's size


def test_pool_too_large_message_and_values(tmp_path: Path) -> None:
    host = write_host(tmp_path / "h", {
        "meminfo.txt": meminfo(64 * 1024 * 1024, 0, hugepages=3000),
        "sysctl.txt": "vm.nr_hugepages = 3000\nvm.nr_overcommit_hugepages = 0\n",
        "postgresql.conf": "huge_pages = on\nhuge_page_size = 1GB\nshared_buffers = 4GB\n",
        "host.yaml": "pg_version: 16\n",
    })
    [large] = findings(host)["PGV113"]
    assert large.values["wasted"] == 3000 * 2 * MIB
    assert "in pages of 2.0 MiB" in large.message and "none of these serve it" in large.message
    # a pool is not removed by a fix: something else may use it, and PostgreSQL's own size is reserved at boot
    assert large.fix.sysctl == {}
    assert "lower or remove this pool by hand" in (large.fix.text or "")


def test_off_with_pool_sizes_the_pool_in_hugepagesize(tmp_path: Path) -> None:
    host = write_host(tmp_path / "h", {
        "meminfo.txt": meminfo(64 * 1024 * 1024, 0, hugepages=4000),
        "sysctl.txt": "vm.nr_hugepages = 4000\n",
        "postgresql.conf": "huge_pages = off\nhuge_page_size = 1GB\n",
        "host.yaml": "pg_version: 16\n",
    })
    [off] = findings(host)["PGV115"]
    assert off.values == {"reserved": 4000, "reserved_bytes": 4000 * 2 * MIB}
    assert "reserves 7.8 GiB (pages of 2.0 MiB)" in off.message


# --- 5. MemTotal 0 ------------------------------------------------------------------------------------------


def test_memtotal_zero_is_refused_naming_the_file_and_line() -> None:
    with pytest.raises(ParseError) as refused:
        parse_meminfo("MemFree: 10 kB\nMemTotal: 0 kB\nSwapTotal: 0 kB\n", "meminfo.txt")
    assert refused.value.source == Source("meminfo.txt", 2)
    assert "MemTotal is 0 kB" in refused.value.message


@pytest.mark.parametrize("text", ["MemTotal: 0 kB\nSwapTotal: 1024 kB\n", "SwapTotal: 1024 kB\n"])
def test_a_host_with_memtotal_zero_or_missing_is_not_linted_on_absurd_ratios(tmp_path: Path, text: str) -> None:
    host = write_host(tmp_path / "h", {"meminfo.txt": text,
                                       "sysctl.txt": "vm.overcommit_memory = 2\nvm.overcommit_ratio = 90\n"})
    result = lint([host], LintOptions())
    assert result.hosts == []
    [error] = result.errors
    assert error.source is not None and error.source.path == "meminfo.txt"
    assert "MemTotal" in error.message


def test_a_cgroup_limit_of_zero_is_refused_as_memtotal_zero_is(tmp_path: Path) -> None:
    # host.ram is capped by memory.max: a 0 made it 0 again, and PGV533 suggested effective_cache_size = '0MB',
    # which PostgreSQL refuses (its minimum is one 8 kB page)
    host = write_host(tmp_path / "h", {"meminfo.txt": "MemTotal: 16384000 kB\nSwapTotal: 0 kB\n",
                                       "sysfs.txt": "/sys/fs/cgroup/memory.max:0\n",
                                       "postgresql.conf": "shared_buffers = 1GB\n"})
    result = lint([host], LintOptions())
    assert result.hosts == []
    [error] = result.errors
    assert error.source == Source("sysfs.txt", 1)
    assert "memory.max is 0" in error.message


def test_declared_ram_of_zero_is_refused(tmp_path: Path) -> None:
    host = write_host(tmp_path / "h", {"host.yaml": "ram: 0\n", "postgresql.conf": "shared_buffers = 1GB\n"})
    result = lint([host], LintOptions())
    [error] = result.errors
    assert "ram must be more than 0" in error.message


# --- 6. PGV136's message, and the memory the dirty ratios apply to ------------------------------------------


def dirty_host(root: Path, sysctl_text: str, ram_kb: int, hugepages: int = 0) -> Path:
    return write_host(root, {"meminfo.txt": meminfo(ram_kb, 2 * 1024 * 1024, hugepages=hugepages),
                             "sysctl.txt": sysctl_text})


RATIOS = "vm.dirty_ratio = 10\nvm.dirty_bytes = 0\nvm.dirty_background_bytes = 0\nvm.dirty_background_ratio = 5\n"


def test_dirty_background_message_on_a_host_where_even_one_percent_is_too_much(tmp_path: Path) -> None:
    [large] = findings(dirty_host(tmp_path / "h", RATIOS, 128 * 1024 * 1024))["PGV136"]
    assert large.values["dirty_background"] == pytest.approx(0.05 * 128 * GIB)
    assert large.values["one_percent_bytes"] == pytest.approx(0.01 * 128 * GIB)
    assert large.message == (
        "Background writeback waits for up to 6.4 GiB of dirty pages before it starts, more than 1.0 GiB to write "
        "out at once (vm.dirty_background_ratio, a whole percent of the memory the page cache can use): on this "
        "host even 1 % is more than that, so set vm.dirty_background_bytes instead, with vm.dirty_bytes.")
    assert large.fix.sysctl == {"vm.dirty_background_bytes": "67108864", "vm.dirty_bytes": "536870912"}


def test_dirty_background_message_does_not_claim_one_percent_is_too_much_when_it_is_not(tmp_path: Path) -> None:
    # 5 % of 64 GB is 3.2 GB, but 1 % is 655 MB: the old message said "even 1 % is too coarse"
    [large] = findings(dirty_host(tmp_path / "h", RATIOS, 64 * 1024 * 1024))["PGV136"]
    assert "even 1 %" not in large.message
    assert "lower the ratio, or set vm.dirty_background_bytes instead" in large.message


def test_dirty_background_message_in_bytes(tmp_path: Path) -> None:
    text = "vm.dirty_ratio = 0\nvm.dirty_bytes = 4294967296\nvm.dirty_background_bytes = 2147483648\n" \
           "vm.dirty_background_ratio = 0\n"
    [large] = findings(dirty_host(tmp_path / "h", text, 128 * 1024 * 1024))["PGV136"]
    assert large.message.startswith("Background writeback waits for up to 2.0 GiB of dirty pages")
    assert large.message.endswith("(vm.dirty_background_bytes): lower it.")
    assert large.fix.sysctl == {"vm.dirty_background_bytes": "67108864", "vm.dirty_bytes": "536870912"}


def test_dirty_ratios_apply_to_memory_outside_the_huge_page_pool(tmp_path: Path) -> None:
    # 188 GiB with a 101.6 GiB pool (big-server): 10 % is at most 8.7 GiB, not 18.8 GiB
    found = findings(FIXTURES / "big-server")
    [background] = found["PGV136"]
    assert background.values["dirty_background"] == pytest.approx(0.1 * (197568400 - 106496000) * KB)
    [ratios] = found["PGV135"]
    assert ratios.values["dirty"] == pytest.approx(0.2 * (197568400 - 106496000) * KB)
    # and PGV134 says what the kernel does when the background threshold is not below the foreground one
    text = "vm.dirty_ratio = 0\nvm.dirty_bytes = 268435456\nvm.dirty_background_bytes = 536870912\n" \
           "vm.dirty_background_ratio = 0\n"
    [above] = findings(dirty_host(tmp_path / "h", text, 16 * 1024 * 1024))["PGV134"]
    assert "starts background writeback at half the blocking threshold (128 MiB)" in above.message


def test_fix_write_puts_a_pair_value_after_the_counterpart_line_that_would_undo_it(tmp_path: Path) -> None:
    # the files write the background bytes, then a ratio that zeroes them: at boot the host runs a background
    # threshold of 50 %, which PGV136 finds too large (the running host, at 10 %, is fine)
    host = tmp_path / "host"
    shutil.copytree(FIXTURES / "small-vm", host)
    (host / "sysctl.d").mkdir()
    (host / "sysctl.d" / "90-postgresql.conf").write_text(
        "vm.dirty_background_bytes = 67108864\nvm.dirty_background_ratio = 50\n")
    result = CliRunner().invoke(app, ["fix", str(host), "--write", "--select=PGV136"])
    assert result.exit_code == 0, result.output
    # the bytes value is kept in place and the ratio line, which would zero it, commented out
    assert (host / "sysctl.d" / "90-postgresql.conf").read_text() == (
        "vm.dirty_background_bytes = 67108864\n"
        "# vm.dirty_background_ratio = 50    # pgvet fix: replaced by vm.dirty_background_bytes = 67108864\n"
        "vm.dirty_bytes = 412184576\n")
    facts = load_host(host).facts
    assert facts["sysctl_conf.vm.dirty_background_bytes"].value == 67108864
    assert facts["sysctl_conf.vm.dirty_background_ratio"].value == 0


def test_fix_write_puts_a_pair_value_after_a_later_files_counterpart_that_did_not_zero_it_at_boot(
        tmp_path: Path) -> None:
    # 99-tuning.conf writes vm.dirty_ratio = 20, the boot value: at boot it zeroes nothing. But once the fix's
    # vm.dirty_bytes is written before it (in 90-postgresql.conf), the ratio changes from 0 to 20 and zeroes the
    # bytes (dirty_ratio_handler): the fix undid itself, and PGV904 fired on its own line. The counterpart's
    # lines are commented out instead.
    host = write_host(tmp_path / "h", {
        "sysctl.d/99-tuning.conf": "vm.dirty_ratio = 20\nvm.dirty_background_ratio = 10\n",
        "host.yaml": "ram: 128GB\nswap: 2GB\n",
    })
    result = CliRunner().invoke(app, ["fix", str(host), "--write", "--select=PGV136"])
    assert result.exit_code == 0, result.output
    assert (host / "sysctl.d" / "90-postgresql.conf").read_text().splitlines()[1:] == [
        "vm.dirty_background_bytes = 67108864", "vm.dirty_bytes = 536870912"]
    assert (host / "sysctl.d" / "99-tuning.conf").read_text() == (
        "# vm.dirty_ratio = 20    # pgvet fix: replaced by vm.dirty_bytes = 536870912\n"
        "# vm.dirty_background_ratio = 10    # pgvet fix: replaced by vm.dirty_background_bytes = 67108864\n")
    facts = load_host(host).facts
    assert facts["sysctl.vm.dirty_bytes"].value == 536870912 and facts["sysctl.vm.dirty_ratio"].value == 0
    assert facts["sysctl.vm.dirty_background_bytes"].value == 67108864
    found = findings(host)
    assert "PGV136" not in found and "PGV904" not in found


def test_fix_write_still_uses_our_file_when_the_counterpart_comes_earlier(tmp_path: Path) -> None:
    host = write_host(tmp_path / "h", {
        "sysctl.d/10-site.conf": "vm.dirty_ratio = 20\nvm.dirty_background_ratio = 10\n",
        "host.yaml": "ram: 128GB\nswap: 2GB\n",
    })
    result = CliRunner().invoke(app, ["fix", str(host), "--write", "--select=PGV136"])
    assert result.exit_code == 0, result.output
    assert (host / "sysctl.d" / "10-site.conf").read_text() == (
        "# vm.dirty_ratio = 20    # pgvet fix: replaced by vm.dirty_bytes = 536870912\n"
        "# vm.dirty_background_ratio = 10    # pgvet fix: replaced by vm.dirty_background_bytes = 67108864\n")
    assert (host / "sysctl.d" / "90-postgresql.conf").read_text().splitlines()[1:] == [
        "vm.dirty_background_bytes = 67108864", "vm.dirty_bytes = 536870912"]
    facts = load_host(host).facts
    assert facts["sysctl.vm.dirty_bytes"].value == 536870912 and facts["sysctl.vm.dirty_ratio"].value == 0


def test_commit_limit_message_names_overcommit_kbytes_when_it_sets_the_limit(tmp_path: Path) -> None:
    # The kernel reads vm.overcommit_ratio as 0 once vm.overcommit_kbytes is written: "vm.overcommit_ratio = 0,
    # CommitLimit = 32.0 GiB" named the setting that is not in force.
    host = write_host(tmp_path / "h", {
        "meminfo.txt": meminfo(32 * 1024 * 1024, 2 * 1024 * 1024),
        "sysctl.txt": "vm.overcommit_memory = 2\nvm.overcommit_ratio = 0\nvm.overcommit_kbytes = 31457280\n",
    })
    [high] = findings(host)["PGV103"]
    assert high.message.startswith("With vm.overcommit_memory = 2 and vm.overcommit_kbytes = 31457280, "
                                   "CommitLimit = 32.0 GiB;")
    assert high.values["commit_limit"] == 32 * GIB
    assert high.fix.sysctl == {"vm.overcommit_ratio": "73"}  # writing it sets vm.overcommit_kbytes to 0
    host = write_host(tmp_path / "r", {
        "meminfo.txt": meminfo(32 * 1024 * 1024, 2 * 1024 * 1024),
        "sysctl.txt": "vm.overcommit_memory = 2\nvm.overcommit_ratio = 95\nvm.overcommit_kbytes = 0\n",
    })
    [high] = findings(host)["PGV103"]
    assert high.message.startswith("With vm.overcommit_memory = 2 and vm.overcommit_ratio = 95, CommitLimit")


@pytest.mark.parametrize(("line", "why"), [
    ("vm.dirty_bytes = 4096",
     "(it takes a whole number of bytes from 8192, two pages, to 2^32 − 1 pages) and keeps 0."),
    ("vm.dirty_ratio = -5", "(it takes a whole percentage from 0 to 100) and keeps 20."),
    ("vm.dirty_background_ratio = 101", "(it takes a whole percentage from 0 to 100) and keeps 10."),
    ("vm.overcommit_ratio = abc", "(it takes a whole number) and keeps 50."),
    ("vm.overcommit_kbytes = -1", "(it takes a whole number of kB, 0 or more) and keeps 0."),
])
def test_a_refused_value_is_said_with_the_range_of_its_own_key(tmp_path: Path, line: str, why: str) -> None:
    # The message gave one text for all ("below the minimum — two pages for vm.dirty_bytes, 1 for
    # vm.dirty_background_bytes — or a ratio above 100"), false for a negative ratio or a ratio that is no number.
    host = write_host(tmp_path / "h", {"sysctl.d/10-x.conf": line + "\n", "host.yaml": "ram: 16GB\nswap: 1GB\n"})
    [refused] = findings(host)["PGV904"]
    assert refused.message == f"{line} will not hold: the kernel refuses this value {why}"


# --- 7. PostgreSQL on huge pages of another size than the kernel's default (huge_page_size = 1GB) -----------

ONE_GB_PAGES = "shared_buffers = 138GB\nhuge_pages = on\nhuge_page_size = 1GB\nmax_connections = 1000\n"


def one_gb_host(root: Path, gigantic_pages: int) -> Path:
    # 1 GB pages reserved at boot (hugepagesz=1G hugepages=N): meminfo's Hugetlb counts them, the default size's
    # HugePages_Total (2 MB) does not, and no sysctl shows them
    return write_host(root, {
        "meminfo.txt": meminfo(192 * 1024 * 1024, 0, hugetlb_kb=gigantic_pages * 1024 * 1024),
        "sysctl.txt": "vm.nr_hugepages = 0\nvm.nr_overcommit_hugepages = 0\nvm.overcommit_memory = 2\n"
                      "vm.overcommit_ratio = 50\nvm.overcommit_kbytes = 0\n",
        "postgresql.conf": ONE_GB_PAGES,
        "host.yaml": "pg_version: 16\n",
    })


def test_pages_of_another_size_count_from_meminfos_hugetlb(tmp_path: Path) -> None:
    # 150 pages of 1 GB hold PostgreSQL's 142: no "pool too small", no page tables "without huge pages", and its
    # shared memory is not counted a second time against CommitLimit (whose base already lacks the pool).
    found = findings(one_gb_host(tmp_path / "h", 150))
    assert not {"PGV110", "PGV111", "PGV112", "PGV120", "PGV530"} & found.keys()
    values = derived_values(load_pack(), load_host(tmp_path / "h"))
    assert values["derived.hugepages_other_sizes_bytes"].value == 150 * GIB
    assert values["derived.hugepages_available"].value == 150
    assert values["derived.shared_memory_outside_huge_pages"].value == 0


def test_too_few_pages_of_another_size_and_a_fix_in_their_own_unit(tmp_path: Path) -> None:
    # 140 pages of 1 GB for a need of 142: the server does not start. The fix wrote vm.nr_hugepages = 150 (PGV120),
    # which reserves 150 pages of the default 2 MB — 300 MB that PostgreSQL cannot use.
    found = findings(one_gb_host(tmp_path / "h", 140))
    [small] = found["PGV110"]
    assert small.values["available"] == 140 and small.values["needed"] == 142
    [tables] = found["PGV120"]
    for finding in (small, tables):
        assert "vm.nr_hugepages" not in finding.fix.sysctl
        assert finding.fix.text is not None and "hugepagesz= and hugepages= on the kernel command line" in (
            finding.fix.text)


def test_pages_of_another_size_without_meminfo_are_not_guessed() -> None:
    values = derived({"pg.huge_pages": "on", "pg.huge_page_size": GIB, "pg.shared_memory_size": 8400 * MIB,
                      "sysctl.vm.nr_hugepages": 0})
    assert "hugepages_available" not in values and "hugepages_other_sizes_bytes" not in values


def test_default_size_fix_text_is_unchanged_and_a_text_that_renders_empty_is_none() -> None:
    found = findings(FIXTURES / "big-server")
    [small] = found["PGV110"]
    assert small.fix.text is not None and small.fix.text.startswith(
        "Reserve the pages at boot (sysctl.d, or hugepages= on the kernel command line) so that fragmentation "
        "cannot prevent their allocation; the suggestion adds a 2 % margin (at least 16 MB, in whole pages). "
        "Values of the target")
    [tables] = found["PGV120"]
    # the pool of the host's target, for the shared_buffers it lowers; the text says so
    assert tables.fix.sysctl == {"vm.nr_hugepages": "25200"}
    assert tables.fix.text is not None and tables.fix.text.startswith("Values of the target, which also changes")


def test_numa_balancing_without_lscpu_is_not_evaluated_naming_the_node_count(tmp_path: Path) -> None:
    # kernel.numa_balancing is known, the node count is not (no lscpu): PGV138 cannot say whether it applies,
    # and says so rather than nothing; with balancing off there is nothing to say whatever the nodes
    host = write_host(tmp_path / "on", {"sysctl.txt": "kernel.numa_balancing = 1\n"})
    result = CliRunner().invoke(app, ["lint", str(host), "--select=PGV138", "--format=json"])
    assert result.exit_code == 0, result.output
    [record] = json.loads(result.stdout)["not_evaluated"]
    assert (record["rule_id"], record["missing"]) == ("PGV138", ["cpu.numa_nodes"])
    text = CliRunner().invoke(app, ["lint", str(host), "--select=PGV138", "-v", "--no-color"])
    assert "PGV138 numa-balancing-enabled: missing cpu.numa_nodes" in text.stdout
    off = write_host(tmp_path / "off", {"sysctl.txt": "kernel.numa_balancing = 0\n"})
    assert json.loads(CliRunner().invoke(app, ["lint", str(off), "--select=PGV138", "--format=json"]).stdout)[
        "not_evaluated"] == []


@pytest.mark.parametrize("files", [
    {"host.yaml": "ram: 16GB\nswap: 1GB\npage_size: 64kB\n"},
    # what `pgvet collect` measured comes before host.yaml's
    {"host.yaml": "ram: 16GB\nswap: 1GB\npage_size: 4kB\n", "collect.json": '{"format": 1, "page_size": 65536}\n'},
    # arm64 with 512 MB default huge pages: a 64 kB page kernel, inferred
    {"host.yaml": "ram: 16GB\nswap: 1GB\n", "lscpu.txt": "Architecture: aarch64\nCPU(s): 8\n",
     "meminfo.txt": "MemTotal: 16777216 kB\nSwapTotal: 1048576 kB\nHugepagesize: 524288 kB\n"},
])
def test_dirty_bytes_below_two_pages_of_a_64k_kernel_is_refused(tmp_path: Path, files: dict[str, str]) -> None:
    # mm/page-writeback.c: dirty_bytes_min is 2 * PAGE_SIZE, 128 kB on a 64 kB page kernel: 65536 is refused there
    # (and vm.dirty_ratio is not zeroed), where a 4 kB page kernel takes it
    host = write_host(tmp_path / "h", {**files, "sysctl.d/10-x.conf": "vm.dirty_bytes = 65536\n"})
    [refused] = findings(host)["PGV904"]
    assert refused.message == ("vm.dirty_bytes = 65536 will not hold: the kernel refuses this value (it takes a whole "
                               "number of bytes from 131072, two pages, to 2^32 − 1 pages) and keeps 0.")
    assert load_host(host, None).facts["sysctl.vm.dirty_bytes"].value == 0


def test_foreground_dirty_bytes_beyond_a_tenth_of_the_page_cache_are_too_large(tmp_path: Path) -> None:
    """vm.dirty_bytes = 2 GB on 4 GB of RAM: PGV135 judges the ratios only and PGV136 the background threshold only;
    the bytes are held to PGV135's 10 % of the memory the page cache can use, and fixed to what PGV134 writes."""
    host = write_host(tmp_path / "h", {
        "sysctl.txt": "vm.dirty_bytes = 2147483648\nvm.dirty_ratio = 0\nvm.dirty_background_bytes = 0\n"
                      "vm.dirty_background_ratio = 10\n",
        "meminfo.txt": "MemTotal: 4194304 kB\nSwapTotal: 0 kB\n",
    })
    found = findings(host)
    [large] = found["PGV145"]
    assert large.message.startswith("vm.dirty_bytes = 2.0 GiB lets dirty pages pile up to 50.0 % of the memory")
    assert large.fix.sysctl == {"vm.dirty_bytes": str(104857 * 4096)}
    assert (large.path, large.line) == ("sysctl.txt", 1)
    assert "PGV135" not in found and "PGV136" not in found
    write_host(tmp_path / "h", {"sysctl.txt": "vm.dirty_bytes = 402653184\nvm.dirty_ratio = 0\n"})  # 384 MB: 9.4 %
    assert "PGV145" not in findings(host)
