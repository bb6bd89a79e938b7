"""Files pgvet writes (issue #25, item 6): whole or not at all, never through a link, with the mode they should
have, a failure naming the file; and text from the inputs never starts a line of its own in what `pgvet fix`
prints or writes."""

from __future__ import annotations

import errno
import json
import os
import shutil
import stat
from pathlib import Path

import pytest
from typer.testing import CliRunner

from as_user import NOBODY_UID, needs_root
from conftest import FIXTURES
from pgvet import output_file
from pgvet.cli import app
from pgvet.findings import Finding, Fix, HostResult
from pgvet.fix.writer import consolidate, render
from pgvet.inputs.sysctl import parse_sysctl_conf
from pgvet.output_file import OutputFile, write_file

runner = CliRunner()


def umask() -> int:
    value = os.umask(0)
    os.umask(value)
    return value


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_baseline_create_does_not_write_through_a_link(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A repository holding `pgvet-baseline.json -> ~/.bashrc`: `baseline create` overwrote the .bashrc."""
    bashrc = tmp_path / "home" / ".bashrc"
    bashrc.parent.mkdir()
    bashrc.write_text("alias ll='ls -l'\n")
    repository = tmp_path / "repository"
    shutil.copytree(FIXTURES / "small-vm", repository / "host")
    (repository / "pgvet-baseline.json").symlink_to(bashrc)
    monkeypatch.chdir(repository)
    result = runner.invoke(app, ["baseline", "create", "host"])
    assert result.exit_code == 2
    assert result.stderr == "pgvet: error: cannot write pgvet-baseline.json: a symbolic link: pgvet writes no file " \
                            "through a link\n"
    assert bashrc.read_text() == "alias ll='ls -l'\n" and (repository / "pgvet-baseline.json").is_symlink()
    assert sorted(os.listdir(repository)) == ["host", "pgvet-baseline.json"]


class _FullDisk:
    """A file whose writes fail as on a full disk."""

    def __init__(self, real: object) -> None:
        self.real = real

    def __getattr__(self, name: str) -> object:
        return getattr(self.real, name)

    def write(self, data: bytes) -> int:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


@pytest.mark.parametrize("where", ["write", "fsync"])
def test_a_baseline_on_a_full_disk_is_named_and_the_old_one_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                 where: str) -> None:
    """A full disk left a truncated baseline, and the message said "cannot write standard output"."""
    shutil.copytree(FIXTURES / "small-vm", tmp_path / "host")
    monkeypatch.chdir(tmp_path)
    assert runner.invoke(app, ["baseline", "create", "host"]).exit_code == 0
    before = Path("pgvet-baseline.json").read_bytes()
    (tmp_path / "host" / "postgresql.conf").write_text("")  # fewer findings: update would rewrite the file
    if where == "write":
        real_open = open
        monkeypatch.setattr(output_file, "open", lambda *args: _FullDisk(real_open(*args)), raising=False)
    else:
        def full(descriptor: int) -> None:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

        monkeypatch.setattr(os, "fsync", full)
    result = runner.invoke(app, ["baseline", "update", "host"])  # the default file, pgvet-baseline.json
    assert result.exit_code == 2
    assert result.stderr == "pgvet: error: cannot write pgvet-baseline.json: No space left on device\n"
    assert Path("pgvet-baseline.json").read_bytes() == before
    assert sorted(os.listdir(tmp_path)) == ["host", "pgvet-baseline.json"]  # no temporary file left


def test_a_report_on_a_full_disk_leaves_no_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def full(descriptor: int) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fsync", full)
    result = runner.invoke(app, ["lint", str(FIXTURES / "small-vm"), "-f", "json", "-o", str(tmp_path / "r.json")])
    assert result.exit_code == 2 and result.stderr.endswith(f"cannot write {tmp_path / 'r.json'}: No space left on "
                                                            "device\n")
    assert os.listdir(tmp_path) == []


def test_written_files_reach_the_disk_before_they_take_the_place_of_the_old(tmp_path: Path,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    synced: list[str] = []
    real_fsync, real_replace = os.fsync, os.replace
    monkeypatch.setattr(os, "fsync", lambda descriptor: (synced.append("fsync"), real_fsync(descriptor))[1])
    monkeypatch.setattr(os, "replace", lambda *paths, **directories: (synced.append("rename"),
                                                                      real_replace(*paths, **directories))[1])
    write_file(tmp_path / "file", b"text")
    assert synced == ["fsync", "rename", "fsync"]  # the file, then the directory holding the new name
    assert (tmp_path / "file").read_bytes() == b"text"


def test_the_temporary_file_is_not_made_through_a_link(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The new file beside the target is made with O_EXCL|O_NOFOLLOW: a link at its name is not followed."""
    opened: list[int] = []
    real_open = os.open

    def recording(path: str, flags: int, mode: int = 0o777, **keywords: int) -> int:
        if str(path).endswith(output_file.TEMPORARY_SUFFIX):
            opened.append(flags)
        return real_open(path, flags, mode, **keywords)

    monkeypatch.setattr(os, "open", recording)
    write_file(tmp_path / "file", b"text")
    assert len(opened) == 1 and opened[0] & os.O_EXCL and opened[0] & os.O_NOFOLLOW and opened[0] & os.O_CREAT


def test_a_stream_is_written_where_it_is_but_a_file_behind_a_link_is_not(tmp_path: Path) -> None:
    with OutputFile(Path(os.devnull), streams=True) as out:
        out.write(b"nothing")
    (tmp_path / "null").symlink_to(os.devnull)
    with OutputFile(tmp_path / "null", streams=True) as out:
        out.write(b"nothing")
    (tmp_path / "file").write_text("kept\n")
    (tmp_path / "link").symlink_to(tmp_path / "file")
    from pgvet.errors import UsageError

    with pytest.raises(UsageError, match="a symbolic link"):
        OutputFile(tmp_path / "link", streams=True)
    with pytest.raises(UsageError, match="not a regular file"):
        OutputFile(Path(os.devnull))  # a baseline is a file
    assert (tmp_path / "file").read_text() == "kept\n"


def test_modes_new_files_replaced_files_and_private_hosts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """New files 0644 (less the umask); a file replaced keeps its mode; made from hosts others may not read (a
    directory or a file of theirs), 0600, and a replaced file loses what let others read it."""
    public = tmp_path / "public"
    shutil.copytree(FIXTURES / "small-vm", public)
    private = tmp_path / "private"
    shutil.copytree(FIXTURES / "small-vm", private)
    (private / "postgresql.conf").chmod(0o600)
    monkeypatch.chdir(tmp_path)
    assert runner.invoke(app, ["baseline", "create", "public", "-o", "public.json"]).exit_code == 0
    assert mode(tmp_path / "public.json") == 0o644 & ~umask()
    assert runner.invoke(app, ["baseline", "create", "public", "private", "-o", "both.json"]).exit_code == 0
    assert mode(tmp_path / "both.json") == 0o600
    (tmp_path / "public.json").chmod(0o640)
    assert runner.invoke(app, ["baseline", "update", "public.json", "public"]).exit_code == 0
    assert mode(tmp_path / "public.json") == 0o640
    assert runner.invoke(app, ["baseline", "update", "public.json", "public", "private"]).exit_code == 0
    assert mode(tmp_path / "public.json") == 0o600
    # reports: the same rule
    result = runner.invoke(app, ["lint", "public", "private", "-f", "json", "-o", "report.json", "-f", "sarif",
                                 "-o", "report.sarif"])
    assert result.exit_code == 1 and mode(tmp_path / "report.json") == mode(tmp_path / "report.sarif") == 0o600
    assert runner.invoke(app, ["lint", "public", "-f", "json", "-o", "public-report.json"]).exit_code == 1
    assert mode(tmp_path / "public-report.json") == 0o644 & ~umask()
    private.chmod(0o700)  # a private directory, its files readable
    (private / "postgresql.conf").chmod(0o644)
    assert runner.invoke(app, ["lint", "private", "-f", "json", "-o", "private-report.json"]).exit_code == 1
    assert mode(tmp_path / "private-report.json") == 0o600


def test_a_private_file_deeper_in_the_host_makes_what_is_written_private(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """Only the host directory and the files directly in it were looked at: a 0600 file in a 0700 conf.d (its
    value quoted by findings) made a 0644 report, a baseline and fix --write's new file readable by all."""
    host = tmp_path / "host"
    shutil.copytree(FIXTURES / "small-vm", host)
    host.chmod(0o755)
    with (host / "postgresql.conf").open("a") as conf:
        conf.write("include_dir 'conf.d'\n")
    (host / "conf.d").mkdir()
    (host / "conf.d" / "tuning.conf").write_text("work_mem = '1GB'\n")
    monkeypatch.chdir(tmp_path)
    assert runner.invoke(app, ["lint", "host", "-f", "json", "-o", "open.json"]).exit_code == 1
    assert mode(tmp_path / "open.json") == 0o644 & ~umask()
    for closed in (lambda: (host / "conf.d" / "tuning.conf").chmod(0o600),  # the file
                   lambda: (host / "conf.d").chmod(0o700),  # the directory on the way: its files are theirs neither
                   lambda: (host / "conf.d").chmod(0o744)):  # listed, not entered
        (host / "conf.d").chmod(0o755)
        (host / "conf.d" / "tuning.conf").chmod(0o644)
        closed()
        for name in ("report.json", "baseline.json"):
            (tmp_path / name).unlink(missing_ok=True)
        result = runner.invoke(app, ["lint", "host", "-f", "json", "-o", "report.json"])
        assert result.exit_code == 1 and "1GB" in (tmp_path / "report.json").read_text()
        assert mode(tmp_path / "report.json") == 0o600
        assert runner.invoke(app, ["baseline", "create", "host", "-o", "baseline.json"]).exit_code == 0
        assert mode(tmp_path / "baseline.json") == 0o600
    (host / "conf.d").chmod(0o755)
    assert not output_file.is_private(str(host))
    monkeypatch.setattr(output_file, "PRIVACY_SCAN_ENTRIES", 20)
    for number in range(20):  # more than is looked at: private, for all pgvet knows
        (host / "conf.d" / f"{number}.txt").touch()
    assert output_file.is_private(str(host))


@needs_root
def test_a_replaced_file_keeps_its_owner(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """root fixing postgres's postgresql.conf must leave it postgres's, or the server cannot read it."""
    host = tmp_path / "host"
    host.mkdir()
    (host / "postgresql.conf").write_text("autovacuum = off\n")
    (host / "postgresql.conf").chmod(0o640)
    os.chown(host / "postgresql.conf", NOBODY_UID, NOBODY_UID)
    result = runner.invoke(app, ["fix", str(host), "--write", "--select", "PGV801"])
    assert result.exit_code == 0, result.output
    for name in ("postgresql.conf", "postgresql.conf.bak"):
        status = (host / name).stat()
        assert (status.st_uid, status.st_gid, stat.S_IMODE(status.st_mode)) == (NOBODY_UID, NOBODY_UID, 0o640)
    assert (host / "postgresql.conf").read_text() == "autovacuum = 'on'\n"


def _shared_directory_and_private_host(tmp_path: Path) -> tuple[Path, Path]:
    """A directory every user may write to (as /tmp: 1777), and a host directory others may not read."""
    shared = tmp_path / "tmp"
    shared.mkdir()
    shared.chmod(0o1777)
    private = tmp_path / "host"
    shutil.copytree(FIXTURES / "small-vm", private)
    private.chmod(0o700)
    return shared, private


@needs_root
def test_a_file_another_user_planted_where_others_may_write_is_not_handed_the_output(tmp_path: Path) -> None:
    """`-o /tmp/report.json` as root, where another user had made /tmp/report.json (0666): the report took its
    owner and mode, theirs to read (the kernel's protected_regular refuses to open such a file for root)."""
    shared, private = _shared_directory_and_private_host(tmp_path)
    for name in ("report.json", "pgvet-baseline.json"):
        planted = shared / name
        planted.write_text("")
        planted.chmod(0o666)
        os.chown(planted, NOBODY_UID, NOBODY_UID)
    for command in (["lint", str(private), "-f", "json", "-o", str(shared / "report.json")],
                    ["baseline", "create", str(private), "--output", str(shared / "pgvet-baseline.json")]):
        result = runner.invoke(app, command)
        assert result.exit_code == 2, result.output
        assert "owned by uid 12345" in result.stderr and "others may write to" in result.stderr, result.stderr
    for name in ("report.json", "pgvet-baseline.json"):
        status = (shared / name).stat()
        assert (status.st_uid, status.st_size) == (NOBODY_UID, 0)
    assert not [name for name in os.listdir(shared) if name.endswith(output_file.TEMPORARY_SUFFIX)]


@needs_root
def test_a_pipe_another_user_planted_where_others_may_write_is_not_handed_the_output(tmp_path: Path) -> None:
    """`-o /tmp/report.json` as root, where another user had made a named pipe and read from it: a report may go to
    a pipe, and theirs got the report of a private host as it was written (protected_fifos guards only O_CREAT)."""
    shared, private = _shared_directory_and_private_host(tmp_path)
    os.mkfifo(shared / "theirs", 0o666)
    os.chown(shared / "theirs", NOBODY_UID, NOBODY_UID)
    (shared / "report.json").symlink_to(shared / "theirs")
    os.lchown(shared / "report.json", NOBODY_UID, NOBODY_UID)
    for name in ("theirs", "report.json"):  # the pipe, and a link to it
        # a writer would wait for a reader: the refusal must come before the open
        result = runner.invoke(app, ["lint", str(private), "-f", "json", "-o", str(shared / name)])
        assert result.exit_code == 2, result.output
        assert "owned by uid 12345" in result.stderr and "others may write to" in result.stderr, result.stderr
    os.chown(shared / "theirs", 0, 0)  # one's own pipe is a stream, as ever
    reader = os.open(shared / "theirs", os.O_RDONLY | os.O_NONBLOCK)
    try:
        assert runner.invoke(app, ["lint", str(private), "-f", "concise", "-o", str(shared / "theirs")]).exit_code == 1
        assert b"PGV" in os.read(reader, 1 << 20)
    finally:
        os.close(reader)


def test_a_report_written_in_place_is_not_written_into_a_file_swapped_in_after_its_check(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A report kept writable in a directory pgvet may not add to is written in place; another user who may write
    that directory and puts a file of theirs there between pgvet's check of the report (lstat: a regular file,
    not planted) and its open must not be handed the output: the file opened is fstat'ed and must be the one
    checked. The swap happens exactly at the open, not by a race."""
    report, planted = tmp_path / "report.json", tmp_path / "theirs.json"
    report.write_text("old report\n")
    planted.write_text("theirs\n")
    real_open = os.open

    def swapping(path: str, flags: int, mode: int = 0o777, **keywords: int) -> int:
        if str(path).endswith(output_file.TEMPORARY_SUFFIX):
            raise PermissionError(errno.EACCES, "Permission denied", path)
        if os.path.basename(str(path)) == report.name and planted.exists():
            os.link(planted, tmp_path / "kept.json")
            os.replace(planted, report)  # their file takes the report's name
        return real_open(path, flags, mode, **keywords)

    monkeypatch.setattr(os, "open", swapping)
    result = runner.invoke(app, ["lint", str(FIXTURES / "small-vm"), "-f", "json", "-o", str(report)])
    monkeypatch.undo()
    assert result.exit_code == 2, result.output
    assert f"cannot write {report}: the file was replaced" in result.output
    assert report.read_text() == "theirs\n" and (tmp_path / "kept.json").samefile(report)


def test_fix_write_of_a_private_host_makes_its_new_file_private(tmp_path: Path) -> None:
    host = tmp_path / "host"
    shutil.copytree(FIXTURES / "small-vm", host)
    host.chmod(0o700)
    runner.invoke(app, ["fix", str(host), "--write"])
    assert mode(host / "sysctl.d" / "90-postgresql.conf") == 0o600


INJECTED = "kernel.core_pattern = |/tmp/evil %p"


@pytest.mark.parametrize("how", ["host.yaml", "directory"])
def test_a_host_name_cannot_put_a_line_in_the_fix(tmp_path: Path, how: str) -> None:
    """`name: "x\\nkernel.core_pattern = |/tmp/evil %p"` in host.yaml put a live kernel.core_pattern line in the
    output of `pgvet fix`, which is meant to be saved as a sysctl.d file. A directory's name can hold one too."""
    name = f"db\n{INJECTED.replace('/', '-')}" if how == "directory" else "db"
    host = tmp_path / name
    shutil.copytree(FIXTURES / "small-vm", host)
    named = f'name: "db\\n{INJECTED}"' if how == "host.yaml" else ""  # else the directory's name is the host's
    (host / "host.yaml").write_text((host / "host.yaml").read_text().replace("name: web-db-01", named))
    result = runner.invoke(app, ["fix", str(host)])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0].startswith("# pgvet fix for db\\nkernel.core_pattern")
    assert not any(line.startswith("kernel.core_pattern") for line in lines)
    # what a sysctl.d file made of its sysctl.d part (the lines up to the first blank one) would set
    sysctl_d = result.stdout.split("\n\n")[1]
    declared = {setting.key for setting in parse_sysctl_conf(sysctl_d, "fix")}
    assert "kernel.core_pattern" not in declared and "vm.swappiness" in declared
    runner.invoke(app, ["fix", str(host), "--write"])
    written = (host / "sysctl.d" / "90-postgresql.conf").read_text()
    assert "core_pattern" not in written


def _finding(fix: Fix, rule_id: str = "PGV900", name: str = "a-rule") -> Finding:
    return Finding(rule_id, name, "warning", "t", "m", "host", rule_id, fix=fix)


def test_a_suggested_value_holding_a_line_break_is_not_suggested() -> None:
    """A value computed from the inputs (a string setting) is never written into a line of its own."""
    from pgvet.engine.planner import Change, Setting, Target
    from pgvet.snapshot.facts import HostFacts

    rule = ["PGV900 a-rule"]
    target = Target(changes=[
        Change(Setting("sysctl", "kernel.core_pattern"), None, f"core\n{INJECTED}", rule, "A rule"),
        Change(Setting("postgresql", "work_mem"), "4MB", "4MB\nfsync = off", rule, "A rule"),
        Change(Setting("sysctl", "vm.swappiness"), "60", "10", ["PGV130 swappiness-too-high"], "Swappiness")])
    consolidated = consolidate(HostResult(HostFacts(name="db", root="db"), target=target))
    assert set(consolidated.sysctl) == {"vm.swappiness"} and consolidated.postgresql == {}
    text = render(consolidated)
    assert "fsync" not in "".join(line for line in text.splitlines() if not line.startswith("#"))
    assert "PGV900 a-rule: kernel.core_pattern = core\\nkernel.core_pattern = |/tmp/evil %p: not suggested, it " \
           "holds a control character" in text
    assert {setting.key for setting in parse_sysctl_conf(text, "fix")} == {"vm.swappiness"}


def test_a_baseline_escapes_a_host_name_as_json(tmp_path: Path) -> None:
    """Baseline entries are JSON: a host name with a line break is escaped by JSON itself."""
    host = tmp_path / "host"
    shutil.copytree(FIXTURES / "small-vm", host)
    text = (host / "host.yaml").read_text().replace("name: web-db-01", f'name: "db\\n{INJECTED}"')
    (host / "host.yaml").write_text(text)
    assert runner.invoke(app, ["baseline", "create", str(host), "-o", str(tmp_path / "b.json")]).exit_code == 0
    raw = (tmp_path / "b.json").read_text()
    assert not any(line.startswith("kernel") for line in raw.splitlines())
    assert json.loads(raw)["findings"]


def test_a_report_to_dev_stdout_redirected_to_a_file_is_written(tmp_path: Path) -> None:
    """/dev/stdout is a link: to the file standard output was redirected to, it is pgvet's own output, not a
    link planted to choose what is overwritten."""
    import subprocess
    import sys

    with (tmp_path / "out.json").open("w") as out:
        done = subprocess.run([sys.executable, "-m", "pgvet", "lint", str(FIXTURES / "small-vm"), "-f", "json", "-o",
                               "/dev/stdout"], stdout=out, stderr=subprocess.PIPE, text=True, timeout=120)
    assert done.returncode == 1, done.stderr
    assert json.loads((tmp_path / "out.json").read_text())["summary"]["hosts"] == 1


def test_missing_parent_directories_are_made_for_reports_and_baselines(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """`-o ci/pgvet-baseline.json` as the docs show it, without a `mkdir ci`, was refused (No such file or
    directory): the missing directories are made, 0755 less the umask, 0700 when the hosts are private."""
    public = tmp_path / "public"
    shutil.copytree(FIXTURES / "small-vm", public)
    private = tmp_path / "private"
    shutil.copytree(FIXTURES / "small-vm", private)
    private.chmod(0o700)
    monkeypatch.chdir(tmp_path)
    assert runner.invoke(app, ["baseline", "create", "public", "-o", "ci/pgvet-baseline.json"]).exit_code == 0
    assert json.loads((tmp_path / "ci" / "pgvet-baseline.json").read_text())
    assert mode(tmp_path / "ci") == 0o755 & ~umask()
    result = runner.invoke(app, ["lint", "public", "-f", "json", "-o", "out/a/b/report.json", "-f", "sarif", "-o",
                                 "out/pgvet.sarif", "-f", "junit", "-o", "junit/pgvet.xml"])
    assert result.exit_code == 1, result.output
    assert mode(tmp_path / "out") == mode(tmp_path / "out" / "a" / "b") == 0o755 & ~umask()
    assert all((tmp_path / name).is_file() for name in ("out/a/b/report.json", "out/pgvet.sarif", "junit/pgvet.xml"))
    # made from a private host: nobody else may look into the directories made for it either
    assert runner.invoke(app, ["lint", "private", "-f", "json", "-o", "secret/x/r.json"]).exit_code == 1
    assert mode(tmp_path / "secret") == mode(tmp_path / "secret" / "x") == 0o700
    assert mode(tmp_path / "secret" / "x" / "r.json") == 0o600
    assert runner.invoke(app, ["baseline", "create", "private", "-o", "hidden/b.json"]).exit_code == 0
    assert mode(tmp_path / "hidden") == 0o700


def test_directories_made_for_an_output_follow_no_link_and_go_when_it_fails(tmp_path: Path,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """A directory pgvet makes is opened without following a link: one put at its name (between the mkdir and
    the open, or before) is refused, nothing written through it. A failed write leaves no directory behind."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    real_mkdir = os.mkdir

    def raced(path: str, mode: int = 0o777, **keywords: int) -> None:
        real_mkdir(path, mode, **keywords)
        if path == "b":  # swapped for a link as soon as it is made
            os.rmdir(path, **keywords)
            os.symlink(elsewhere, path, **keywords)

    monkeypatch.setattr(os, "mkdir", raced)
    from pgvet.errors import UsageError

    with pytest.raises(UsageError, match=r"cannot write .*a/b/c/file: .*symbolic link"):
        write_file(tmp_path / "a" / "b" / "c" / "file", b"text")
    assert list(elsewhere.iterdir()) == []
    monkeypatch.setattr(os, "mkdir", real_mkdir)

    def full(descriptor: int) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(UsageError, match="No space left on device"):
        write_file(tmp_path / "new" / "deeper" / "file", b"text")
    assert not (tmp_path / "new").exists()
