"""Reading the local host: on this machine, and on prepared /proc and /sys trees."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from pgvet.inputs.registry import INPUT_KINDS, InputKind, collected_file_names
from pgvet.live.commands import collect_command, default_output
from pgvet.live.host import collect_host, read_lscpu, read_meminfo, read_sysctl, read_sysfs, walk_proc_sys
from pgvet.run.lint import lint
from pgvet.run.options import LintOptions
from pgvet.snapshot.load import load_host

OS_FILES = ["meminfo.txt", "sysctl.txt", "lscpu.txt", "mounts.txt", "sysfs.txt"]


def _no_programs(_name: str) -> str | None:
    return None


def test_this_host_is_read() -> None:
    files = {each.name: each for each in collect_host()}
    assert list(files) == OS_FILES  # no lscpu -J: one lscpu (and no sysctl program: /proc/sys is read)
    assert sorted(files) == sorted(collected_file_names())  # the kinds the registry marks collected
    # Verbatim: MemTotal, the first line, does not change between two reads.
    assert (files["meminfo.txt"].text or "").splitlines()[0] == Path("/proc/meminfo").read_text().splitlines()[0]
    assert (files["meminfo.txt"].text or "").startswith("MemTotal:")
    assert "kernel.ostype = Linux\n" in (files["sysctl.txt"].text or "")
    assert " / " in (files["mounts.txt"].text or "")
    if shutil.which("lscpu"):
        assert "Architecture:" in (files["lscpu.txt"].text or "")
    enabled = Path("/sys/kernel/mm/transparent_hugepage/enabled")
    if enabled.exists():
        assert f"{enabled}:{enabled.read_text().strip()}\n" in (files["sysfs.txt"].text or "")


def test_proc_sys_walk_matches_sysctl() -> None:
    if shutil.which("sysctl") is None:
        pytest.skip("no sysctl program to compare with")
    walked, _, _ = walk_proc_sys(Path("/proc/sys"))
    printed = subprocess.run(["sysctl", "-a"], capture_output=True, text=True, check=False).stdout

    def keys(text: str) -> set[str]:
        return {line.split(" = ", 1)[0] for line in text.splitlines()}

    assert keys(walked) == keys(printed)
    stable = {"kernel.ostype", "vm.swappiness", "vm.overcommit_memory", "kernel.shmmax", "net.ipv4.tcp_rmem"}
    assert {line for line in walked.splitlines() if line.split(" = ")[0] in stable} == {
        line for line in printed.splitlines() if line.split(" = ")[0] in stable}


def test_proc_sys_walk_on_a_prepared_tree(tmp_path: Path) -> None:
    proc_sys = tmp_path / "sys"
    files = {
        "kernel/ostype": "Linux\n",
        "net/ipv4/tcp_rmem": "4096\t131072\t6291456\n",
        "net/ipv4/conf/eth0.100/rp_filter": "1\n",
        "net/ipv4/neigh/lo/retrans_time": "100\n",
        "dev/cdrom/info": "CD-ROM information\n\ndrive name:\n",
        "vm/swappiness": "60\n",
    }
    for name, text in files.items():
        (proc_sys / name).parent.mkdir(parents=True, exist_ok=True)
        (proc_sys / name).write_text(text)
    (proc_sys / "vm" / "gone").symlink_to(tmp_path / "nowhere")
    (proc_sys / "kernel" / "cad_pid").write_text("1\n")
    (proc_sys / "kernel" / "cad_pid").chmod(0o600)  # the kernel keeps it from other users
    text, skipped, private = walk_proc_sys(proc_sys)
    assert text == (
        "dev.cdrom.info = CD-ROM information\n"
        "dev.cdrom.info = \n"
        "dev.cdrom.info = drive name:\n"
        "kernel.cad_pid = 1\n"
        "kernel.ostype = Linux\n"
        "net.ipv4.conf.eth0/100.rp_filter = 1\n"
        "net.ipv4.tcp_rmem = 4096\t131072\t6291456\n"
        "vm.swappiness = 60\n"
    )
    assert skipped == ["vm.gone: No such file or directory"]
    assert private == {"kernel.cad_pid"}
    read = read_sysctl(tmp_path)
    assert (read.text, read.error) == (text.replace("cad_pid = 1", "cad_pid = ***"), None)
    assert read.how == f"walk {proc_sys} (what sysctl -a prints)"


def test_sysfs_as_grep_prints_it(tmp_path: Path) -> None:
    for name, text in {
        "kernel/mm/transparent_hugepage/enabled": "always [madvise] never\n",
        "kernel/mm/transparent_hugepage/defrag": "always defer defer+madvise [madvise] never\n",
        "block/sda/queue/scheduler": "none [mq-deadline]\n",
        "block/sda/queue/rotational": "1\n",
        "block/sda/queue/read_ahead_kb": "128\n",
        "block/nvme0n1/queue/scheduler": "[none]\n",
        "block/nvme0n1/queue/rotational": "0\n",
    }.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    sysfs = read_sysfs(tmp_path)
    assert sysfs.text == (
        "/sys/kernel/mm/transparent_hugepage/enabled:always [madvise] never\n"
        "/sys/kernel/mm/transparent_hugepage/defrag:always defer defer+madvise [madvise] never\n"
        "/sys/block/nvme0n1/queue/scheduler:[none]\n"
        "/sys/block/sda/queue/scheduler:none [mq-deadline]\n"
        "/sys/block/nvme0n1/queue/rotational:0\n"
        "/sys/block/sda/queue/rotational:1\n"
        "/sys/block/sda/queue/read_ahead_kb:128\n"
    )
    assert sysfs.warnings == ["/sys/fs/cgroup/memory.max: No such file or directory"]
    assert read_sysfs(tmp_path / "empty").error == "none of the sysfs files could be read"


def test_what_cannot_be_read_is_an_error_not_an_exception(tmp_path: Path) -> None:
    meminfo = read_meminfo(tmp_path)
    assert (meminfo.text, meminfo.error) == (None, f"{tmp_path}/meminfo: No such file or directory")
    lscpu = read_lscpu(which=_no_programs)
    assert (lscpu.name, lscpu.error) == (
        "lscpu.txt", "lscpu: command not found (in a directory of PATH that only you or root may write to)")


def test_host_only_collection(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    snapshot = collect_command(tmp_path / "snap", None, host_only=True)
    assert snapshot == tmp_path / "snap"
    written = sorted(path.name for path in snapshot.iterdir())
    manifest = json.loads((snapshot / "collect.json").read_text())
    assert written == sorted(["collect.json", *(each["name"] for each in manifest["files"])])
    assert {each["name"] for each in manifest["files"]} | {each["name"] for each in manifest["failed"]} == set(
        OS_FILES)
    assert manifest["server"] is None
    assert manifest["command"] == f"pgvet collect --output {tmp_path / 'snap'} --host-only"
    assert manifest["page_size"] == os.sysconf("SC_PAGE_SIZE")
    for each in manifest["files"]:
        assert (snapshot / each["name"]).stat().st_size == each["bytes"] > 0
    assert capsys.readouterr().out == ""


def test_default_output_name() -> None:
    from datetime import UTC, datetime

    assert default_output(datetime(2026, 1, 22, 10, 15, 0, tzinfo=UTC), "db1") == Path(
        "pgvet-snapshot-db1-20260122T101500Z")


@pytest.mark.parametrize("kind", [kind for kind in INPUT_KINDS if kind.collected], ids=lambda kind: kind.name)
def test_collected_files_parse_with_their_kinds_parser(kind: InputKind) -> None:
    files = {each.name: each for each in collect_host()}
    if files.get(kind.file_name) is None or files[kind.file_name].text is None:
        pytest.skip(f"{kind.file_name} could not be read on this machine")
    parsed = kind.parser()(files[kind.file_name].text, kind.file_name)
    assert parsed, f"{kind.parser_function} found nothing in {kind.file_name}"


def test_no_proc_sys(tmp_path: Path) -> None:
    os.mkdir(tmp_path / "proc")
    result = read_sysctl(tmp_path / "proc")
    assert result.error == f"{tmp_path / 'proc' / 'sys'}: No such file or directory"


def test_the_page_size_collect_measured_is_the_hosts(tmp_path: Path) -> None:
    # ppc64le and arm64 kernels of 64 kB pages show it in no other file of a snapshot: CommitLimit's arithmetic and
    # the page-table estimate took 4 kB unless host.yaml said otherwise
    snapshot = collect_command(tmp_path / "snap", None, host_only=True)
    manifest_path = snapshot / "collect.json"
    manifest = json.loads(manifest_path.read_text())
    manifest["page_size"] = 65536
    manifest_path.write_text(json.dumps(manifest, indent=2))
    (snapshot / "host.yaml").write_text("page_size: 4096\n")  # measured first, as the RAM and the CPUs are
    fact = load_host(snapshot).facts["host.page_size"]
    assert (fact.value, fact.source.path) == (65536, "collect.json")
    manifest["page_size"] = 65537
    manifest_path.write_text(json.dumps(manifest, indent=2))
    [error] = lint([snapshot], LintOptions()).errors
    assert "page_size 65537 is no kernel's base page size" in error.message and error.source is not None
    assert error.source.line == next(number for number, line in enumerate(manifest_path.read_text().splitlines(), 1)
                                     if '"page_size"' in line)


@pytest.mark.parametrize("entry", ["", ".", "bin", "{shared}", "{renamable}"])
def test_lscpu_is_run_only_from_a_directory_of_path_no_other_user_may_write(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, entry: str) -> None:
    # collect runs as root: a PATH with an empty entry, '.', a relative directory or one others may write to (a
    # sudo -E, a shell profile) had it run an lscpu planted in the current directory (a cloned repository) or there;
    # and so did a directory of one's own in one others may write to, which they may rename and replace by theirs.
    marker = tmp_path / "ran"
    shared = tmp_path / "shared"
    renamable = tmp_path / "open" / "bin"
    for directory in (tmp_path / "work", tmp_path / "work" / "bin", shared, renamable.parent, renamable):
        directory.mkdir()
    shared.chmod(0o1777)
    renamable.parent.chmod(0o777)
    for directory in (tmp_path / "work", tmp_path / "work" / "bin", shared, renamable):
        planted = directory / "lscpu"
        planted.write_text(f"#!/bin/sh\ntouch {marker}\necho 'Architecture: x86_64'\n")
        planted.chmod(0o755)
    monkeypatch.chdir(tmp_path / "work")
    system = os.path.dirname(shutil.which("lscpu") or "/usr/bin/lscpu")
    monkeypatch.setenv("PATH", os.pathsep.join([entry.format(shared=shared, renamable=renamable), system]))
    lscpu = read_lscpu()
    assert not marker.exists()
    if shutil.which("lscpu", path=system) is not None:
        assert lscpu.text is not None and "Architecture" in lscpu.text  # the system's, found further on
