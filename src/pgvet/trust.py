"""Who could have written a file: pgvet takes code (the cached rule pack) and settings (a configuration it finds
by itself) only from files that no other user could have written or replaced."""

from __future__ import annotations

import grp
import os
import pwd
import stat
from functools import lru_cache


def others_may_write(status: os.stat_result) -> bool:
    """Whether a user other than the owner may write the file or directory ``status`` describes: it is writable by
    all, or by a group that is not its owner's private group (Debian's user private groups make home directories
    and checkouts group-writable by a group of the user alone)."""
    mode = status.st_mode
    if mode & stat.S_IWOTH:
        return True
    return bool(mode & stat.S_IWGRP) and not _private_group(status.st_gid, status.st_uid)


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


def why_untrusted(status: os.stat_result, *, root_trusted: bool) -> str | None:
    """Why a file or directory could have been written by another user than the one running pgvet (or root, when
    ``root_trusted``), None when it could not."""
    euid = os.geteuid()
    if status.st_uid != euid and not (root_trusted and status.st_uid == 0):
        return f"owned by uid {status.st_uid}, not by you (uid {euid})"
    if others_may_write(status):
        return f"writable by other users (mode {stat.S_IMODE(status.st_mode):04o})"
    return None
