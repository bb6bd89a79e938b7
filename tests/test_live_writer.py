"""Which configuration files are copied, and where; psycopg stays unimported until a server is contacted."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

from pgvet.live.server import ServerReading
from pgvet.live.writer import config_copies, server_is_local

START = 1769076900.25


def _reading(data: Path, *, unix_socket: bool, port: str = "5432", start: float | None = START) -> ServerReading:
    server: dict[str, Any] = {"server_version_num": 160002, "data_directory": str(data),
                              "config_file": str(data / "postgresql.conf")}
    return ServerReading(dsn="", connection={"unix_socket": unix_socket}, server=server,
                         settings=[{"name": "port", "setting": port}], file_settings=None, databases=[],
                         statistics={}, postmaster_start_epoch=start)


def _data_directory(tmp_path: Path, pid_start: float, pid_port: int) -> Path:
    data = tmp_path / "data"
    data.mkdir()
    (data / "postmaster.pid").write_text(f"4242\n{data}\n{int(pid_start)}\n{pid_port}\n/run/postgresql\n*\n")
    (data / "postgresql.conf").write_text("shared_buffers = '1GB'\n")
    (data / "postgresql.auto.conf").write_text("primary_conninfo = 'host=p password=hunter2'\n")
    (tmp_path / "conf.d").mkdir()
    return data


def test_a_matching_postmaster_pid_shows_the_server_is_local(tmp_path: Path) -> None:
    data = _data_directory(tmp_path, START, 5432)
    reading = _reading(data, unix_socket=False)
    assert server_is_local(reading) == f"{data}/postmaster.pid matches the server's start time and port"
    copies, failures = config_copies(reading, [str(data / "postgresql.conf"), str(data / "postgresql.auto.conf"),
                                               str(data / "missing.conf"), str(tmp_path / "conf.d" / "x.conf")])
    assert [(copy.name, copy.text) for copy in copies] == [
        ("postgresql.conf", "shared_buffers = '1GB'\n"),
        ("postgresql.auto.conf", "primary_conninfo = 'host=p password=***'\n"),
    ]
    assert failures == [{"what": str(data / "missing.conf"), "error": "No such file or directory"},
                        {"what": str(tmp_path / "conf.d" / "x.conf"), "error": "No such file or directory"}]


def test_another_servers_files_are_not_copied(tmp_path: Path) -> None:
    data = _data_directory(tmp_path, START - 3600, 5432)  # same paths, another start: a different server
    for reading in (_reading(data, unix_socket=False), _reading(data, unix_socket=False, port="5433"),
                    _reading(data, unix_socket=False, start=None)):
        assert server_is_local(reading) is None
        copies, failures = config_copies(reading, [str(data / "postgresql.conf")])
        assert copies == []
        assert failures == [{"what": "configuration files", "error": "not copied: cannot show that the server runs on "
                             "this machine (no Unix-socket connection, no matching postmaster.pid)"}]
    assert server_is_local(_reading(data, unix_socket=True)) == "connected through a Unix-domain socket"


def test_collecting_the_host_and_reading_a_snapshot_do_not_import_psycopg(tmp_path: Path) -> None:
    probe = ("import sys, pathlib\n"
             "from pgvet.live.commands import collect_command\n"
             "import pgvet.sources.pgsettings\n"
             f"collect_command(pathlib.Path({str(tmp_path / 's')!r}), None, host_only=True)\n"
             "print('psycopg' in sys.modules)\n")
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert result.stdout == "False\n"
