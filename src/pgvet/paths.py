"""Real paths of a host's files, cheaply: reports and suppressions look up every file of every host."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

MAX_LINKS = 40  # as the kernel's path walk


def real_path_in(real_root: str, path: str) -> str:
    """``real_root/path`` with symbolic links resolved, ``real_root`` being already real: a plain name that is
    no link is its own real path (one lstat instead of one per component)."""
    if path in ("", "."):
        return real_root
    candidate = os.path.join(real_root, path)
    if "/" not in path and path != ".." and not os.path.islink(candidate):
        return candidate
    return os.path.realpath(candidate)


def real_path_beneath(real_root: str, path: str, given_root: str | None = None) -> str | None:
    """``real_root/path`` with its symbolic links resolved within ``real_root`` only, as a host's inputs are opened
    (pgvet.inputs.reading.open_input), for naming a file rather than opening it: nothing outside the directory is
    looked up (os.path.realpath follows a link of the host out and looks up what lies there on the machine that
    runs pgvet, which a report then shows); None when a link or a ``..`` leads out. An absolute link names the root by
    its real path or as given (``given_root``). What does not exist is joined as written."""
    pending = path_steps(path)
    real, links = real_root, 0
    while pending:
        name = pending.pop()
        if name == "..":
            if real == real_root:
                return None
            real = os.path.dirname(real)
            continue
        candidate = os.path.join(real, name)
        if not os.path.islink(candidate):  # every component before it is real: a plain name is its own
            real = candidate
            continue
        try:
            target = os.readlink(candidate)
        except OSError:  # gone since
            real = candidate
            continue
        links += 1
        if links > MAX_LINKS:
            return None
        if os.path.isabs(target):
            within = next((target[len(prefix):] for prefix in (real_root, given_root) if prefix is not None and (
                target == prefix or is_inside(target, prefix))), None)
            if within is None:
                return None
            real, target = real_root, within
        pending.extend(path_steps(target))
    return real


def real_path_within(absolute: str, real_root: str, given_root: str) -> str | None:
    """An absolute path's real path when it lies in a directory (``given_root`` as given, absolute and lexical, or
    ``real_root``, its real path), its links resolved beneath it (real_path_beneath); None when it lies elsewhere or a
    link leads it out, nothing outside looked up."""
    for prefix in (given_root, real_root):
        if absolute == prefix or is_inside(absolute, prefix):
            return real_path_beneath(real_root, absolute[len(prefix):], given_root)
    return None


def path_steps(path: str) -> list[str]:
    """The components of a path still to walk, the next one last."""
    return [part for part in reversed(path.split("/")) if part not in ("", ".")]


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
