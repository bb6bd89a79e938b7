"""The snapshot directory: private, new, written through no link, taken back whole; and how the server's
configuration is located from the OS (its command line, its credentials); psycopg stays unimported until a
server is contacted."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from pgvet.errors import InputError
from pgvet.live.commands import collect_command
from pgvet.live.local import Credentials, NotCopied, ServerProcess, locate_server, postmaster_options, wal_filesystem
from pgvet.live.session import SocketPeer
from pgvet.live.writer import SnapshotDirectory, write_text


def test_a_new_snapshot_is_private_and_its_files_new(tmp_path: Path) -> None:
    snapshot = SnapshotDirectory.create(tmp_path / "a" / "snap")
    try:
        snapshot.write("conf.d/10-memory.conf", "work_mem = '8MB'\n")
        snapshot.write("collect.json", "{}\n")
        with pytest.raises(InputError, match=r"cannot write .*collect.json: File exists"):
            snapshot.write("collect.json", "again")
    finally:
        snapshot.close()
    modes = {path.relative_to(tmp_path).as_posix(): stat.S_IMODE(path.lstat().st_mode)
             for path in (tmp_path / "a").rglob("*")}
    assert modes == {"a/snap": 0o700, "a/snap/conf.d": 0o700, "a/snap/conf.d/10-memory.conf": 0o600,
                     "a/snap/collect.json": 0o600}
    # A file added later (pgvet check's host.yaml) is new too: never written through a link planted there.
    (tmp_path / "a" / "snap" / "host.yaml").symlink_to(tmp_path / "victim")
    with pytest.raises(InputError, match=r"host\.yaml: File exists"):
        write_text(tmp_path / "a" / "snap", "host.yaml", "storage: ssd\n")
    assert not (tmp_path / "victim").exists()


def test_the_directories_made_on_the_way_to_a_snapshot_are_not_world_writable(tmp_path: Path) -> None:
    """`collect -o reports/db1/snap` under umask 000 made reports/ and db1/ 0777: another user could move the
    snapshot away and put one of theirs in its place."""
    previous = os.umask(0)
    try:
        SnapshotDirectory.create(tmp_path / "reports" / "db1" / "snap").close()
    finally:
        os.umask(previous)
    assert [stat.S_IMODE(path.stat().st_mode) for path in (tmp_path / "reports", tmp_path / "reports" / "db1",
                                                            tmp_path / "reports" / "db1" / "snap")] == [0o755, 0o755,
                                                                                                       0o700]


def test_an_output_that_is_a_link_or_anothers_is_refused(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "empty")
    with pytest.raises(InputError, match="is a symbolic link"):
        collect_command(tmp_path / "link", None, host_only=True)
    (tmp_path / "file").write_text("mine")
    with pytest.raises(InputError, match="exists and is not a directory"):
        collect_command(tmp_path / "file", None, host_only=True)
    if os.geteuid() == 0:
        (tmp_path / "theirs").mkdir()
        os.chown(tmp_path / "theirs", 12345, 12345)
        with pytest.raises(InputError, match="belongs to another user"):
            collect_command(tmp_path / "theirs", None, host_only=True)
    assert sorted(os.listdir(tmp_path)) == ["empty", "file", "link", *(["theirs"] if os.geteuid() == 0 else [])]
    assert os.listdir(tmp_path / "empty") == []


def test_an_empty_directory_of_ones_own_is_made_private_and_emptied_again_on_failure(tmp_path: Path) -> None:
    given = tmp_path / "given"
    given.mkdir(mode=0o755)
    snapshot = SnapshotDirectory.create(given)
    snapshot.write("conf.d/a.conf", "x\n")
    snapshot.write("sysctl.txt", "y\n")
    assert stat.S_IMODE(given.stat().st_mode) == 0o700
    snapshot.discard()
    snapshot.close()
    assert given.is_dir() and os.listdir(given) == []
    made = SnapshotDirectory.create(tmp_path / "made")
    made.write("x.txt", "x\n")
    made.discard()
    made.close()
    assert not (tmp_path / "made").exists()


@pytest.mark.parametrize(("argv", "expected"), [
    (["/usr/lib/postgresql/15/bin/postgres", "-D", "/var/lib/postgresql/15/main", "-c",
      "config_file=/etc/postgresql/15/main/postgresql.conf"],
     {"-D": "/var/lib/postgresql/15/main", "config_file": "/etc/postgresql/15/main/postgresql.conf"}),
    (["postgres", "-D/srv/pg", "-cconfig_file=/etc/pg.conf", "-p", "5433", "-k", "/tmp"],
     {"-D": "/srv/pg", "config_file": "/etc/pg.conf", "port": "5433", "unix_socket_directories": "/tmp"}),
    (["postgres", "--config-file=/etc/a.conf", "-i", "-D", "/d", "--data_directory=/x"],
     {"-D": "/d", "config_file": "/etc/a.conf", "data_directory": "/x", "listen_addresses": "*"}),
    (["postgres", "-c", "listen_addresses=", "-B", "-D", "/srv"],  # -B takes "-D" as its value
     {"listen_addresses": "", "shared_buffers": "-D"}),
    # the letters that set a parameter (postmaster.c): -B counts 8 kB buffers; -F turns fsync off
    (["postgres", "-B", "1000", "-N500", "-F", "-D", "/d"],
     {"shared_buffers": "8000kB", "max_connections": "500", "fsync": "off", "-D": "/d"}),
    (["python3", "tests/fakepg.py", "-D", "/d"], {"-D": "/d"}),
])
def test_the_postmaster_command_line_is_read_as_postgres_reads_it(argv: list[str], expected: dict[str, str]) -> None:
    assert postmaster_options(argv) == expected


def test_credentials_grant_what_the_mode_bits_grant() -> None:
    def info(uid: int, gid: int, mode: int) -> os.stat_result:
        return os.stat_result((stat.S_IFREG | mode, 0, 0, 1, uid, gid, 0, 0, 0, 0))

    postgres = Credentials(uid=100, gids=frozenset({100, 110}))
    assert postgres.may(info(100, 0, 0o600), 4) and not postgres.may(info(0, 0, 0o600), 4)
    assert postgres.may(info(0, 110, 0o640), 4) and not postgres.may(info(0, 42, 0o640), 4)
    assert postgres.may(info(0, 0, 0o644), 4) and not postgres.may(info(100, 0, 0o044), 4)  # the owner's bits rule
    assert postgres.may(info(0, 0, 0o711), 1) and not postgres.may(info(0, 0, 0o700), 1)


def test_a_server_the_kernel_does_not_show_is_not_located(tmp_path: Path) -> None:
    with pytest.raises(NotCopied, match="not a Unix-domain socket"):
        locate_server(None)
    with pytest.raises(NotCopied, match="in another PID namespace"):
        locate_server(SocketPeer("/run/postgresql/.s.PGSQL.5432", 0))
    with pytest.raises(NotCopied, match=r"\(pid 4242\) cannot be seen: No such file or directory"):
        locate_server(SocketPeer("/run/postgresql/.s.PGSQL.5432", 4242), proc_root=str(tmp_path))


@pytest.mark.parametrize(("pg_wal", "measured"), [
    (None, True),  # a directory of the data directory
    ("{root}/wal", True),  # initdb --waldir: a link the server's user may follow
    ("wal", True),
    ("{root}/private/wal", False),  # into a directory the server's user may not enter
    ("{root}/walink", False),  # a link on the way, which pgvet does not follow
    ("../wal", False),
])
def test_pg_wal_is_measured_only_where_the_servers_user_reaches_it(tmp_path: Path, pg_wal: str | None,
                                                                  measured: bool) -> None:
    # The server's superuser may make pg_wal a link to anywhere: pgvet, as root, measured the filesystem it led to
    # (a directory only root may enter, an automount point), which the server's user could not.
    root, proc = tmp_path / "root", tmp_path / "proc"
    for directory in (root / "data" / "wal", root / "private" / "wal", proc):
        directory.mkdir(parents=True)
    (root / "wal").mkdir()
    (root / "private").chmod(0)  # the server's user (the test's, below) may not enter it; root may
    (root / "walink").symlink_to("wal")
    (proc / "root").symlink_to("/")
    (proc / "cwd").symlink_to(root / "data")
    if pg_wal is None:
        (root / "data" / "pg_wal").mkdir()
    else:
        (root / "data" / "pg_wal").symlink_to(pg_wal.format(root=root))
    descriptor = os.open(proc, os.O_RDONLY | os.O_DIRECTORY)
    process = ServerProcess(4242, "/run/postgresql/.s.PGSQL.5432", descriptor,
                            Credentials(uid=os.getuid(), gids=frozenset({os.getgid()})), 4242)
    try:
        assert (wal_filesystem(process) is not None) is measured
    finally:
        process.close()
        (root / "private").chmod(0o700)


def test_collecting_the_host_and_reading_a_snapshot_do_not_import_psycopg(tmp_path: Path) -> None:
    probe = ("import sys, pathlib\n"
             "from pgvet.live.commands import collect_command\n"
             "import pgvet.inputs.pg_settings\n"
             f"collect_command(pathlib.Path({str(tmp_path / 's')!r}), None, host_only=True)\n"
             "print('psycopg' in sys.modules)\n")
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert result.stdout == "False\n"


def test_a_missing_psycopg_or_libpq_is_one_line_that_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    """psycopg is a dependency of pgvet (no extra to know of): an install without it, or a psycopg without a
    libpq to load, says what to install."""
    from pgvet.live.session import connect

    monkeypatch.setitem(sys.modules, "psycopg", None)  # `import psycopg` raises ImportError
    with pytest.raises(InputError) as raised:
        connect("host=/nonexistent")
    assert "pip install 'psycopg[binary]'" in raised.value.message and "libpq" in raised.value.message
    assert "pgvet[live]" not in raised.value.message
