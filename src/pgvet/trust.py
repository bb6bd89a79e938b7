"""Who could have written a file: pgvet takes code (the cached rule pack) and settings (a configuration it finds
by itself) only from files that no other user could have written or replaced."""

from __future__ import annotations

import errno
import grp
import os
import pwd
import stat
import struct
from functools import lru_cache

from pgvet.paths import MAX_LINKS, path_steps

# The extended attribute Linux keeps a POSIX access ACL in (acl(5)): a header of version 2, then entries of tag,
# permissions and id (little-endian u16, u16, u32); named users and groups are the entries others are given.
_ACL_XATTR = "system.posix_acl_access"
_ACL_VERSION = 2
_ACL_USER, _ACL_GROUP = 0x02, 0x08
_ACL_WRITE = 0x02


def access_acl(target: int | str, *, follow_symlinks: bool = True) -> bytes | None:
    """The access ACL of ``target`` (a descriptor or a path) as the kernel keeps it, None when it has none beyond
    its mode (or its filesystem keeps none): a copy given the mode alone but not the ACL opens the owning group's
    entry to the mask, which may grant what the ACL's group entry did not."""
    try:
        return os.getxattr(target, _ACL_XATTR, follow_symlinks=follow_symlinks)
    except OSError:  # ENODATA: no ACL beyond the mode; ENOTSUP: none on this filesystem
        return None


def set_access_acl(descriptor: int, acl: bytes | None) -> None:
    """Give the file ``descriptor`` is open on the access ACL ``acl``, or none beyond its mode (a new file takes one
    from its directory's default ACL, whose named entries its mode would then open to the mask)."""
    if acl is not None:
        os.setxattr(descriptor, _ACL_XATTR, acl)
        return
    try:
        os.removexattr(descriptor, _ACL_XATTR)
    except OSError as error:
        if error.errno not in (errno.ENODATA, errno.ENOTSUP):
            raise


def others_may_write(status: os.stat_result, target: int | str) -> bool:
    """Whether a user other than the owner may write the file or directory ``status`` describes (``target``: its
    descriptor or path, to read its ACL): it is writable by all, or by a group that is not its owner's private
    group (Debian's user private groups make home directories and checkouts group-writable by a group of the user
    alone), or its ACL lets a named user or group write it. With an ACL the mode's group bits are its mask, which
    bounds every named entry: no group write bit, no one else may write."""
    mode = status.st_mode
    if mode & stat.S_IWOTH:
        return True
    if not mode & stat.S_IWGRP:
        return False
    return not _private_group(status.st_gid, status.st_uid) or _acl_lets_others_write(target, status.st_uid)


def _acl_lets_others_write(target: int | str, owner: int) -> bool:
    """Whether the access ACL of ``target`` names a user other than ``owner``, or a group that is not the owner's
    private one, with the right to write. A file without an ACL (or on a filesystem without them) has none; an ACL
    pgvet cannot read is taken to let them."""
    data = access_acl(target)
    if data is None:
        return False
    if len(data) < 4 or (len(data) - 4) % 8 or struct.unpack_from("<I", data)[0] != _ACL_VERSION:
        return True
    for offset in range(4, len(data), 8):
        tag, permissions, identifier = struct.unpack_from("<HHI", data, offset)
        if not permissions & _ACL_WRITE:
            continue
        if (tag == _ACL_USER and identifier != owner) or (
                tag == _ACL_GROUP and not _private_group(identifier, owner)):
            return True
    return False


@lru_cache(maxsize=8)
def _private_group(gid: int, uid: int) -> bool:
    """Whether ``gid`` is the private group of ``uid``: its primary group, named after it, with no other member —
    listed in the group, or another user whose primary group it is (``useradd -g alice bob``: not in gr_mem, yet
    the group's rights are bob's; he could fill a group-writable file of alice's and hard link it into her cache)."""
    try:
        user = pwd.getpwuid(uid)
        group = grp.getgrgid(gid)
    except KeyError:  # a user or group without an entry: nothing says who else is in the group
        return False
    return (user.pw_gid == gid and group.gr_name == user.pw_name and set(group.gr_mem) <= {user.pw_name}
            and all(other.pw_gid != gid or other.pw_uid == uid for other in pwd.getpwall()))


def why_untrusted(status: os.stat_result, target: int | str, *, root_trusted: bool) -> str | None:
    """Why a file or directory could have been written by another user than the one running pgvet (or root, when
    ``root_trusted``), None when it could not. ``target``: its descriptor or path (its ACL is read there)."""
    euid = os.geteuid()
    if status.st_uid != euid and not (root_trusted and status.st_uid == 0):
        return f"owned by uid {status.st_uid}, not by you (uid {euid})"
    if others_may_write(status, target):
        mode = f"mode {stat.S_IMODE(status.st_mode):04o}"
        by_acl = not status.st_mode & stat.S_IWOTH and _private_group(status.st_gid, status.st_uid)
        return f"writable by other users ({mode}{', whose ACL gives them write' if by_acl else ''})"
    return None


def why_way_untrusted(path: str) -> str | None:
    """Why another user could change what ``path`` leads to, though not what it is: a directory on the way to it
    (as written, links followed as the kernel follows them) that another user than the one running pgvet or root
    owns or may write to — they could rename what it holds and put a directory or a link of their own in its
    place, a link to a cloned repository, whose files are the user's —, or a link on the way that another user
    owns. A sticky directory others may write to (/tmp) is not one when what the way goes through in it is the
    user's or root's: no one else may rename that. None when no one could; what ``path`` names itself is the
    caller's to check (why_untrusted)."""
    euid = os.geteuid()
    pending = path_steps(os.path.abspath(path))
    current, links = os.sep, 0
    while pending:
        name = pending.pop()
        if name == "..":
            current = os.path.dirname(current)
            continue
        directory = os.stat(current)  # a real path: every link before it was resolved
        candidate = os.path.join(current, name)
        status = os.lstat(candidate)
        ours = status.st_uid in (euid, 0)
        if directory.st_uid not in (euid, 0):
            return f"the directory {current} on the way to it is owned by uid {directory.st_uid}"
        if others_may_write(directory, current) and not (directory.st_mode & stat.S_ISVTX and ours):
            return (f"the directory {current} on the way to it is writable by other users "
                    f"(mode {stat.S_IMODE(directory.st_mode):04o})")
        if not stat.S_ISLNK(status.st_mode):
            current = candidate
            continue
        if not ours:
            return f"the link {candidate} on the way to it is owned by uid {status.st_uid}"
        links += 1
        if links > MAX_LINKS:
            raise OSError(errno.ELOOP, os.strerror(errno.ELOOP), path)
        target = os.readlink(candidate)
        pending.extend(path_steps(target))
        if os.path.isabs(target):
            current = os.sep
    return None


def trusted_program(name: str) -> str | None:
    """The program ``name`` as found on PATH, resolved, when neither it nor its directory could have been written by
    another user than the one running pgvet or root, nor a directory on the way to it (they could put a directory of
    their own in its place); None when PATH holds no such one. Only absolute entries are
    searched: an empty one, ``.`` or a relative directory is wherever pgvet happens to run (a cloned repository's
    ``lscpu``, run as root)."""
    for directory in os.environ.get("PATH", os.defpath).split(os.pathsep):
        if not os.path.isabs(directory):
            continue
        program = os.path.realpath(os.path.join(directory, name))
        try:
            status = os.stat(program)
            folder = os.path.dirname(program)
            if (not stat.S_ISREG(status.st_mode) or not os.access(program, os.X_OK)
                    or why_untrusted(status, program, root_trusted=True) is not None
                    or why_untrusted(os.stat(folder), folder, root_trusted=True) is not None
                    or why_way_untrusted(folder) is not None):
                continue
        except OSError:
            continue
        return program
    return None
