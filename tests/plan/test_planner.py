"""The planner (engine/planner/): one target per host, each case of the issue that asked for it."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

import kernelsim
from conftest import FIXTURES
from pgvet.cli import app
from pgvet.engine.derived import derived_values
from pgvet.engine.loader import load_pack
from pgvet.findings import Finding, HostResult
from pgvet.fix.writer import fix_host, render
from pgvet.run.lint import lint
from pgvet.run.options import LintOptions
from pgvet.snapshot.load import load_host

GB_KB = 1024 * 1024


def write_host(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def meminfo(mem_kb: int, swap_kb: int, *, committed_kb: int = 0, pages: int = 0, size_kb: int = 2048,
            other_kb: int = 0, ratio: int = 50) -> str:
    hugetlb = pages * size_kb + other_kb
    limit = ((mem_kb - hugetlb) // 4 * ratio // 100 + swap_kb // 4) * 4
    return (f"MemTotal: {mem_kb} kB\nSwapTotal: {swap_kb} kB\nCommitLimit: {limit} kB\n"
            f"Committed_AS: {committed_kb} kB\n"
            f"HugePages_Total: {pages}\nHugePages_Free: {pages}\nHugePages_Rsvd: 0\nHugePages_Surp: 0\n"
            f"Hugepagesize: {size_kb} kB\nHugetlb: {hugetlb} kB\n")


def sysctl(**values: object) -> str:
    defaults: dict[str, object] = {"vm.overcommit_memory": 0, "vm.overcommit_ratio": 50, "vm.overcommit_kbytes": 0,
                                   "vm.nr_hugepages": 0, "vm.nr_overcommit_hugepages": 0, "vm.swappiness": 10,
                                   "vm.dirty_ratio": 10, "vm.dirty_background_ratio": 5, "vm.dirty_bytes": 0,
                                   "vm.dirty_background_bytes": 0}
    defaults.update({key.replace("__", "."): value for key, value in values.items()})
    return "".join(f"{key} = {value}\n" for key, value in defaults.items())


def host_result(path: Path, select: list[str] | None = None, ignore: list[str] | None = None) -> HostResult:
    result = lint([path], LintOptions(select=select or [], ignore=ignore or []))
    assert not result.errors, result.errors
    return result.hosts[0]


def finding_of(result: HostResult, rule_id: str) -> Finding:
    [found] = [finding for finding in result.findings if finding.rule_id == rule_id]
    return found


def changes(result: HostResult) -> dict[str, str]:
    assert result.target is not None
    return {change.setting.name: change.target for change in result.target.changes}

def small_vm_with_sysctl_d(tmp_path: Path, text: str) -> Path:
    """small-vm with a sysctl.d file holding ``text`` (what its running kernel does not run yet)."""
    path = tmp_path / "db"
    shutil.copytree(FIXTURES / "small-vm", path)
    (path / "sysctl.d").mkdir()
    (path / "sysctl.d" / "90-postgresql.conf").write_text(text)
    return path



def test_big_server_one_fix_leaves_commit_limit_above_what_is_committed(tmp_path: Path) -> None:
    # one pgvet fix on main lowered the ratio to 52 for a pool it also shrank: CommitLimit 28.4 GB against 79.1 GB
    # committed, and every new allocation failed; the next pass wrote 6, then 70
    host = tmp_path / "big-server"
    import shutil

    shutil.copytree(FIXTURES / "big-server", host)
    fix_host(host, LintOptions(), write_files=True)
    kernelsim.apply_and_reboot(host)
    after = kernelsim.read_meminfo(host / "meminfo.txt")
    assert after["CommitLimit"] >= 1.1 * after["Committed_AS"]
    # the pool is the one the new shared_buffers needs, not the 138 GB's
    pages = after["HugePages_Total"]
    assert 24_000 < pages < 26_000
    consolidated, _ = fix_host(host, LintOptions())
    assert not consolidated.sysctl and not consolidated.postgresql


def test_huge_pages_on_comes_with_the_pool_postgresql_needs(tmp_path: Path) -> None:
    # PGV115 (huge_pages = off with a pool) wrote huge_pages = on alone: 1 000 pages for a need of 2 124, and the
    # server did not start
    path = write_host(tmp_path, {
        "meminfo.txt": meminfo(16 * GB_KB, 2 * GB_KB, pages=1000),
        "sysctl.txt": sysctl(vm__nr_hugepages=1000),
        "postgresql.conf": "shared_buffers = 4GB\nhuge_pages = off\n",
        "host.yaml": "pg_version: 17\n",
    })
    target = changes(host_result(path, ["PGV11", "PGV520"]))
    assert target["huge_pages"] == "on" and int(target["vm.nr_hugepages"]) > 2000
    fix_host(path, LintOptions(select=["PGV11", "PGV520"]), write_files=True)
    kernelsim.apply_and_reboot(path)
    after = host_result(path)
    assert "PGV110" not in {finding.rule_id for finding in after.findings}  # the pool holds what PostgreSQL needs


def test_a_pool_of_another_page_size_is_never_written_nor_removed(tmp_path: Path) -> None:
    # huge_page_size = 1GB with no 1 GB page reserved: the fix wrote huge_pages = on and vm.nr_hugepages = 0
    path = write_host(tmp_path, {
        "meminfo.txt": meminfo(64 * GB_KB, 2 * GB_KB, pages=3000),
        "sysctl.txt": sysctl(vm__nr_hugepages=3000),
        "postgresql.conf": "shared_buffers = 16GB\nhuge_pages = try\nhuge_page_size = 1GB\n",
        "host.yaml": "pg_version: 17\n",
    })
    result = host_result(path)
    target = changes(result)
    assert "vm.nr_hugepages" not in target
    assert target.get("huge_pages") != "on"
    texts = " ".join(finding.fix.text or "" for finding in result.findings if finding.rule_id in ("PGV112", "PGV113"))
    assert "hugepagesz= and hugepages=" in texts


def test_max_connections_is_never_lowered(tmp_path: Path) -> None:
    path = write_host(tmp_path, {
        "meminfo.txt": meminfo(16 * GB_KB, 2 * GB_KB),
        "sysctl.txt": sysctl(),
        "lscpu.txt": "CPU(s): 4\nSocket(s): 1\n",
        "postgresql.conf": "max_connections = 1000\n",
        "host.yaml": "pg_version: 17\n",
    })
    result = host_result(path)
    assert "max_connections" not in changes(result)
    many = finding_of(result, "PGV536")
    assert not many.fix.postgresql and "primary first, then on its standbys" in (many.fix.text or "")


def test_a_server_wide_timeout_is_never_taken_off_before_its_roles_hold_it(tmp_path: Path) -> None:
    """Depaula010/postgres-central's config/postgresql.conf sets statement_timeout = 60000 and lock_timeout = 10000
    for the whole server: the target set both to 0 and fix --write wrote it, the per-role step of the rules' own text
    lost, and the application's sessions left without the timeouts that protected them. The step is by hand: the
    roles first (ALTER ROLE … SET), then the server's value back to 0."""
    path = write_host(tmp_path, {
        "postgresql.conf": "statement_timeout = 60000  # 60 segundos\nlock_timeout = 10000       # 10 segundos\n",
        "host.yaml": "pg_version: 15\nram: 2GB\ncpus: 2\n",
    })
    result = host_result(path)
    assert not {"statement_timeout", "lock_timeout"} & set(changes(result))
    assert result.target is not None
    steps = {rule: step.text for step in result.target.by_hand for rule in step.rules}
    for rule, name in (("PGV816 statement-timeout-server-wide", "statement_timeout"),
                       ("PGV817 lock-timeout-server-wide", "lock_timeout")):
        assert f"ALTER ROLE app SET {name}" in steps[rule]


def test_a_fix_text_rendered_on_the_target_says_what_the_fix_does(tmp_path: Path) -> None:
    # maintenance_io_concurrency raised with effective_io_concurrency: the target holds the raised value, and the
    # text said "already at least that and keeps its value" beside the line that raises it
    path = write_host(tmp_path, {
        "meminfo.txt": meminfo(16 * GB_KB, 2 * GB_KB),
        "sysctl.txt": sysctl(),
        "postgresql.conf": "effective_io_concurrency = 16\nmaintenance_io_concurrency = 16\n",
        "host.yaml": "pg_version: 18\nstorage: ssd\n",
    })
    fix = finding_of(host_result(path), "PGV703").fix
    assert fix.postgresql == {"effective_io_concurrency": "200", "maintenance_io_concurrency": "200"}
    assert "already" not in (fix.text or "") and "goes up with it" in (fix.text or "")


def test_a_finding_the_target_resolves_names_the_changes_its_condition_reads(tmp_path: Path) -> None:
    # the dirty ratios are resolved by the dirty bytes; the pool (which the memory the page cache can use, a
    # derived value of the rule, reads) is no part of that
    path = write_host(tmp_path, {
        "meminfo.txt": meminfo(16 * GB_KB, 2 * GB_KB),
        "sysctl.txt": sysctl(vm__dirty_ratio=20, vm__dirty_background_ratio=10),
        "postgresql.conf": "shared_buffers = 4GB\nhuge_pages = on\n",
        "host.yaml": "pg_version: 17\n",
    })
    result = host_result(path)
    assert "vm.nr_hugepages" in changes(result)
    text = finding_of(result, "PGV135").fix.text or ""
    assert text.startswith("The target resolves this with vm.dirty_background_bytes (0 → ")
    assert "nr_hugepages" not in text and "huge_pages" not in text


def test_a_step_by_hand_of_a_finding_the_target_cannot_judge_waits_for_the_target() -> None:
    # the page tables measured on big-server cannot be predicted with the pool the target reserves: its text fix
    # ("Give PostgreSQL huge pages") is what the target already does, to be checked once it is applied
    result = host_result(FIXTURES / "big-server")
    assert result.target is not None and ("PGV121", None) in result.target.unjudged
    [step] = [step for step in result.target.by_hand if "PGV121 page-tables-observed-high" in step.rules]
    assert step.text.startswith("Give PostgreSQL huge pages") and step.text.endswith(
        "(meminfo.page_tables unknown there): it may still hold once the target is applied.")


def test_a_user_pack_that_lowers_a_hot_standby_minimum_is_pinned(tmp_path: Path) -> None:
    pack = write_host(tmp_path / "pack", {"acme.yaml": """
rules:
  - id: ACME1
    name: fewer-connections
    title: Fewer connections
    severity: warning
    when: pg.max_connections > 100
    message: "max_connections = {pg.max_connections}"
    fix:
      postgresql: {max_connections: "100"}
    why: a house rule
    references: [house rules]
    examples:
      - facts: {pg.max_connections: 200}
        expect: fire
      - facts: {pg.max_connections: 100}
        expect: pass
"""})
    path = write_host(tmp_path / "host", {"postgresql.conf": "max_connections = 300\n",
                                          "host.yaml": "pg_version: 17\n"})
    result = lint([path], LintOptions(rules=[pack], select=["ACME1"])).hosts[0]
    assert "max_connections" not in changes(result)
    [finding] = result.findings
    assert not finding.fix.postgresql and "would stop a hot standby" in (finding.fix.text or "")


def test_no_ratio_when_the_swap_alone_exceeds_80_percent(tmp_path: Path) -> None:
    path = write_host(tmp_path, {
        "meminfo.txt": meminfo(8 * GB_KB, 8 * GB_KB, ratio=50),
        "sysctl.txt": sysctl(vm__overcommit_memory=2),
        "host.yaml": "pg_version: 17\n",
    })
    result = host_result(path)
    assert "vm.overcommit_ratio" not in changes(result)
    high = finding_of(result, "PGV103")
    assert not high.fix.sysctl and "lower the swap first" in (high.fix.text or "")


def test_unknown_ram_makes_commit_limit_unknown_not_the_swap(tmp_path: Path) -> None:
    # a configuration repository with the swap but not the RAM: CommitLimit was taken as the swap alone
    path = write_host(tmp_path, {
        "sysctl.d/10-vm.conf": "vm.overcommit_memory = 2\nvm.overcommit_ratio = 80\n",
        "host.yaml": "pg_version: 17\nswap: 2GB\n",
    })
    result = host_result(path)
    assert "vm.overcommit_ratio" not in changes(result)
    assert {record.rule_id for record in result.not_evaluated} >= {"PGV103", "PGV104"}


def test_strict_overcommit_is_not_advised_with_a_guessed_ratio(tmp_path: Path) -> None:
    path = write_host(tmp_path, {"sysctl.d/10-vm.conf": "vm.overcommit_memory = 0\n",
                                 "host.yaml": "pg_version: 17\nram: 32GB\n"})
    result = host_result(path)
    assert not {"vm.overcommit_memory", "vm.overcommit_ratio"} & changes(result).keys()
    lax = finding_of(result, "PGV101")
    assert "the swap size is not known" in (lax.fix.text or "")


def test_instances_add_up_in_the_memory_formulas(tmp_path: Path) -> None:
    files = {"meminfo.txt": meminfo(64 * GB_KB, 2 * GB_KB), "sysctl.txt": sysctl(),
             "postgresql.conf": "shared_buffers = 16GB\nwork_mem = 4MB\n"}
    one = host_result(write_host(tmp_path / "one", {**files, "host.yaml": "pg_version: 17\n"}))
    two = host_result(write_host(tmp_path / "two", {**files, "host.yaml": "pg_version: 17\npg_instances: 2\n"}))
    assert "PGV501" not in {finding.rule_id for finding in one.findings}
    large = finding_of(two, "PGV501")
    assert large.values["ratio"] == 0.5 and "in each of the 2 instances" in large.message
    assert changes(two)["shared_buffers"] == "8192MB"  # a quarter of the RAM, shared out


def test_in_a_container_strict_overcommit_is_not_promised(tmp_path: Path) -> None:
    path = write_host(tmp_path, {
        "meminfo.txt": meminfo(64 * GB_KB, 2 * GB_KB), "sysctl.txt": sysctl(),
        "sysfs.txt": f"/sys/fs/cgroup/memory.max:{8 * 1024**3}\n", "host.yaml": "pg_version: 17\n",
    })
    result = host_result(path)
    assert "PGV101" not in {finding.rule_id for finding in result.findings}
    assert "vm.overcommit_memory" not in changes(result)


def test_dirty_bytes_on_a_small_host_stay_within_pgvets_own_limits(tmp_path: Path) -> None:
    # PGV134 on a 1 GB host set vm.dirty_bytes to 512 MB, 52 % of RAM, against pgvet's own 10 %
    path = write_host(tmp_path, {
        "meminfo.txt": meminfo(GB_KB, 0),
        "sysctl.txt": sysctl(vm__dirty_ratio=10, vm__dirty_background_ratio=20),
        "host.yaml": "pg_version: 17\n",
    })
    target = changes(host_result(path))
    assert int(target["vm.dirty_bytes"]) <= 0.1 * GB_KB * 1024
    assert int(target["vm.dirty_background_bytes"]) < int(target["vm.dirty_bytes"])


@pytest.mark.parametrize("bundled", ["big-server", "small-vm", "well-tuned", "config-repo"])
def test_one_report_never_says_two_things_about_one_setting(bundled: str) -> None:
    result = host_result(FIXTURES / bundled)
    seen: dict[str, tuple[str, str]] = {}
    for finding in result.findings:
        for name, value in {**finding.fix.sysctl, **finding.fix.postgresql}.items():
            first = seen.setdefault(name, (value, finding.rule_id))
            assert first[0] == value, f"{name}: {first[1]} says {first[0]}, {finding.rule_id} says {value}"
    assert changes(result) == {name: value for name, (value, _) in seen.items()}


def test_a_suppressed_rule_proposes_nothing(tmp_path: Path) -> None:
    host = tmp_path / "big-server"
    shutil.copytree(FIXTURES / "big-server", host)
    conf = host / "postgresql.conf"
    conf.write_text(conf.read_text().replace("shared_buffers = 138GB", "shared_buffers = 138GB  "
                                             "# pgvet: ignore[PGV501] a cache server, measured"))
    result = host_result(host)
    target = changes(result)
    assert "shared_buffers" not in target
    # the pool is then the one 138 GB needs, which the host cannot hold beside what it commits: left by hand
    assert "vm.nr_hugepages" not in target or int(target["vm.nr_hugepages"]) > 70_000


@pytest.mark.parametrize("mode", [2, 0])
def test_more_shared_memory_is_committed_within_commit_limit(tmp_path: Path, mode: int) -> None:
    # a 16 GB host, 85 % of an 80 % CommitLimit committed, shared_buffers 128MB: the fix raised shared_buffers to
    # 4 GB outside huge pages (a shared anonymous mapping is committed whole when PostgreSQL maps it), so with strict
    # overcommit PostgreSQL would have stopped at its restart ("could not map anonymous shared memory")
    mem_kb = 16 * GB_KB
    limit_kb = mem_kb // 4 * 80 // 100 * 4
    path = write_host(tmp_path, {
        "meminfo.txt": meminfo(mem_kb, 0, committed_kb=int(limit_kb * 0.85), ratio=80),
        "sysctl.txt": sysctl(vm__overcommit_memory=mode, vm__overcommit_ratio=80),
        "postgresql.conf": "shared_buffers = 128MB\n",
        "host.yaml": "pg_version: 16\n",
    })
    result = host_result(path)
    target = changes(result)
    strict = target.get("vm.overcommit_memory", str(mode)) == "2"
    ratio = int(target.get("vm.overcommit_ratio", "80"))
    if strict and "shared_buffers" in target:
        # what PostgreSQL will commit once restarted stays within the CommitLimit the fix leaves
        new_shmem_kb = int(target["shared_buffers"].removesuffix("MB")) * 1024
        committed_after_kb = limit_kb * 0.85 + new_shmem_kb - 128 * 1024
        assert committed_after_kb <= 0.9 * (mem_kb * ratio // 100), target
    if mode == 2:  # strict already: shared_buffers is what would not fit, kept with the reason
        assert "shared_buffers" not in target
        assert "could not map anonymous shared memory" in (finding_of(result, "PGV502").fix.text or "")


def test_a_pool_of_1gb_default_pages_is_sized_in_bytes_not_in_pages(tmp_path: Path) -> None:
    # the margin of "at least 8 pages" was 8 GB of 1 GB pages: on 32 GB, 17 pages for a need of 9, which
    # huge-pages-pool-too-large (PGV113) then judged, so the target kept no pool at all
    path = write_host(tmp_path, {
        "meminfo.txt": meminfo(32 * GB_KB, 2 * GB_KB, size_kb=GB_KB),
        "sysctl.txt": sysctl(),
        "postgresql.conf": "shared_buffers = 8GB\nhuge_pages = try\n",
        "host.yaml": "pg_version: 17\n",
    })
    result = host_result(path)
    needed = finding_of(result, "PGV112").values["needed"]
    assert changes(result)["vm.nr_hugepages"] == str(needed + 1)


def test_a_default_is_shown_as_show_writes_it(tmp_path: Path) -> None:
    # effective_cache_size unset was shown as "524288 → 1305MB" beside a message saying 4.0 GiB (8 kB pages)
    path = write_host(tmp_path, {"meminfo.txt": meminfo(2 * GB_KB, 0), "sysctl.txt": sysctl(),
                                 "postgresql.conf": "shared_buffers = 128MB\n", "host.yaml": "pg_version: 16\n"})
    result = host_result(path)
    assert result.target is not None
    current = {change.setting.name: change.current for change in result.target.changes}
    assert current["effective_cache_size"] == "4GB"
    consolidated, _ = fix_host(path, LintOptions())
    assert re.search(r"^#   effective_cache_size +4GB → ", render(consolidated), re.MULTILINE)


def test_the_alter_system_statements_say_to_remove_the_lines_they_override(tmp_path: Path) -> None:
    # applied that way, the fix left postgresql.conf's lines overridden (PGV406) without a word
    path = write_host(tmp_path, {"meminfo.txt": meminfo(2 * GB_KB, 0), "sysctl.txt": sysctl(),
                                 "postgresql.conf": "shared_buffers = 128MB\n", "host.yaml": "pg_version: 16\n"})
    consolidated, _ = fix_host(path, LintOptions())
    sql = render(consolidated).split("-- --- or, on the running server")[1].splitlines()
    assert sql[-1] == ("-- then remove the lines of postgresql.conf that set them: overridden, they no longer say "
                       "what runs")
    assert sql[-2].startswith("ALTER SYSTEM SET ")


def test_a_parameter_alter_system_sets_is_left_out_of_the_target(tmp_path: Path) -> None:
    # shared_buffers = 16GB in postgresql.auto.conf: the target lowered it, which fix --write cannot do, and wrote
    # huge_pages = on with a pool for the lower value: after the reboot PostgreSQL would not start (PGV110)
    path = write_host(tmp_path, {
        "meminfo.txt": meminfo(32 * GB_KB, GB_KB, committed_kb=18 * GB_KB),
        "sysctl.txt": sysctl(),
        "postgresql.conf": "huge_pages = try\nmax_connections = 200\n",
        "postgresql.auto.conf": "shared_buffers = '16GB'\n",
        "host.yaml": "pg_version: 17\n",
    })
    target = changes(host_result(path))
    assert "shared_buffers" not in target
    consolidated, outcome = fix_host(path, LintOptions(), write_files=True)
    assert outcome is not None and not outcome.left
    assert "shared_buffers stays as it is: ALTER SYSTEM sets it (postgresql.auto.conf:1), which overrides " \
        "postgresql.conf: on the server, ALTER SYSTEM SET shared_buffers = '8192MB';" in " ".join(consolidated.notes)
    kernelsim.apply_and_reboot(path)
    assert "PGV110" not in {finding.rule_id for finding in host_result(path).findings}


def test_a_parameter_the_server_takes_from_its_command_line_is_left_out_of_the_target(tmp_path: Path) -> None:
    # `postgres -c jit=on` (a container's command, a service unit): pg_settings.source = 'command line' overrides
    # postgresql.conf and ALTER SYSTEM, so a fix written to either would change nothing (and the rest of the target,
    # worked out with the value it never gets, could stop the server: a pool sized for a lower shared_buffers)
    path = tmp_path / "host"
    shutil.copytree(FIXTURES / "rules" / "PGV903-files-differ-from-running", path)
    (path / "host.yaml").write_text("pg_version: 15\nworkload: oltp\n")
    settings = json.loads((path / "pg_settings.json").read_text())
    for row in settings["settings"]:
        if row["name"] == "jit":
            row["source"] = "command line"
        if row["name"] == "track_io_timing":  # the server's default, which no file sets
            row.update(setting="off", source="default", sourcefile=None, sourceline=None)
    (path / "pg_settings.json").write_text(json.dumps(settings))
    conf = path / "postgresql.conf"
    conf.write_text(conf.read_text().replace("\ntrack_io_timing = on", "\n"))
    result = host_result(path)
    assert "PGV708" in {finding.rule_id for finding in result.findings}
    target = changes(result)
    assert "jit" not in target
    # a running value no file sets is shown as SHOW writes it, not as pgvet holds it (False, bytes)
    assert {change.setting.name: change.current for change in result.target.changes}["track_io_timing"] == "off"
    consolidated, _ = fix_host(path, LintOptions())
    assert "jit stays as it is: the server takes it from its command line or environment (pg_settings.json:" \
        in " ".join(consolidated.notes)
    assert "change it where the server is started (its service unit, container command or pg_ctl -o options) to " \
        "'off'" in " ".join(consolidated.notes)


def test_a_rule_on_measured_statistics_asks_once_for_the_setting_it_moves(tmp_path: Path) -> None:
    # 40 of 50 checkpoints requested under max_wal_size = 1GB: PGV953 asks for twice that. On the target's world the
    # counts are the same (they were taken with 1GB), so asked again it wanted 4GB, 8GB… until the planner gave up:
    # "max_wal_size stays as it is: pgvet's rules do not agree on a value (they ask for 2048MB, 4096MB, … in turn)"
    path = tmp_path / "host"
    shutil.copytree(FIXTURES / "rules" / "PGV903-files-differ-from-running", path)
    settings = json.loads((path / "pg_settings.json").read_text())
    settings["statistics"].update(checkpoints_timed=10, checkpoints_requested=40)
    (path / "pg_settings.json").write_text(json.dumps(settings))
    result = host_result(path)
    finding = finding_of(result, "PGV953")
    assert result.target is not None
    assert changes(result)["max_wal_size"] == "2048MB"
    assert finding.fix.postgresql["max_wal_size"] == "2048MB"
    assert not any("max_wal_size" in step.text for step in result.target.by_hand if step.setting is not None)
    assert "pg_stat_reset_shared" in (finding.fix.text or "")


@pytest.mark.parametrize(("min_wal_size", "target"), [("4GB", "4096MB"), ("1536MB", "2048MB")])
def test_requested_checkpoints_and_a_max_wal_size_below_min_wal_size_agree_on_one_value(
        tmp_path: Path, min_wal_size: str, target: str) -> None:
    # PGV953 doubles max_wal_size, PGV610 raises it to min_wal_size: each asked alone for its own value, the measured
    # rule's ask kept (the counts were taken under 1GB) would undo the other's round after round
    path = tmp_path / "host"
    shutil.copytree(FIXTURES / "rules" / "PGV903-files-differ-from-running", path)
    conf = path / "postgresql.conf"
    conf.write_text(conf.read_text().replace("\nmin_wal_size = 80MB", f"\nmin_wal_size = {min_wal_size}", 1))
    settings = json.loads((path / "pg_settings.json").read_text())
    settings["statistics"].update(checkpoints_timed=10, checkpoints_requested=40)
    megabytes = int(min_wal_size.removesuffix("GB")) * 1024 if min_wal_size.endswith("GB") else int(min_wal_size[:-2])
    for row in [*settings["settings"], *settings["file_settings"]]:
        if row["name"] == "min_wal_size":
            row["setting"] = str(megabytes) if "unit" in row else min_wal_size
            row.update({key: str(megabytes) for key in ("reset_val",) if key in row})
    (path / "pg_settings.json").write_text(json.dumps(settings))
    result = host_result(path)
    assert {"PGV610", "PGV953"} <= {finding.rule_id for finding in result.findings}
    assert result.target is not None
    assert not any("no safe target" in step.text for step in result.target.by_hand)
    assert changes(result)["max_wal_size"] == target
    for rule_id in ("PGV610", "PGV953"):
        assert finding_of(result, rule_id).fix.postgresql["max_wal_size"] == target
    assert ("PGV610", None) not in result.target.firing


def test_a_rule_on_measured_statistics_does_not_undo_what_the_files_already_set(tmp_path: Path) -> None:
    # The counts were taken under the running 1GB; the files already raise it to 8GB (a reload pending). Twice the
    # running value, asked on every world, lowered the administrator's 8GB to 2048MB.
    path = tmp_path / "host"
    shutil.copytree(FIXTURES / "rules" / "PGV903-files-differ-from-running", path)
    conf = path / "postgresql.conf"
    conf.write_text(conf.read_text().replace("\nmax_wal_size = 1GB", "\nmax_wal_size = 8GB", 1))
    settings = json.loads((path / "pg_settings.json").read_text())
    settings["statistics"].update(checkpoints_timed=10, checkpoints_requested=40)
    for row in settings["file_settings"]:
        if row["name"] == "max_wal_size":
            row["setting"] = "8GB"
    (path / "pg_settings.json").write_text(json.dumps(settings))
    result = host_result(path)
    assert "PGV953" in {finding.rule_id for finding in result.findings}
    assert result.target is not None
    assert "max_wal_size" not in changes(result)
    assert {change.setting.name: change.target for change in result.target.declared_not_applied}["max_wal_size"] \
        == "8GB"
    assert not [step for step in result.target.by_hand if step.setting is not None]


def _server_in_huge_pages(tmp_path: Path, shared_buffers_gb: int, others: int, *, major: int = 17,
                          huge_pages: str = "on") -> tuple[Path, int]:
    """A PostgreSQL ``major`` running with ``huge_pages`` (from 17 its huge_pages_status says it runs in them) and
    ``shared_buffers_gb``, on 32 GB of RAM whose pool holds its pages, ``others`` pages another user (another
    instance) maps, and 100 free; with the pages the server maps."""
    path = tmp_path / "host"
    shutil.copytree(FIXTURES / "rules" / "PGV903-files-differ-from-running", path)
    settings = json.loads((path / "pg_settings.json").read_text())
    version_num = major * 10000 + 4
    settings["server"].update(server_version_num=version_num, version=f"PostgreSQL {major}.4 on x86_64-pc-linux-gnu")
    held = shared_buffers_gb * 512 + 150
    rows = {row["name"]: row for row in settings["settings"]}
    for name, value in [("server_version_num", str(version_num)), ("shared_buffers", str(shared_buffers_gb * 131072)),
                        ("huge_pages", huge_pages), ("shared_memory_size_in_huge_pages", str(held)),
                        ("shared_memory_size", str(held * 2))]:
        rows[name].update(setting=value, reset_val=value)
    if major >= 17:
        settings["settings"].append({**rows["huge_pages"], "name": "huge_pages_status", "setting": "on",
                                     "reset_val": "on", "context": "internal", "source": "default",
                                     "sourcefile": None, "sourceline": None})
    for row in settings["file_settings"]:
        if row["name"] == "shared_buffers":
            row["setting"] = f"{shared_buffers_gb}GB"
    (path / "pg_settings.json").write_text(json.dumps(settings))
    conf = path / "postgresql.conf"
    conf.write_text(conf.read_text().replace("\nshared_buffers = 128MB",
                                             f"\nshared_buffers = {shared_buffers_gb}GB\nhuge_pages = {huge_pages}", 1))
    (path / "host.yaml").write_text(f"pg_version: {major}\nworkload: oltp\n")
    pool = held + others + 100
    (path / "meminfo.txt").write_text(meminfo(32 * GB_KB, 0, pages=pool).replace(
        f"HugePages_Free: {pool}", f"HugePages_Free: {100}"))
    (path / "sysctl.txt").write_text(sysctl(vm__nr_hugepages=pool))
    return path, held


@pytest.mark.parametrize(("major", "huge_pages"), [(17, "on"), (16, "on"), (16, "try")])
def test_the_pages_another_user_holds_stay_in_the_pool(tmp_path: Path, major: int, huge_pages: str) -> None:
    # 3000 of the pool's pages held by a second instance: not waste, and a fix that shrank the pool to this
    # server's need stopped the other at its next start — before 17 too, where no huge_pages_status says whether
    # the server runs in them (b4)
    path, _ = _server_in_huge_pages(tmp_path, 4, 3000, major=major, huge_pages=huge_pages)
    result = host_result(path)
    assert "PGV113" not in {finding.rule_id for finding in result.findings}
    assert "vm.nr_hugepages" not in changes(result)


def test_a_server_in_huge_pages_whose_shared_memory_the_fix_shrinks_is_not_taken_for_another_user(
        tmp_path: Path) -> None:
    # 24GB of shared_buffers on 32 GB of RAM, lowered by PGV501: the pages the server held at its old size, counted
    # as another user's, kept a pool of its old size after the restart, which the next fix took back
    path, held = _server_in_huge_pages(tmp_path, 24, 0)
    target = changes(host_result(path))
    assert target["shared_buffers"] == "8192MB"
    assert int(target["vm.nr_hugepages"]) < held / 2


def test_the_pages_another_user_holds_stay_in_the_pool_when_the_fix_changes_the_servers_need(
        tmp_path: Path) -> None:
    # 24GB lowered to 8GB by PGV501 beside 3000 pages of a second instance: with the pages in use unknown once the
    # need changed, the pool followed the new need alone, and the other instance lost its pages at the next boot
    path, _ = _server_in_huge_pages(tmp_path, 24, 3000)
    target = changes(host_result(path))
    assert target["shared_buffers"] == "8192MB"
    assert int(target["vm.nr_hugepages"]) >= 8192 // 2 + 3000


@pytest.mark.parametrize(("data_mb", "asked"), [(20, None), (700, "1400MB"), (300, "1024MB")])
def test_shared_buffers_are_not_raised_past_what_the_databases_fill(tmp_path: Path, data_mb: int,
                                                                    asked: str | None) -> None:
    # 128MB on 16 GB of RAM: a quarter of the RAM (4 GB) for databases of 20 MB made shared-buffers-larger-than-data
    # fire on the target, which pinned shared_buffers while PGV502 still asked for it
    path = tmp_path / "host"
    shutil.copytree(FIXTURES / "rules" / "PGV903-files-differ-from-running", path)
    (path / "meminfo.txt").write_text(meminfo(16 * GB_KB, 0))
    settings = json.loads((path / "pg_settings.json").read_text())
    settings["databases"] = [{**settings["databases"][0], "size_bytes": data_mb * 1024 * 1024}]
    (path / "pg_settings.json").write_text(json.dumps(settings))
    result = host_result(path)
    assert result.target is not None
    assert changes(result).get("shared_buffers") == asked
    assert not [step for step in result.target.by_hand if step.setting is not None]
    assert not any(rule_id == "PGV957" for rule_id, _ in result.target.firing)
    assert (asked is None) == ("PGV502" not in {finding.rule_id for finding in result.findings})


def _live_host_with_a_pending_restart(tmp_path: Path) -> Path:
    """PGV903's live server (PostgreSQL 15, work_mem raised to 32MB in the files, not reloaded) on 16 GB of RAM, no
    swap, heuristic overcommit, pg_stat_statements loaded, 3 GB of data; shared_buffers raised from 128MB to 4GB in
    the files, the server not restarted."""
    path = tmp_path / "host"
    shutil.copytree(FIXTURES / "rules" / "PGV903-files-differ-from-running", path)
    (path / "meminfo.txt").write_text(meminfo(16384000, 0, committed_kb=2000000))
    (path / "sysctl.txt").write_text(sysctl(**{"vm.overcommit_memory": 0, "vm.overcommit_ratio": 50}))
    conf = path / "postgresql.conf"
    conf.write_text(conf.read_text().replace("\nshared_buffers = 128MB", "\nshared_buffers = 4GB", 1))
    settings = json.loads((path / "pg_settings.json").read_text())
    settings["databases"][0]["size_bytes"] = 3 * 1024**3
    for row in settings["settings"]:
        if row["name"] == "shared_buffers":
            row["pending_restart"] = True
    for row in settings["file_settings"]:
        if row["name"] == "shared_buffers":
            row.update(setting="4GB", applied=False, error="setting could not be applied")
    (path / "pg_settings.json").write_text(json.dumps(settings))
    return path


def test_a_finding_that_still_holds_after_the_pending_values_says_whose_numbers_it_shows(tmp_path: Path) -> None:
    # a role's work_mem of 2GB past the budget, and shared_buffers 128MB → 4GB pending: "This counts on applying
    # … shared_buffers (128MB → 4GB)" beside numbers of the server as it runs (a1)
    path = _live_host_with_a_pending_restart(tmp_path)
    settings = json.loads((path / "pg_settings.json").read_text())
    settings["role_settings"] = [{"database": None, "role": "reporting", "name": "work_mem", "setting": "2GB"}]
    (path / "pg_settings.json").write_text(json.dumps(settings))
    finding = finding_of(host_result(path), "PGV538")
    text = finding.fix.text or ""
    assert "This counts on" not in text
    assert ("It still holds after applying the values PostgreSQL's configuration files already set (a restart; a "
            "reload for those that allow it): shared_buffers (128MB → 4GB)") in text, text
    assert text.endswith("(its numbers are those of the host as it runs).")


def test_a_live_servers_pending_values_are_what_the_target_starts_from(tmp_path: Path) -> None:
    # The server restarted with the target runs shared_buffers = 4GB, as its files say: a target worked out with
    # the 128MB it runs now put work_mem and strict overcommit's budget 3.9 GB off, and a pool sized for 128MB
    # would stop it under huge_pages = on. Its shared memory is predicted again (pg_stat_statements.max, an integer
    # in pg_settings, once made that prediction fail: every rule reading it went unevaluated, "resolved").
    path = _live_host_with_a_pending_restart(tmp_path)
    result = host_result(path)
    assert result.target is not None
    declared = {change.setting.name: (change.current, change.target) for change in result.target.declared_not_applied}
    assert declared == {"shared_buffers": ("128MB", "4GB"), "work_mem": ("4MB", "32MB")}
    target = changes(result)
    assert target["vm.overcommit_memory"] == "2"
    assert "shared_buffers" not in target
    text = CliRunner().invoke(app, ["fix", str(path)]).stdout
    assert "# set in PostgreSQL's configuration files and not running yet" in text
    assert "#   shared_buffers  128MB → 4GB\n" in text
    assert "shared_buffers (128MB → 4GB)" in finding_of(result, "PGV502").fix.text
    applied = host_result(path)  # the same host restarted: it runs what its files set
    settings = json.loads((path / "pg_settings.json").read_text())
    for row in settings["settings"]:
        if row["name"] == "shared_buffers":
            row.update(setting="524288", pending_restart=False)
        if row["name"] == "work_mem":
            row.update(setting="32768")
    settings["file_settings"] = [row for row in settings["file_settings"] if row["name"] != "shared_buffers"]
    (path / "pg_settings.json").write_text(json.dumps(settings))
    # its shared memory as PostgreSQL would size it (the estimate) and show it (in megabytes, rounded up)
    shown = {"shared_memory_size": "derived.shared_memory_size_shown",
             "shared_memory_size_in_huge_pages": "derived.shared_memory_estimate_in_huge_pages"}
    estimated = derived_values(load_pack(), load_host(path), set(shown.values()))
    for row in settings["settings"]:
        if row["name"] in shown:
            value = int(estimated[shown[row["name"]]].value)
            row["setting"] = str(value // 1024**2 if row["name"] == "shared_memory_size" else value)
    (path / "pg_settings.json").write_text(json.dumps(settings))
    restarted = host_result(path)
    assert not restarted.target.declared_not_applied
    assert changes(restarted) == changes(applied)


def test_an_error_only_the_pending_values_bring_is_a_finding(tmp_path: Path) -> None:
    # huge_pages = on in the files, the server not restarted (it runs 'try' without a pool): PGV955 advised the
    # restart, and nothing said PostgreSQL would then not start (h3, on PostgreSQL 17)
    path = _live_host_with_a_pending_restart(tmp_path)
    conf = path / "postgresql.conf"
    conf.write_text(conf.read_text() + "huge_pages = on\n")
    result = host_result(path)
    finding = finding_of(result, "PGV110")
    assert finding.severity == "error"
    assert finding.message.startswith("After applying the values PostgreSQL's configuration files already set")
    assert "huge_pages (try → on)" in finding.message
    assert finding.path is not None and finding.path.endswith("postgresql.conf")
    assert int(finding.fix.sysctl["vm.nr_hugepages"]) > 2000  # for the 4GB of shared_buffers it restarts with
    assert changes(result)["vm.nr_hugepages"] == finding.fix.sysctl["vm.nr_hugepages"]
    text = CliRunner().invoke(app, ["fix", str(path)]).stdout
    assert "# order: the kernel part first (`sysctl --system`), then PostgreSQL restarted" in text
    assert "or PostgreSQL does not start with huge_pages = on)" in text  # the files set it, the pool is the fix's


def test_the_order_line_warns_of_huge_pages_on_that_the_files_already_set(tmp_path: Path) -> None:
    # a server that did not start (huge_pages = on, no pool) linted from its files: the pool is the fix, huge_pages
    # no change, and the order line left out that PostgreSQL does not start while the pool is short
    path = write_host(tmp_path, {"meminfo.txt": meminfo(16 * GB_KB, 0), "sysctl.txt": sysctl(),
                                 "postgresql.conf": "shared_buffers = 4GB\nhuge_pages = on\n",
                                 "host.yaml": "pg_version: 16\n"})
    consolidated, _ = fix_host(path, LintOptions())
    assert "vm.nr_hugepages" in consolidated.sysctl and "huge_pages" not in consolidated.postgresql
    assert "or PostgreSQL does not start with huge_pages = on)" in render(consolidated)


def test_the_order_line_says_reload_when_no_postgresql_value_needs_a_restart(tmp_path: Path) -> None:
    # the kernel's dirty thresholds, and PostgreSQL values a reload applies (checkpoint_completion_target, work_mem…):
    # "then PostgreSQL restarted" asked for a restart nothing needed
    path = write_host(tmp_path, {
        "meminfo.txt": meminfo(16 * GB_KB, 2 * GB_KB),
        "sysctl.txt": sysctl(vm__dirty_ratio=40, vm__dirty_background_ratio=20),
        "postgresql.conf": "shared_buffers = 4GB\ncheckpoint_completion_target = 0.5\n",
        "host.yaml": "pg_version: 17\nstorage: ssd\n",
    })
    target = changes(host_result(path))
    assert "vm.dirty_bytes" in target and "checkpoint_completion_target" in target
    text = CliRunner().invoke(app, ["fix", str(path)]).stdout
    restarts = [name for name in target if name in ("shared_buffers", "max_connections", "huge_pages")]
    assert not restarts, text
    assert ("# order: the kernel part first (`sysctl --system`), then PostgreSQL's configuration reloaded "
            "(`SELECT pg_reload_conf()`: no value needs a restart)") in text, text


def test_a_warning_only_the_pending_values_bring_is_a_finding(tmp_path: Path) -> None:
    # max_connections raised to 500 in the files on 4 CPUs, the server not restarted: PGV536 fired only after the
    # restart PGV955 advises (a warning: the administrator about to restart wants to know)
    path = _live_host_with_a_pending_restart(tmp_path)
    (path / "host.yaml").write_text("cpus: 4\n")
    conf = path / "postgresql.conf"
    conf.write_text(conf.read_text().replace("\nmax_connections = 100", "\nmax_connections = 500", 1))
    settings = json.loads((path / "pg_settings.json").read_text())
    for row in settings["settings"]:
        if row["name"] == "max_connections":
            row["pending_restart"] = True
    for row in settings["file_settings"]:
        if row["name"] == "max_connections":
            row.update(setting="500", applied=False, error="setting could not be applied")
    (path / "pg_settings.json").write_text(json.dumps(settings))
    result = host_result(path)
    finding = finding_of(result, "PGV536")
    assert finding.severity == "warning"
    assert finding.message.startswith("After applying the values PostgreSQL's configuration files already set")
    assert "max_connections (100 → 500)" in finding.message
    assert (finding.fix.text or "").endswith("and restart each.")  # not "It still holds after applying …"
    assert "max_connections" not in changes(result)  # never lowered by the fix
    # an info the restart brings waits for it (PGV955 already says a restart is pending)
    assert all(finding.severity != "info" for finding in result.target.found_once_booted)


def test_an_include_left_out_of_the_copy_leaves_the_servers_reading_of_its_files(tmp_path: Path) -> None:
    # The running 3GB comes from an include pgvet did not copy: the copies alone said 128MB, which the target took
    # as pending ("shared_buffers 3GB → 128MB") and sized the huge page pool for (PostgreSQL then does not start).
    path = tmp_path / "host"
    shutil.copytree(FIXTURES / "rules" / "PGV903-files-differ-from-running", path)
    (path / "meminfo.txt").write_text(meminfo(16384000, 0, committed_kb=2000000))
    (path / "sysctl.txt").write_text(sysctl())
    conf = path / "postgresql.conf"
    conf.write_text(conf.read_text() + "include_if_exists = '/etc/postgresql/extra.conf'\n")
    settings = json.loads((path / "pg_settings.json").read_text())
    for row in settings["settings"]:
        if row["name"] == "shared_buffers":
            row.update(setting="393216", sourcefile="/etc/postgresql/extra.conf", sourceline=1)
    settings["file_settings"].append({"sourcefile": "/etc/postgresql/extra.conf", "sourceline": 1, "seqno": 99,
                                      "name": "shared_buffers", "setting": "3GB", "applied": True, "error": None})
    for row in settings["file_settings"]:
        if row["name"] == "shared_buffers" and row["sourcefile"].endswith("data/postgresql.conf"):
            row["applied"] = False
    (path / "pg_settings.json").write_text(json.dumps(settings))
    result = host_result(path)
    assert result.target is not None
    assert "shared_buffers" not in {change.setting.name for change in result.target.declared_not_applied}
    # the server's reading still names what waits for a reload
    assert {change.setting.name: change.target for change in result.target.declared_not_applied} == {
        "work_mem": "32MB"}


def _snapshot_with_an_include_left_out(tmp_path: Path, name: str, running: str, text: str) -> Path:
    """PGV903's live server on 16 GB whose postgresql.conf ends with an include outside its configuration directory,
    not copied (collect.json says so), that sets ``name`` (``running`` in pg_settings' unit, ``text`` as written)."""
    path = tmp_path / "host"
    shutil.copytree(FIXTURES / "rules" / "PGV903-files-differ-from-running", path)
    (path / "meminfo.txt").write_text(meminfo(16384000, 0, committed_kb=2000000))
    (path / "sysctl.txt").write_text(sysctl())
    conf = path / "postgresql.conf"
    conf.write_text(conf.read_text() + "include_if_exists = '/etc/postgresql/extra.conf'\n")
    settings = json.loads((path / "pg_settings.json").read_text())
    for row in settings["settings"]:
        if row["name"] == name:
            row.update(setting=running, sourcefile="/etc/postgresql/extra.conf", sourceline=1)
    settings["file_settings"].append({"sourcefile": "/etc/postgresql/extra.conf", "sourceline": 1, "seqno": 99,
                                      "name": name, "setting": text, "applied": True, "error": None})
    (path / "pg_settings.json").write_text(json.dumps(settings))
    (path / "collect.json").write_text(json.dumps({
        "format": 1, "files": [{"name": "postgresql.conf", "server_file": "/var/lib/pgsql/15/data/postgresql.conf"}],
        "failed": [{"what": "/etc/postgresql/extra.conf", "error": "not copied: outside the server's configuration "
                                                                  "directory /var/lib/pgsql/15/data"}]}))
    return path


def test_a_fix_written_into_a_snapshot_whose_copy_left_an_include_out_is_not_proposed_again(tmp_path: Path) -> None:
    # An include outside the configuration directory was not copied: the pending values came from the server's
    # reading of its files alone, so what `pgvet fix --write` wrote into the copies was not seen and a second fix
    # proposed it again ("753MB → 753MB"). The copies now win for what the server read from a copied file; the
    # include's own value (shared_buffers, which the copy's earlier 128MB line would undo) stays the server's.
    path = _snapshot_with_an_include_left_out(tmp_path, "shared_buffers", "393216", "3GB")
    first = changes(host_result(path))
    assert [name for name in first if name in ("maintenance_work_mem", "effective_io_concurrency", "work_mem")]
    assert "shared_buffers" not in first
    assert CliRunner().invoke(app, ["fix", str(path), "--write"]).exit_code in (0, 1)
    again = host_result(path)
    assert again.target is not None
    assert not [change for change in again.target.changes if change.setting.kind == "postgresql"]
    declared = {change.setting.name: change.target for change in again.target.declared_not_applied}
    assert {name: declared.get(name) for name in first if not name.startswith(("vm.", "kernel."))} == {
        name: value for name, value in first.items() if not name.startswith(("vm.", "kernel."))}
    assert "shared_buffers" not in declared  # the include's 3GB, as the server runs it


def test_a_fix_written_after_an_include_left_out_of_the_copy_is_not_proposed_again(tmp_path: Path) -> None:
    # the include sets maintenance_work_mem (64MB): the fix's line, appended after it, is one the server never read
    path = _snapshot_with_an_include_left_out(tmp_path, "maintenance_work_mem", "65536", "64MB")
    first = changes(host_result(path))
    assert "maintenance_work_mem" in first
    assert CliRunner().invoke(app, ["fix", str(path), "--write"]).exit_code in (0, 1)
    assert (path / "postgresql.conf").read_text().index("maintenance_work_mem = '") > (
        path / "postgresql.conf").read_text().index("include_if_exists = '/etc/postgresql/extra.conf'")
    again = host_result(path)
    assert again.target is not None
    assert not [change for change in again.target.changes if change.setting.kind == "postgresql"]
    declared = {change.setting.name: change.target for change in again.target.declared_not_applied}
    assert declared["maintenance_work_mem"] == first["maintenance_work_mem"]


def test_a_parameter_an_include_left_out_of_the_copy_overrides_is_not_written_into_the_copy(tmp_path: Path) -> None:
    # postgresql.conf:140 sets maintenance_work_mem, the include left out after it too: the fix rewrote line 140,
    # which the include overrides on the server, and a second fix asked again ("500MB → 500MB")
    path = _snapshot_with_an_include_left_out(tmp_path, "maintenance_work_mem", "65536", "64MB")
    conf = path / "postgresql.conf"
    conf.write_text(conf.read_text().replace("\n#maintenance_work_mem = 64MB", "\nmaintenance_work_mem = 64MB", 1))
    settings = json.loads((path / "pg_settings.json").read_text())
    line = conf.read_text().splitlines().index("maintenance_work_mem = 64MB\t\t# min 1MB") + 1
    settings["file_settings"].insert(0, {"sourcefile": "/var/lib/pgsql/15/data/postgresql.conf", "sourceline": line,
                                         "seqno": 50, "name": "maintenance_work_mem", "setting": "64MB",
                                         "applied": False, "error": None})
    (path / "pg_settings.json").write_text(json.dumps(settings))
    result = host_result(path)
    assert "maintenance_work_mem" not in changes(result)
    assert result.target is not None
    [step] = [step for step in result.target.by_hand if step.setting is not None
              and step.setting.name == "maintenance_work_mem"]
    assert "the server takes it from /etc/postgresql/extra.conf:1, a file the snapshot does not hold" in step.text
    assert CliRunner().invoke(app, ["fix", str(path), "--write"]).exit_code == 1
    assert "\nmaintenance_work_mem = 64MB" in conf.read_text()


def test_pending_values_of_a_removed_line_and_of_a_value_altered_for_pgvets_role(tmp_path: Path) -> None:
    path = _live_host_with_a_pending_restart(tmp_path)
    settings = json.loads((path / "pg_settings.json").read_text())
    for row in settings["settings"]:
        if row["name"] == "work_mem":  # ALTER ROLE pgvet SET work_mem: its session's, not the server's
            row.update(setting="2097152", source="user", sourcefile=None, sourceline=None)
        if row["name"] == "effective_cache_size":  # from a line the files no longer have
            row.update(setting="1048576", source="configuration file")
    settings["file_settings"] = [row for row in settings["file_settings"] if row["name"] != "effective_cache_size"]
    (path / "pg_settings.json").write_text(json.dumps(settings))
    conf = path / "postgresql.conf"
    conf.write_text(conf.read_text().replace("\nwork_mem = 32MB", "\nwork_mem = 64MB", 1))  # as a fix --write would
    result = host_result(path)
    assert result.target is not None
    declared = {change.setting.name: (change.current, change.target) for change in result.target.declared_not_applied}
    assert declared["work_mem"] == ("32MB", "64MB")  # the server-wide value the files gave, then the copies'
    assert declared["effective_cache_size"] == ("8GB", "4GB")  # the default once restarted


def test_a_fix_written_into_a_live_snapshot_is_declared_not_applied_not_changed_again(tmp_path: Path) -> None:
    # `pgvet fix --write` on a collected snapshot rewrites its copies of the files; the server still runs the old
    # values (pg_settings.json). Linted again, the PostgreSQL changes were listed again as "0.9 → 0.9".
    path = _live_host_with_a_pending_restart(tmp_path)
    first = changes(host_result(path))
    assert any(setting == "maintenance_work_mem" for setting in first)
    assert CliRunner().invoke(app, ["fix", str(path), "--write"]).exit_code in (0, 1)
    again = host_result(path)
    assert again.target is not None
    assert not [change for change in again.target.changes if change.setting.kind == "postgresql"]
    declared = {change.setting.name: change.target for change in again.target.declared_not_applied
                if change.setting.kind == "postgresql"}
    assert declared["maintenance_work_mem"] == first["maintenance_work_mem"]


def test_a_host_whose_pool_is_already_too_small_gets_a_target(tmp_path: Path) -> None:
    # big-server with work_mem = 4MB and 100 connections: pgtune's work_mem (294 MiB) made PGV531 fire, work_mem was
    # pinned, then each invariant blamed the setting decided last — vm.overcommit_ratio, vm.nr_hugepages,
    # shared_buffers, then log_lock_waits, jit… for a pool too small on the host as it is — until pgvet gave up
    path = tmp_path / "db"
    shutil.copytree(FIXTURES / "big-server", path)
    with (path / "postgresql.conf").open("a") as conf:
        conf.write("\nwork_mem = 4MB\nmax_connections = 100\n")
    result = host_result(path)
    assert result.target is not None
    assert not any("no safe target" in step.text for step in result.target.by_hand)
    target = changes(result)
    assert {"shared_buffers", "vm.nr_hugepages", "work_mem"} <= target.keys()
    fix_host(path, LintOptions(), write_files=True)
    kernelsim.apply_and_reboot(path)
    after = host_result(path)
    assert {"PGV110", "PGV541", "PGV501", "PGV532"}.isdisjoint(finding.rule_id for finding in after.findings)
    assert changes(after) == {}


def test_an_info_that_asks_for_a_pinned_setting_pins_nothing_else(tmp_path: Path) -> None:
    # work_mem = 4MB by ALTER SYSTEM (pinned: the fix cannot write it): once the target lowers shared_buffers, PGV532
    # (info) finds room for a larger work_mem and asks for it. It was blamed on the setting decided last, which was
    # pinned, and so on until the target kept 138 GB of shared_buffers on 188 GB of RAM
    path = tmp_path / "db"
    shutil.copytree(FIXTURES / "big-server", path)
    with (path / "postgresql.conf").open("a") as conf:
        conf.write("\nmax_connections = 100\n")
    (path / "postgresql.auto.conf").write_text("work_mem = '4MB'\n")
    result = host_result(path)
    assert result.target is not None
    assert [step.setting.name for step in result.target.by_hand if step.setting is not None] == ["work_mem"]
    assert {"shared_buffers", "vm.nr_hugepages"} <= changes(result).keys()


def test_a_suppressed_findings_fix_is_a_part_of_the_target(tmp_path: Path) -> None:
    # PGV120 suppressed: its own fix, computed on the host as it is (138 GB of shared_buffers), said
    # vm.nr_hugepages = 73638 while the target, which lowers shared_buffers, sets 25200 for PGV113
    host = tmp_path / "big-server"
    shutil.copytree(FIXTURES / "big-server", host)
    (host / ".pgvet-ignore.yaml").write_text("- {host: '*', rule: PGV120, reason: measured}\n"
                                             "- {host: '*', rule: PGV137, reason: a one-node VM}\n")
    run = CliRunner().invoke(app, ["lint", str(host), "--format=json"])
    report = json.loads(run.stdout)
    target = {change["setting"]: change["target"] for change in report["hosts"][0]["target"]["changes"]}
    assert "vm.zone_reclaim_mode" not in target
    fixes = {finding["rule_id"]: finding["fix"] for finding in report["findings"] if finding["suppressed"]}
    assert fixes["PGV120"]["sysctl"] == {"vm.nr_hugepages": target["vm.nr_hugepages"]}
    # what the target leaves as it is, a suppressed finding's fix does not propose: it says so
    assert fixes["PGV137"]["sysctl"] == {}
    assert "Suppressed: the target leaves vm.zone_reclaim_mode as it is." in fixes["PGV137"]["text"]
    for finding in report["findings"]:
        for name, value in {**finding["fix"]["sysctl"], **finding["fix"]["postgresql"]}.items():
            assert target.get(name) == value, (finding["rule_id"], name, value)
    text = CliRunner().invoke(app, ["lint", str(host), "--no-color"]).stdout
    assert "PGV120 page-tables-estimate-high (suppressed: measured)" in text
    assert "73638" not in text and "vm.zone_reclaim_mode = 0" not in text


def test_declared_values_that_would_starve_the_host_are_not_to_be_applied(tmp_path: Path) -> None:
    # strict overcommit, vm.overcommit_ratio = 90, and a sysctl.d file whose vm.overcommit_kbytes = 0, last, zeroes
    # it: at the next `sysctl --system` or reboot CommitLimit falls to the swap, none, against 49 GB committed. No
    # ratio of a rule's can be written (the one that leaves the cache 20 % of RAM is below what is committed), and
    # commit-limit-mismatch (PGV102) said to apply the declared values. The fix, applied with `sysctl --system`,
    # writes the running ratio back (the kbytes line commented out), and does not count on the ratio's 0
    mem_kb, pages = 64 * GB_KB, 2455
    limit_kb = ((mem_kb - pages * 2048) // 4 * 90 // 100) * 4
    path = write_host(tmp_path, {
        "meminfo.txt": meminfo(mem_kb, 0, committed_kb=limit_kb * 93 // 100, pages=pages, ratio=90),
        "sysctl.txt": sysctl(vm__overcommit_memory=2, vm__overcommit_ratio=90, vm__nr_hugepages=pages),
        "sysctl.d/50-db.conf": f"vm.overcommit_ratio = 90\nvm.overcommit_memory = 2\nvm.nr_hugepages = {pages}\n"
                               "vm.overcommit_kbytes = 0\n",
        "postgresql.conf": "shared_buffers = 4GB\nhuge_pages = try\n",
        "host.yaml": "pg_version: 17\n",
    })
    result = host_result(path)
    assert changes(result)["vm.overcommit_ratio"] == "90"
    text = finding_of(result, "PGV102").fix.text or ""
    assert text.startswith("Do not apply the declared values as they are"), text
    assert "(90 → 0)" not in text


def test_shared_memory_that_grows_is_blamed_on_what_makes_it_larger(tmp_path: Path) -> None:
    # 512 GB in strict overcommit, 82 % of CommitLimit committed, shared_buffers 26 GB and a pool that holds it, but
    # huge_pages = off. The target raised shared_buffers past the pool, so PostgreSQL would commit 100 GB more at its
    # restart; that was blamed on huge_pages (decided after shared_buffers), which was kept off, and the 26 GB stayed
    # outside the pool that was reserved for them
    mem_kb, pages = 512 * GB_KB, 13962
    limit_kb = ((mem_kb - pages * 2048) // 4 * 100 // 100) * 4
    path = write_host(tmp_path, {
        "meminfo.txt": meminfo(mem_kb, 0, committed_kb=limit_kb * 82 // 100, pages=pages, ratio=100),
        "sysctl.txt": sysctl(vm__overcommit_memory=2, vm__overcommit_ratio=100, vm__nr_hugepages=pages),
        "postgresql.conf": "shared_buffers = 26214MB\nhuge_pages = off\nmax_wal_size = 16GB\n"
                           "effective_cache_size = 384GB\n",
        "host.yaml": "pg_version: 17\n",
    })
    result = host_result(path)
    assert result.target is not None
    assert changes(result).get("huge_pages") == "on"
    pinned = {step.setting.name: step.text for step in result.target.by_hand if step.setting is not None}
    assert "huge_pages" not in pinned and "shared_buffers" in pinned
    assert "could not map anonymous shared memory" in pinned["shared_buffers"]


def test_a_pool_the_reboot_would_drop_is_reserved_again(tmp_path: Path) -> None:
    # 5 000 pages running for huge_pages = on, and sysctl.conf, applied last, says vm.nr_hugepages = 0: the reboot that
    # applies the fix drops the pool and PostgreSQL does not start. The target's pool was predicted as the booted
    # host's (none: the prediction was not made again for a setting the reboot had already changed), PGV114 fired
    # on it and the pool was pinned
    path = write_host(tmp_path, {
        "meminfo.txt": meminfo(32 * GB_KB, 2 * GB_KB, committed_kb=16 * GB_KB, pages=5000),
        "sysctl.txt": sysctl(vm__nr_hugepages=5000),
        "sysctl.conf": "vm.nr_hugepages = 0\n",
        "postgresql.conf": "shared_buffers = 8GB\nhuge_pages = on\n",
        "host.yaml": "pg_version: 17\n",
    })
    result = host_result(path)
    assert result.target is not None
    assert not [step.text for step in result.target.by_hand if step.setting is not None]
    assert int(changes(result)["vm.nr_hugepages"]) > 4000
    fix_host(path, LintOptions(), write_files=True)
    kernelsim.apply_and_reboot(path)
    assert "PGV110" not in {finding.rule_id for finding in host_result(path).findings}
def _edit(path: Path, values: dict[str, object], separator: str) -> None:
    text = path.read_text()
    for name, value in values.items():
        text, count = re.subn(rf"(?m)^{re.escape(name)}{separator}.*$", f"{name}{separator}{value}", text)
        assert count == 1, name
    path.write_text(text)


def test_the_target_is_worked_out_on_the_host_as_its_files_boot_it(tmp_path: Path) -> None:
    # small-vm on 32 GB in strict overcommit, vm.overcommit_ratio = 60 set at run time, and a sysctl.d file that
    # writes vm.overcommit_kbytes = 0: writing it zeroes the ratio (mm/util.c), so the reboot that applies the fix
    # left CommitLimit at the swap alone, 4 GB against 16 GB committed. The target was worked out with the running
    # ratio (what PGV105 asks for: nothing to change) and left it out; after the fix PGV104 and PGV105 asked for
    # it, so a second fix changed something
    path = tmp_path / "db"
    shutil.copytree(FIXTURES / "small-vm", path)
    _edit(path / "sysctl.txt", {"vm.nr_hugepages": 2770, "vm.overcommit_memory": 2, "vm.overcommit_ratio": 60}, " = ")
    _edit(path / "meminfo.txt", {"MemTotal": "        33432543 kB", "SwapTotal": "       4194304 kB",
                                 "SwapFree": "       4194304 kB", "CommitLimit": "     20850052 kB",
                                 "Committed_AS": "    16680041 kB", "HugePages_Total": "       2770",
                                 "HugePages_Free": "       2770", "Hugetlb": "               5672960 kB"}, ":")
    (path / "sysctl.d").mkdir()
    (path / "sysctl.d" / "10-tuning.conf").write_text("vm.overcommit_kbytes = 0\n")
    with (path / "postgresql.conf").open("a") as conf:
        conf.write("shared_buffers = '1632MB'\nwork_mem = '32MB'\neffective_cache_size = '24GB'\n")
    with (path / "postgresql.auto.conf").open("a") as auto_conf:
        auto_conf.write("max_connections = '50'\nhuge_pages = 'try'\n")
    with (path / "host.yaml").open("a") as host_yaml:
        host_yaml.write("pg_instances: 3\n")
    assert "vm.overcommit_ratio" in changes(host_result(path))
    fix_host(path, LintOptions(), write_files=True)
    kernelsim.apply_and_reboot(path)
    after = kernelsim.read_meminfo(path / "meminfo.txt")
    assert after["CommitLimit"] >= 1.1 * after["Committed_AS"]
    assert "vm.overcommit_ratio" not in changes(host_result(path))


def test_effective_cache_size_has_one_target_when_shared_buffers_exceeds_the_ram(tmp_path: Path) -> None:
    # a container of 16 GB on 64 GB, shared_buffers = 24GB by ALTER SYSTEM (kept: the fix cannot write it) and
    # effective_cache_size = 4GB: effective-cache-size-below-shared-buffers (PGV534) asked for shared_buffers, 24 GB,
    # then effective-cache-size-above-ram (PGV533) for the RAM, 16 GB, in turn, until the target gave up on
    # effective_cache_size ("pgvet's rules do not agree on a value")
    path = write_host(tmp_path, {
        "meminfo.txt": meminfo(64 * GB_KB, 0, committed_kb=8 * GB_KB),
        "sysctl.txt": sysctl(),
        "sysfs.txt": f"/sys/fs/cgroup/memory.max:{16 * GB_KB * 1024}\n",
        "postgresql.conf": "effective_cache_size = 4GB\nhuge_pages = off\n",
        "postgresql.auto.conf": "shared_buffers = '24GB'\n",
        "host.yaml": "pg_version: 17\n",
    })
    result = host_result(path)
    assert result.target is not None
    pinned = [step.setting.name for step in result.target.by_hand if step.setting is not None]
    assert "effective_cache_size" not in pinned
    assert changes(result)["effective_cache_size"] == "16384MB"


def test_a_host_that_runs_well_but_would_boot_into_trouble_gets_a_target(tmp_path: Path) -> None:
    # the running host's background threshold is 10 %; its sysctl.d writes 64 MB of background bytes, then a ratio
    # of 50 % that zeroes them: at the next boot background writeback waits for half of the page cache
    path = small_vm_with_sysctl_d(tmp_path, "vm.dirty_background_bytes = 67108864\nvm.dirty_background_ratio = 50\n")
    before = host_result(path)
    # a warning the files bring is said before the reboot, with the target's fix
    finding = finding_of(before, "PGV136")
    assert finding.message.startswith("After applying the kernel values the host's files already declare")
    assert finding.fix.sysctl["vm.dirty_background_bytes"] == changes(before)["vm.dirty_background_bytes"]
    fix_host(path, LintOptions(), write_files=True)
    kernelsim.apply_and_reboot(path)
    result = host_result(path)
    assert "PGV136" not in {finding.rule_id for finding in result.findings}
    assert not changes(result)


def test_a_running_value_the_files_already_mend_is_not_written_again(tmp_path: Path) -> None:
    # running vm.dirty_ratio = 20 (dirty-ratios-too-high); the files write bytes that replace both ratios at the
    # next boot
    path = small_vm_with_sysctl_d(tmp_path, "vm.dirty_background_bytes = 67108864\nvm.dirty_bytes = 268435456\n")
    result = host_result(path)
    finding = finding_of(result, "PGV135")
    assert not finding.fix.sysctl
    assert (finding.fix.text or "").startswith(
        "Resolved by applying the kernel values the host's files already declare (`sysctl --system` or a reboot): "
        "vm.dirty_background_bytes (0 → 67108864)")
    assert not {name for name in changes(result) if name.startswith("vm.dirty")}


def test_declared_values_not_running_yet_are_shown_with_the_target(tmp_path: Path) -> None:
    path = small_vm_with_sysctl_d(tmp_path, "vm.dirty_ratio = 30\nvm.dirty_bytes = 536870912\n")
    text = CliRunner().invoke(app, ["fix", str(path), "--select", "PGV135,PGV901"]).stdout
    assert "# declared in the host's sysctl files and not running yet" in text
    assert "#   vm.dirty_bytes  0 → 536870912\n#   vm.dirty_ratio  20 → 0\n" in text
    assert "# nothing to change in the files" in text
    report = json.loads(CliRunner().invoke(app, ["lint", str(path), "--format", "json"]).stdout)
    assert {"kind": "sysctl", "setting": "vm.dirty_bytes", "running": "0", "declared": "536870912"} in (
        report["hosts"][0]["target"]["declared_not_applied"])
@pytest.mark.parametrize(("storage", "seq", "random", "wanted"), [
    ("ssd", "1", "0.5", {"random_page_cost": "1.1"}),
    # seq_page_cost goes to 1 first (PGV706): random_page_cost 1 is then not below it, and spinning disks want 4
    ("hdd", "2", "1", {"seq_page_cost": "1", "random_page_cost": "4"}),
    ("ssd", "2", "1.5", {"seq_page_cost": "1"}),  # then 1.5 is neither below it nor 2 or more
    ("nvme", "0.5", "0.25", {"seq_page_cost": "1", "random_page_cost": "1.1"}),
    # seq_page_cost kept at 2 or 3 (seq-page-cost-changed ignored): random_page_cost equal to it, which
    # random-page-cost-high-on-ssd (PGV701, 1.1) accepts there; the two alternated (2, 1.1, 2…) and gave up
    ("ssd", "2", "1.5", {"random_page_cost": "2"}),
    ("ssd", "3", "2.5", {"random_page_cost": "3"}),
])
def test_random_page_cost_below_seq_page_cost_gets_one_target_with_the_other_cost_rules(
        tmp_path: Path, storage: str, seq: str, random: str, wanted: dict[str, str]) -> None:
    path = write_host(tmp_path, {"postgresql.conf": f"seq_page_cost = {seq}\nrandom_page_cost = {random}\n",
                                 "host.yaml": f"pg_version: 16\nstorage: {storage}\n"})
    result = host_result(path, ignore=["PGV706"] if "seq_page_cost" not in wanted else None)
    target = changes(result)
    assert {name: target[name] for name in ("seq_page_cost", "random_page_cost") if name in target} == wanted
    assert result.target is not None and not [step for step in result.target.by_hand if "page_cost" in str(step)]
    assert float(seq) <= float(random) or any(finding.rule_id == "PGV710" for finding in result.findings)


@pytest.mark.parametrize("background", [{"vm__dirty_background_ratio": 10}, {"vm__dirty_background_bytes": 67108864}])
def test_dirty_bytes_beyond_a_tenth_of_the_page_cache_get_one_target_that_holds(
        tmp_path: Path, background: dict[str, int]) -> None:
    # vm.dirty_bytes = 2 GB on 4 GB of RAM: PGV135 judges ratios only, PGV136 the background threshold only, and the
    # host got nothing. The foreground bytes rule's fix, with PGV134's (a background ratio of 10 % is then not
    # below it), leaves no dirty page rule firing once applied
    path = write_host(tmp_path, {
        "meminfo.txt": meminfo(4 * GB_KB, 0),
        "sysctl.txt": sysctl(vm__dirty_bytes=2 * GB_KB * 1024, vm__dirty_ratio=0, **background),
        "host.yaml": "pg_version: 17\n",
    })
    result = host_result(path)
    assert "PGV145" in {finding.rule_id for finding in result.findings}
    target = changes(result)
    assert int(target["vm.dirty_bytes"]) <= 0.1 * 4 * GB_KB * 1024
    assert result.target is not None and not [step for step in result.target.by_hand if "dirty" in str(step)]
    fix_host(path, LintOptions(), write_files=True)
    kernelsim.apply_and_reboot(path)
    after = {finding.rule_id for finding in host_result(path).findings}
    assert not after & {"PGV134", "PGV135", "PGV136", "PGV145"}, after


def test_a_pin_reason_tells_apart_the_sizes_it_compares(tmp_path: Path) -> None:
    # the pool shared_buffers = 14120MB needs would leave the OS 1.57 GB of 16 GB, below the 1.6 GB kept for it:
    # the reason said "leave the OS 1.6 GiB of 16.0 GiB (at least 1.6 GiB is kept for it)"
    path = write_host(tmp_path, {
        "meminfo.txt": meminfo(16 * GB_KB, 2 * GB_KB, pages=1000),
        "sysctl.txt": sysctl(vm__nr_hugepages=1000),
        "postgresql.conf": "shared_buffers = 14120MB\nhuge_pages = on\n",
        "host.yaml": "pg_version: 17\n",
    })
    result = host_result(path, ["PGV11"])
    assert result.target is not None
    [reason] = [step.text for step in result.target.by_hand if "would leave the OS" in step.text]
    assert "would leave the OS 1.57 GiB of 16.0 GiB (at least 1.60 GiB is kept for it)" in reason


def test_a_foreground_ratio_beside_background_bytes_is_judged_and_fixed_once(tmp_path: Path) -> None:
    # small-vm runs both thresholds as ratios (20 % and 10 %: dirty-ratios-too-high); its sysctl.d sets the
    # background in bytes only, so at boot vm.dirty_ratio = 20 stands beside 64 MB of background bytes, which
    # PGV135 does not judge: the target said it resolved PGV135 and left the 20 %
    path = small_vm_with_sysctl_d(tmp_path, "vm.dirty_background_bytes = 67108864\n")
    result = host_result(path)
    assert changes(result)["vm.dirty_ratio"] == "10"
    assert "vm.dirty_background_ratio" not in changes(result)
    fix_host(path, LintOptions(), write_files=True)
    kernelsim.apply_and_reboot(path)
    result = host_result(path)
    fired = {finding.rule_id for finding in result.findings}
    assert not fired & {"PGV134", "PGV135", "PGV136", "PGV145", "PGV146"}
    assert not {name for name in changes(result) if name.startswith("vm.dirty")}


def test_a_step_by_hand_gives_the_text_its_findings_fix_gives() -> None:
    # the steps by hand were taken from the fixes as rendered on the host as it is, the findings' fixes from the
    # target: PGV101's step said the ratio leaves 20 % of RAM where its finding said none can be computed
    hosts = [FIXTURES / name for name in ("big-server", "small-vm", "config-repo")]
    hosts += sorted(path for path in (FIXTURES / "rules").iterdir() if path.is_dir())
    for host in lint(hosts, LintOptions()).hosts:
        assert host.target is not None
        for step in host.target.by_hand:
            if step.setting is not None or not step.rules:
                continue
            ids = {label.split(" ", 1)[0] for label in step.rules}
            texts = [" ".join((finding.fix.text or "").split()) for finding in host.findings if finding.rule_id in ids]
            assert any(text.startswith(step.text) for text in texts), (host.host_facts.name, step.text, texts)
            assert len(step.rules) == len(set(step.rules))


def test_the_diff_shows_the_other_key_of_a_pair_the_kernel_zeroes() -> None:
    # writing vm.dirty_bytes zeroes vm.dirty_ratio: the diff showed the bytes 0 → 512 MB and not the ratio going
    consolidated, _ = fix_host(FIXTURES / "rules" / "PGV136-dirty-background-too-large", LintOptions())
    assert consolidated.zeroed == {"vm.dirty_background_ratio": ("5", "vm.dirty_background_bytes"),
                                   "vm.dirty_ratio": ("10", "vm.dirty_bytes")}
    assert re.search(r"^#   vm\.dirty_ratio +10 → 0 +the kernel zeroes it when vm\.dirty_bytes is written",
                     render(consolidated), re.MULTILINE)


def test_a_size_the_server_chose_itself_is_sized_again_for_the_target(tmp_path: Path) -> None:
    # wal_buffers = -1 is shared_buffers / 32 (at most 16 MB): pg_settings shows the 4MB chosen for the running 128MB.
    # Taken as a size, it stayed 4MB in the target's world of 4GB, and the pool was 6 pages short of what the server
    # restarted with 4GB asks for (a second fix raised it; a1: 609 then 618 pages on a real 16 raised to 1024MB).
    path = _live_host_with_a_pending_restart(tmp_path)
    conf = path / "postgresql.conf"
    conf.write_text(conf.read_text() + "huge_pages = on\n")
    pool = changes(host_result(path))["vm.nr_hugepages"]
    settings = json.loads((path / "pg_settings.json").read_text())
    for row in settings["settings"]:  # restarted with the files' values: the server chose 16MB
        if row["name"] == "shared_buffers":
            row.update(setting="524288", pending_restart=False)
        if row["name"] == "wal_buffers":
            assert (row["setting"], row["source"]) == ("512", "default")
            row["setting"] = "2048"
        if row["name"] == "huge_pages":
            row.update(setting="on", source="configuration file")
    settings["settings"] = [row for row in settings["settings"] if not row["name"].startswith("shared_memory_size")]
    settings["file_settings"] = [row for row in settings["file_settings"] if row["name"] != "shared_buffers"]
    (path / "pg_settings.json").write_text(json.dumps(settings))
    assert changes(host_result(path))["vm.nr_hugepages"] == pool


def test_a_restart_the_target_cannot_make_safe_is_not_advised(tmp_path: Path) -> None:
    # ALTER SYSTEM SET shared_buffers = '40GB' on 16 GB of RAM, not restarted: PGV541 says the server would not
    # start, the target cannot lower a value ALTER SYSTEM sets, and PGV955 still said "Restart PostgreSQL when
    # convenient" (a1: on a real 12, the restart stopped the server)
    path = _live_host_with_a_pending_restart(tmp_path)
    conf = path / "postgresql.conf"
    conf.write_text(conf.read_text().replace("\nshared_buffers = 4GB", "\nshared_buffers = 128MB", 1))
    (path / "postgresql.auto.conf").write_text("shared_buffers = '40GB'\n")
    settings = json.loads((path / "pg_settings.json").read_text())
    for row in settings["file_settings"]:
        if row["name"] == "shared_buffers":
            row.update(sourcefile="/var/lib/pgsql/15/data/postgresql.auto.conf", sourceline=1, setting="40GB")
    (path / "pg_settings.json").write_text(json.dumps(settings))
    result = host_result(path)
    assert "PGV541" in {finding.rule_id for finding in result.findings}
    text = finding_of(result, "PGV955").fix.text or ""
    assert "Not before PGV541 is mended: with shared_buffers = 40GB, PostgreSQL's shared memory is more than the " \
        "kernel lets it map (the server does not start) (PGV541)." in text
    by_hand = CliRunner().invoke(app, ["fix", str(path)]).stdout
    assert "PGV955 restart-pending: Restart PostgreSQL when convenient (pg_ctl restart, systemctl restart), or " \
        "revert the line. Not before PGV541 is mended" in by_hand
    assert "# order: PostgreSQL restarted — not before PGV541 is mended (steps by hand): restarted with what its " \
        "files set now, it does not start" in by_hand


def test_a_finding_that_cannot_be_judged_on_the_target_is_not_resolved(tmp_path: Path) -> None:
    # ACME2's derived value divides by zero (NULL) once ACME1's target sets shared_buffers = 1GB: not evaluated
    # there, it made no finding, and its fix said "The target resolves this with shared_buffers (4GB → 1GB)"
    pack = write_host(tmp_path / "pack", {"acme.yaml": """
derived:
  - name: acme_headroom
    unit: bytes
    description: NULL (a division by zero) at exactly 1 GB of shared_buffers.
    formula: 1073741824 / (pg.shared_buffers - 1073741824)
rules:
  - id: ACME1
    name: smaller-buffers
    title: Smaller shared_buffers
    severity: warning
    when: pg.shared_buffers > 2147483648
    message: "shared_buffers = {pg.shared_buffers}"
    fix:
      postgresql: {shared_buffers: "1GB"}
    why: a house rule
    references: [house rules]
    examples:
      - facts: {pg.shared_buffers: 4294967296}
        expect: fire
      - facts: {pg.shared_buffers: 1073741824}
        expect: pass
  - id: ACME2
    name: headroom
    title: Little headroom
    severity: warning
    when: derived.acme_headroom < 1
    message: "headroom {derived.acme_headroom}"
    why: a house rule
    references: [house rules]
    examples:
      - facts: {pg.shared_buffers: 4294967296}
        expect: fire
      - facts: {pg.shared_buffers: 1610612736}
        expect: pass
"""})
    path = write_host(tmp_path / "host", {"postgresql.conf": "shared_buffers = 4GB\n",
                                          "host.yaml": "pg_version: 17\n"})
    result = lint([path], LintOptions(rules=[pack], select=["ACME1", "ACME2"])).hosts[0]
    assert changes(result) == {"shared_buffers": "1GB"}
    assert result.target is not None
    assert ("ACME2", None) in result.target.firing
    assert result.target.unjudged == {("ACME2", None): "derived.acme_headroom < 1 is NULL"}
    text = finding_of(result, "ACME2").fix.text or ""
    assert "resolve" not in text.lower()
    assert text.startswith("pgvet cannot judge this on the host as the target makes it, which changes "
                           "shared_buffers (4GB → 1GB)")
