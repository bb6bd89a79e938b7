"""Find, compile and cache rule packs.

The compiled pack is pickled to the cache directory (pgvet.cache: used only when no other user could have
written it), keyed by the pack files (paths and contents), pgvet's version and the engine's own files, so a
warm start imports neither pydantic, pglast nor ruamel. Failures to read or write the cache are ignored: the
pack is then compiled again. A pack compiled anew replaces the one of the same files it supersedes.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import stat
import sys
from collections.abc import Sequence
from pathlib import Path

from pgvet import __version__, cache
from pgvet.engine.pack import MAX_RULE_FILE_CHARS, PackSource, Rule, RulePack
from pgvet.errors import RulePackError
from pgvet.inputs.reading import LeadsOut, open_directory, open_input
from pgvet.paths import root_within
from pgvet.provenance import Source

__all__ = ["Rule", "RulePack", "builtin_rules_dir", "load_pack"]

RULE_SUFFIXES = (".yaml", ".yml")
OLD_PACK_NAMES = "pack-"  # compiled packs as earlier versions named them (pack-KEY.pickle): never read again
_ENGINE_DIR = Path(__file__).resolve().parent


def builtin_rules_dir() -> Path:
    """pgvet's own pack: ``pgvet/_rules`` in an installed wheel, else the repository's top-level ``rules/``."""
    # importlib.resources.files("pgvet") / "_rules" is this path for an installed wheel; looking it up
    # directly spares the start-up the import of importlib.resources (and zipfile).
    installed = _ENGINE_DIR.parent / "_rules"
    if installed.is_dir():
        return installed
    return _ENGINE_DIR.parents[2] / "rules"


def _rule_files(directory: Path, root: str | None = None) -> list[Path]:
    """The rule files of a pack: the file named, or a directory's *.yaml files, listed from the directory's
    descriptor. Beneath ``root`` (a found configuration's repository) that directory is opened beneath it, as _read
    opens each file: a link swapped in since the configuration's check leads nowhere out of it."""
    try:
        descriptor = open_directory(str(directory), root)
    except NotADirectoryError:
        return [directory]
    except FileNotFoundError:
        raise RulePackError("rule pack directory not found", Source(str(directory))) from None
    except LeadsOut:
        raise RulePackError(f"not read: a symbolic link leads it out of the repository {root}",
                            Source(str(directory))) from None
    except OSError as error:
        raise RulePackError(f"rule pack directory not read: {error.strerror or error}",
                            Source(str(directory))) from None
    try:
        found = sorted(directory / name for name in os.listdir(descriptor)
                       if Path(name).suffix in RULE_SUFFIXES and _regular(name, descriptor, follow=root is None))
    finally:
        os.close(descriptor)
    if not found:
        raise RulePackError("no rule files (*.yaml) in this directory", Source(str(directory)))
    return found


def _regular(name: str, directory: int, *, follow: bool) -> bool:
    """Whether ``name`` in ``directory`` is a regular file (``follow``: through its links), or a link that _read
    resolves within the repository."""
    try:
        mode = os.stat(name, dir_fd=directory, follow_symlinks=follow).st_mode
    except OSError:
        return False
    return stat.S_ISREG(mode) or (not follow and stat.S_ISLNK(mode))


def _read(path: Path, root: str | None = None) -> str:
    """A rule file's text, from the one descriptor that is checked: beneath ``root`` (a found configuration's
    repository), opened a component at a time without following a link out of it and only a regular file; else
    as the user named it."""
    try:
        descriptor, _ = open_input(str(path), root)
        os.set_blocking(descriptor, True)
        with open(descriptor, "rb") as handle:  # no more than the limit read, whatever the file's size
            data = handle.read(4 * MAX_RULE_FILE_CHARS + 1)
        if len(data) > 4 * MAX_RULE_FILE_CHARS:
            # Too large whatever its bytes (a character has at most 4), and the cut may split a character:
            # decoded leniently (a replacement takes at most 3 bytes) the text still counts more than the
            # limit, so building reports the size, not a UTF-8 error at the cut.
            return data.decode("utf-8", errors="replace")
        return data.decode("utf-8")
    except LeadsOut:  # where the link leads is not said: a report may be public, the machine's paths are not
        raise RulePackError(f"not read: a symbolic link leads it out of the repository {root}",
                            Source(str(path))) from None
    except (OSError, UnicodeDecodeError) as error:
        raise RulePackError(f"cannot read rule file: {error}", Source(str(path))) from None


def _engine_stamp() -> bytes:
    """Sizes and times of the engine's modules: a developer's edit must not meet an old cached pack."""
    parts: list[str] = []
    for path in sorted(_ENGINE_DIR.glob("*.py")):
        try:
            stat = path.stat()
        except OSError:
            continue
        parts.append(f"{path.name}:{stat.st_size}:{stat.st_mtime_ns}")
    return ";".join(parts).encode()


def load_pack(dirs: Sequence[Path] = (), *, builtin: bool = True, repository: Path | None = None) -> RulePack:
    """The built-in pack (first) and users' packs, compiled, or from the cache when nothing changed. A pack inside
    ``repository`` (a found configuration's) is read beneath it, never through a link that leads out of it."""
    sources: list[PackSource] = []
    if builtin:
        directory = builtin_rules_dir()
        if directory.is_dir():
            sources += [PackSource(str(path), _read(path), builtin=True) for path in _rule_files(directory)]
    seen = {Path(source.path).resolve() for source in sources}
    for directory in dirs:
        root = root_within(Path(directory), repository)
        for path in _rule_files(Path(directory), root):
            if path.resolve() not in seen:  # `pgvet rules test rules/` names the built-in pack again
                seen.add(path.resolve())
                sources.append(PackSource(str(path), _read(path, root)))
    # Which packs (their files, for one Python: the pack holds marshalled code), and what they hold (with pgvet's
    # version and the engine's files): a new content of the same packs replaces the old one in the cache.
    packs = hashlib.sha256(f"{sys.version_info[0]}.{sys.version_info[1]}".encode())
    key = hashlib.sha256(f"{__version__}\0{sys.version}\0".encode())
    key.update(_engine_stamp())
    for source in sources:
        packs.update(f"\0{source.path}\0{source.builtin}\0".encode())
        key.update(f"\0{source.path}\0{source.builtin}\0".encode())
        key.update(source.text.encode())
    same_packs = f"rules-{packs.hexdigest()[:16]}-"
    cache_file = f"{same_packs}{key.hexdigest()[:32]}.pickle"
    cached = _read_cache(cache_file)
    if cached is not None:
        return cached
    # here, not at the top: building imports ruamel.yaml, pydantic and pglast, which a warm cache spares
    from pgvet.engine.build import build_pack

    pack = build_pack(sources)
    _write_cache(cache_file, pack, (same_packs, OLD_PACK_NAMES))
    return pack


def _read_cache(name: str) -> RulePack | None:
    data = cache.read(name)
    if data is None:
        return None
    try:
        pack = pickle.loads(data)
    except Exception:  # a truncated or outdated cache only costs a compilation
        return None
    return pack if isinstance(pack, RulePack) else None


def _write_cache(name: str, pack: RulePack, replaces: tuple[str, ...]) -> None:
    cache.write(name, pickle.dumps(pack, protocol=pickle.HIGHEST_PROTOCOL), replaces=replaces)
