"""Real paths of a host's files, cheaply: reports and suppressions look up every file of every host."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path


def real_path_in(real_root: str, path: str) -> str:
    """``real_root/path`` with symbolic links resolved, ``real_root`` being already real: a plain name that is
    no link is its own real path (one lstat instead of one per component)."""
    if path in ("", "."):
        return real_root
    candidate = os.path.join(real_root, path)
    if "/" not in path and path != ".." and not os.path.islink(candidate):
        return candidate
    return os.path.realpath(candidate)


def is_inside(real_path: str, real_root: str) -> bool:
    """Whether a real path lies under a real directory (not the directory itself)."""
    return real_path.startswith(real_root.rstrip(os.sep) + os.sep)


def root_within(path: Path, repository: Path | None) -> str | None:
    """``repository`` (absolute) when ``path`` lies in it as written: a found configuration's file, read beneath it
    (pgvet.inputs.reading.open_input) so that a link swapped in after the configuration's check leads nowhere out."""
    if repository is None:
        return None
    root = os.path.abspath(repository)
    given = os.path.abspath(path)
    return root if given == root or is_inside(given, root) else None


def repository_of(path: str) -> str | None:
    """The repository ``path`` is in as written (its links not resolved): the nearest directory at or above it
    that holds ``.git`` (a directory, or a worktree's file); None when none does."""
    candidate = os.path.abspath(path)
    while True:
        if os.path.lexists(os.path.join(candidate, ".git")):
            return candidate
        parent = os.path.dirname(candidate)
        if parent == candidate:
            return None
        candidate = parent


def link_out_of_repository(path: str) -> str | None:
    """The repository (its real path) of the first symbolic link on ``path`` that lies in a repository (a directory
    holding ``.git``) and leads out of it; None when there is none. Not where it leads: resolved on the machine
    that runs pgvet, it would show in messages what lies there. The path is walked
    from the root as the kernel walks it, a component at a time (``link/..`` is the parent of the link's target),
    and a repository counts from the real directory that holds its ``.git``: a link into another repository
    (etckeeper's /etc) leads out of the one that holds the link."""
    real, repository = os.sep, None
    for part in os.path.join(os.getcwd(), path).split(os.sep):  # getcwd is a real path
        if part in ("", "."):
            continue
        if part == "..":
            real = os.path.dirname(real)
            continue
        candidate = os.path.join(real, part)
        if os.path.islink(candidate):
            target = os.path.realpath(candidate)
            if repository is not None and target != repository and not is_inside(target, repository):
                return repository
            candidate = target
        real = candidate
        if os.path.lexists(os.path.join(real, ".git")):
            repository = real
    return None


def make_directories(path: Path, mode: int) -> None:
    """``path`` made, with the directories missing on the way, each with ``mode`` (less the umask): Path.mkdir
    makes the parents 0777 less the umask, world-writable under umask 000 (a service's UMask=0000). One that
    exists already, or is made meanwhile, is left as it is."""
    missing = []
    while not path.is_dir() and path.parent != path:
        missing.append(path)
        path = path.parent
    for directory in reversed(missing):
        with contextlib.suppress(FileExistsError):  # made meanwhile: a file there fails the caller's next step
            directory.mkdir(mode=mode)
