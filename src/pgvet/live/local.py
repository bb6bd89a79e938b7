"""The server's configuration files, found from what the OS says and read as its own OS user could read them.

A server's word is not a path to trust: a superuser can make it name any file, and pgvet often runs as
root. So:

- **Local** is decided by the kernel: the connection is a Unix-domain socket, and SO_PEERCRED names the
  process that listens on it (its pid in this PID namespace, 0 when it is in another one, a container).
  That process is held by an open ``/proc/<pid>`` while the connection lasts, so a reused pid cannot stand
  in for it; it must not run as root (PostgreSQL refuses to), and its working directory (the postmaster
  works in its data directory) must hold a ``postmaster.pid`` that names it.
- **Directories** are the OS's: the data directory is the process's working directory (``/proc/<pid>/cwd``);
  the configuration directory is the one its command line (``-c config_file=…``, ``-D``) or environment
  (``PGDATA``) names, walked from the process's own root (``/proc/<pid>/root``, which also holds in a
  container), or the data directory when the server says they are the same.
- **Files**: ``postgresql.conf`` (the configuration file the command line names, else ``postgresql.conf`` of
  the ``-D`` directory), ``postgresql.auto.conf`` of the data directory, and the files they include, followed
  by pgvet as PostgreSQL follows them (``include``, ``include_if_exists``, ``include_dir``; the server's
  ``sourcefile`` columns are not used), when they lie in the configuration directory: the same relative
  path in the snapshot, so relative includes resolve there. A file outside that directory, a symbolic link
  on the way (every component is opened with O_NOFOLLOW, from the directory's descriptor), anything but a
  regular file, or a file or directory the server's OS user could not read itself (a hard link to
  /etc/shadow) is not copied, and the manifest says why.
"""

from __future__ import annotations

import errno
import os
import pwd
import re
import stat
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from posixpath import dirname, join, normpath
from typing import NamedTuple

from pgvet.inputs.documents import recognise
from pgvet.inputs.postgresql_conf import (
    CONF_FILE_MAX_DEPTH,
    MAX_TREE_BYTES,
    MAX_TREE_LINES,
    ConfDirective,
    parse_conf_text,
)
from pgvet.inputs.registry import INPUT_KINDS
from pgvet.live.host import HostFile, utc_now
from pgvet.live.redact import recognised_names, redact_conf_text
from pgvet.live.server import ServerReading
from pgvet.live.session import SocketPeer
from pgvet.pgparams.options import VALUE_LETTERS, letter_setting
from pgvet.run.config import CONFIG_NAMES
from pgvet.run.suppress import DEFAULT_BASELINE, IGNORE_FILE

MAX_CONFIG_BYTES = 16 << 20  # one configuration file; PostgreSQL's own are a few kB
_PRIVATE_KEY = re.compile(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----")  # PEM: PKCS#8, RSA, EC, OpenSSH
MAX_CONFIG_FILES = 1000
# Options of postgres that take a value (its getopt string): the value follows or is the next argument.
# The names a snapshot gives its own inputs (every input kind's, and the ignore file): a server's file of such a
# name is not copied, or the snapshot would read it as that input (an include named sysctl.conf as the kernel's).
RESERVED_NAMES = frozenset({name for kind in INPUT_KINDS for name in kind.file_names} | {IGNORE_FILE})
RESERVED_DIRECTORIES = frozenset(kind.directory for kind in INPUT_KINDS if kind.directory is not None)
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
_DIRECTORY_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class NotCopied(Exception):
    """Why the server's files, or one of them, are not copied."""


class Absent(NotCopied):
    """A file, or a directory on its way, that does not exist (what ``include_if_exists`` lets PostgreSQL skip)."""


class TooLarge(NotCopied):
    """A file larger than what was left to read of it."""


class Credentials(NamedTuple):
    """The OS user a process runs as (its filesystem ids, which the kernel checks when it opens a file)."""

    uid: int
    gids: frozenset[int]

    def may(self, info: os.stat_result, permission: int) -> bool:
        """Whether these credentials have ``permission`` (4 read, 1 search) on a file by its mode bits."""
        if info.st_uid == self.uid:
            return bool(info.st_mode & (permission << 6))
        if info.st_gid in self.gids:
            return bool(info.st_mode & (permission << 3))
        return bool(info.st_mode & permission)


@dataclass(slots=True)
class ServerProcess:
    """The process listening on the connection's socket, held by a descriptor of its /proc directory."""

    pid: int
    socket_path: str
    proc: int  # descriptor of /proc/<pid>
    credentials: Credentials
    namespace_pid: int  # its pid in its own PID namespace (what its postmaster.pid says)
    # postmaster_options of its command line, once read (postmaster_command_line)
    options: dict[str, str] | None = field(default=None, init=False)

    @property
    def described(self) -> str:
        return f"the postmaster pid {self.pid} listening on {self.socket_path}"

    def close(self) -> None:
        os.close(self.proc)


def _read_small(name: str, directory: int, limit: int = 1 << 20) -> bytes:
    descriptor = os.open(name, _READ_FLAGS, dir_fd=directory)
    try:
        return _read_all(descriptor, limit)
    finally:
        os.close(descriptor)


def _read_all(descriptor: int, limit: int) -> bytes:
    chunks: list[bytes] = []
    size = 0
    while size <= limit:
        chunk = os.read(descriptor, 1 << 16)
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)


def _status(proc: int) -> dict[str, list[str]]:
    lines = _read_small("status", proc).decode(errors="replace").splitlines()
    return {key: value.split() for key, _, value in (line.partition(":") for line in lines)}


def locate_server(peer: SocketPeer | None, proc_root: str = "/proc") -> ServerProcess:
    """The process serving the connection, while it is open; NotCopied when the OS cannot show one."""
    if peer is None:
        raise NotCopied("the connection is not a Unix-domain socket, and only on one does the kernel say which "
                        "process serves it (connect with host=<socket directory>)")
    if peer.pid == 0:
        raise NotCopied(f"the process listening on {peer.path} is in another PID namespace (a container?), "
                        "invisible from here: run pgvet where the server runs")
    try:
        proc = os.open(f"{proc_root}/{peer.pid}", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as error:
        raise NotCopied(f"the process listening on {peer.path} (pid {peer.pid}) cannot be seen: "
                        f"{error.strerror}") from None
    try:
        status = _status(proc)
        uid, gid = int(status["Uid"][3]), int(status["Gid"][3])
        groups = frozenset(int(each) for each in status.get("Groups", []))
        namespace_pid = int(status.get("NSpid", [str(peer.pid)])[-1])
    except (OSError, KeyError, IndexError, ValueError) as error:
        os.close(proc)
        raise NotCopied(f"the status of the process listening on {peer.path} (pid {peer.pid}) cannot be "
                        f"read: {error}") from None
    if uid == 0:
        os.close(proc)
        raise NotCopied(f"the process listening on {peer.path} (pid {peer.pid}) runs as root, which PostgreSQL "
                        "never does")
    return ServerProcess(peer.pid, peer.path, proc, Credentials(uid, groups | {gid}), namespace_pid)


def _canonical(path: str) -> tuple[str, ...] | None:
    """The components of an absolute path without ``.`` and empty ones; None for a relative one or one
    with ``..`` (which a walk that follows nothing could not take back)."""
    if not path.startswith("/"):
        return None
    parts = tuple(part for part in path.split("/") if part not in ("", "."))
    return None if ".." in parts else parts


def postmaster_options(argv: list[str]) -> dict[str, str]:
    """``-D`` and the settings of a postgres command line: ``-c name=value``, ``--name=value`` (lower-case names,
    dashes as underscores) and the letters that set a parameter (``-B 1000``, ``-N 500``, ``-F``: pgparams/options.py),
    read as its getopt reads them."""
    found: dict[str, str] = {}
    arguments = iter(argv[1:])
    for argument in arguments:
        if argument.startswith("--"):
            name, equals, value = argument[2:].partition("=")
            if equals:
                found[name.replace("-", "_").lower()] = value
            continue
        if not argument.startswith("-"):
            continue
        for index, letter in enumerate(argument[1:], start=1):
            if letter not in VALUE_LETTERS:
                if (flag := letter_setting(letter, None)) is not None:  # -F: fsync = off
                    found[flag[0]] = flag[1]
                continue
            value = argument[index + 1:] or next(arguments, "")
            if letter == "D":
                found["-D"] = value
            elif letter == "c":
                name, equals, setting = value.partition("=")
                if equals:
                    found[name.replace("-", "_").lower()] = setting
            elif (given := letter_setting(letter, value)) is not None:  # -B 1000, -N 500
                found[given[0]] = given[1]
            break
    return found


def postmaster_command_line(process: ServerProcess) -> dict[str, str]:
    """``-D`` and the settings of the postmaster's command line (``postgres -c work_mem=512MB``, a container's
    command, a service unit's options: they override the files and ALTER SYSTEM), read once; OSError when /proc
    refuses it."""
    if process.options is None:
        argv = _read_small("cmdline", process.proc).decode(errors="surrogateescape").split("\0")
        process.options = postmaster_options(argv)
    return process.options


class _Layout(NamedTuple):
    config_file: tuple[str, ...]  # the configuration file's components, as the server's filesystem names it
    same_as_data: bool  # its directory is the data directory (the server says so; only a choice between two of
    # the OS's directories rests on it)


def _layout(process: ServerProcess, reading: ServerReading) -> _Layout:
    """Where the command line (or PGDATA) puts the configuration file."""
    try:
        options = postmaster_command_line(process)
    except OSError as error:
        raise NotCopied(f"the command line of {process.described} cannot be read: {error.strerror}") from None
    directory = options.get("-D")
    if directory is None and "config_file" not in options:
        try:
            environment = _read_small("environ", process.proc).decode(errors="surrogateescape").split("\0")
        except OSError as error:
            raise NotCopied(f"neither the command line of {process.described} names its configuration, nor can "
                            f"its environment be read: {error.strerror}") from None
        directory = next((each[len("PGDATA="):] for each in environment if each.startswith("PGDATA=")), None)
    written = options.get("config_file") or (f"{directory}/postgresql.conf" if directory else None)
    if written is None:
        raise NotCopied(f"neither the command line nor the environment of {process.described} names its "
                        "configuration directory")
    config_file = _canonical(written)
    data_directory = _canonical(str(reading.server.get("data_directory") or ""))
    if config_file:
        return _Layout(config_file, data_directory is not None and data_directory == config_file[:-1])
    # Relative to where the postmaster started (pg_ctl -D data), which /proc does not keep: its data directory
    # still serves when the server says its configuration file is there.
    reported = _canonical(str(reading.server.get("config_file") or ""))
    if reported and data_directory is not None and reported[:-1] == data_directory:
        return _Layout(reported, True)
    raise NotCopied(f"{process.described} was started with the configuration file {written}, a relative path or "
                    "one with '..', and does not say its configuration is in its data directory")


class _Reader:
    """Opens files under a directory descriptor, one component at a time, following no link and going
    nowhere the server's OS user could not go."""

    def __init__(self, process: ServerProcess) -> None:
        self.process = process

    def _stat_if_permitted(self, descriptor: int, shown: str, permission: int) -> os.stat_result:
        info = os.fstat(descriptor)
        if not self.process.credentials.may(info, permission):
            raise NotCopied(f"{shown}: the server's OS user (uid {self.process.credentials.uid}) may not "
                            f"{'read' if permission == 4 else 'enter'} it")
        return info

    def _refusal(self, directory: int, name: str, shown: str, error: OSError) -> NotCopied:
        if error.errno in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
            try:
                if stat.S_ISLNK(os.stat(name, dir_fd=directory, follow_symlinks=False).st_mode):
                    return NotCopied(f"{shown} is a symbolic link, which pgvet does not follow")
            except OSError:
                pass
        if error.errno == errno.ENOENT:
            return Absent(f"{shown}: {error.strerror}")
        return NotCopied(f"{shown}: {error.strerror}")

    def directory(self, start: int, parts: tuple[str, ...], shown: str) -> int:
        """A descriptor of the directory ``parts`` below ``start`` (which the caller keeps)."""
        current = start
        for index, part in enumerate(parts):
            place = join(shown, *parts[:index + 1])
            try:
                opened = os.open(part, _DIRECTORY_FLAGS, dir_fd=current)
            except OSError as error:
                raise self._refusal(current, part, place, error) from None
            finally:
                if current != start:
                    os.close(current)
            current = opened
            try:
                self._stat_if_permitted(current, place, 1)
            except NotCopied:
                os.close(current)
                raise
        return current if current != start else os.dup(start)

    def text(self, directory: int, parts: tuple[str, ...], shown: str, limit: int = MAX_CONFIG_BYTES) -> str:
        """A regular file's text, ``parts`` below ``directory``; TooLarge past ``limit`` bytes."""
        place = join(shown, *parts)
        parent = self.directory(directory, parts[:-1], shown)
        try:
            try:
                descriptor = os.open(parts[-1], _READ_FLAGS, dir_fd=parent)
            except OSError as error:
                raise self._refusal(parent, parts[-1], place, error) from None
        finally:
            os.close(parent)
        try:
            info = self._stat_if_permitted(descriptor, place, 4)
            if not stat.S_ISREG(info.st_mode):
                raise NotCopied("not a regular file")
            data = _read_all(descriptor, limit)
        finally:
            os.close(descriptor)
        if len(data) > limit:
            raise TooLarge(f"larger than the {MAX_CONFIG_BYTES >> 20} MiB pgvet copies of a configuration file")
        return data.decode("utf-8", errors="surrogateescape")


# The files PostgreSQL loads at start when ssl = on: one missing and it does not start (a reload keeps the old ones)
SSL_FILE_SETTINGS = ("ssl_cert_file", "ssl_key_file")


def ssl_files_missing(process: ServerProcess, reading: ServerReading) -> str | None:
    """The names of the settings among SSL_FILE_SETTINGS whose file does not exist, comma-separated ("" when each
    does), looked for as the server reaches them: a relative path from its data directory, an absolute one from
    its root, following no link and entering only directories its OS user may. None when that cannot tell (a link
    or a closed directory on the way may hold the file): only a file certainly absent is said missing."""
    values = {row.get("name"): row.get("setting") for row in reading.settings}
    missing: list[str] = []
    for name in SSL_FILE_SETTINGS:
        path = values.get(name)
        if not isinstance(path, str) or not path:
            return None
        parts = _canonical(path) if path.startswith("/") else _canonical("/" + path)
        if not parts:
            return None
        try:
            start = os.open("root" if path.startswith("/") else "cwd", _DIRECTORY_FLAGS & ~os.O_NOFOLLOW,
                            dir_fd=process.proc)
        except OSError:
            return None
        with _descriptor(start):
            exists = _exists(process.credentials, start, parts)
        if exists is None:
            return None
        if not exists:
            missing.append(name)
    return ",".join(missing)


def _exists(credentials: Credentials, start: int, parts: tuple[str, ...]) -> bool | None:
    """Whether ``parts`` below ``start`` exists (a link at the end counts, unfollowed); None when a link, or a
    directory ``credentials`` may not enter, is on the way."""
    current = os.dup(start)
    try:
        for part in parts[:-1]:
            try:
                opened = os.open(part, _DIRECTORY_FLAGS, dir_fd=current)
            except FileNotFoundError:
                return False
            except OSError:
                return None
            os.close(current)
            current = opened
            if not credentials.may(os.fstat(current), 1):
                return None
        try:
            os.stat(parts[-1], dir_fd=current, follow_symlinks=False)
        except FileNotFoundError:
            return False
        except OSError:
            return None
        return True
    finally:
        os.close(current)


def wal_filesystem(process: ServerProcess) -> tuple[int, int] | None:
    """(bytes available to unprivileged users, size) of the filesystem holding the server's pg_wal — the OS's
    word, through its working directory; None when the directory cannot be reached as the server's OS user would
    reach it (pgvet is neither root nor that user). A pg_wal that is a link (WAL on another disk: initdb --waldir
    writes an absolute one) is followed as the server follows it, from its root or its data directory, but only
    through directories its OS user may enter and no further link, nor a '..' (which could climb out of a
    container's root): its superuser may make it a link to anywhere."""
    parts: tuple[str, ...]
    try:
        target = os.readlink("cwd/pg_wal", dir_fd=process.proc)
    except OSError as error:
        if error.errno != errno.EINVAL:  # EINVAL: no link, the data directory's own
            return None
        start, parts = "cwd", ("pg_wal",)
    else:
        start = "root" if target.startswith("/") else "cwd"
        parts = _canonical("/" + target) or ()
        if not parts:
            return None
    try:
        top = os.open(start, _DIRECTORY_FLAGS & ~os.O_NOFOLLOW, dir_fd=process.proc)
    except OSError:
        return None
    try:
        descriptor = _Reader(process).directory(top, parts, "pg_wal")
    except NotCopied:
        return None
    finally:
        os.close(top)
    with _descriptor(descriptor):
        status = os.fstatvfs(descriptor)
    return status.f_bavail * status.f_frsize, status.f_blocks * status.f_frsize


def _user_name(uid: int) -> str:
    """``postgres``, or ``uid 999`` for an id without a name here."""
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"uid {uid}"


@contextmanager
def _descriptor(descriptor: int) -> Iterator[int]:
    try:
        yield descriptor
    finally:
        os.close(descriptor)


def copy_config_files(process: ServerProcess, reading: ServerReading) -> tuple[list[HostFile], list[dict[str, str]]]:
    """The server's configuration files as snapshot files (redacted), and what was not copied and why."""
    try:
        data = os.open("cwd", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC, dir_fd=process.proc)
    except OSError as error:
        return [], [{"what": "configuration files", "error": f"not copied: the working directory of "
                     f"{process.described} cannot be opened ({error.strerror}): run pgvet as root or as the "
                     f"server's OS user ({_user_name(process.credentials.uid)})"}]
    with _descriptor(data):
        try:
            return _copies(process, reading, data)
        except NotCopied as refusal:
            return [], [{"what": "configuration files", "error": f"not copied: {refusal}"}]
        except OSError as error:  # the process ended meanwhile, or /proc refuses
            return [], [{"what": "configuration files", "error": f"not copied: {error.strerror or error}"}]


@dataclass(slots=True)
class _Copier:
    """Copies the configuration file, postgresql.auto.conf and the files they include (followed by pgvet, as
    PostgreSQL follows them) that lie in the configuration directory."""

    process: ServerProcess
    reader: _Reader
    config: int | str  # descriptor of the configuration directory, or why it could not be opened
    config_dir: tuple[str, ...]
    copies: list[HostFile]
    failures: list[dict[str, str]]
    seen: set[tuple[str, ...]]
    recognised: frozenset[str]  # the names of the server's settings, lower case: another name's value is redacted
    directories: list[HostFile] = field(default_factory=list)  # the include_dirs listed (an empty one is valid)
    copied_bytes: int = 0  # of the files copied, bounded together as the lint bounds a host's (MAX_TREE_BYTES)
    copied_lines: int = 0  # and their lines (MAX_TREE_LINES)

    def fail(self, server_path: str, reason: str) -> None:
        self.failures.append({"what": server_path, "error": f"not copied: {reason}"})

    def copy(self, name: str, parts: tuple[str, ...], server_path: str, depth: int, *, data: int | None = None,
             optional: bool = False) -> None:
        """Copy ``parts`` below the configuration directory (or the ``data`` directory) as ``name``, then what
        it includes. ``optional``: an ``include_if_exists``, whose absent file PostgreSQL skips (and so does the
        copy: the copied include says it is absent)."""
        if len(self.copies) >= MAX_CONFIG_FILES:
            self.fail(server_path, f"more than {MAX_CONFIG_FILES} configuration files")
            return
        directory = data if data is not None else self.config
        if isinstance(directory, str):
            self.fail(server_path, directory)
            return
        # Each file is bounded, and so is their sum: past what the lint reads of a host's files (its own refusal),
        # nothing more is held or read (a thousand 16 MiB files in an include_dir were all held, on the database
        # host).
        left = MAX_TREE_BYTES - self.copied_bytes
        try:
            text = self.reader.text(directory, parts, dirname(server_path) if data is not None
                                    else "/" + "/".join(self.config_dir), min(MAX_CONFIG_BYTES, left))
        except TooLarge as refusal:
            self.fail(server_path, str(refusal) if left >= MAX_CONFIG_BYTES else (
                f"the server's configuration files copied already hold {self.copied_bytes >> 20} MiB; with this "
                f"one they would hold more than the {MAX_TREE_BYTES >> 20} MiB pgvet lints of a host"))
            return
        except Absent as refusal:
            if not optional:
                self.fail(server_path, str(refusal))
            return
        except NotCopied as refusal:
            self.fail(server_path, str(refusal))
            return
        except OSError as error:
            self.fail(server_path, error.strerror or str(error))
            return
        self.copied_bytes += len(text.encode("utf-8", errors="surrogateescape"))
        lines = text.count("\n") + 1
        if self.copied_lines + lines > MAX_TREE_LINES:  # each line parsed, a refused one held as a problem: 16 MiB
            # of one-letter lines took a minute and gigabytes to mask, for a snapshot its lint refuses
            self.fail(server_path, f"the server's configuration files copied already hold {self.copied_lines} "
                                   f"lines; with this one they would hold more than the {MAX_TREE_LINES} pgvet lints "
                                   "of a host")
            return
        self.copied_lines += lines
        if _PRIVATE_KEY.search(text):  # server.key included by a superuser: some of its lines parse as settings
            self.fail(server_path, "it holds a private key")
            return
        copied = redact_conf_text(text)
        kind = recognise(name, copied)
        if kind is not None:  # the snapshot's lint would take it for a document of the host, its values declared
            self.fail(server_path, f"lint would read it as a configuration document ({kind.name}), not as "
                                   "PostgreSQL reads it")
            return
        # then, of the lines PostgreSQL reads as settings, those of no parameter (an environment file's): their values
        copied = redact_conf_text(_refused_lines_masked(copied, server_path), self.recognised)
        self.copies.append(HostFile(name, f"copy {server_path} ({self.process.described})", utc_now(), copied,
                                    server_file=server_path))
        if depth < CONF_FILE_MAX_DEPTH:
            self.includes(text, server_path, depth + 1)

    def includes(self, text: str, server_path: str, depth: int) -> None:
        entries, _ = parse_conf_text(text, server_path)
        for entry in entries:
            if not isinstance(entry, ConfDirective) or not entry.target.strip():
                continue
            target = normpath(join(dirname(server_path), entry.target))
            parts = _canonical(target)
            if parts is None or parts[:len(self.config_dir)] != self.config_dir or len(parts) == len(self.config_dir):
                self.fail(target, f"outside the server's configuration directory /{'/'.join(self.config_dir)}")
                continue
            relative = parts[len(self.config_dir):]
            if entry.kind == "include_dir":
                for name in self.listing(relative, target):
                    self.file((*relative, name), join(target, name), depth)
            else:
                self.file(relative, target, depth, optional=entry.kind == "include_if_exists")

    def file(self, relative: tuple[str, ...], server_path: str, depth: int, *, optional: bool = False) -> None:
        if relative in self.seen:
            return
        self.seen.add(relative)
        if _reserved(relative):
            self.fail(server_path, "its name is one the snapshot uses for another file")
            return
        name = "/".join(relative)
        self.copy(name, relative, server_path, depth, optional=optional)

    def listing(self, relative: tuple[str, ...], server_path: str) -> list[str]:
        """The ``*.conf`` files of an include_dir, in byte order, as PostgreSQL takes them."""
        if isinstance(self.config, str):
            self.fail(server_path, self.config)
            return []
        try:
            directory = self.reader.directory(self.config, relative, "/" + "/".join(self.config_dir))
        except NotCopied as refusal:
            self.fail(server_path, str(refusal))
            return []
        try:
            names = [name for name in os.listdir(directory) if len(os.fsencode(name)) >= 6
                     and not name.startswith(".") and name.endswith(".conf")
                     and not stat.S_ISDIR(os.stat(name, dir_fd=directory, follow_symlinks=False).st_mode)]
        except OSError as error:
            self.fail(server_path, error.strerror or str(error))
            return []
        finally:
            os.close(directory)
        name = "/".join(relative)
        if not _reserved(relative) and relative[0] not in RESERVED_DIRECTORIES:
            self.directories.append(HostFile(name, f"include_dir {server_path} ({self.process.described})", utc_now(),
                                             "", server_file=server_path, directory=True))
        return sorted(names, key=os.fsencode)


def _reserved(relative: tuple[str, ...]) -> bool:
    """Whether a server's file may not be copied under this name: one of the snapshot's own, and, anywhere in it, a
    configuration of pgvet's (written by root, a pgvet run in the snapshot trusted and applied it), its default
    baseline (which `pgvet baseline update` run there would read) or a git directory (which would make the snapshot
    a repository, and its files git's)."""
    return ("/".join(relative) in RESERVED_NAMES or (len(relative) > 1 and relative[0] in RESERVED_DIRECTORIES)
            or relative[-1] in (*CONFIG_NAMES, DEFAULT_BASELINE) or any(part.casefold() == ".git" for part in relative))


def _copies(process: ServerProcess, reading: ServerReading, data: int) -> tuple[list[HostFile], list[dict[str, str]]]:
    try:
        named = _read_small("postmaster.pid", data).decode(errors="replace").split("\n", 1)[0].strip()
    except OSError as error:
        raise NotCopied(f"the working directory of the process listening on {process.socket_path} (pid "
                        f"{process.pid}) holds no postmaster.pid ({error.strerror}): not a postmaster") from None
    if named != str(process.namespace_pid):
        raise NotCopied(f"the postmaster.pid in the working directory of the process listening on "
                        f"{process.socket_path} (pid {process.pid}) names another process ({named[:20]!r})")
    layout = _layout(process, reading)
    reader = _Reader(process)
    config_dir = layout.config_file[:-1]
    data_shown = str(reading.server.get("data_directory") or os.readlink("cwd", dir_fd=process.proc))
    config: int | str  # the configuration directory's descriptor, or why it cannot be opened
    if layout.same_as_data:
        config = os.dup(data)
    else:
        with _descriptor(os.open("root", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC, dir_fd=process.proc)) as root:
            try:
                config = reader.directory(root, config_dir, "/")
            except NotCopied as refusal:
                config = str(refusal)
    seen = {layout.config_file[-1:], *([("postgresql.auto.conf",)] if layout.same_as_data else [])}
    copier = _Copier(process, reader, config, config_dir, [], [], seen, recognised_names(reading.settings))
    try:
        copier.copy("postgresql.conf", layout.config_file[-1:], "/" + "/".join(layout.config_file), 1)
        copier.copy("postgresql.auto.conf", ("postgresql.auto.conf",), join(data_shown, "postgresql.auto.conf"), 1,
                    data=data)
    finally:
        if isinstance(config, int):
            os.close(config)
    return copier.copies + copier.directories, copier.failures


def _refused_lines_masked(text: str, server_path: str) -> str:
    """The file with each line PostgreSQL's parser refuses made ``***``: a line that is no setting may be anything a
    superuser's include named (a private key, a .pgpass), which no copy holds; ``***`` is refused at the same line,
    so the snapshot's lint counts the same syntax errors where PostgreSQL does (near another token)."""
    _, problems = parse_conf_text(text, server_path, syntax_error_limit=sys.maxsize)
    refused = {problem.source.line for problem in problems if problem.kind == "syntax"}
    if not refused:
        return text
    lines = text.split("\n")
    for line in refused:
        if line is not None:
            lines[line - 1] = "***"
    return "\n".join(lines)
