"""pgvet's cache directory: the compiled rule pack.

Loading the pack unpickles it, which runs code: it is used only from a directory that no other user could have
written to or put in its place (nor any directory on the way to it), and not from one inside a repository (a clone
makes its files the user's). The directory is
``$PGVET_CACHE_DIR``, else ``$XDG_CACHE_HOME/pgvet``, else ``~/.cache/pgvet``, else (no home: no ``HOME`` and
no passwd entry, as ``docker run --user 12345`` gives) ``pgvet-cache-UID`` in the temporary directory. It is
created 0700 (so are the directories missing on the way to it) and its files 0600; a directory or file owned by
another user, or writable by others (a link, for a file), is not used, and said once on stderr: pgvet then
compiles the pack each time. A cache that merely cannot be made (a read-only or full file system, no home) costs
time only and is not said.

It keeps what the current packs need, no more (a pack of 2.3 MB was left for every change of a rule): a file
written replaces the older versions of itself (``write``'s ``replaces``), and a file no run has read for
UNUSED_DAYS days (the pack of a removed virtual environment or of a rule directory used once) is removed when
another is written; reading a file marks it used.
"""

from __future__ import annotations

import contextlib
import errno
import os
import pwd
import stat
import sys
import tempfile
import time
from pathlib import Path

from pgvet.paths import make_directories, repository_of
from pgvet.report import visible
from pgvet.trust import why_untrusted, why_way_untrusted

UNUSED_DAYS = 30
# What pgvet keeps here (a name starts with one of them; ``lint-options-`` and ``pack-`` are earlier versions'), and its
# temporary files (``.NAME.PID-RANDOM.tmp``); any of them unread for UNUSED_DAYS is removed. Other names are not
# pgvet's to remove.
KINDS = ("rules-", "lint-options-", "pack-", ".rules-", ".lint-options-", ".pack-")

_said: set[str] = set()
_quiet = False  # True in a worker process: the process that started it has said the refusals


def cache_dir() -> Path:
    explicit = os.environ.get("PGVET_CACHE_DIR")
    if explicit:
        return Path(explicit)
    xdg = os.environ.get("XDG_CACHE_HOME")
    if xdg and os.path.isabs(xdg):  # the XDG specification: a relative path is ignored
        return Path(xdg) / "pgvet"
    home = _home()
    if home is not None:
        return Path(home) / ".cache" / "pgvet"
    return Path(tempfile.gettempdir()) / f"pgvet-cache-{os.geteuid()}"


def _home() -> str | None:
    """HOME, else the passwd entry's home directory; None when there is neither (Path.home() raises then)."""
    home = os.environ.get("HOME")
    if home:
        return home
    try:
        return pwd.getpwuid(os.geteuid()).pw_dir or None
    except KeyError:
        return None


def keep_quiet() -> None:
    """Say no refusal from now on."""
    global _quiet
    _quiet = True


def _refuse(what: str, why: str) -> None:
    message = f"pgvet: notice: {what} not used: {why}; the rule pack is compiled each time until it is fixed"
    if _quiet or message in _said:
        return
    _said.add(message)
    print(visible(message), file=sys.stderr)  # a path from the environment may hold an escape sequence


def _open_directory(*, create: bool) -> int | None:
    """The cache directory, opened, when it is the user's own, no other user may write to it or change what its path
    leads to, and it lies in no repository; else None."""
    path = cache_dir()
    try:
        if create:
            # 0700 on the way too, as the XDG base directory specification asks: made with the umask's mode,
            # as Path.mkdir makes parents, a ~/.cache was 0777 under umask 000
            make_directories(path, 0o700)
        descriptor = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:  # none, or none that can be made: no cache
        return None
    try:
        why = (why_untrusted(os.fstat(descriptor), descriptor, root_trusted=False) or why_way_untrusted(str(path))
               or _in_a_repository(path))
    except OSError:  # its way changed meanwhile: no cache
        os.close(descriptor)
        return None
    if why is not None:
        os.close(descriptor)
        _refuse(f"cache directory {path}", why)
        return None
    return descriptor


def _in_a_repository(path: Path) -> str | None:
    """Why a cache directory inside a repository (by its real path) is not used, wherever pgvet runs: a clone makes
    its files the user's own, yet what its commits hold (a CI pointing PGVET_CACHE_DIR into the project, as GitLab
    caches only paths inside it, ran the pickle a merge request added; so did one run from the directory above the
    checkout). None when it lies in none."""
    repository = repository_of(os.path.realpath(path))
    if repository is None:
        return None
    return (f"it lies in the repository {repository}, whose commits may hold a file of its name "
            "(give PGVET_CACHE_DIR outside it)")


def read(name: str) -> bytes | None:
    """The cache file ``name``; None when there is none or another user could have written it."""
    directory = _open_directory(create=False)
    if directory is None:
        return None
    try:
        # O_NOFOLLOW: a link is refused, not followed; O_NONBLOCK: a FIFO does not wait for a writer
        descriptor = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=directory)
    except OSError as error:
        if error.errno == errno.ELOOP:
            _refuse(f"cache file {cache_dir() / name}", "a symbolic link")
        os.close(directory)
        return None
    try:
        status = os.fstat(descriptor)
        why = ("not a regular file" if not stat.S_ISREG(status.st_mode)
               else why_untrusted(status, descriptor, root_trusted=False))
        if why is not None:
            _refuse(f"cache file {cache_dir() / name}", why)
            return None
        chunks: list[bytes] = []
        while chunk := os.read(descriptor, max(status.st_size + 1, 65536)):
            chunks.append(chunk)
        with contextlib.suppress(OSError):  # used now: kept another UNUSED_DAYS (a read-only cache keeps its date)
            os.utime(descriptor)
        return b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(descriptor)
        os.close(directory)


def write(name: str, data: bytes, *, replaces: str | tuple[str, ...]) -> None:
    """Keep ``data`` as the cache file ``name`` (0600), replacing it at once: a concurrent reader sees the old file
    or the new one. Not written when the directory cannot be made or is not to be trusted. Once it is in place, the
    files it supersedes — the other names that start with ``replaces`` — are removed, and so is any of pgvet's files
    unread for UNUSED_DAYS."""
    directory = _open_directory(create=True)
    if directory is None:
        return
    temporary = f".{name}.{os.getpid()}-{os.urandom(4).hex()}.tmp"
    try:
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600,
                             dir_fd=directory)
    except OSError:
        os.close(directory)
        return
    try:
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(data)
        # no fsync: a file a crash leaves short or empty fails to load, and the pack is compiled again
        os.rename(temporary, name, src_dir_fd=directory, dst_dir_fd=directory)
    except OSError:  # a full disk only costs a compilation next time
        with contextlib.suppress(OSError):
            os.unlink(temporary, dir_fd=directory)
    else:
        _remove_old(directory, name, replaces)
    finally:
        os.close(directory)


def _remove_old(directory: int, kept: str, replaces: str | tuple[str, ...]) -> None:
    """In the (trusted) cache directory: the files ``kept`` supersedes, and pgvet's files unread for UNUSED_DAYS.
    A process still reading one keeps its open file; one about to open it finds none and compiles the pack."""
    unused = time.time() - UNUSED_DAYS * 86400
    try:
        names = os.listdir(directory)
    except OSError:
        return
    for name in names:
        if name == kept or not name.startswith(KINDS):
            continue
        try:
            superseded = name.startswith(replaces) or os.stat(name, dir_fd=directory,
                                                              follow_symlinks=False).st_mtime < unused
            if superseded:
                os.unlink(name, dir_fd=directory)
        except OSError:  # gone already, or another process's: left as it is
            continue
