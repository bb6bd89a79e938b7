"""The boot model (engine/planner/world.py, World.rebooted): the target is worked out on the host as its own sysctl
files make it once applied, on hosts whose files and running kernel disagree."""

from __future__ import annotations

import re
from pathlib import Path

from test_plan_fixpoint import check_fixpoint
from test_planner import GB_KB, changes, host_result, meminfo, sysctl, write_host

import kernelsim
from pgvet.fix.writer import fix_host, render
from pgvet.run.lint import lint
from pgvet.run.options import LintOptions

PG = "shared_buffers = 2GB\nhuge_pages = try\nwork_mem = 16MB\neffective_cache_size = 12GB\n"


def _booted(path: Path) -> dict[str, tuple[str | None, str]]:
    target = host_result(path).target
    assert target is not None
    return {change.setting.name: (change.current, change.target) for change in target.declared_not_applied}


def test_a_declared_ratio_that_replaces_the_running_one_zeroes_its_bytes(tmp_path: Path) -> None:
    # 4 GB of dirty bytes set at run time (the ratio reads 0) and a sysctl.d line vm.dirty_ratio = 20: writing it
    # changes the ratio, and the kernel zeroes the bytes. The booted host kept both, the bytes in force, so the
    # 20 % was not seen: after the fix dirty-ratios-too-high asked for 10, and a second fix wrote it
    path = write_host(tmp_path / "db", {
        "meminfo.txt": meminfo(16 * GB_KB, 2 * GB_KB, committed_kb=6 * GB_KB),
        "sysctl.txt": sysctl(vm__dirty_ratio=0, vm__dirty_bytes=4 * 1024**3),
        "sysctl.d/90-pg.conf": "vm.dirty_ratio = 20\n",
        "postgresql.conf": PG,
        "host.yaml": "pg_version: 16\n",
    })
    assert _booted(path)["vm.dirty_bytes"] == ("4294967296", "0")
    check_fixpoint(path)


def test_a_value_the_kernel_refuses_leaves_the_running_one(tmp_path: Path) -> None:
    # 256 MB of dirty bytes and 64 MB of background bytes set at run time, and sysctl.d lines the kernel refuses
    # (vm.dirty_bytes below two pages, a bytes value of 0): `sysctl --system` changes nothing. The booted host had
    # both keys of each pair at 0, so the fix said "Resolved by applying … vm.dirty_bytes (268435456 → 0)" and
    # sysctl-declared-not-applied (PGV901) said to apply what the kernel refuses
    path = write_host(tmp_path / "db", {
        "meminfo.txt": meminfo(16 * GB_KB, 2 * GB_KB, committed_kb=6 * GB_KB),
        "sysctl.txt": sysctl(vm__dirty_ratio=0, vm__dirty_bytes=268435456, vm__dirty_background_ratio=0,
                             vm__dirty_background_bytes=67108864),
        "sysctl.d/90-pg.conf": "vm.dirty_bytes = 4096\nvm.dirty_background_bytes = 0\n",
        "postgresql.conf": PG,
        "host.yaml": "pg_version: 16\n",
    })
    assert not {name for name in _booted(path) if name.startswith("vm.dirty")}
    result = host_result(path)
    fired = {(finding.rule_id, finding.subject) for finding in result.findings}
    assert {("PGV904", "vm.dirty_bytes"), ("PGV904", "vm.dirty_background_bytes")} <= fired
    assert not {key for key in fired if key[0] in ("PGV901", "PGV134")}
    assert not {name for name in changes(result) if name.startswith("vm.dirty")}
    check_fixpoint(path)


def test_a_suppression_of_what_the_files_declare_holds_once_they_are_applied(tmp_path: Path) -> None:
    # the running kernel has vm.zone_reclaim_mode = 0; sysctl.d sets it to 1 under a suppression of
    # zone-reclaim-enabled (PGV137), or the host's ignore file names it. The finding fires only on the booted host,
    # where its suppression was not judged: the fix wrote vm.zone_reclaim_mode = 0 over what the suppression keeps
    for name, files in (("inline", {"sysctl.d/90-pg.conf": "# pgvet: ignore[PGV137] NUMA box, local reclaim wanted\n"
                                                            "vm.zone_reclaim_mode = 1\n"}),
                        ("ignore-file", {"sysctl.d/90-pg.conf": "vm.zone_reclaim_mode = 1\n",
                                         ".pgvet-ignore.yaml": "- {host: '*', rule: PGV137, reason: NUMA box}\n"})):
        path = write_host(tmp_path / name, {
            **files,
            "meminfo.txt": meminfo(32 * GB_KB, 2 * GB_KB, committed_kb=10 * GB_KB),
            "sysctl.txt": sysctl(vm__zone_reclaim_mode=0),
            "postgresql.conf": PG,
            "host.yaml": "pg_version: 16\n",
        })
        assert _booted(path)["vm.zone_reclaim_mode"] == ("0", "1")
        assert "vm.zone_reclaim_mode" not in changes(host_result(path)), name
        # in force, so not reported unused (the ignore file's entry was, having silenced no finding of the host as it
        # is), whether the target was planned in this process or another
        for jobs in (1, 2):
            notices = lint([path], LintOptions(), jobs=jobs).notices
            assert not [notice for notice in notices if "unused" in notice or "not used" in notice], (name, notices)


def test_declared_overcommit_values_that_would_starve_the_host_are_not_applied_by_the_fix(tmp_path: Path) -> None:
    # strict overcommit at ratio 80 (CommitLimit 29.6 GB, 20 GB committed), and a sysctl.d line
    # vm.overcommit_kbytes = 8388608: `sysctl --system` puts CommitLimit at 12 GB. The target was held to not going
    # below the booted host's 12 GB, and no ratio could be written beside the pool it reserved: `pgvet fix --write`
    # then `sysctl --system`, as it says, starved the host
    path = write_host(tmp_path / "db", {
        "meminfo.txt": meminfo(32 * GB_KB, 4 * GB_KB, committed_kb=20 * GB_KB, ratio=80),
        "sysctl.txt": sysctl(vm__overcommit_memory=2, vm__overcommit_ratio=80),
        "sysctl.d/90-pg.conf": "vm.overcommit_kbytes = 8388608\n",
        "postgresql.conf": PG,
        "host.yaml": "pg_version: 16\n",
    })
    check_fixpoint(path)
    after = kernelsim.read_meminfo(path / "meminfo.txt")
    assert after["CommitLimit"] >= after["Committed_AS"] / 0.9


def test_strict_overcommit_declared_where_no_ratio_holds_what_is_committed_is_not_applied(tmp_path: Path) -> None:
    # heuristic overcommit as the host runs, 28 GB committed of 32 GB and no swap; sysctl.d declares strict
    # overcommit with a ratio of 80: CommitLimit 25.6 GB once applied, and no ratio that leaves the cache 20 % of
    # RAM holds what is committed. The fix keeps the mode the host runs, and leaves the declared ratio alone
    path = write_host(tmp_path / "db", {
        "meminfo.txt": meminfo(32 * GB_KB, 0, committed_kb=28 * GB_KB),
        "sysctl.txt": sysctl(),
        "sysctl.d/90-pg.conf": "vm.overcommit_memory = 2\nvm.overcommit_ratio = 80\n",
        "postgresql.conf": PG,
        "host.yaml": "pg_version: 16\n",
    })
    target = changes(host_result(path))
    assert target["vm.overcommit_memory"] == "0"
    assert "vm.overcommit_ratio" not in target
    check_fixpoint(path)


def test_a_larger_pool_the_files_declare_is_not_applied_where_it_would_starve_the_host(tmp_path: Path) -> None:
    # strict overcommit at ratio 80 with a pool of 1 000 pages (CommitLimit 24.4 GB, 20 GB committed), and sysctl.d
    # declares 4 000 pages: CommitLimit 19.6 GB once applied, below what is committed. The fix keeps the running pool
    mem_kb = 32 * GB_KB
    path = write_host(tmp_path / "db", {
        "meminfo.txt": meminfo(mem_kb, 0, committed_kb=20 * GB_KB, pages=1000, ratio=80),
        "sysctl.txt": sysctl(vm__overcommit_memory=2, vm__overcommit_ratio=80, vm__nr_hugepages=1000),
        "sysctl.d/90-pg.conf": "vm.nr_hugepages = 4000\n",
        "postgresql.conf": "shared_buffers = 1GB\nhuge_pages = try\n",
        "host.yaml": "pg_version: 16\n",
    })
    assert changes(host_result(path))["vm.nr_hugepages"] == "1000"
    consolidated, _ = fix_host(path, LintOptions())
    assert re.search(r"^#   vm.nr_hugepages +4000 → 1000 +The host's files would put CommitLimit below what is "
                     r"committed, or beside their pool leave the OS too little: "
                     r"the fix writes back what it runs$", render(consolidated), re.MULTILINE)
    check_fixpoint(path)
    after = kernelsim.read_meminfo(path / "meminfo.txt")
    assert after["CommitLimit"] >= after["Committed_AS"] / 0.9


def test_a_pool_the_files_declare_where_the_host_runs_none_is_not_applied_where_it_would_starve_it(
        tmp_path: Path) -> None:
    # as above with no pool running: the declared 4 000 pages were applied by the fix (`sysctl --system`), which
    # left CommitLimit at 20.3 GB against 21 GB committed. The fix keeps the host without a pool, as it runs
    path = _pool_declared_where_none_runs(tmp_path, committed_gb=20, declared=4000,
                                          postgresql_conf="shared_buffers = 1GB\nhuge_pages = try\n")
    assert changes(host_result(path))["vm.nr_hugepages"] == "0"
    check_fixpoint(path)
    after = kernelsim.read_meminfo(path / "meminfo.txt")
    assert after["CommitLimit"] >= after["Committed_AS"] / 0.9


def test_a_pin_made_needless_by_a_later_one_is_lifted(tmp_path: Path) -> None:
    # as above with huge_pages = on (PostgreSQL cannot start without a pool): the planner pinned the pool first (the
    # one a larger shared_buffers needs starved the host), then shared_buffers, and left PostgreSQL without the
    # pool its shared memory as it is needs, "by hand". With shared_buffers kept, that smaller pool is safe
    path = _pool_declared_where_none_runs(tmp_path, committed_gb=20, declared=4000,
                                          postgresql_conf="shared_buffers = 1GB\nhuge_pages = on\n")
    result = host_result(path)
    assert result.target is not None
    assert [step.text.split(":")[0] for step in result.target.by_hand if " stays " in step.text] == [
        "shared_buffers stays as it is"]
    needed = next(finding for finding in result.findings if finding.rule_id == "PGV110").values["needed"]
    assert isinstance(needed, int) and needed <= int(changes(result)["vm.nr_hugepages"]) < 4000
    check_fixpoint(path)
    after = kernelsim.read_meminfo(path / "meminfo.txt")
    assert after["CommitLimit"] >= after["Committed_AS"] / 0.9 and after["HugePages_Total"] >= needed


def test_a_declared_ratio_of_zero_over_running_kbytes_is_corrected_by_writing_the_kbytes_back(tmp_path: Path) -> None:
    # strict overcommit on vm.overcommit_kbytes (ratio 0 beside it) and a sysctl.d line vm.overcommit_ratio = 0:
    # writing the ratio zeroes the kbytes, CommitLimit falls to the swap (none). The running kbytes written back,
    # which no rule proposes, had no place in the target's order: an internal error (hostgen, hypothesis)
    path = write_host(tmp_path / "db", {
        "meminfo.txt": meminfo(GB_KB, 0, committed_kb=35 * 1024, ratio=0).replace("CommitLimit: 0 kB",
                                                                                  "CommitLimit: 734000 kB"),
        "sysctl.txt": sysctl(vm__overcommit_memory=2, vm__overcommit_ratio=0, vm__overcommit_kbytes=734003),
        "sysctl.d/90-pg.conf": "vm.overcommit_ratio = 0\n",
        "postgresql.conf": "shared_buffers = 128MB\n",
        "host.yaml": "pg_version: 15\n",
    })
    assert changes(host_result(path))["vm.overcommit_kbytes"] == "734003"
    check_fixpoint(path)
    after = kernelsim.read_meminfo(path / "meminfo.txt")
    assert after["CommitLimit"] >= after["Committed_AS"] / 0.9


def test_a_declared_pool_written_back_keeps_the_pages_postgresql_needs_with_huge_pages_on(tmp_path: Path) -> None:
    # huge_pages = on and no pool running (PostgreSQL cannot run as the host is), sysctl.d declares 4 400 pages
    # that starve strict overcommit once applied: writing back the running pool, none, kept PostgreSQL from ever
    # starting. The pool written back is the 4 200 pages it needs and their margin
    path = _pool_declared_where_none_runs(tmp_path, committed_gb=18, declared=4400,
                                          postgresql_conf="shared_buffers = 8GB\nhuge_pages = on\n")
    result = host_result(path)
    needed = next(finding for finding in result.findings if finding.rule_id == "PGV110").values["needed"]
    assert isinstance(needed, int) and needed <= int(changes(result)["vm.nr_hugepages"]) < 4400
    check_fixpoint(path)
    assert kernelsim.read_meminfo(path / "meminfo.txt")["HugePages_Total"] >= needed


def test_a_ratio_a_later_change_zeroes_is_not_in_the_target(tmp_path: Path) -> None:
    # sysctl.d declares a background ratio of 0 and a foreground ratio of 20: one rule asked for ratios (10 and 5),
    # another for bytes, written after them, which zero the ratios. The target kept both of each pair, and the
    # team's later file, edited to the ratios, zeroed the bytes once applied (hostgen, hypothesis)
    path = write_host(tmp_path / "db", {
        "meminfo.txt": meminfo(24 * GB_KB, 0, committed_kb=1228 * 1024),
        "sysctl.txt": sysctl(vm__dirty_ratio=20, vm__dirty_background_ratio=10),
        "sysctl.d/90-tuning.conf": "vm.dirty_background_ratio = 0\nvm.dirty_ratio = 20\n",
        "postgresql.conf": "shared_buffers = 128MB\n",
        "host.yaml": "pg_version: 15\n",
    })
    target = changes(host_result(path))
    assert "vm.dirty_ratio" not in target and "vm.dirty_background_ratio" not in target
    assert target["vm.dirty_bytes"] == "536870912"
    check_fixpoint(path)
    applied = kernelsim.read_sysctl_txt(path / "sysctl.txt")
    assert (applied["vm.dirty_bytes"], applied["vm.dirty_background_bytes"]) == ("536870912", "67108864")


def test_a_rule_that_takes_back_a_ratio_written_back_is_blamed_for_it(tmp_path: Path) -> None:
    # 512 GB at ratio 90 with 368.6 GiB committed; sysctl.d declares 80, a CommitLimit 910 bytes short of what is
    # committed: the fix writes 90 back, and commit-limit-too-high asked for 80 again. That change is no line to
    # write (the files hold 80), so the starved CommitLimit was blamed on the setting decided last, then the next:
    # every change pinned, the target empty. The ratio is blamed, and kept at 90 (hostgen, hypothesis)
    path = write_host(tmp_path / "db", {
        "meminfo.txt": meminfo(512 * GB_KB, 0, committed_kb=386547056, ratio=90),
        "sysctl.txt": sysctl(vm__overcommit_memory=2, vm__overcommit_ratio=90),
        "sysctl.d/90-pg.conf": "vm.overcommit_ratio = 80\n",
        "postgresql.conf": "shared_buffers = 128MB\n",
        "host.yaml": "pg_version: 15\n",
    })
    result = host_result(path)
    assert changes(result)["vm.overcommit_ratio"] == "90" and "work_mem" in changes(result)
    assert result.target is not None
    assert [step.text.split(":")[0] for step in result.target.by_hand if " stays " in step.text] == [
        "shared_buffers stays as it is", "vm.overcommit_ratio stays at 90, as the host runs it"]
    check_fixpoint(path)


def _pool_declared_where_none_runs(tmp_path: Path, *, committed_gb: int, declared: int, postgresql_conf: str) -> Path:
    """32 GB, no swap, strict overcommit at ratio 80, no huge page pool running, and a sysctl.d line that declares
    one of ``declared`` pages."""
    return write_host(tmp_path / "db", {
        "meminfo.txt": meminfo(32 * GB_KB, 0, committed_kb=committed_gb * GB_KB, pages=0, ratio=80),
        "sysctl.txt": sysctl(vm__overcommit_memory=2, vm__overcommit_ratio=80, vm__nr_hugepages=0),
        "sysctl.d/90-pg.conf": f"vm.nr_hugepages = {declared}\n",
        "postgresql.conf": postgresql_conf,
        "host.yaml": "pg_version: 16\n",
    })
