"""The operating-system parsers: exact values, the real-world corpus, this machine, and properties."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import corpus_dir
from pgvet.errors import ParseError
from pgvet.inputs import host_yaml, lscpu, meminfo, mounts, sysctl, sysfs
from pgvet.snapshot.load import load_host

# --- sysctl ---------------------------------------------------------------------------------------


def test_sysctl_output_values_and_lines() -> None:
    text = "vm.swappiness = 10\nnet.ipv4.tcp_rmem = 4096\t131072  6291456\nkernel.domainname = \n" \
           "sysctl: permission denied on key 'fs.protected_hardlinks'\nvm.overcommit_kbytes = -1\n"
    values = sysctl.parse_sysctl_output(text, "sysctl.txt")
    assert values["vm.swappiness"].value == 10
    assert values["net.ipv4.tcp_rmem"].value == "4096 131072 6291456"
    assert values["kernel.domainname"].value == ""
    assert values["vm.overcommit_kbytes"].value == -1
    assert str(values["vm.overcommit_kbytes"].source) == "sysctl.txt:5"


def test_sysctl_conf_syntax() -> None:
    text = "# comment\n; also a comment\n\nvm.swappiness=10\n-net/ipv4/tcp_keepalive_time = 600\n"
    settings_ = sysctl.parse_sysctl_conf(text, "sysctl.d/10.conf")
    assert [(s.key, s.value, s.ignore_errors, s.source.line) for s in settings_] == [
        ("vm.swappiness", 10, False, 4),
        ("net.ipv4.tcp_keepalive_time", 600, True, 5),
    ]


def test_sysctl_conf_comment_after_a_number_is_what_the_kernel_ignores() -> None:
    # Dalibo's line: sysctl and systemd-sysctl write all of it, the kernel reads 4505 (tried on Linux 6.18)
    text = ("vm.nr_overcommit_hugepages=4505 # 8192 / 2 * 1.10\nkernel.sched_domain = 1 2 ; two\n"
            "kernel.core_pattern = |/bin/x # y\nvm.swappiness = 10#x\n")
    settings_ = sysctl.parse_sysctl_conf(text, "sysctl.d/90.conf")
    assert [(s.key, s.value, s.trailing) for s in settings_] == [
        ("vm.nr_overcommit_hugepages", 4505, "# 8192 / 2 * 1.10"),
        ("kernel.sched_domain", "1 2", "; two"),
        ("kernel.core_pattern", "|/bin/x # y", None),  # a text value gets the whole text
        ("vm.swappiness", "10#x", None),  # no blank before '#': one word, refused by the kernel
    ]


def test_sysctl_conf_numbers_are_read_in_base_0_as_the_kernel_reads_them() -> None:
    # proc_get_long (kernel/sysctl.c): strtoul_lenient(p, &p, 0, val); `sysctl -a` then prints decimal
    text = ("vm.swappiness = 010\nvm.dirty_background_bytes = 0x4000000\nkernel.panic_print = 0X1f # all\n"
            "net.ipv4.tcp_rmem = 4096 0x20000 06000000\nvm.overcommit_kbytes = -010\nvm.dirty_ratio = 10\n"
            "vm.min_free_kbytes = 0\nvm.zone_reclaim_mode = 08\nkernel.hostname = 010\n"
            "kernel.domainname = 0x10\nvm.max_map_count = 0x10000000000000000\n")
    settings_ = sysctl.parse_sysctl_conf(text, "sysctl.d/90.conf")
    assert [(s.key, s.value) for s in settings_] == [
        ("vm.swappiness", 8),
        ("vm.dirty_background_bytes", 67108864),
        ("kernel.panic_print", 31),
        ("net.ipv4.tcp_rmem", "4096 131072 1572864"),
        ("vm.overcommit_kbytes", -8),
        ("vm.dirty_ratio", 10),
        ("vm.min_free_kbytes", 0),
        ("vm.zone_reclaim_mode", 8),  # not octal: the kernel refuses it; read as written, so it shows as not applied
        ("kernel.hostname", 10),  # a string sysctl: read as before (`sysctl -a` output of 010 reads 10 too)
        ("kernel.domainname", "0x10"),
        ("vm.max_map_count", "0x10000000000000000"),  # past 2**64: refused by the kernel
    ]


def test_sysctl_conf_hex_and_octal_values_match_the_running_decimal_ones(tmp_path: Path) -> None:
    (tmp_path / "sysctl.txt").write_text("vm.swappiness = 8\nvm.dirty_background_bytes = 67108864\n")
    (tmp_path / "sysctl.d").mkdir()
    (tmp_path / "sysctl.d" / "90.conf").write_text("vm.swappiness = 010\nvm.dirty_background_bytes = 0x4000000\n")
    host = load_host(tmp_path, None)
    declared = {item["declared.key"]: (item["declared.value"], item["declared.running"])
                for item in host.items["declared"]}
    assert declared == {"vm.swappiness": ("8", "8"), "vm.dirty_background_bytes": ("67108864", "67108864")}


def test_sysctl_conf_trailing_comment_is_reported_at_its_line(tmp_path: Path) -> None:
    (tmp_path / "sysctl.d").mkdir()
    (tmp_path / "sysctl.d" / "90-hp.conf").write_text("# HP\nvm.nr_overcommit_hugepages=4505 # 8192 / 2 * 1.10\n")
    host = load_host(tmp_path, None)
    assert host.facts["sysctl.vm.nr_overcommit_hugepages"].value == 4505
    assert [warning for warning in host.warnings if "90-hp.conf:2" in warning and "pgvet reads 4505" in warning]


def test_sysctl_conf_line_without_equals_is_an_error_at_its_line() -> None:
    with pytest.raises(ParseError) as raised:
        sysctl.parse_sysctl_conf("vm.swappiness = 1\nvm.dirty_ratio 10\n", "sysctl.conf")
    assert raised.value.source is not None and raised.value.source.line == 2
    assert "missing '='" in raised.value.message


def test_sysctl_d_order_is_by_name_and_only_conf_files() -> None:
    assert sysctl.sysctl_d_order(["99-z.conf", "10-a.conf", "README", ".hidden.conf", "50-b.conf"]) == [
        "10-a.conf", "50-b.conf", "99-z.conf",
    ]


@pytest.mark.parametrize("name", ["freebsd12_sysctl-a.out", "osx-10.14.6_sysctl-a.out"])
def test_bsd_sysctl_output_is_refused_clearly(name: str) -> None:
    path = corpus_dir("sysctl") / name
    with pytest.raises(ParseError, match="not Linux"):
        sysctl.parse_sysctl_output(path.read_text(errors="replace"), name)


@pytest.mark.parametrize("name, count", [("debian12-kvm.sysctl-a.txt", 1302), ("ubuntu-18.04_sysctl-a.out", 855),
                                         ("centos-7.7_sysctl-a.out", 895)])
def test_linux_sysctl_corpus(name: str, count: int) -> None:
    path = corpus_dir("sysctl") / name
    values = sysctl.parse_sysctl_output(path.read_text(errors="replace"), name)
    assert len(values) == count
    assert isinstance(values["vm.swappiness"].value, int)


def test_every_declared_sysctl_file_of_the_corpus_parses() -> None:
    files = [path for path in (corpus_dir("sysctl") / "real").rglob("*") if path.is_file()]
    assert len(files) >= 20
    for path in files:
        for setting in sysctl.parse_sysctl_conf(path.read_text(errors="replace"), path.name):
            assert setting.key and " " not in setting.key


# --- meminfo --------------------------------------------------------------------------------------


def test_meminfo_names_and_units() -> None:
    text = "MemTotal:       16473548 kB\nSwapTotal:       1740796 kB\nCommitLimit:    15743308 kB\n" \
           "Committed_AS:    2312340 kB\nHugePages_Total:     100\nHugepagesize:       2048 kB\nActive(anon):  10 kB\n"
    values = meminfo.parse_meminfo(text, "meminfo.txt")
    assert values["mem_total"].value == 16473548 * 1024
    assert values["commit_limit"].value == 15743308 * 1024
    assert values["committed_as"].value == 2312340 * 1024
    assert values["hugepages_total"].value == 100
    assert values["hugepagesize"].value == 2 * 1024 * 1024
    assert values["active_anon"].value == 10240
    assert values["swap_total"].source.line == 2
    assert "hugepages_in_use" not in values  # no Free and Rsvd lines: not known


def test_meminfo_pages_in_use() -> None:
    """Mapped (Total − Free) or promised (Rsvd, still counted in Free): 2130 pages another instance holds."""
    text = "MemTotal: 24683656 kB\nHugePages_Total: 2173\nHugePages_Free: 2105\nHugePages_Rsvd: 2062\n" \
           "HugePages_Surp: 0\nHugepagesize: 2048 kB\n"
    in_use = meminfo.parse_meminfo(text, "meminfo.txt")["hugepages_in_use"]
    assert (in_use.value, in_use.source.line) == (2130, 2)


def test_meminfo_corpus() -> None:
    accepted = refused = 0
    for path in sorted(p for p in corpus_dir("meminfo").rglob("*") if p.is_file()):
        text = path.read_text(errors="replace")
        try:
            values = meminfo.parse_meminfo(text, path.name)
        except ParseError as error:
            # pt-summary's `free` tables and a pasted shell prompt are not /proc/meminfo: refused at line 1.
            assert error.source is not None and error.source.line == 1
            refused += 1
        else:
            assert values["mem_total"].value > 0
            accepted += 1
    assert accepted >= 8 and refused <= 3



_MEMINFO_LINES = st.sampled_from([
    "MemTotal:       16473548 kB", "SwapTotal:        0 kB", "HugePages_Total:     100", "Active(anon):  10 kB",
    "Committed_AS:    2312340 kB", "Hugepagesize:       2048 kB", "MemTotal: 1 kB  ", " MemFree:\t5 kB\t", "", "  ",
    "\t", "X: 12345678901234567890", "X: 123456789012345678901", "Bad line", "MemTotal: 5kB", "MemTotal: 5 MB",
    "MemTotal:\x0b5", "MemTotal: 5\r", "MemTotal: \u0663 kB", "MemTotal:5", "Active_anon: 3 kB", "SwapTotal: 7",
])


@settings(max_examples=400, deadline=None)
@given(st.lists(_MEMINFO_LINES, max_size=10), st.booleans(),
       st.none() | st.sets(st.sampled_from(["mem_total", "swap_total", "active_anon", "x"])))
def test_meminfo_names_only_leave_the_others_out(lines: list[str], final_newline: bool,
                                                names: set[str] | None) -> None:
    """``names`` only leaves the other values out: a text is refused with them as without them."""
    text = "\n".join(lines) + ("\n" if final_newline and lines else "")
    try:
        whole = meminfo.parse_meminfo(text, "meminfo.txt")
    except ParseError as refused:
        with pytest.raises(ParseError) as also_refused:
            meminfo.parse_meminfo(text, "meminfo.txt", names)
        assert also_refused.value.message == refused.message
        assert also_refused.value.source == refused.source
        return
    wanted = meminfo.parse_meminfo(text, "meminfo.txt", names)
    assert list(wanted.items()) == [(name, value) for name, value in whole.items() if names is None or name in names]

# --- lscpu ----------------------------------------------------------------------------------------

FRENCH_LSCPU = """Architecture :                              x86_64
Processeur(s) :                             64
Liste de processeur(s) en ligne :           0-63
Identifiant constructeur :                  GenuineIntel
Nom de modèle :                             Intel(R) Xeon(R) Gold 6226R CPU @ 2.90GHz
Thread(s) par cœur :                        2
Cœur(s) par socket :                        16
Socket(s) :                                 2
Nœud(s) NUMA :                              2
Constructeur d'hyperviseur :                KVM
Type de virtualisation :                    complet
"""


def test_lscpu_french() -> None:
    values = {key: located.value for key, located in lscpu.parse_lscpu(FRENCH_LSCPU, "lscpu.txt").items()}
    assert values == {
        "architecture": "x86_64", "count": 64, "online": "0-63", "vendor": "GenuineIntel",
        "model_name": "Intel(R) Xeon(R) Gold 6226R CPU @ 2.90GHz", "threads_per_core": 2, "cores_per_socket": 16,
        "sockets": 2, "numa_nodes": 2, "hypervisor": "KVM", "virtualization_type": "complet",
    }


def test_lscpu_unknown_locale_is_refused_with_advice() -> None:
    german = "Architektur:  x86_64\nCPU(s) gesamt: 4\n"
    with pytest.raises(ParseError, match="LC_ALL=C lscpu"):
        lscpu.parse_lscpu(german, "lscpu.txt")


def test_lscpu_text_and_json_of_one_machine_agree() -> None:
    folder = corpus_dir("lscpu")
    text = lscpu.parse_lscpu((folder / "debian12-kvm-epyc-2cpu.txt").read_text(), "lscpu.txt")
    as_json = lscpu.parse_lscpu((folder / "debian12-kvm-epyc-2cpu.json").read_text(), "lscpu.json")
    assert {k: v.value for k, v in text.items()} == {k: v.value for k, v in as_json.items()}


# (file, CPUs, sockets, cores per socket, threads per core, NUMA nodes), checked by hand against the files.
LSCPU_EXPECTED = [
    ("lscpu-x86_64-epyc_7451.txt", 96, 2, 24, 2, 8),
    ("lscpu-vmware_fpe.txt", 16, 2, 4, 2, 4),
    ("lscpu-ppc64-POWER7-64cpu.txt", 64, 16, 1, 4, 2),
    ("lscpu-rv64-milkvpioneer.txt", 64, 1, 64, 1, 4),
    ("lscpu-s390-zvm.txt", 4, 4, 1, 1, None),
    ("lscpu-armv7.txt", 2, 1, 2, 1, None),
]


@pytest.mark.parametrize("name, cpus, sockets, cores, threads, numa", LSCPU_EXPECTED)
def test_lscpu_corpus_values(name: str, cpus: int, sockets: int, cores: int, threads: int, numa: int | None) -> None:
    values = lscpu.parse_lscpu((corpus_dir("lscpu") / name).read_text(), name)
    assert values["count"].value == cpus
    assert values["sockets"].value == sockets
    assert values["cores_per_socket"].value == cores
    assert values["threads_per_core"].value == threads
    assert (values["numa_nodes"].value if "numa_nodes" in values else None) == numa


def test_every_lscpu_of_the_corpus_parses() -> None:
    files = [path for path in corpus_dir("lscpu").rglob("*") if path.is_file()]
    assert len(files) >= 20
    for path in files:
        values = lscpu.parse_lscpu(path.read_text(errors="replace"), path.name)
        assert int(values["count"].value) >= 1


# --- mounts ---------------------------------------------------------------------------------------


def test_proc_mounts_octal_escapes() -> None:
    text = "/dev/sdb1 /srv/my\\040data ext4 rw,noatime,data=writeback 0 0\n"
    [mount] = mounts.parse_mounts(text, "mounts.txt")
    assert (mount.device, mount.point, mount.fstype) == ("/dev/sdb1", "/srv/my data", "ext4")
    assert mount.options == ("rw", "noatime", "data=writeback")


def test_mount_output_with_spaces_and_findmnt_agree() -> None:
    from_mount = mounts.parse_mounts("/dev/sda1 on /media/a b type ext4 (rw,relatime)\n", "m")
    from_findmnt = mounts.parse_mounts("TARGET SOURCE FSTYPE OPTIONS\n/media/a\\x20b /dev/sda1 ext4 rw,relatime\n", "f")
    assert [(m.device, m.point, m.fstype, m.options) for m in from_mount] == \
           [(m.device, m.point, m.fstype, m.options) for m in from_findmnt]


def test_find_mount_uses_path_components() -> None:
    table = mounts.parse_mounts("/dev/a / ext4 rw 0 0\n/dev/b /srv/pg ext4 rw 0 0\n/dev/c /srv/pgwal xfs rw 0 0\n", "m")
    found = mounts.MountTable(table).holding("/srv/pgwal/17")
    assert found is not None and found.device == "/dev/c"
    found = mounts.MountTable(table).holding("/srv/pgdata")  # not under /srv/pg: a string prefix is not a parent
    assert found is not None and found.device == "/dev/a"


@pytest.mark.parametrize("kind", ["mount", "findmnt"])
def test_mount_corpus(kind: str) -> None:
    for path in sorted(p for p in corpus_dir(kind).rglob("*") if p.is_file()):
        text = path.read_text(errors="replace")
        if path.name.startswith("aix"):
            with pytest.raises(ParseError, match="AIX"):
                mounts.parse_mounts(text, path.name)
            continue
        table = mounts.parse_mounts(text, path.name)
        assert table and all(m.point.startswith("/") for m in table), path.name


def test_spaces_and_parentheses_in_corpus_names() -> None:
    folder = corpus_dir("mount")
    [cifs] = mounts.parse_mounts((folder / "generic_mount-spaces-in-filename.out").read_text(), "m")
    assert cifs.device == "//10.100.1.237/Bilder und Videos" and cifs.fstype == "cifs"
    [iso] = mounts.parse_mounts((folder / "generic_mount-spaces-in-mountpoint.out").read_text(), "m")
    assert iso.point == "/media/ingo/Ubuntu 22.04.3 LTS amd64" and iso.fstype == "iso9660"


# --- sysfs ----------------------------------------------------------------------------------------


def test_sysfs_active_values() -> None:
    text = ("/sys/kernel/mm/transparent_hugepage/enabled:always madvise [never]\n"
            "/sys/block/nvme0n1/queue/scheduler:[none] mq-deadline\n"
            "/sys/block/nvme0n1/queue/rotational:0\n/sys/block/nvme0n1/queue/read_ahead_kb:128\n"
            "/sys/fs/cgroup/memory.max:8589934592\n")
    dump = sysfs.parse_sysfs(text, "sysfs.txt")
    assert dump.thp["enabled"].value == "never"
    assert dump.disks["nvme0n1"]["scheduler"].value == "none"
    assert dump.disks["nvme0n1"]["rotational"].value is False
    assert dump.disks["nvme0n1"]["read_ahead_kb"].value == 128
    assert dump.cgroup_memory_max is not None and dump.cgroup_memory_max.value == 8 * 1024**3


def test_sysfs_unlimited_cgroup_and_virtual_disks() -> None:
    assert sysfs.parse_sysfs("/sys/fs/cgroup/memory.max:max\n", "s").cgroup_memory_max is None
    assert sysfs.is_virtual_disk("loop0") and sysfs.is_virtual_disk("zram0")
    assert not sysfs.is_virtual_disk("dm-0") and not sysfs.is_virtual_disk("md0")


# --- host.yaml ------------------------------------------------------------------------------------


def test_host_yaml_values_and_lines() -> None:
    text = "pg_version: '16'\nram: 64 GiB\nraid:\n  level: 10\n  disks: 8\nbattery_backed_cache: true\n" \
           "tablespaces: [/srv/ts1, /srv/ts2]\n"
    facts = host_yaml.parse_host_yaml(text, "host.yaml")
    assert facts["pg_version"].value == 16
    assert facts["ram"].value == 64 * 1024**3
    assert (facts["raid_level"].value, facts["raid_disks"].value) == (10, 8)
    assert facts["raid_disks"].source.line == 5
    assert facts["bbu"].value is True
    assert facts["tablespaces"].value == ["/srv/ts1", "/srv/ts2"]


def test_host_yaml_of_megabytes_is_refused_quickly() -> None:
    with pytest.raises(ParseError) as raised:
        host_yaml.parse_host_yaml("# " + "a" * 8_000_000 + "\nram: 64GB\n", "host.yaml")
    assert "a host description is a few hundred" in raised.value.message
    assert host_yaml.parse_host_yaml("# " + "a" * 200_000 + "\nram: 64GB\n", "host.yaml")["ram"].value == 64 * 1024**3


def test_host_yaml_typo_is_an_error_with_a_suggestion() -> None:
    with pytest.raises(ParseError) as raised:
        host_yaml.parse_host_yaml("pg_version: 16\nworkoad: oltp\n", "host.yaml")
    assert "did you mean 'workload'" in raised.value.message
    assert raised.value.source is not None and raised.value.source.line == 2


def test_host_yaml_bad_value_names_what_is_allowed() -> None:
    with pytest.raises(ParseError, match="storage must be one of hdd, ssd, nvme, san"):
        host_yaml.parse_host_yaml("storage: tape\n", "host.yaml")


def test_host_yaml_bad_indentation_names_the_line() -> None:
    with pytest.raises(ParseError) as raised:
        host_yaml.parse_host_yaml("raid:\n  level: 10\n disks: 4\n", "host.yaml")
    assert raised.value.source is not None and raised.value.source.line == 3


def test_host_yaml_bomb_is_refused_quickly() -> None:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [*a{i-1}, *a{i-1}, *a{i-1}, *a{i-1}, *a{i-1}]" for i in range(1, 12)]
    with pytest.raises(ParseError, match="aliases expand to more than 10000 values") as raised:
        host_yaml.parse_host_yaml("\n".join(lines) + "\n", "host.yaml")
    assert raised.value.source is not None and raised.value.source.line == 6  # refused at the alias that crosses


# --- this machine ---------------------------------------------------------------------------------


def _run(*command: str) -> str | None:
    if shutil.which(command[0]) is None:
        return None
    done = subprocess.run(command, capture_output=True, text=True, check=False, env={**os.environ, "LC_ALL": "C"})
    return done.stdout if done.stdout else None


@pytest.mark.skipif(not Path("/proc/sys/vm/swappiness").exists(), reason="not Linux")
def test_this_machine_sysctl_and_meminfo() -> None:
    output = _run("sysctl", "-a")
    if output is None:
        pytest.skip("sysctl is not installed")
    values = sysctl.parse_sysctl_output(output, "sysctl.txt")
    for key in ("vm/swappiness", "vm/overcommit_memory", "vm/overcommit_ratio", "vm/dirty_ratio"):
        assert values[key.replace("/", ".")].value == int(Path("/proc/sys", key).read_text())
    info = meminfo.parse_meminfo(Path("/proc/meminfo").read_text(), "meminfo.txt")
    assert info["mem_total"].value == os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")


def test_this_machine_lscpu_text_and_json() -> None:
    text, as_json = _run("lscpu"), _run("lscpu", "-J")
    if text is None:
        pytest.skip("lscpu is not installed")
    values = lscpu.parse_lscpu(text, "lscpu.txt")
    assert values["count"].value == os.cpu_count()
    if as_json is not None:
        from_json = lscpu.parse_lscpu(as_json, "lscpu.json")
        assert from_json["count"].value == values["count"].value
        assert from_json.get("sockets") == values.get("sockets") or \
            from_json["sockets"].value == values["sockets"].value


@pytest.mark.skipif(not Path("/proc/mounts").exists(), reason="not Linux")
def test_this_machine_mounts_and_findmnt() -> None:
    table = mounts.parse_mounts(Path("/proc/mounts").read_text(), "mounts.txt")
    assert any(m.point == "/" for m in table)
    for mount in table:
        if os.path.isdir(mount.point) and os.access(mount.point, os.R_OK):
            assert os.path.ismount(mount.point), mount.point
    listing = _run("findmnt", "-l", "-o", "TARGET,SOURCE,FSTYPE,OPTIONS")
    if listing is not None:
        from_findmnt = {m.point for m in mounts.parse_mounts(listing, "findmnt.txt")}
        assert "/" in from_findmnt


def test_this_machine_sysfs_dump() -> None:
    files = [p for p in ("/sys/kernel/mm/transparent_hugepage/enabled", "/sys/kernel/mm/transparent_hugepage/defrag")
             if os.path.exists(p)]
    files += [str(p) for p in Path("/sys/block").glob("*/queue/scheduler")]
    if not files:
        pytest.skip("no sysfs")
    dump_text = "".join(f"{name}:{Path(name).read_text().strip()}\n" for name in files)
    dump = sysfs.parse_sysfs(dump_text, "sysfs.txt")
    if "enabled" in dump.thp:
        enabled = Path("/sys/kernel/mm/transparent_hugepage/enabled").read_text()
        assert f"[{dump.thp['enabled'].value}]" in enabled


# --- properties -----------------------------------------------------------------------------------

PARSERS: list[Callable[[str, str], Any]] = [
    sysctl.parse_sysctl_output, sysctl.parse_sysctl_conf, meminfo.parse_meminfo, lscpu.parse_lscpu,
    mounts.parse_mounts, sysfs.parse_sysfs, host_yaml.parse_host_yaml,
]
line_text = st.lists(st.one_of(st.text(max_size=40), st.sampled_from(
    ["vm.swappiness = 1", "MemTotal: 1 kB", "CPU(s): 4", "/dev/a / ext4 rw 0 0", "a on /b type c (d)",
     "TARGET SOURCE FSTYPE OPTIONS", "/sys/block/sda/queue/rotational:x", "raid: {level: 3}", "{", "key: [",
     "24 30 0:22 / /sys rw - sysfs sysfs rw", "ram: -5"])), max_size=12).map("\n".join)


@pytest.mark.parametrize("parser", PARSERS, ids=lambda parser: f"{parser.__module__}.{parser.__name__}")
@settings(max_examples=150, deadline=None)
@given(text=st.one_of(line_text, st.binary(max_size=200).map(lambda b: b.decode("utf-8", "surrogateescape"))))
def test_parsers_raise_only_parse_errors_with_a_place(parser: Callable[[str, str], Any], text: str) -> None:
    try:
        parser(text, "input.txt")
    except ParseError as error:
        assert error.source is not None and error.source.path == "input.txt"
        assert error.source.line is None or error.source.line >= 1


def test_lscpu_json_garbage_is_a_parse_error() -> None:
    with pytest.raises(ParseError):
        lscpu.parse_lscpu(json.dumps({"lscpu": "nope"}), "lscpu.json")


WANTED = frozenset({"vm.swappiness", "vm.dirty_ratio", "kernel.numa_balancing", "net.ipv4.conf.eth0.100.rp_filter"})
_SYSCTL_LINES = st.sampled_from([
    "vm.swappiness = 60", "vm.swappiness = 1", "vm/swappiness = 5", "  vm.swappiness = 7", "vm.swappiness\t = 8",
    "vm.swappiness  = 9", "vm.swappiness =", "vm.swappiness=", "vm.swappiness = ", "vm.swappiness = a = b",
    "vm.swappinessX = 2", "vm.swappiness.x = 3", "vm.dirty_ratio = 20", "vm.dirty_ratio = 1 2\t3",
    "kernel.numa_balancing = 1", "net.ipv4.conf.eth0/100.rp_filter = 2", "fs.binfmt_misc.status = enabled",
    "kernel.domainname = (none)", "sysctl: permission denied on key 'fs.protected_regular'", "", "   ",
    "kern.ostype: FreeBSD", "hw.ncpu: 8", "a continuation line", "vm.x y = 1", " = 3", "sysctl: x = 1",
    "vm.swappiness = 4\r", "x\rvm.swappiness = 3", "vm.swappiness\x0b= 5", "kernel.core_pattern = |/usr/lib/core %p",
])


@settings(max_examples=400, deadline=None)
@given(st.lists(_SYSCTL_LINES, max_size=12), st.booleans())
def test_sysctl_output_wanted_keys_read_as_the_whole_reading(lines: list[str], final_newline: bool) -> None:
    """The wanted keys are read as the whole text is read, and the text refused as it is without them."""
    text = "\n".join(lines) + ("\n" if final_newline and lines else "")
    try:
        whole = sysctl.parse_sysctl_output(text, "sysctl.txt")
    except ParseError as refused:
        with pytest.raises(ParseError) as also_refused:
            sysctl.parse_sysctl_output(text, "sysctl.txt", WANTED)
        assert also_refused.value.message == refused.message
        return
    expected = {key: (value.value, value.source.line) for key, value in whole.items() if key in WANTED}
    wanted = sysctl.parse_sysctl_output(text, "sysctl.txt", WANTED)
    assert {key: (value.value, value.source.line) for key, value in wanted.items()} == expected


@pytest.mark.parametrize(("text", "says"), [
    ("ram: " + "9" * 5000 + "\n", "h.yaml:1:"),  # int() of 5000 digits: a ValueError out of the parser
    ("ram: 1e400GB\n", "ram must be a size"),  # round(inf): an OverflowError
    ("ram: 0x" + "f" * 5000 + "\n", "h.yaml:1: invalid YAML: 0xffffffffffffffffff…(5002 characters): a number of"),
    ("ram: 99999999999999999TB\n", "ram must be at most 1 EiB"),  # accepted: 95 billion EiB of RAM
    ("cpus: '" + "9" * 5000 + "'\n", "cpus must be a whole number from 1 to 100000"),
    ("pg_version: !!python/object:os.system x\n", "tagged tag:yaml.org,2002:python/object:os.system"),
])
def test_host_yaml_numbers_beyond_any_machine(text: str, says: str) -> None:
    from pgvet.errors import ParseError
    from pgvet.inputs.host_yaml import parse_host_yaml

    with pytest.raises(ParseError) as raised:
        parse_host_yaml(text, "h.yaml")
    assert says in str(raised.value) and len(str(raised.value)) < 300


# Characters str.splitlines() takes for line breaks; the kernel, procps, PostgreSQL, grep -n and editors do not.
_NOT_LINE_BREAKS = ["\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"]


@pytest.mark.parametrize("other", _NOT_LINE_BREAKS, ids=lambda character: f"U+{ord(character):04X}")
@pytest.mark.parametrize(("kind", "lines", "reading"), [
    ("sysctl -a", ["kernel.a = {}1", "kernel.b = 2", "vm.swappiness = 60"],
     lambda text: sysctl.parse_sysctl_output(text, "s")["vm.swappiness"].source.line),
    ("sysctl -a, some keys", ["kernel.a = {}1", "kernel.b = 2", "vm.swappiness = 60"],
     lambda text: sysctl.parse_sysctl_output(text, "s", {"vm.swappiness"})["vm.swappiness"].source.line),
    ("sysctl.conf", ["# a{} comment", "kernel.b = 2", "vm.swappiness = 10"],
     lambda text: sysctl.parse_sysctl_conf(text, "s")[-1].source.line),
    ("meminfo", ["MemTotal: 100 kB", "Buffers:{} 1 kB", "MemFree: 50 kB"],
     lambda text: meminfo.parse_meminfo(text, "m")["mem_free"].source.line),
    ("lscpu", ["Architecture: x86_64{}", "Byte Order: Little Endian", "CPU(s): 4"],
     lambda text: lscpu.parse_lscpu(text, "l")["count"].source.line),
    ("sysfs", ["/sys/block/sda/queue/rotational:1{}", "/sys/kernel/mm/transparent_hugepage/enabled:[never]"],
     lambda text: sysfs.parse_sysfs(text, "f").thp["enabled"].source.line),
    ("mounts", ["/dev/sda1 / ext4 rw{} 0 0", "/dev/sdb1 /data xfs rw,noatime 0 0"],
     lambda text: mounts.parse_mounts(text, "m")[-1].source.line),
])
def test_lines_are_counted_at_newlines_only(kind: str, lines: list[str], reading: Callable[[str], Any],
                                            other: str) -> None:
    """A line is what ends at '\\n', as `grep -n`, the kernel's and PostgreSQL's readers count: a form feed or
    another character that str.splitlines() breaks at leaves the line numbers of what follows unchanged."""
    text = "".join(line.replace("{}", other) + "\n" for line in lines)
    assert reading(text) == len(lines)


@pytest.mark.parametrize(("written", "major"), [
    ("9.6", 9), ("'9.6'", 9), ("9.0", 9), ("16", 16), ("'17'", 17),
    ("10.5", None), ("9.7", None), ("8.4", None), ("100", None),
])
def test_host_yaml_pg_version_names_a_major_as_pg_version_does(written: str, major: int | None) -> None:
    # before 10 a major is two numbers; pgvet keeps the first, as it reads PG_VERSION's 9.6 (a user's
    # `pg_version: 9.6` was refused, exit 2); 10.5 is a minor release of 10, no major
    from pgvet.errors import ParseError
    from pgvet.inputs.host_yaml import parse_host_yaml

    text = f"pg_version: {written}\n"
    if major is None:
        with pytest.raises(ParseError) as raised:
            parse_host_yaml(text, "h.yaml")
        assert "pg_version must be a major version: a whole number from 9 to 99, or 9.0 to 9.6" in str(raised.value)
    else:
        assert parse_host_yaml(text, "h.yaml")["pg_version"].value == major
