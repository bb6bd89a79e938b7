"""The fix is one target, and a fixpoint: lint → `fix --write` → the kernel applies the files and the host reboots
(kernelsim), PostgreSQL starting again on its files → lint again: no finding with a fix is left, nothing new
appears, and a second fix changes nothing.

On every bundled host (examples, rule fixtures, seed hosts) and on hosts drawn by hypothesis (hostgen).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

import kernelsim
from conftest import FIXTURES
from hostgen import Host, hosts
from pgvet.engine.derived import derived_values
from pgvet.engine.loader import load_pack
from pgvet.findings import HostResult
from pgvet.fix.writer import fix_host
from pgvet.inputs.postgresql_conf import load_conf
from pgvet.pgparams import load_param_table
from pgvet.pgparams.units import InvalidValue, parse_value
from pgvet.run.lint import lint
from pgvet.run.options import LintOptions
from pgvet.snapshot.load import load_host

BUNDLED = sorted([FIXTURES / "big-server", FIXTURES / "small-vm", FIXTURES / "well-tuned", FIXTURES / "config-repo",
                  *(path for path in (FIXTURES / "seeds").iterdir() if path.is_dir()),
                  *(path for path in (FIXTURES / "rules").iterdir() if path.is_dir())])


def _lint(host: Path) -> HostResult:
    result = lint([host], LintOptions())
    assert not result.errors, result.errors
    return result.hosts[0]


def _files(host: Path) -> dict[str, bytes]:
    return {str(path.relative_to(host)): path.read_bytes() for path in sorted(host.rglob("*"))
            if path.is_file() and not path.name.endswith(".bak")}


def _keys(result: HostResult) -> set[tuple[str, str | None]]:
    return {(finding.rule_id, finding.subject) for finding in result.findings}


def restart_commits(before: Path, after: Path) -> None:
    """Committed_AS of the fixed host once PostgreSQL is started again: its shared memory outside huge pages, every
    instance's, grown from what it was on the host as captured (``before``: a pool that held it and that the files
    remove moves it out, into Committed_AS; as pgvet estimates it, an estimate held to real servers in
    tests/plan/test_plan_postgres.py) — or shrunk, where a live server's snapshot says PostgreSQL ran when
    Committed_AS was measured (a snapshot of files may have been taken with it stopped)."""
    pack = load_pack()
    names = {"derived.shared_memory_outside_huge_pages", "derived.pg_instances"}

    def charged(host: Path) -> int:
        values = derived_values(pack, load_host(host), names)
        shmem, instances = values.get("derived.shared_memory_outside_huge_pages"), values.get("derived.pg_instances")
        if shmem is None or instances is None:
            return 0
        return int(str(shmem.value)) * int(str(instances.value))

    growth = charged(after) - charged(before)
    running = (before / "pg_settings.json").is_file()
    if (growth > 0 or (running and growth < 0)) and (after / "meminfo.txt").is_file():
        kernelsim.commit(after / "meminfo.txt", growth // 1024)


def restart_postgresql(host: Path) -> None:
    """A live server's snapshot (pg_settings.json) once the server has started again on its files, as the reboot
    starts it: a parameter the files set runs their value, one they set no longer its boot value (the command line's,
    a role's or a database's stays), nothing is pending, and pg_file_settings reads the files as they are now. Where
    max_wal_size changes, the checkpoint counters are reset, as requested-checkpoints' fix (PGV953) says to: counted
    under the old value, they say nothing of the new one."""
    path = host / "pg_settings.json"
    if not path.is_file():
        return
    snapshot = json.loads(path.read_text(encoding="utf-8"))
    manifest = host / "collect.json"
    server_file = {entry["name"]: entry["server_file"] for entry in
                   (json.loads(manifest.read_text(encoding="utf-8"))["files"] if manifest.is_file() else [])
                   if "server_file" in entry}
    auto = host / "postgresql.auto.conf"
    conf = load_conf(host / "postgresql.conf", root=host, auto_conf=auto if auto.is_file() else None,
                     display_base=host)
    table = load_param_table(min(18, max(12, snapshot["server"]["server_version_num"] // 10000)))
    effective, applied = conf.effective(), conf.applied()
    # what the server works out as it starts: its shared memory (15 and later) is pgvet's estimate once it restarts
    # on other values, and wal_buffers' automatic size follows shared_buffers (XLOGChooseNumBuffers)
    snapshot["settings"] = [row for row in snapshot["settings"]
                            if row["name"] not in ("shared_memory_size", "shared_memory_size_in_huge_pages")]
    max_wal_size = next((row["setting"] for row in snapshot["settings"] if row["name"] == "max_wal_size"), None)
    for row in snapshot["settings"]:
        setting, param = effective.get(row["name"]), table.get(row["name"])
        if row["source"] not in ("configuration file", "default") or param is None:
            continue
        if setting is None:
            if row["source"] == "configuration file":
                row.update(setting=row["boot_val"], source="default", sourcefile=None, sourceline=None)
        else:
            try:
                native = parse_value(param, setting.value).native
            except InvalidValue:
                continue
            shown = ("on" if native else "off") if isinstance(native, bool) else (
                f"{native:g}" if isinstance(native, float) else str(native))
            row.update(setting=shown, source="configuration file", sourceline=setting.source.line,
                       sourcefile=server_file.get(setting.source.path, setting.source.path))
        row.update(reset_val=row["setting"], pending_restart=False)
    rows = {row["name"]: row for row in snapshot["settings"]}
    if "max_wal_size" in rows and rows["max_wal_size"]["setting"] != max_wal_size:
        snapshot["statistics"].update(checkpoints_timed=0, checkpoints_requested=0)
    wal_buffers, shared_buffers, segment = (rows.get(name) for name in ("wal_buffers", "shared_buffers",
                                                                        "wal_segment_size"))
    if wal_buffers is not None and shared_buffers is not None and segment is not None and (
            "wal_buffers" not in effective or effective["wal_buffers"].value.strip() == "-1"):
        automatic = max(8, min(int(shared_buffers["setting"]) // 32, int(segment["setting"]) // 8192))
        wal_buffers.update(setting=str(automatic), reset_val=str(automatic))
    snapshot["file_settings"] = [
        {"sourcefile": server_file.get(setting.source.path, setting.source.path), "sourceline": setting.source.line,
         "seqno": seqno, "name": setting.name, "setting": setting.value, "applied": applied[setting.written] is setting,
         "error": None}
        for seqno, setting in enumerate(conf.settings, 1)]
    path.write_text(json.dumps(snapshot), encoding="utf-8")


def check_fixpoint(host: Path) -> None:
    """Fix the host, apply it as the kernel would, and hold it to the fixpoint's three promises. What fires on the
    host once rebooted without the fix (a pool the running kernel could not find all of, reserved whole at boot)
    is no finding of the fix's."""
    before = _lint(host)
    captured, rebooted = host.parent / f"{host.name}-captured", host.parent / f"{host.name}-rebooted"
    shutil.copytree(host, captured)
    shutil.copytree(host, rebooted)
    kernelsim.apply_and_reboot(rebooted)
    restart_postgresql(rebooted)
    known = _keys(before) | _keys(_lint(rebooted))
    _, outcome = fix_host(host, LintOptions(), write_files=True)
    assert outcome is not None
    # what could not be written (no postgresql.conf to add a line to, a value of postgresql.auto.conf) stays to do
    left = {entry.split(" ", 1)[0].rstrip(":") for entry in outcome.left}
    kernelsim.apply_and_reboot(host)
    restart_postgresql(host)
    restart_commits(captured, host)
    after = _lint(host)
    still = [(finding.rule_id, {**finding.fix.sysctl, **finding.fix.postgresql}) for finding in after.findings
             if set(finding.fix.sysctl) | set(finding.fix.postgresql) - left]
    assert not still, f"findings with a fix left after the fix: {still}"
    new = [(finding.rule_id, finding.subject, finding.message) for finding in after.findings
           if (finding.rule_id, finding.subject) not in known]
    assert not new, f"the fix made findings appear: {new}"
    written = _files(host)
    _, second = fix_host(host, LintOptions(), write_files=True)
    assert second is not None
    changed = [name for name, data in _files(host).items() if written.get(name) != data]
    assert not changed, f"a second fix changed {changed}"


@pytest.mark.parametrize("bundled", BUNDLED, ids=lambda path: path.name)
def test_the_fix_of_every_bundled_host_is_a_fixpoint(bundled: Path, tmp_path: Path) -> None:
    host = tmp_path / bundled.name
    shutil.copytree(bundled, host)
    check_fixpoint(host)


def test_a_ratio_written_over_running_bytes_zeroes_them_before_a_refused_bytes_line(tmp_path: Path) -> None:
    # found by the generated hosts: the host runs dirty bytes, its sysctl.d writes vm.dirty_ratio = 20 (a change,
    # which zeroes the bytes) then vm.dirty_bytes = 0 (refused); pgvet kept the running 512 MB bytes, so PGV146
    # (a ratio of 20 beside background bytes) fired only once the files were applied, after the fix
    host = tmp_path / "host"
    shutil.copytree(FIXTURES / "well-tuned", host)
    sysctl_txt = (host / "sysctl.txt").read_text()
    for key, value in {"vm.dirty_background_bytes": 67108864, "vm.dirty_background_ratio": 0,
                       "vm.dirty_bytes": 536870912, "vm.dirty_ratio": 0}.items():
        sysctl_txt = re.sub(rf"^{re.escape(key)} = .*$", f"{key} = {value}", sysctl_txt, flags=re.MULTILINE)
    (host / "sysctl.txt").write_text(sysctl_txt)
    (host / "sysctl.d").mkdir(exist_ok=True)
    (host / "sysctl.d" / "90-tuning.conf").write_text("vm.dirty_ratio = 20\nvm.dirty_bytes = 0\n")
    check_fixpoint(host)


def test_the_running_pool_is_written_back_where_the_running_commit_limit_beside_the_files_pool_leaves_too_little(
        tmp_path: Path) -> None:
    # found by the generated hosts: 4 GB, no swap, strict overcommit with 2.8 GB of overcommit_kbytes running; the
    # files zero them (overcommit_ratio = 0) and declare a 1.2 GB pool. Writing back the kbytes alone kept the pool:
    # CommitLimit and pool reached 100 % of RAM (PGV103), which neither the host nor its files had
    host = tmp_path / "host"
    host.mkdir()
    (host / "sysctl.d").mkdir()
    files = {
        "meminfo.txt": "MemTotal: 4194304 kB\nMemFree: 419430 kB\nMemAvailable: 2097152 kB\nCached: 1398101 kB\n"
                       "SwapTotal: 0 kB\nSwapFree: 0 kB\nCommitLimit: 2936012 kB\nCommitted_AS: 2348809 kB\n"
                       "HugePages_Total: 0\nHugePages_Free: 0\nHugePages_Rsvd: 0\nHugePages_Surp: 0\n"
                       "Hugepagesize: 2048 kB\nHugetlb: 0 kB\n",
        "sysctl.txt": "vm.nr_hugepages = 0\nvm.overcommit_kbytes = 2936012\nvm.overcommit_memory = 2\n"
                      "vm.overcommit_ratio = 0\nvm.swappiness = 1\n",
        "sysctl.d/90-tuning.conf": "vm.overcommit_ratio = 0\nvm.nr_hugepages = 614\n",
        "lscpu.txt": "Architecture: x86_64\nCPU(s): 1\n",
        "postgresql.conf": "max_connections = 20\nshared_buffers = 128MB\nhuge_pages = off\nwork_mem = 4MB\n",
        "host.yaml": "pg_version: 15\nworkload: oltp\nstorage: ssd\ndedicated: true\n",
    }
    for name, text in files.items():
        (host / name).write_text(text)
    [result] = lint([host], LintOptions()).hosts
    assert result.target is not None
    assert {change.setting.name: change.target for change in result.target.changes
            if change.setting.kind == "sysctl"} == {"vm.overcommit_kbytes": "2936012", "vm.nr_hugepages": "0"}
    check_fixpoint(host)


def _changes_then_fixpoint(tmp_path: Path, files: dict[str, str]) -> dict[str, str]:
    """The target's changes of a host made of ``files`` (by setting name), once the host is held to the fixpoint and
    to the invariants."""
    host, original = tmp_path / "host", tmp_path / "original"
    for root in (host, original):
        for name, text in files.items():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_text(text)
    [result] = lint([host], LintOptions()).hosts
    assert result.target is not None
    changes = {change.setting.name: change.target for change in result.target.changes}
    check_fixpoint(host)
    hold_invariants(original, host)
    return changes


def test_a_running_ratio_below_the_files_is_not_written_back_beside_their_pool(tmp_path: Path) -> None:
    # found by the generated hosts: 1 GB, no swap, strict overcommit with ratio 60 and no pool running; the files
    # declare ratio 80 and a 153-page pool, whose CommitLimit is below what is committed. Writing back the running
    # ratio (60) beside the files' pool lowered CommitLimit further (431 MB, against 574 MB with the files' 80)
    files = {
        "meminfo.txt": "MemTotal: 1048576 kB\nMemFree: 104857 kB\nMemAvailable: 524288 kB\nSwapTotal: 0 kB\n"
                       "SwapFree: 0 kB\nCommitLimit: 629144 kB\nCommitted_AS: 503315 kB\nHugePages_Total: 0\n"
                       "HugePages_Free: 0\nHugePages_Rsvd: 0\nHugePages_Surp: 0\nHugepagesize: 2048 kB\n"
                       "Hugetlb: 0 kB\n",
        "sysctl.txt": "vm.dirty_background_ratio = 5\nvm.dirty_ratio = 10\nvm.dirty_background_bytes = 0\n"
                      "vm.dirty_bytes = 0\nvm.nr_hugepages = 0\nvm.nr_overcommit_hugepages = 51\n"
                      "vm.overcommit_kbytes = 0\n"
                      "vm.overcommit_memory = 2\nvm.overcommit_ratio = 60\nvm.swappiness = 1\n",
        "sysctl.d/90-tuning.conf": "vm.overcommit_memory = 2\nvm.overcommit_ratio = 80\nvm.nr_hugepages = 153\n",
        "lscpu.txt": "Architecture: x86_64\nCPU(s): 2\n",
        "postgresql.conf": "max_connections = 20\nshared_buffers = 512MB\nhuge_pages = on\nwork_mem = 4MB\n",
        "host.yaml": "pg_version: 15\nworkload: oltp\nstorage: ssd\ndedicated: true\n",
    }
    assert "vm.overcommit_ratio" not in _changes_then_fixpoint(tmp_path, files)


def test_committed_memory_is_held_against_the_commit_limit_postgresql_leaves_once_it_takes_surplus_huge_pages(
        tmp_path: Path) -> None:
    # found by the generated hosts: 384 GB, two instances of 96 GB of shared_buffers with huge_pages = on and a
    # dynamic pool (vm.nr_overcommit_hugepages), ratio 60, 184 GB committed. Halving shared_buffers lets PostgreSQL
    # take 98 GB of surplus pages, which leave CommitLimit's base: 171 GB, below what is committed. Judged against
    # /proc/meminfo's CommitLimit (before PostgreSQL takes them) committed-as-near-commit-limit (PGV105) was silent,
    # so shared_buffers was kept — until the fix had raised the ratio to 80, when the next fix halved it (no fixpoint)
    files = {
        "meminfo.txt": "MemTotal: 402652803 kB\nMemFree: 40265280 kB\nMemAvailable: 201326401 kB\nSwapTotal: 0 kB\n"
                       "SwapFree: 0 kB\nCommitLimit: 241591680 kB\nCommitted_AS: 193273344 kB\nHugePages_Total: 0\n"
                       "HugePages_Free: 0\nHugePages_Rsvd: 0\nHugePages_Surp: 0\nHugepagesize: 2048 kB\n"
                       "Hugetlb: 0 kB\n",
        "sysctl.txt": "vm.dirty_background_ratio = 5\nvm.dirty_ratio = 10\nvm.dirty_background_bytes = 0\n"
                      "vm.dirty_bytes = 0\nvm.nr_hugepages = 0\nvm.nr_overcommit_hugepages = 58982\n"
                      "vm.overcommit_kbytes = 0\n"
                      "vm.overcommit_memory = 2\nvm.overcommit_ratio = 60\nvm.swappiness = 1\n",
        "lscpu.txt": "Architecture: x86_64\nCPU(s): 2\n",
        "postgresql.conf": "max_connections = 20\nshared_buffers = 98303MB\nhuge_pages = on\nwork_mem = 4MB\n",
        "host.yaml": "pg_version: 17\npg_instances: 2\nworkload: oltp\nstorage: ssd\ndedicated: true\n",
    }
    changes = _changes_then_fixpoint(tmp_path, files)
    assert changes["shared_buffers"] == "49151MB"
    assert int(changes["vm.overcommit_ratio"]) > 60


def test_a_pool_the_files_remove_leaves_postgresqls_shared_memory_committed_after_the_fix(tmp_path: Path) -> None:
    # found by the generated hosts: 4 GB, 2 GB of swap, strict overcommit with ratio 0 (CommitLimit: the swap),
    # 1.9 GB committed, PostgreSQL's 128 MB in a 102-page pool the files remove. The target keeps shared_buffers
    # (1024MB would leave CommitLimit below what is committed) and sets the ratio to 30. The harness counted
    # PostgreSQL's restart from the host rebooted without the fix, whose Committed_AS it leaves as captured, so the
    # shared memory the removed pool no longer holds was never committed, and the next lint found room for 1024MB
    files = {
        "meminfo.txt": "MemTotal: 4194304 kB\nMemFree: 419430 kB\nMemAvailable: 2097152 kB\nSwapTotal: 2097152 kB\n"
                       "SwapFree: 2097152 kB\nCommitLimit: 2097152 kB\nCommitted_AS: 1992294 kB\n"
                       "HugePages_Total: 102\nHugePages_Free: 102\nHugePages_Rsvd: 0\nHugePages_Surp: 0\n"
                       "Hugepagesize: 2048 kB\nHugetlb: 208896 kB\n",
        "sysctl.txt": "vm.dirty_background_ratio = 5\nvm.dirty_ratio = 10\nvm.dirty_background_bytes = 0\n"
                      "vm.dirty_bytes = 0\nvm.nr_hugepages = 102\nvm.nr_overcommit_hugepages = 0\n"
                      "vm.overcommit_kbytes = 0\nvm.overcommit_memory = 2\nvm.overcommit_ratio = 0\n"
                      "vm.swappiness = 1\n",
        "sysctl.d/90-tuning.conf": "vm.overcommit_memory = 2\nvm.nr_hugepages = 0\n",
        "lscpu.txt": "Architecture: x86_64\nCPU(s): 1\n",
        "postgresql.conf": "max_connections = 20\nshared_buffers = 128MB\nhuge_pages = try\nwork_mem = 4MB\n",
        "host.yaml": "pg_version: 15\nworkload: oltp\nstorage: ssd\ndedicated: true\n",
    }
    changes = _changes_then_fixpoint(tmp_path, files)
    assert "shared_buffers" not in changes and changes["vm.overcommit_ratio"] == "30"


def test_a_live_server_s_pending_shared_buffers_is_the_one_it_runs_after_the_fix_s_restart(tmp_path: Path) -> None:
    # a live server whose files set shared_buffers = 1GB and huge_pages = on, pending a restart: the fix reserves the
    # pool they need, and the reboot starts PostgreSQL on them. Linted with the server's values as they were before
    # (a harness that did not restart it), the pool looked reserved for nobody (PGV113).
    host = tmp_path / "host"
    shutil.copytree(FIXTURES / "rules" / "PGV903-files-differ-from-running", host)
    for name in ("sysctl.txt", "meminfo.txt", "lscpu.txt", "mounts.txt", "sysfs.txt"):
        shutil.copy(FIXTURES / "small-vm" / name, host / name)
    with (host / "postgresql.conf").open("a") as conf:
        conf.write("shared_buffers = 1GB\nhuge_pages = on\n")
    before = _lint(host)
    assert "PGV110" in {finding.rule_id for finding in before.findings}  # huge_pages = on without its pool
    check_fixpoint(host)


def hold_invariants(before: Path, after: Path) -> None:
    """What the target promises beyond the rules: computed on the host after the fix, as the kernel shows it, and
    held against the host rebooted without it."""
    running_pool = int(kernelsim.read_sysctl_txt(before / "sysctl.txt").get("vm.nr_hugepages", "0"))
    kernelsim.apply_and_reboot(before)
    pack = load_pack()
    names = {"commit_limit", "commit_limit_floor", "hugetlb_pool", "kernel_mem_total", "os_memory_floor",
             "hugepages_available", "hugepages_needed", "dirtyable_memory_max", "dirty_bytes_effective"}
    old_host, new_host = load_host(before), load_host(after)
    old = {name: fact.value for name, fact in derived_values(pack, old_host, {f"derived.{n}" for n in names}).items()}
    new = {name: fact.value for name, fact in derived_values(pack, new_host, {f"derived.{n}" for n in names}).items()}
    facts = new_host.facts
    if facts["sysctl.vm.overcommit_memory"].value == 2 and new.get("derived.commit_limit_floor") is not None:
        old_limit = old["derived.commit_limit"] if old_host.facts["sysctl.vm.overcommit_memory"].value == 2 else None
        assert (new["derived.commit_limit"] >= new["derived.commit_limit_floor"]
                or (old_limit is not None and new["derived.commit_limit"] >= old_limit)), "CommitLimit starves the host"
    if new["derived.hugetlb_pool"] > old["derived.hugetlb_pool"]:
        assert new["derived.kernel_mem_total"] - new["derived.hugetlb_pool"] >= new["derived.os_memory_floor"]
    if facts.get("pg.huge_pages") is not None and facts["pg.huge_pages"].value == "on" and (
            old_host.facts["pg.huge_pages"].value != "on" or old.get("derived.hugepages_available", 0)
            >= old.get("derived.hugepages_needed", 0)):
        assert new["derived.hugepages_available"] >= new["derived.hugepages_needed"], "PostgreSQL would not start"
    for name in ("max_connections", "max_worker_processes", "max_wal_senders", "max_prepared_transactions",
                 "max_locks_per_transaction"):
        assert facts[f"pg.{name}"].value >= old_host.facts[f"pg.{name}"].value, f"{name} lowered"
    assert new["derived.dirty_bytes_effective"] <= max(0.1 * new["derived.dirtyable_memory_max"],
                                                       old["derived.dirty_bytes_effective"]) + 4096
    if facts["sysctl.vm.nr_hugepages"].value != old_host.facts["sysctl.vm.nr_hugepages"].value:
        # a pool the host runs is never removed; one its files declare and it does not run yet may be, where
        # applying it would starve the host
        assert facts["sysctl.vm.nr_hugepages"].value > 0 or not running_pool, "a fix removed a huge page pool"


@pytest.mark.slow
@settings(max_examples=int(os.environ.get("PGVET_FIXPOINT_EXAMPLES", "60")), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(hosts())
def test_the_fix_of_any_host_is_a_safe_fixpoint(generated: Host) -> None:
    with tempfile.TemporaryDirectory() as directory:
        host, original = Path(directory) / "host", Path(directory) / "original"
        for root in (host, original):
            root.mkdir()
            for name, text in generated.files.items():
                (root / name).parent.mkdir(exist_ok=True)
                (root / name).write_text(text)
        try:
            check_fixpoint(host)
            hold_invariants(original, host)
        except AssertionError as error:
            raise AssertionError(f"{error}\nhost: {generated.description}") from None
