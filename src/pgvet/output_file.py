"""Every file pgvet writes (a baseline, a report's --output, ``fix --write``'s edits and their ``.bak`` copies):
whole or not at all, never through a link, with the mode it should have.

The text goes to a new file beside the target (same directory: the rename is atomic), created with O_EXCL and
O_NOFOLLOW, written, flushed to the disk (fsync) and renamed over the target; a failure or an interruption
removes it and leaves the target as it was. All of it is done from the directory's descriptor, opened once
(``fix --write``'s beneath the host directory, as inputs are read: inputs/reading.py), so that a directory on
the way swapped for a link after the checks cannot send the file elsewhere. A symbolic link at the target is
refused, not followed: a link planted in a repository (``pgvet-baseline.json -> ~/.bashrc``) must not choose what
pgvet overwrites; nor may a link of a repository on the way to it that leads out of the repository
(``reports -> /etc/cron.d``). A report
may go to a stream instead (a pipe, a terminal or another character device, /dev/stdout, also when it is the file
pgvet's standard output was redirected to), written where it is.

Directories missing on the way to it (``-o ci/pgvet-baseline.json`` without a ``mkdir ci``) are made, each from
its parent's descriptor and opened without following a link (one put at its name is refused, not followed), 0700
while the file is written; then 0755 less the umask, or left 0700 when the file is private. A failure removes
those it made.

Modes: a file replaced keeps its mode, owner and group (one of another user in a directory others may write to
is refused: it may have been put there to be filled); a new file is 0644 (less the umask); and when the hosts
it was made from are private (their directory or anything in it unreadable by others, as a collected snapshot
may be), it is 0600 and a replaced file loses what let others read it. A failure names the file and the reason.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Iterable
from pathlib import Path
from typing import IO

from pgvet.errors import UsageError
from pgvet.inputs.reading import open_directory
from pgvet.paths import link_out_of_repository
from pgvet.trust import access_acl, others_may_write, set_access_acl

NEW_FILE_MODE = 0o644
PRIVATE_MODE = 0o600
NEW_DIRECTORY_MODE = 0o755
PRIVATE_DIRECTORY_MODE = 0o700
TEMPORARY_SUFFIX = ".pgvet-tmp"


class OutputFile:
    """A file being written; ``commit`` puts it in place, ``discard`` drops it (as a context manager: committed
    when the block ends well, else discarded). ``like``: what fstat said of the file whose mode, owner and group it
    takes (by default the target it replaces, as lstat shows it), ``acl`` the access ACL of that file (read from the
    target it replaces by default): a copy keeps who may read it, no more; ``shown``: its name in messages;
    ``streams``: a report, which may go to a pipe, a terminal or /dev/null, and into an existing file in place when
    its directory may not be added to; ``beneath``: the directory it must be written beneath (fix --write's host
    directory)."""

    def __init__(self, path: Path, *, private: bool = False, like: os.stat_result | None = None,
                 acl: bytes | None = None, shown: str | None = None, streams: bool = False,
                 beneath: str | None = None) -> None:
        self.path = path
        self.shown = shown if shown is not None else str(path)
        self.private = private
        self.temporary: str | None = None  # its name in the directory
        self.handle: IO[bytes] | None = None
        self.model: os.stat_result | None = None  # the file whose mode it takes, None for a new file's
        self.acl = acl  # that file's access ACL
        # the directories made for it, outermost first: (its parent's descriptor, its name, its descriptor)
        self.made: list[tuple[int, str, int]] = []
        self.opened: list[int] = []  # the descriptors of the directories on the way to it, from the first made's parent
        self.committed = False
        target = os.fspath(path)
        folder, self.name = os.path.split(target)
        out = link_out_of_repository(folder or ".")
        if out is not None:  # `-o reports/x` where a repository made `reports` a link to /etc/cron.d
            raise self._error(f"its directory is reached through a link that leads out of its repository {out}")
        # Everything is done from the directory's descriptor, opened once (beneath ``beneath``, fix --write's host
        # directory, when given): a directory on the way swapped for a link since cannot move the file elsewhere.
        self.directory = -1
        try:
            self.directory = self._open_or_make_directory(folder or ".", beneath)
            self._prepare(like, streams)
        except BaseException:
            self.discard()
            raise

    def _open_or_make_directory(self, folder: str, beneath: str | None) -> int:
        """The directory's descriptor; the directories missing on the way made first (recorded in ``made``, their
        descriptors and their parents' kept in ``opened`` until the file is in place or dropped)."""
        missing: list[str] = []
        existing = folder
        while True:
            try:
                directory = open_directory(existing, beneath)
                break
            except FileNotFoundError as error:
                above, name = os.path.split(existing.rstrip(os.sep))
                if name in ("", ".", ".."):  # nothing left to make, or a `new/..` the kernel would not walk either
                    raise self._error(error.strerror) from None
                missing.append(name)
                existing = above or "."
            except OSError as error:
                raise self._error(error.strerror) from None
        for name in reversed(missing):
            self.opened.append(directory)
            try:
                os.mkdir(name, PRIVATE_DIRECTORY_MODE, dir_fd=directory)
                made = True
            except FileExistsError:  # made since by someone else: used as any existing directory, if it is one
                made = False
            except OSError as error:
                raise self._error(error.strerror) from None
            parent = directory
            try:
                directory = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=parent)
            except OSError as error:
                if made:
                    self.made.append((parent, name, -1))
                raise self._error("a symbolic link stands where pgvet makes a directory for it: pgvet writes no file "
                                  "through a link" if error.errno in (errno.ELOOP, errno.ENOTDIR)
                                  else error.strerror) from None
            if made:
                self.made.append((parent, name, directory))
        return directory

    def _prepare(self, like: os.stat_result | None, streams: bool) -> None:
        target = self.name
        status = self._lstat(target)
        if status is not None and not stat.S_ISREG(status.st_mode):
            if not streams:
                raise self._error("a symbolic link: pgvet writes no file through a link" if stat.S_ISLNK(status.st_mode)
                                  else "not a regular file")
            # a named pipe (or a link to one) another user put in /tmp would hand them the report as it is written
            self._refuse_a_planted_file(target, status)
            self.handle = self._open_stream(target)
            return
        if status is not None:
            self._refuse_a_planted_file(target, status)
        try:
            self.model = like if like is not None else status
            if like is None and status is not None:  # the file replaced: a regular file, lstat said
                self.acl = access_acl(f"/proc/self/fd/{self.directory}/{target}", follow_symlinks=False)
            self.temporary = f".{target}.{os.getpid()}-{os.urandom(4).hex()}{TEMPORARY_SUFFIX}"
            # its mode is set when it is complete: nobody reads it half-written
            descriptor = os.open(self.temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                                 PRIVATE_MODE, dir_fd=self.directory)
        except PermissionError as error:
            self.temporary = None
            if status is None or not streams:
                raise self._error(error.strerror) from None
            # a report kept writable in a directory pgvet may not add to: written in place, as it always was
            self.handle = self._open_checked(target, status)
            return
        except OSError as error:
            self.temporary = None
            raise self._error(error.strerror) from None
        self.handle = open(descriptor, "wb")  # noqa: SIM115  # closed by commit or discard

    def _refuse_a_planted_file(self, target: str, status: os.stat_result) -> None:
        """A file of another user in a directory others may write to (/tmp) may have been put there for pgvet to
        fill: replaced, it would keep that user's ownership and mode, and they would read what pgvet wrote; a named
        pipe, or a link to one, would hand it to them as it is written. The kernel's protected_regular and
        protected_fifos refuse root such a file for the same reason (when it is created, not opened, for a pipe);
        so does pgvet, for anyone."""
        if status.st_uid == os.geteuid():
            return
        directory = os.path.dirname(os.fspath(self.path)) or "."
        if others_may_write(os.fstat(self.directory), self.directory):
            raise self._error(f"a file owned by uid {status.st_uid} in {directory}, a directory others may write to: "
                              "pgvet hands them nothing it writes (remove the file, or write elsewhere)")

    def _lstat(self, target: str) -> os.stat_result | None:
        try:
            return os.lstat(target, dir_fd=self.directory)
        except FileNotFoundError:
            return None
        except OSError as error:
            raise self._error(error.strerror) from None

    def _open(self, target: str, flags: int) -> IO[bytes]:
        try:
            # closed by commit or discard
            return open(os.open(target, flags | os.O_CLOEXEC, dir_fd=self.directory), "wb")
        except OSError as error:
            raise self._error(error.strerror) from None

    def _open_checked(self, target: str, checked: os.stat_result) -> IO[bytes]:
        """The regular file ``target`` that lstat showed as ``checked`` opened to be written in place, emptied only
        once fstat shows it is that file: one put in its place since (by whoever may write its directory) is left
        as it is, not handed the output."""
        handle = self._open(target, os.O_WRONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        status = os.fstat(handle.fileno())
        if (status.st_dev, status.st_ino) != (checked.st_dev, checked.st_ino) or not stat.S_ISREG(status.st_mode):
            handle.close()
            raise self._error("the file was replaced while pgvet was about to write it; nothing written")
        try:
            os.ftruncate(handle.fileno(), 0)
        except OSError as error:
            handle.close()
            raise self._error(error.strerror) from None
        return handle

    def _open_stream(self, target: str) -> IO[bytes]:
        """A pipe, a socket or a character device (a terminal, /dev/null), also through a link (/dev/stdout), or
        the file pgvet's own standard output or error goes to (``-o /dev/stdout > file``: added to it), opened;
        anything else is refused (a regular file or a disk behind a link, a directory)."""
        handle = self._open(target, os.O_WRONLY | os.O_NOCTTY | os.O_APPEND)
        status = os.fstat(handle.fileno())
        if stat.S_ISFIFO(status.st_mode) or stat.S_ISSOCK(status.st_mode) or stat.S_ISCHR(status.st_mode):
            return handle
        if stat.S_ISREG(status.st_mode) and any(_same_file(status, stream) for stream in (1, 2)):
            return handle
        handle.close()
        if stat.S_ISREG(status.st_mode):
            raise self._error("a symbolic link: pgvet writes no file through a link")
        raise self._error("not a regular file, a pipe or a terminal")

    def _error(self, reason: str | None) -> UsageError:
        return UsageError(f"cannot write {self.shown}: {reason}")

    def write(self, data: bytes) -> None:
        assert self.handle is not None
        try:
            self.handle.write(data)
        except OSError as error:
            raise self._error(error.strerror) from None

    def commit(self) -> None:
        """Flush what is written to the disk and put the file in place (a full disk may only show here)."""
        assert self.handle is not None
        try:
            self.handle.flush()
            if self.temporary is not None:
                descriptor = self.handle.fileno()
                self._set_mode(descriptor)
                os.fsync(descriptor)
            self.handle.close()
            if self.temporary is not None:
                # a link made at the target since is replaced, not followed
                os.replace(self.temporary, self.name, src_dir_fd=self.directory, dst_dir_fd=self.directory)
                self.temporary = None
                with contextlib.suppress(OSError):  # a file system that cannot sync a directory offers no more
                    os.fsync(self.directory)
            for _, _, made in self.made:
                os.fchmod(made, PRIVATE_DIRECTORY_MODE if self.private else NEW_DIRECTORY_MODE & ~_umask())
            self.committed = True
        except OSError as error:
            raise self._error(error.strerror) from None
        finally:
            self.discard()

    def _set_mode(self, descriptor: int) -> None:
        if self.model is None:
            os.fchmod(descriptor, PRIVATE_MODE if self.private else NEW_FILE_MODE & ~_umask())
            return
        mode = stat.S_IMODE(self.model.st_mode)
        os.fchmod(descriptor, mode & 0o700 if self.private else mode)
        # With an ACL the group bits are its mask: the mode alone would give the owning group what the ACL gave
        # named users (0600 + u:monitor:r showed 0640 and was written 0640 without it, readable by the group).
        try:
            set_access_acl(descriptor, None if self.private else self.acl)
        except OSError:  # the ACL cannot be kept: no one but the owner reads the copy
            os.fchmod(descriptor, mode & 0o700)
        if (self.model.st_uid, self.model.st_gid) != (os.geteuid(), os.getegid()):
            with contextlib.suppress(PermissionError):  # root keeps the owner; a user can keep only a group of theirs
                os.fchown(descriptor, self.model.st_uid, self.model.st_gid)

    def discard(self) -> None:
        if self.handle is not None:
            with contextlib.suppress(OSError):
                self.handle.close()
            self.handle = None
        if self.temporary is not None:
            with contextlib.suppress(OSError):
                os.unlink(self.temporary, dir_fd=self.directory)
            self.temporary = None
        if self.directory >= 0:
            os.close(self.directory)
            self.directory = -1
        if not self.committed:
            for parent, name, _ in reversed(self.made):
                with contextlib.suppress(OSError):  # not empty: someone else put something there
                    os.rmdir(name, dir_fd=parent)
        for descriptor in self.opened:
            os.close(descriptor)
        self.made, self.opened = [], []

    def __enter__(self) -> OutputFile:
        return self

    def __exit__(self, failed: type[BaseException] | None, *_: object) -> None:
        if failed is None:
            self.commit()
        else:
            self.discard()


def write_file(path: Path, data: bytes, *, private: bool = False, like: os.stat_result | None = None,
               acl: bytes | None = None, shown: str | None = None, beneath: str | None = None) -> None:
    """Write ``data`` as the file ``path``, whole or not at all (see OutputFile)."""
    with OutputFile(path, private=private, like=like, acl=acl, shown=shown, beneath=beneath) as out:
        out.write(data)


def _same_file(status: os.stat_result, descriptor: int) -> bool:
    try:
        other = os.fstat(descriptor)
    except OSError:  # closed
        return False
    return (status.st_dev, status.st_ino) == (other.st_dev, other.st_ino)


def _umask() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return umask


def is_private(directory: str) -> bool:
    """Whether a host directory holds something other users may not read: the directory itself, a regular file in
    it or in its subdirectories (an include_dir's conf.d/ of 0600 files; links not followed), or a subdirectory on
    the way, unreadable or closed to them. What pgvet writes from such a host is then 0600. A tree of more than
    PRIVACY_SCAN_ENTRIES entries, or one that cannot be read whole, is taken as private: others may well not read
    what was not looked at."""
    pending, seen = [directory], 0
    try:
        if not _open_to_others(os.stat(directory).st_mode):
            return True
        while pending:
            with os.scandir(pending.pop()) as entries:
                for entry in entries:
                    seen += 1
                    if seen > PRIVACY_SCAN_ENTRIES:
                        return True
                    if entry.is_symlink():
                        continue
                    mode = entry.stat(follow_symlinks=False).st_mode
                    if stat.S_ISDIR(mode):
                        if not _open_to_others(mode):
                            return True
                        pending.append(entry.path)
                    elif stat.S_ISREG(mode) and not mode & stat.S_IROTH:
                        return True
    except OSError:  # gone, or unreadable by this user: others may well not read it either
        return True
    return False


# The entries is_private looks at in a host directory at most (as a search for hosts, snapshot/discovery.py).
PRIVACY_SCAN_ENTRIES = 20_000


def _open_to_others(directory_mode: int) -> bool:
    return directory_mode & (stat.S_IROTH | stat.S_IXOTH) == stat.S_IROTH | stat.S_IXOTH


def any_private(directories: Iterable[str | os.PathLike[str] | None]) -> bool:
    """Whether one of the host directories is private (is_private); None stands for input files given one by one."""
    return any(directory is not None and is_private(os.fspath(directory)) for directory in directories)
