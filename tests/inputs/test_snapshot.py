"""Snapshot assembly: the fixtures' facts, their sources, scoping, and refusals."""

from __future__ import annotations

import json
import os
import pickle
from pathlib import Path

import pytest
from typer.testing import CliRunner

from conftest import FIXTURES
from pgvet.cli import app
from pgvet.errors import InputError
from pgvet.provenance import Source
from pgvet.snapshot.facts import Fact, Item
from pgvet.snapshot.load import load_host
from pgvet.snapshot.storage import _disk_of_device

GIB = 1024**3
MIB = 1024**2


def test_small_vm_facts() -> None:
    host = load_host(FIXTURES / "small-vm")
    facts = host.facts
    assert host.name == "web-db-01"
    assert facts["host.ram"].value == 4025276 * 1024
    assert str(facts["host.ram"].source) == "meminfo.txt:1"
    assert facts["host.cpus"].value == 2
    assert facts["thp.enabled"].value == "always"
    assert facts["sysctl.vm.swappiness"].value == 60
    assert facts["pg.version"].value == 16
    assert str(facts["pg.version"].source) == "host.yaml:3"
    assert facts["pg.shared_buffers"].value == 128 * MIB
    # postgresql.auto.conf is read last: its work_mem wins, and both places are kept.
    work_mem = facts["pg.work_mem"]
    assert work_mem.value == 64 * MIB
    assert work_mem.source.path == "postgresql.auto.conf"
    assert [place.path for place in work_mem.occurrences] == ["postgresql.conf", "postgresql.auto.conf"]
    # Unset parameters take PostgreSQL 16's boot values.
    assert facts["pg.maintenance_work_mem"].value == 64 * MIB
    assert facts["pg.maintenance_work_mem"].source.path == "<default>"
    assert facts["pg.checkpoint_timeout"].value == 300


def test_small_vm_storage_is_scoped_to_the_data_directory() -> None:
    host = load_host(FIXTURES / "small-vm")
    mounts = host.items["mount"]
    assert [item["mount.point"] for item in mounts] == ["/var/lib/postgresql"]
    assert mounts[0]["mount.holds_pgdata"] is True
    disks = host.items["disk"]
    assert [item["disk.name"] for item in disks] == ["vdb"]
    assert disks[0]["disk.read_ahead_kb"] == 4096


def test_small_vm_override_by_auto_conf_is_visible_per_line() -> None:
    host = load_host(FIXTURES / "small-vm")
    work_mem_lines = [item for item in host.items["setting"] if item["setting.name"] == "work_mem"]
    assert len(work_mem_lines) == 2
    first, second = work_mem_lines
    assert first["setting.effective"] is False
    assert first["setting.overridden_in_auto_conf"] is True
    assert second["setting.effective"] is True


def test_big_server_reads_french_lscpu_and_scopes_two_mounts() -> None:
    host = load_host(FIXTURES / "big-server")
    facts = host.facts
    assert facts["cpu.count"].value == 64
    assert facts["cpu.sockets"].value == 2
    assert facts["cpu.numa_nodes"].value == 2
    assert facts["pg.version"].value == 17
    assert facts["pg.shared_buffers"].value == 138 * GIB
    assert facts["pg.huge_pages"].value == "on"
    assert facts["host.raid_level"].value == 10
    assert facts["host.raid_disks"].value == 8
    points = sorted(str(item["mount.point"]) for item in host.items["mount"])
    assert points == ["/srv/pgdata", "/srv/pgwal"]
    assert [item["disk.name"] for item in host.items["disk"]] == ["sdb"]


def test_config_repository_uses_declared_values() -> None:
    host = load_host(FIXTURES / "config-repo")
    facts = host.facts
    assert facts["host.ram"].value == 64 * GIB
    assert facts["host.cpus"].value == 16
    ratio = facts["sysctl.vm.overcommit_ratio"]
    assert ratio.value == 80
    assert str(ratio.source) == "sysctl.d/10-postgresql.conf:3"
    assert facts["sysctl_conf.vm.overcommit_ratio"].value == 80
    # A bare number is in the parameter's unit: 2097152 pages of 8 kB.
    assert facts["pg.shared_buffers"].value == 16 * GIB
    assert str(facts["pg.shared_buffers"].source) == "conf.d/10-memory.conf:2"
    by_name = {item["setting.name"]: item for item in host.items["setting"]}
    assert by_name["effective_io_concurency"]["setting.suggestion"] == "effective_io_concurrency"
    assert by_name["checkpoint_segments"]["setting.replacement"] == "max_wal_size"
    assert by_name["shared_buffers"]["setting.bare_number"] is True


def test_input_outside_the_host_directory_is_refused(tmp_path: Path) -> None:
    outside = tmp_path / "outside-meminfo"
    outside.write_text("MemTotal: 1024 kB\n")
    host_dir = tmp_path / "host"
    host_dir.mkdir()
    (host_dir / "meminfo.txt").symlink_to(outside)
    (host_dir / "host.yaml").write_text("ram: 8GB\n")
    host = load_host(host_dir)
    assert "meminfo.mem_total" not in host.facts
    assert host.facts["host.ram"].value == 8 * GIB
    assert any("outside the host directory" in warning for warning in host.warnings)


def test_a_sysctl_d_link_outside_the_host_directory_is_refused_and_said(tmp_path: Path) -> None:
    outside = tmp_path / "outside.d"
    outside.mkdir()
    (outside / "50.conf").write_text("vm.swappiness = 1\n")
    host_dir = tmp_path / "host"
    host_dir.mkdir()
    (host_dir / "host.yaml").write_text("ram: 8GB\n")
    (host_dir / "sysctl.d").symlink_to("../outside.d")
    host = load_host(host_dir)
    assert "sysctl_conf.vm.swappiness" not in host.facts
    # where it leads is not said: resolved on the machine that lints, which a public report (SARIF) must not show
    assert "sysctl.d: refused, it resolves outside the host directory" in host.warnings
    assert not any(str(outside) in warning for warning in host.warnings)


def test_a_sysctl_d_that_is_not_a_directory_is_refused_and_said(tmp_path: Path) -> None:
    (tmp_path / "host.yaml").write_text("ram: 8GB\n")
    (tmp_path / "sysctl.d").write_text("vm.swappiness = 1\n")
    host = load_host(tmp_path)
    assert "sysctl.d: refused, it is not a directory" in host.warnings


def test_a_sysctl_d_link_to_nothing_is_refused_and_said(tmp_path: Path) -> None:
    (tmp_path / "host.yaml").write_text("ram: 8GB\n")
    (tmp_path / "sysctl.d").symlink_to("gone.d")
    host = load_host(tmp_path)
    assert "sysctl.d: refused, it links to gone.d, which does not exist" in host.warnings


def test_empty_directory_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no inputs found") as raised:
        load_host(tmp_path)
    assert "host directories" not in raised.value.message


def test_no_inputs_left_says_which_were_refused(tmp_path: Path) -> None:
    (tmp_path / "postgresql.conf").mkdir()
    with pytest.raises(InputError) as raised:
        load_host(tmp_path)
    assert raised.value.message.startswith("no inputs found (postgresql.conf: refused, it is not a regular file): ")


def test_a_fleet_directory_given_as_a_host_names_the_hosts_it_holds(tmp_path: Path) -> None:
    for name in ("db1", "db2", "db3", "db4"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "meminfo.txt").write_text("MemTotal: 1024 kB\n")
    (tmp_path / "notes").mkdir()  # not a host: not named
    with pytest.raises(InputError) as raised:
        load_host(tmp_path)
    assert raised.value.message.endswith(
        f"; it holds 4 host directories (db1, db2, db3, …): give them, e.g. `pgvet lint {tmp_path}/*`")


def test_parse_error_names_file_and_line(tmp_path: Path) -> None:
    (tmp_path / "sysctl.conf").write_text("vm.swappiness = 10\nthis line has no equals sign\n")
    with pytest.raises(InputError) as raised:
        load_host(tmp_path)
    assert raised.value.source is not None
    assert (raised.value.source.path, raised.value.source.line) == ("sysctl.conf", 2)


def test_cli_facts_json_maps_names_to_value_and_source() -> None:
    result = CliRunner().invoke(app, ["facts", str(FIXTURES / "config-repo"), "--format", "json"])
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert document["facts"]["sysctl.vm.swappiness"] == {
        "value": 10, "source": {"path": "sysctl.d/10-postgresql.conf", "line": 4},
    }
    assert document["facts"]["derived.shared_buffers_ratio"]["value"] == 0.25


def test_cli_bad_input_exits_2_with_one_line(tmp_path: Path) -> None:
    (tmp_path / "host.yaml").write_text("workload: oltpp\n")
    result = CliRunner().invoke(app, ["facts", str(tmp_path)])
    assert result.exit_code == 2
    assert "host.yaml:1" in result.output
    assert "Traceback" not in result.output


@pytest.mark.skipif(not os.path.exists("/proc/meminfo"), reason="not Linux")
def test_snapshot_of_this_machine_equals_what_the_system_reports(tmp_path: Path) -> None:
    import subprocess

    (tmp_path / "meminfo.txt").write_text(Path("/proc/meminfo").read_text())
    sysctl = subprocess.run(["sysctl", "-a"], capture_output=True, text=True, check=False)
    if sysctl.returncode not in (0, 255) or not sysctl.stdout:
        pytest.skip("sysctl -a unavailable")
    (tmp_path / "sysctl.txt").write_text(sysctl.stdout)
    lscpu = subprocess.run(["lscpu"], capture_output=True, text=True, check=False, env={**os.environ, "LC_ALL": "C"})
    if lscpu.returncode == 0:
        (tmp_path / "lscpu.txt").write_text(lscpu.stdout)
    host = load_host(tmp_path)
    swappiness = int(Path("/proc/sys/vm/swappiness").read_text())
    assert host.facts["sysctl.vm.swappiness"].value == swappiness
    overcommit_ratio = int(Path("/proc/sys/vm/overcommit_ratio").read_text())
    assert host.facts["sysctl.vm.overcommit_ratio"].value == overcommit_ratio
    page_size = os.sysconf("SC_PAGE_SIZE")
    # MemTotal is totalram_pages; sysconf's physical pages are the same count.
    assert host.facts["host.ram"].value == os.sysconf("SC_PHYS_PAGES") * page_size
    if lscpu.returncode == 0:
        assert host.facts["host.cpus"].value == os.cpu_count()


def test_source_and_located_are_frozen_picklable_dataclasses() -> None:
    import dataclasses
    import pickle

    from pgvet.provenance import Located, Source

    source = Source("meminfo.txt", 3)
    assert (source.path, source.line, Source("x").line) == ("meminfo.txt", 3, None)
    assert source == Source(path="meminfo.txt", line=3) and hash(source) == hash(Source("meminfo.txt", 3))
    assert repr(Located(1, source)) == "Located(value=1, source=Source(path='meminfo.txt', line=3))"
    assert dataclasses.replace(source, line=4) == Source("meminfo.txt", 4)
    assert pickle.loads(pickle.dumps(Located(1, source))) == Located(1, source)
    with pytest.raises(dataclasses.FrozenInstanceError):
        source.line = 5  # type: ignore[misc]
    with pytest.raises(TypeError):
        Source()  # type: ignore[call-arg]


def test_paths_shown_as_resolving_them_would(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """HostBuilder.display compares strings instead of Paths: it shows what the Path operations show."""
    from pgvet.snapshot.builder import HostBuilder

    def reference(path: Path, root: Path) -> str:
        if path.parent == root and path.name != ".." and not path.is_symlink():
            return path.name
        # outside the host directory too relative to it, as reports join it to the host's directory
        return os.path.relpath(path.resolve(), root.resolve())

    (tmp_path / "host" / "sub").mkdir(parents=True)
    (tmp_path / "host" / "f.txt").write_text("x")
    (tmp_path / "host" / "l.txt").symlink_to("f.txt")
    (tmp_path / "link").symlink_to("host")
    monkeypatch.chdir(tmp_path)
    for root in (Path("."), Path("host"), tmp_path / "host", Path("link"), Path("host/sub/.."), Path("/")):
        builder = HostBuilder("h", root, None)
        for path in (root, Path("."), Path(".."), root / "f.txt", root / "l.txt", root / "..", root / "sub" / "g",
                     Path("host/f.txt"), tmp_path / "host" / "f.txt", Path("f.txt")):
            assert builder.display(path) == reference(path, root), (root, path)


def test_inputs_are_read_to_their_end_and_no_further_than_the_limit(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """What stat said is asked for first; a file that grew since, or whose size stat does not know (/proc),
    is read on, a chunk at a time, to its end or one byte past the limit (the caller refuses more)."""
    import io
    import os

    from pgvet.inputs.reading import read_at_most, read_input

    text = bytes(range(256)) * 1000  # 256 000 bytes: several chunks
    assert read_at_most(io.BytesIO(text), 0, 10**6) == text  # size unknown
    assert read_at_most(io.BytesIO(text), 100, 10**6) == text  # grew since stat
    assert read_at_most(io.BytesIO(text), len(text), 10**6) == text
    assert read_at_most(io.BytesIO(text), 0, 200_000) == text[:200_001]
    assert read_at_most(io.BytesIO(text), 100, 1000) == text[:1001]
    assert read_at_most(io.BytesIO(b""), 0, 1000) == b""
    path = tmp_path / "grown.txt"
    path.write_bytes(text[:10])
    fstat = os.fstat

    def growing(descriptor: int) -> os.stat_result:  # the file grows between its fstat and its reading
        status = fstat(descriptor)
        path.write_bytes(text)
        return status

    monkeypatch.setattr(os, "fstat", growing)
    data, status = read_input(str(path), 10**6)
    assert (data, status.st_size) == (text, 10)
    path.write_bytes(text[:10])
    assert read_input(str(path), 70_000)[0] == text[:70_001]
    monkeypatch.undo()
    if os.path.exists("/proc/self/status"):  # stat says 0 bytes
        assert read_input("/proc/self/status", 10**6)[0].startswith(b"Name:")


def test_a_short_read_is_not_taken_for_the_end() -> None:
    """Some file systems (FUSE, network mounts) return less than asked before the end: read on until nothing."""
    from pgvet.inputs.reading import read_at_most

    class Trickle:
        def __init__(self, data: bytes) -> None:
            self.data = data

        def read(self, count: int) -> bytes:
            served, self.data = self.data[:min(count, 100)], self.data[min(count, 100):]
            return served

    assert read_at_most(Trickle(b"x" * 300), 300, 10**6) == b"x" * 300  # type: ignore[arg-type]


def test_an_input_whose_size_stat_does_not_know_is_refused_past_the_limit(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A pipe (or /proc) has no size for stat: what it gives is still held to the limit, not cut silently."""
    import os
    import threading

    from pgvet.errors import InputError
    from pgvet.inputs import reading

    monkeypatch.setattr(reading, "MAX_INPUT_BYTES", 1000)
    pipe = tmp_path / "sysctl.txt"
    for size, refused in ((999, False), (1001, True)):
        os.mkfifo(pipe)
        writer = threading.Thread(target=pipe.write_bytes, args=(b"#" * size,))
        writer.start()
        try:
            if refused:
                with pytest.raises(InputError, match="more than 1000 bytes"):
                    reading.read_text(pipe, "sysctl.txt")
            else:
                assert len(reading.read_text(pipe, "sysctl.txt")) == size
        finally:
            writer.join()
            pipe.unlink()


def test_records_made_by_the_thousand_are_immutable_values() -> None:
    """Evidence, postgresql.conf lines and mounts are named tuples: equal by value, hashable, picklable, frozen."""
    import pickle

    from pgvet.findings import Evidence
    from pgvet.inputs.mounts import Mount
    from pgvet.inputs.postgresql_conf import ConfDirective, ConfSetting
    from pgvet.provenance import Source

    source = Source("postgresql.conf", 3)
    for record in (Evidence("pg.work_mem", 4096, source),
                   ConfSetting("work_mem", "4MB", "4MB", False, source, "work_mem"),
                   ConfDirective("include", "a.conf", "'a.conf'", source),
                   Mount("/dev/sda1", "/srv", "ext4", ("rw", "noatime"), source)):
        copy = pickle.loads(pickle.dumps(record))
        assert copy == record and hash(copy) == hash(record) and type(copy) is type(record)
        with pytest.raises(AttributeError):
            record.source = Source("x")  # type: ignore[misc]
    assert ConfSetting("work_mem", "4MB", "4MB", False, source, "work_mem").value == "4MB"


def test_inputs_listed_as_regular_files_are_shown_by_their_name_and_links_by_their_target(tmp_path: Path) -> None:
    """load_host skips the link check for names its listing shows as regular files; a link is still resolved."""
    from pgvet.snapshot.load import load_host

    host = tmp_path / "host"
    host.mkdir()
    (host / "captured").mkdir()
    (host / "sysctl.txt").write_text("vm.swappiness = 10\n")
    (host / "captured" / "meminfo").write_text("MemTotal:       16384 kB\n")
    (host / "meminfo.txt").symlink_to("captured/meminfo")
    facts = load_host(host).facts
    assert str(facts["sysctl.vm.swappiness"].source) == "sysctl.txt:1"
    assert str(facts["meminfo.mem_total"].source) == "captured/meminfo:1"


def test_an_item_gives_each_fact_with_the_place_it_was_read() -> None:
    """An Item holds values and one source; a fact read elsewhere keeps its own (a disk's attributes, a
    declared key's running value), in evidence, in `pgvet facts` and through pickling (--jobs workers)."""
    item = Item((("disk.name", "sdb"), ("disk.virtual", False)), Source("sysfs.txt", 3))
    item.put("disk.rotational", 1, Source("sysfs.txt", 7))
    item.put("disk.scheduler", "none", Source("sysfs.txt", 3))  # at the item's own place: nothing kept apart
    assert item["disk.virtual"] is False and item.get("disk.model") is None
    assert item.fact("disk.name") == Fact("disk.name", "sdb", Source("sysfs.txt", 3))
    assert item.fact("disk.rotational") == Fact("disk.rotational", 1, Source("sysfs.txt", 7))
    assert item.fact("disk.model") is None
    assert item.sources == {"disk.rotational": Source("sysfs.txt", 7)}
    assert [fact.name for fact in item.facts()] == ["disk.name", "disk.virtual", "disk.rotational", "disk.scheduler"]
    copied = pickle.loads(pickle.dumps(item))
    assert type(copied) is Item and copied == item
    assert copied.facts() == item.facts()


def test_disk_attributes_keep_their_own_lines() -> None:
    host = load_host(FIXTURES / "big-server")
    (disk,) = host.items["disk"]
    lines = {fact.name: fact.source.line for fact in disk.facts()}
    assert len(set(lines.values())) > 2  # one sysfs.txt line per attribute, not the item's one
    assert disk.fact("disk.holds_pgdata") == Fact("disk.holds_pgdata", True, disk.source)


@pytest.mark.parametrize(("device", "disk"), [
    ("/dev/sda", "sda"), ("/dev/sda1", "sda"), ("/dev/sdab12", "sdab"),
    ("/dev/vdb", "vdb"), ("/dev/vdb2", "vdb"), ("/dev/xvda", "xvda"), ("/dev/xvda1", "xvda"),
    ("/dev/hdc", "hdc"), ("/dev/hdc3", "hdc"),
    ("/dev/nvme1n1", "nvme1n1"), ("/dev/nvme0n1p2", "nvme0n1"), ("/dev/nvme10n12p3", "nvme10n12"),
    ("/dev/mmcblk0", "mmcblk0"), ("/dev/mmcblk0p1", "mmcblk0"),
    ("/dev/loop0", "loop0"), ("/dev/loop12p1", "loop12"),
    ("/dev/md0", "md0"), ("/dev/md127p2", "md127"),
    ("/dev/dm-0", "dm-0"), ("/dev/dm-13", "dm-13"),
    # kinds not listed are taken as they are (DRBD under HA PostgreSQL, persistent memory, zram, a CD)
    ("/dev/drbd0", "drbd0"), ("/dev/pmem1", "pmem1"), ("/dev/zram0", "zram0"), ("/dev/sr0", "sr0"),
    # links a snapshot cannot follow: the disk is not known, and disk rules judge every disk
    ("/dev/mapper/vg-pgdata", None), ("/dev/disk/by-uuid/0b4c7e2a", None), ("/dev/md/data", None),
    ("tmpfs", None), ("server:/export", None),
])
def test_the_disk_of_each_kind_of_linux_device(device: str, disk: str | None) -> None:
    assert _disk_of_device(device) == disk


def test_disk_rules_judge_only_the_nvme_disk_holding_pgdata(tmp_path: Path) -> None:
    """PGDATA on a whole NVMe namespace: the OS disk's bfq and read-ahead are not PGDATA's business."""
    (tmp_path / "host.yaml").write_text("pg_version: 15\n")
    (tmp_path / "postgresql.conf").write_text("data_directory = '/srv/pg/15/main'\n")
    (tmp_path / "mounts.txt").write_text(
        "/dev/nvme0n1p2 / ext4 rw,noatime 0 0\n/dev/nvme1n1 /srv/pg ext4 rw,noatime 0 0\n"
    )
    (tmp_path / "sysfs.txt").write_text(
        "/sys/block/nvme0n1/queue/scheduler:none [bfq]\n/sys/block/nvme0n1/queue/rotational:0\n"
        "/sys/block/nvme0n1/queue/read_ahead_kb:8192\n"
        "/sys/block/nvme1n1/queue/scheduler:[none] mq-deadline\n/sys/block/nvme1n1/queue/rotational:0\n"
        "/sys/block/nvme1n1/queue/read_ahead_kb:128\n"
    )
    host = load_host(tmp_path)
    assert [item["disk.name"] for item in host.items["disk"]] == ["nvme1n1"]
    assert "disk rules scoped to nvme1n1, which holds PGDATA" in host.notes
    result = CliRunner().invoke(app, ["lint", str(tmp_path), "--format", "json"])
    rules = {finding["rule_id"] for finding in json.loads(result.stdout)["findings"]}
    assert not rules & {"PGV212", "PGV214"}, result.stdout


def _ssd_host(tmp_path: Path, host_yaml: str) -> Path:
    host = tmp_path / "ssd"
    host.mkdir()
    (host / "host.yaml").write_text(host_yaml)
    (host / "postgresql.conf").write_text("random_page_cost = 4\ndata_directory = '/srv/pg/15/main'\n")
    (host / "mounts.txt").write_text("/dev/sda2 / ext4 rw,relatime 0 0\n/dev/sdb1 /srv/pg ext4 rw,noatime 0 0\n")
    (host / "sysfs.txt").write_text(
        "/sys/block/sda/queue/rotational:1\n/sys/block/sdb/queue/scheduler:[none] mq-deadline\n"
        "/sys/block/sdb/queue/rotational:0\n")
    return host


def test_data_disk_rotational_is_a_host_fact(tmp_path: Path) -> None:
    """The rotational flag of the disk under PGDATA reaches host rules (G1: ssd when not declared)."""
    from pgvet.run.lint import lint
    from pgvet.run.options import LintOptions

    host = _ssd_host(tmp_path, "pg_version: 15\n")
    fact = load_host(host).facts["host.data_disk_rotational"]
    assert fact.value is False and str(fact.source) == "sysfs.txt:3"
    result = lint([host], LintOptions(select=["PGV701", "PGV703"]))
    findings = {finding.rule_id: finding for finding in result.hosts[0].findings}
    assert set(findings) == {"PGV701", "PGV703"}
    assert "non-rotational data disk" in findings["PGV701"].message


def test_declared_storage_wins_over_the_rotational_flag(tmp_path: Path) -> None:
    from pgvet.run.lint import lint
    from pgvet.run.options import LintOptions

    host = _ssd_host(tmp_path, "pg_version: 15\nstorage: hdd\n")
    assert lint([host], LintOptions(select=["PGV701"])).hosts[0].findings == []


def test_no_data_disk_rotational_when_the_pgdata_disk_is_unknown(tmp_path: Path) -> None:
    host = _ssd_host(tmp_path, "pg_version: 15\n")
    (host / "postgresql.conf").write_text("random_page_cost = 4\n")
    assert "host.data_disk_rotational" not in load_host(host).facts


def test_an_empty_sysctl_txt_is_said(tmp_path: Path) -> None:
    # a collection whose `sysctl -a` failed: without the warning, only "63 rules were not evaluated" told
    (tmp_path / "sysctl.txt").write_text("\n")
    host = load_host(tmp_path)
    assert host.warnings == ["sysctl.txt: the file is empty: no running kernel value was read "
                             "(collect it again with `sysctl -a`)"]
    (tmp_path / "sysctl.txt").write_text("vm.swappiness = 1\n")
    assert load_host(tmp_path).warnings == []


def _fixture_hosts() -> list[Path]:
    hosts = [FIXTURES / name for name in ("big-server", "small-vm", "config-repo", "well-tuned")]
    groups = [path for group in ("rules", "seeds") for path in (FIXTURES / group).iterdir() if path.is_dir()]
    return hosts + sorted(groups)


def test_every_fact_a_host_gives_is_registered() -> None:
    """A rule may read only the names of engine/factnames.py (docs/facts.md): a fact a parser gives under
    another name (meminfo's DirectMap4k is meminfo.direct_map_4k, not direct_map4k) is one no rule can read."""
    from pgvet.engine.factnames import static_type

    unknown: dict[str, str] = {}
    for directory in _fixture_hosts():
        host = load_host(directory)
        names = [*host.facts, *(name for items in host.items.values() for item in items for name in item)]
        unknown.update({name: directory.name for name in names
                        if static_type(name) is None and not name.startswith("derived.")})
    assert unknown == {}
