"""`pgvet fix`: the consolidated change, conflicts resolved, written only when asked."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import kernelsim
from as_user import NOBODY_UID, needs_root
from conftest import FIXTURES, require_postgres
from pgvet.cli import app

runner = CliRunner()


def test_fix_prints_sysctl_postgresql_and_alter_system_without_writing(tmp_path: Path) -> None:
    host = tmp_path / "host"
    shutil.copytree(FIXTURES / "big-server", host)
    before = (host / "postgresql.conf").read_text()
    result = runner.invoke(app, ["fix", str(host)])
    assert result.exit_code == 0, result.output
    assert "vm.zone_reclaim_mode = 0" in result.output
    assert "ALTER SYSTEM SET shared_buffers = '48234MB';" in result.output
    # The ratio variants would zero the byte ones: the bytes win.
    assert "vm.dirty_bytes = 536870912" in result.output and "\nvm.dirty_ratio = " not in result.output
    # a diff: each setting, its current and target values, the rules that ask for it
    assert "#   shared_buffers                138GB → 48234MB   shared_buffers is above 40 % of RAM (PGV501)" in (
        result.output)
    # one target: the pool is the one the new shared_buffers needs, and the ratio the one that pool leaves
    assert "#   vm.nr_hugepages            60000 → 25200      The reserved huge page pool is far above what " \
           "PostgreSQL needs (PGV113)" in result.output
    assert "#   vm.overcommit_ratio           90 → 70         CommitLimit" in result.output
    assert "PGV536 too-many-connections: By hand, once a pooler holds the clients" in result.output
    assert (host / "postgresql.conf").read_text() == before
    assert not (host / "sysctl.d").exists()


def test_fix_write_edits_in_place_with_a_backup(tmp_path: Path) -> None:
    host = tmp_path / "host"
    shutil.copytree(FIXTURES / "small-vm", host)
    original = (host / "postgresql.conf").read_text()
    result = runner.invoke(app, ["fix", str(host), "--write"])
    assert result.exit_code == 1, result.output  # work_mem is left: postgresql.auto.conf sets it
    assert (host / "postgresql.conf.bak").read_text() == original
    edited = (host / "postgresql.conf").read_text().splitlines()
    assert "random_page_cost = '1.1'" in edited  # value replaced
    assert "password_encryption = 'scram-sha-256'" in edited
    # max_connections is never lowered by a fix (a standby with less than its primary would not start)
    assert "max_connections = 200\t\t\t# (change requires restart)" in edited
    # ssl-off fires, but ssl = on without a certificate would stop the server: its fix is text, not written
    assert "PGV833 ssl-off" in result.output and not any(line.startswith("ssl") for line in edited)
    declared = (host / "sysctl.d" / "90-postgresql.conf").read_text()
    assert "vm.overcommit_memory = 2\n" in declared and "vm.swappiness = 10\n" in declared
    umask = os.umask(0)
    os.umask(umask)
    assert (host / "sysctl.d" / "90-postgresql.conf").stat().st_mode & 0o777 == 0o644 & ~umask  # not mkstemp's
    # What was written is now declared: the declared-vs-running rule sees it until sysctl --system runs.
    relint = runner.invoke(app, ["lint", str(host), "--format", "concise", "--select", "PGV901"])
    assert "vm.swappiness is declared 10 but the running kernel has 60" in relint.output


def _host(tmp_path: Path, conf: str | bytes, **files: str) -> Path:
    """A host with the small VM's kernel and machine inputs, and the given PostgreSQL files."""
    host = tmp_path / "host"
    shutil.copytree(FIXTURES / "small-vm", host)
    (host / "postgresql.auto.conf").unlink()
    (host / "postgresql.conf").write_bytes(conf if isinstance(conf, bytes) else conf.encode())
    for name, text in files.items():
        (host / name.replace("__", "/")).parent.mkdir(parents=True, exist_ok=True)
        (host / name.replace("__", "/")).write_text(text)
    return host


def _fix(host: Path, *select: str) -> tuple[int, str]:
    arguments = ["fix", str(host), "--write"] + [f"--select={rule}" for rule in select]
    result = runner.invoke(app, arguments)
    return result.exit_code, result.output


def test_fix_write_changes_the_named_parameter_not_one_whose_name_it_begins(tmp_path: Path) -> None:
    # autovacuum and jit begin autovacuum_max_workers and jit_above_cost: a pattern matching the name as a
    # prefix rewrote those lines (`autovacuum'on' = 5`), which PostgreSQL then refused to start with.
    host = _host(tmp_path, "autovacuum = off\nautovacuum_max_workers = 5\njit_above_cost = 200000\n"
                           "max_parallel_workers_per_gather = 2\n")
    code, output = _fix(host, "PGV801", "PGV708")
    assert code == 0, output
    assert (host / "postgresql.conf").read_text().splitlines() == [
        "autovacuum = 'on'", "autovacuum_max_workers = 5", "jit_above_cost = 200000",
        "max_parallel_workers_per_gather = 2", "jit = 'off'    # pgvet fix: PGV708 jit-on-oltp"]


def test_fix_write_edits_the_line_that_takes_effect(tmp_path: Path) -> None:
    # set twice in postgresql.conf and last in an included file: the included file's line is the one
    host = _host(tmp_path, "Autovacuum=off # early\ninclude 'site.conf'\nautovacuum_naptime = 1min\n",
                 **{"site.conf": "# site\n  autovacuum\t'false'   # the site's choice\n"})
    code, output = _fix(host, "PGV801")
    assert code == 0, output
    assert (host / "postgresql.conf").read_text().startswith("Autovacuum=off # early\n")
    assert (host / "site.conf").read_text() == "# site\n  autovacuum\t'on'   # the site's choice\n"
    assert (host / "site.conf.bak").read_text() == "# site\n  autovacuum\t'false'   # the site's choice\n"
    assert not (host / "postgresql.conf.bak").exists()


def test_fix_leaves_a_value_of_postgresql_auto_conf_to_alter_system_and_says_what_to_run(tmp_path: Path) -> None:
    # not a change of the target (the rest of it would be worked out with a value the files cannot give): a step
    host = _host(tmp_path, "autovacuum = off\n", **{"postgresql.auto.conf": "autovacuum = 'off'\n"})
    code, output = _fix(host, "PGV801")
    assert code == 1
    assert "0 changes, 1 step by hand" in output
    assert ("autovacuum stays as it is: ALTER SYSTEM sets it (postgresql.auto.conf:1), which overrides "
            "postgresql.conf: on the server, ALTER SYSTEM SET autovacuum = 'on'; then pgvet fix again") in output
    assert (host / "postgresql.conf").read_text() == "autovacuum = off\n"  # changing it would change nothing
    assert not (host / "postgresql.conf.bak").exists()


def test_fix_write_keeps_every_other_byte(tmp_path: Path) -> None:
    # CRLF line ends, a form feed and a bare carriage return inside lines, bytes that are not UTF-8, an
    # escape in the value replaced ('o\146f' is 'off'), no line break at the end: only the value changes.
    conf = (b"# \xe9t\xe9\r\nshared_buffers = 128MB\x0c# page\r\nwork_mem = 4MB\r# not a new line\r\n"
            b"autovacuum = 'o\\146f'   # quoted\r\nport = 5432")
    host = _host(tmp_path, conf)
    code, output = _fix(host, "PGV801", "PGV708")
    assert code == 0, output
    assert (host / "postgresql.conf").read_bytes() == conf.replace(b"'o\\146f'", b"'on'") + (
        b"\r\njit = 'off'    # pgvet fix: PGV708 jit-on-oltp\r\n")
    assert (host / "postgresql.conf.bak").read_bytes() == conf


def test_fix_write_changes_a_kernel_value_in_the_file_read_last(tmp_path: Path) -> None:
    # sysctl --system reads sysctl.d by name and sysctl.conf last: a value declared after 90-postgresql.conf
    # would undo that file's, so it is changed where it is; the others go to 90-postgresql.conf, whose own
    # lines are kept.
    host = _host(tmp_path, "max_connections = 50\n", **{
        "sysctl.d__90-postgresql.conf": "# ours\nkernel.shmmax = 1000\nvm.swappiness=30\n",
        "sysctl.d__99-site.conf": "-vm/dirty_ratio = 40 # old\n",
        "sysctl.conf": "vm.overcommit_memory = 0\r\n"})
    code, output = _fix(host, "PGV101", "PGV130", "PGV135")
    assert code == 0, output
    assert (host / "sysctl.d/90-postgresql.conf").read_text() == (
        "# ours\nkernel.shmmax = 1000\nvm.swappiness=10\nvm.dirty_background_ratio = 5\nvm.overcommit_ratio = 53\n")
    assert (host / "sysctl.d/99-site.conf").read_text() == "-vm/dirty_ratio = 10 # old\n"
    assert (host / "sysctl.conf").read_bytes() == b"vm.overcommit_memory = 2\r\n"
    assert (host / "sysctl.d/90-postgresql.conf.bak").read_text() == "# ours\nkernel.shmmax = 1000\nvm.swappiness=30\n"
    assert sorted(path.name for path in (host / "sysctl.d").iterdir()) == [
        "90-postgresql.conf", "90-postgresql.conf.bak", "99-site.conf", "99-site.conf.bak"]


def test_fix_write_looks_up_nothing_where_a_link_of_the_host_leads_out(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """A host's sysctl.d linked out was resolved on the machine (os.path.realpath) to find it leads out: whatever lies
    there was looked up (an automounter's /net/HOST mounts from that host). It is resolved beneath the directory."""
    host = _host(tmp_path, "autovacuum = off\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (host / "sysctl.d").symlink_to(outside)
    asked: list[str] = []
    real_lstat = os.lstat

    def recorded(path: Any, *args: Any, **kwargs: Any) -> os.stat_result:
        if kwargs.get("dir_fd") is None:
            asked.append(os.fspath(path))
        return real_lstat(path, *args, **kwargs)

    monkeypatch.setattr(os, "lstat", recorded)  # what os.path.realpath and islink look paths up with
    code, output = _fix(host, "PGV130")
    monkeypatch.undo()
    assert code == 1, output
    assert "sysctl.d/90-postgresql.conf leads out of the host directory (a symbolic link)" in output, output
    assert not [path for path in asked if path.startswith(str(outside))], asked
    assert list(outside.iterdir()) == []


def test_fix_write_copies_nothing_of_a_file_swapped_for_a_link_out_after_its_check(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A user who may write the host directory swaps the sysctl.d file pgvet adds to for a link to /etc/shadow
    between fix --write's check that it lies inside and its read (exactly then: the check step is wrapped): the
    file's text went into the .bak copy beside it, theirs to read. It is read beneath the host directory: refused,
    nothing written."""
    from pgvet.fix import writer

    secret = "root:$6$Zx9rTq.hash$:19000:0:99999:7:::"
    shadow = tmp_path / "shadow"
    shadow.write_text(f"kernel.shadow = {secret}\n")  # a line that parses: once read, it went into the .bak
    host = _host(tmp_path, "autovacuum = off\n", **{"sysctl.d__90-postgresql.conf": "# ours\n"})
    name = "sysctl.d/90-postgresql.conf"
    real_path_beneath = writer.real_path_beneath

    def checked_then_swapped(root: str, path: str, given: str | None = None) -> str | None:
        real = real_path_beneath(root, path, given)
        if path == name and not (host / path).is_symlink():
            (host / path).unlink()
            (host / path).symlink_to(shadow)
        return real

    monkeypatch.setattr(writer, "real_path_beneath", checked_then_swapped)
    code, output = _fix(host, "PGV130")
    assert code == 1 and (host / name).is_symlink(), output  # the change left, said; the swap happened
    assert secret not in output
    assert not [path for path in host.rglob("*") if path.is_file() and not path.is_symlink()
                and secret in path.read_text(errors="replace")]
    assert (f"left: vm.swappiness = 10: not written ({name} cannot be read: a symbolic link leads out of the "
            "directory") in output, output


def test_fix_write_writes_nothing_through_a_directory_swapped_for_a_link_out_after_its_read(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """sysctl.d swapped for a link to /etc/sysctl.d once the file to edit was read, right before it is written (the
    write step is wrapped): written by its path, the new file and its .bak went to /etc. The file is written from
    its directory opened beneath the host directory: refused, said, nothing written anywhere."""
    from pgvet.fix import writer

    elsewhere = tmp_path / "etc-sysctl.d"
    elsewhere.mkdir()
    (elsewhere / "90-postgresql.conf").write_text("# the machine's\n")
    host = _host(tmp_path, "autovacuum = off\n", **{"sysctl.d__90-postgresql.conf": "# ours\n"})
    replace = writer._replace

    def swapped_then_written(*arguments: object) -> None:
        if not (host / "sysctl.d").is_symlink():
            (host / "sysctl.d").rename(tmp_path / "sysctl.d.old")
            (host / "sysctl.d").symlink_to(elsewhere)
        replace(*arguments)  # type: ignore[arg-type]

    monkeypatch.setattr(writer, "_replace", swapped_then_written)
    code, output = _fix(host, "PGV130")
    assert code == 1, output
    assert os.listdir(elsewhere) == ["90-postgresql.conf"]
    assert (elsewhere / "90-postgresql.conf").read_text() == "# the machine's\n"
    assert ("left: vm.swappiness = 10: not written (cannot write sysctl.d/90-postgresql.conf.bak: a symbolic link "
            "leads out of the directory") in output, output


@needs_root
def test_the_bak_copy_takes_the_owner_of_the_file_read_not_of_one_swapped_in_since(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The .bak copy of a root-only file keeps its owner and mode. Swapped, once read, for a link to a file of
    another user (the write step is wrapped), the copy took that user's owner and mode: theirs to read. It takes
    what fstat said of the file read."""
    from pgvet.fix import writer

    host = _host(tmp_path, "autovacuum = off\n", **{"sysctl.d__90-postgresql.conf": "# root's only\n"})
    edited = host / "sysctl.d" / "90-postgresql.conf"
    edited.chmod(0o600)
    theirs = tmp_path / "theirs.conf"
    theirs.write_text("")
    theirs.chmod(0o644)
    os.chown(theirs, NOBODY_UID, NOBODY_UID)
    replace = writer._replace

    def swapped_then_written(*arguments: object) -> None:
        if not edited.is_symlink():
            edited.unlink()
            edited.symlink_to(theirs)
        replace(*arguments)  # type: ignore[arg-type]

    monkeypatch.setattr(writer, "_replace", swapped_then_written)
    _fix(host, "PGV130")
    copy = (host / "sysctl.d" / "90-postgresql.conf.bak").stat()
    assert (copy.st_uid, copy.st_mode & 0o777) == (0, 0o600)


def _getfacl(path: Path) -> list[str]:
    getfacl = shutil.which("getfacl")
    assert getfacl is not None
    listed = subprocess.run([getfacl, "-cn", str(path)], capture_output=True, text=True, check=True).stdout
    return [line for line in listed.splitlines() if line]


def test_a_file_fix_writes_keeps_its_acl_and_the_owning_group_gets_nothing_more(tmp_path: Path) -> None:
    """postgresql.conf 0600 with an ACL letting one user read it shows 0640 (the group bits are the ACL's mask): the
    new file and its .bak were written 0640 without the ACL, readable by the whole owning group."""
    setfacl = shutil.which("setfacl")
    if setfacl is None:
        pytest.skip("setfacl (Debian's acl package) is not installed")
    host = _host(tmp_path, "autovacuum = off\n", **{"sysctl.d__90-postgresql.conf": "# none\n"})
    conf = host / "postgresql.conf"
    conf.chmod(0o600)
    plain = host / "sysctl.d" / "90-postgresql.conf"  # no ACL
    plain.chmod(0o600)
    if subprocess.run([setfacl, "-m", f"u:{NOBODY_UID}:r", str(conf)], capture_output=True).returncode != 0:
        pytest.skip("no ACLs on this filesystem")
    acl = _getfacl(conf)
    assert "group::---" in acl and stat.S_IMODE(conf.stat().st_mode) == 0o640
    # default ACLs set since are not given to the copies (a new file takes one, its named entries opened by the mode)
    for directory in (host, plain.parent):
        subprocess.run([setfacl, "-d", "-m", "u:1:rw", str(directory)], check=True)
    code, output = _fix(host, "PGV801", "PGV130")
    assert code == 0, output
    for written in (conf, host / "postgresql.conf.bak"):
        assert _getfacl(written) == acl, written
    for written in (plain, plain.with_name("90-postgresql.conf.bak")):
        assert _getfacl(written) == ["user::rw-", "group::---", "other::---"], written


def test_fix_write_never_writes_outside_the_host_directory(tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    host = _host(tmp_path, "autovacuum = off\n")
    (host / "sysctl.d").symlink_to(outside, target_is_directory=True)
    (host / "postgresql.conf.bak").symlink_to(outside / "postgresql.conf.bak")  # refused, not followed
    code, output = _fix(host, "PGV130", "PGV801")
    assert code == 1
    assert "left: vm.swappiness = 10: not written (sysctl.d/90-postgresql.conf leads out of the host directory (a " \
        "symbolic link)" in output
    assert str(outside) not in output
    assert ("left: autovacuum = on: not written (cannot write postgresql.conf.bak: a symbolic link: pgvet writes "
            "no file through a link)") in output
    assert os.listdir(outside) == []
    assert (host / "postgresql.conf.bak").is_symlink()
    assert (host / "postgresql.conf").read_text() == "autovacuum = off\n"
    (host / "postgresql.conf.bak").unlink()
    code, output = _fix(host, "PGV801")
    assert code == 0 and (host / "postgresql.conf.bak").read_text() == "autovacuum = off\n"
    assert (host / "postgresql.conf").read_text() == "autovacuum = 'on'\n"


@pytest.mark.postgres
def test_fix_write_gives_files_postgresql_reads_as_pgvet_said(tmp_path: Path) -> None:
    """PostgreSQL judges the edited files: no error, and each fixed parameter has the fix's value."""
    from pgconf_support.oracle import shared_oracle

    require_postgres(15)
    oracle = shared_oracle(15)
    host = _host(tmp_path, "autovacuum = off\nautovacuum_max_workers = 5\njit_above_cost = 200000\n"
                           "include_dir 'conf.d'\nmax_connections = 200\n",
                 **{"conf.d__site.conf": "jit = on\r\nrandom_page_cost = 4\r\n"})
    code, output = _fix(host, "PGV801", "PGV708")
    assert code == 0, output
    oracle.install({"postgresql.conf": (host / "postgresql.conf").read_bytes(),
                    "conf.d/site.conf": (host / "conf.d/site.conf").read_bytes()})
    settings, errors = oracle.file_settings()
    assert errors == []
    effective = {row[1].partition("=")[0]: row[1].partition("=")[2] for row in settings}
    assert effective["autovacuum"] == "on" and effective["jit"] == "off"
    assert effective["autovacuum_max_workers"] == "5" and effective["jit_above_cost"] == "200000"


def test_fix_write_does_not_write_a_file_postgresql_could_not_read(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    # The edited text is read again before it is written: were a value ever written that PostgreSQL's grammar
    # refuses (here a quoting undone on purpose), the file is left as it was and the change is said.
    from pgvet.fix import writer

    monkeypatch.setattr(writer, "quote_setting", lambda value: f"{value} {value}")
    host = _host(tmp_path, "autovacuum = off\n")
    code, output = _fix(host, "PGV801")
    assert code == 1
    assert "left: autovacuum = on on: not written (pgvet could not edit postgresql.conf safely)" in output
    assert (host / "postgresql.conf").read_text() == "autovacuum = off\n"
    assert not (host / "postgresql.conf.bak").exists()


def test_fix_write_leaves_a_line_that_already_has_the_value(tmp_path: Path) -> None:
    # huge-pages-on-pool-too-small suggests huge_pages = on beside the kernel's pool: `on` stays as written
    shutil.copytree(FIXTURES / "config-repo", tmp_path / "repo")
    memory = tmp_path / "repo" / "conf.d" / "10-memory.conf"
    before = memory.read_text()
    code, output = _fix(tmp_path / "repo", "PGV110")
    assert code == 0, output
    assert "vm.nr_hugepages = " in (tmp_path / "repo" / "sysctl.d" / "90-postgresql.conf").read_text()
    assert memory.read_text() == before and "huge_pages = on\n" in before
    assert not memory.with_name("10-memory.conf.bak").exists()


def test_a_second_fix_write_writes_nothing(tmp_path: Path) -> None:
    # the running kernel (sysctl.txt) keeps its values until a reboot: the target still asks for them, and the
    # file that declares them already says so
    host = tmp_path / "h"
    shutil.copytree(FIXTURES / "small-vm", host)
    runner.invoke(app, ["fix", str(host), "--write"])
    before = {path.relative_to(host): path.read_bytes() for path in host.rglob("*") if path.is_file()}
    second = runner.invoke(app, ["fix", str(host), "--write"])
    assert "wrote " not in second.output
    assert {path.relative_to(host): path.read_bytes() for path in host.rglob("*") if path.is_file()} == before


def test_fix_write_with_a_live_servers_settings_edits_the_snapshots_files(tmp_path: Path) -> None:
    # With pg_settings.json, pg.* are the server's running values (named by its own absolute paths, or by the
    # JSON row) and pg_conf.* the snapshot's files: a file's line is changed where pg_conf says, and a value
    # the files do not set is added to postgresql.conf.
    from pgvet.fix.writer import Change, ConsolidatedFix, write
    from pgvet.provenance import Source
    from pgvet.snapshot.facts import Fact

    host = tmp_path / "host"
    host.mkdir()
    (host / "postgresql.conf").write_text("shared_buffers = 128MB\n")  # the server's include is not here
    facts = {
        "pg.shared_buffers": Fact("pg.shared_buffers", 134217728, Source("/var/lib/pgsql/15/data/postgresql.conf", 1)),
        "pg_conf.shared_buffers": Fact("pg_conf.shared_buffers", 134217728, Source("postgresql.conf", 1)),
        "pg.jit": Fact("pg.jit", True, Source("pg_settings.json", 175)),
        "pg.work_mem": Fact("pg.work_mem", 4194304, Source("/var/lib/pgsql/15/data/conf.d/memory.conf", 2)),
        "pg.ssl": Fact("pg.ssl", False, Source("/var/lib/pgsql/15/data/postgresql.auto.conf", 3)),
    }
    fix = ConsolidatedFix("host", postgresql={"shared_buffers": Change("4GB", ["A"]), "jit": Change("off", ["B"]),
                                              "work_mem": Change("8MB", ["C"]), "ssl": Change("on", ["D"])})
    outcome = write(fix, host, facts)
    # the server's ALTER SYSTEM value would win over any line of postgresql.conf (the planner keeps such a value out
    # of the target; the writer holds to it all the same)
    assert outcome.left == ["ssl = 'on': not written — it is set by ALTER SYSTEM (/var/lib/pgsql/15/data/"
                            "postgresql.auto.conf:3), which overrides postgresql.conf; on the server: "
                            "ALTER SYSTEM SET ssl = 'on';"]
    assert outcome.written == [(host / "postgresql.conf").resolve()]
    assert (host / "postgresql.conf").read_text() == (
        "shared_buffers = '4GB'\njit = 'off'    # pgvet fix: B\nwork_mem = '8MB'    # pgvet fix: C\n")


def test_fix_write_finds_a_kernel_key_at_the_line_procps_reads(tmp_path: Path) -> None:
    # A form feed in a comment is no line break for procps or systemd-sysctl: counted as one, every line number
    # after it was one too many, and the keys below took each other's values.
    declared = "#\x0c\nvm.swappiness = 60\nkernel.sched_autogroup_enabled = 1\n"
    host = _host(tmp_path, "", **{"sysctl.d__90-postgresql.conf": declared})
    code, output = _fix(host, "PGV130", "PGV143")
    assert code == 0, output
    assert (host / "sysctl.d/90-postgresql.conf").read_text() == (
        "#\x0c\nvm.swappiness = 10\nkernel.sched_autogroup_enabled = 0\n")


def test_fix_write_sets_a_kernel_value_that_the_boot_keeps_too(tmp_path: Path) -> None:
    # sysctl --system reads sysctl.conf last, the boot's systemd-sysctl where sysctl.d/99-sysctl.conf (a link to
    # it) sorts: an old sysctl.d/k8s.conf put its own swappiness back at every boot, after the fix set sysctl.conf
    host = _host(tmp_path, "", **{"sysctl.conf": "vm.swappiness = 60\n",
                                  "sysctl.d__k8s.conf": "net.ipv4.ip_forward = 1\nvm.swappiness = 30\n",
                                  "sysctl.d__50-early.conf": "vm.swappiness = 1\n"})
    (host / "sysctl.d" / "99-sysctl.conf").symlink_to("../sysctl.conf")
    code, output = _fix(host, "PGV130")
    assert code == 0, output
    assert (host / "sysctl.conf").read_text() == "vm.swappiness = 10\n"
    assert (host / "sysctl.d" / "k8s.conf").read_text() == "net.ipv4.ip_forward = 1\nvm.swappiness = 10\n"
    assert (host / "sysctl.d" / "50-early.conf").read_text() == "vm.swappiness = 1\n"  # read before, either way
    for boot in (False, True):
        assert kernelsim.apply_sysctl({}, kernelsim.declared_lines(host, boot=boot))["vm.swappiness"] == "10"
    assert "wrote" not in _fix(host, "PGV130")[1]  # a second fix changes nothing


def test_fix_write_in_a_directory_it_cannot_write_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # a read-only tree (as root, chmod does not stop the tests: the rename is refused as the kernel would)
    def refused(source: str, target: str, **directories: int) -> None:
        raise PermissionError(13, "Permission denied")

    host = _host(tmp_path, "autovacuum = off\n")
    monkeypatch.setattr(os, "replace", refused)
    code, output = _fix(host, "PGV801")
    assert code == 1
    assert "left: autovacuum = on: not written (cannot write postgresql.conf.bak: Permission denied)" in output
    assert (host / "postgresql.conf").read_text() == "autovacuum = off\n"
    assert [path.name for path in host.iterdir() if path.name.startswith(".")] == []  # no temporary file left


def test_fix_follows_the_configuration_as_lint_does(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # `fix --write` linted without the configuration: a rule .pgvet.toml ignores had its change written, a
    # threshold raised there was not heeded
    shutil.copytree(FIXTURES / "big-server", tmp_path / "db")
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".pgvet.toml").write_text('ignore = ["zone-reclaim-enabled"]\n'
                                          '[params.too-many-connections]\nper_cpu = 20\n')
    lint = runner.invoke(app, ["lint", "db", "-f", "json"])
    assert '"PGV137"' not in lint.output and '"PGV536"' not in lint.output  # what lint says, fix does
    result = runner.invoke(app, ["fix", "db"])
    assert result.exit_code == 0, result.output
    assert "vm.zone_reclaim_mode" not in result.output
    assert "max_connections = " not in result.output
    assert "vm.nr_hugepages = 25200" in result.output
