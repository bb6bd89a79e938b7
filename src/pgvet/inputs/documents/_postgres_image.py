"""What the postgres image (docker-library/postgres) and those built on it do with their data directory, as a
Compose service or a Kubernetes workload runs them: the major version a tag names, where the data directory is
(PGDATA), and a volume at the place of before 18, where the 18 image refuses to start."""

from __future__ import annotations

import re
from collections.abc import Iterable

from pgvet.inputs.documents import DeclaredHost
from pgvet.inputs.documents._postgres_options import Dialect, read_options
from pgvet.inputs.postgresql_conf import ConfProblem
from pgvet.pgparams import NEWEST_MAJOR
from pgvet.provenance import Source

# the images of the postgres image's layout (its entrypoint; PGDATA /var/lib/postgresql/data, version-specific since
# 18), by repository, registry and Docker Hub's library/ aside: their server reads its data directory's postgresql.conf
_OFFICIAL_LAYOUT = frozenset({"postgres", "postgis/postgis", "pgvector/pgvector", "ankane/pgvector",
                              "timescale/timescaledb", "tensorchord/pgvecto-rs"})
DATA_DIRECTORY = "/var/lib/postgresql/data"  # before 18
ENTRYPOINT = "docker-entrypoint.sh"  # the postgres image's: it runs the command it is given
# a tag's major version: postgres:16, 16.2-alpine, timescaledb:latest-pg15, pg14-v0.2.0
_TAG_VERSION = re.compile(r"(?:^|[^0-9])pg-?(\d{2})(?![0-9])|^(\d{2})(?![0-9])")


def image_tag(image: str) -> str:
    name = image.split("@", 1)[0].rsplit("/", 1)[-1]
    return name.split(":", 1)[1] if ":" in name else ""


def image_version(image: str) -> int | None:
    """The major version in the image's tag; None where it names none (latest, no tag)."""
    match = _TAG_VERSION.search(image_tag(image))
    return int(match.group(1) or match.group(2)) if match is not None else None


def official_layout(image: str) -> bool:
    """An image of the postgres image's layout (its entrypoint, its data directory)."""
    parts = image.split("@", 1)[0].split("/")
    if len(parts) > 1 and ("." in parts[0] or ":" in parts[0] or parts[0] == "localhost"):
        parts = parts[1:]  # a registry
    return "/".join(parts).split(":", 1)[0].lower().removeprefix("library/") in _OFFICIAL_LAYOUT


def entrypoint_options(declared: DeclaredHost, arguments: list[tuple[str, Source]], dialect: Dialect) -> None:
    """The container's command line (its entrypoint's words, then its command's, each at its line) as the
    declared host's settings: the image's entrypoint runs postgres with the options after it, or with options given
    alone (docker-entrypoint.sh); another program is noted, not read."""
    if not arguments:
        return
    if arguments[0][0].rsplit("/", 1)[-1] == ENTRYPOINT and len(arguments) > 1:  # given the command to run
        arguments = arguments[1:]
    program = arguments[0][0]
    if program.rsplit("/", 1)[-1] == "postgres":
        arguments = arguments[1:]
    elif not program.startswith("-"):
        declared.notes.append(f"{arguments[0][1]}: the container runs {program}, not postgres: not read")
        return
    read_options(declared, arguments, dialect)


def data_directories(pgdata: str | None, version: int | None) -> list[str]:
    """Where the container's data directory may be: its PGDATA variable, else the image's (version-specific since
    18: /var/lib/postgresql/18/docker; /var/lib/postgresql/data before; either for a tag without a version)."""
    if pgdata is not None:
        return [pgdata]
    if version is None:
        return [DATA_DIRECTORY, *(f"/var/lib/postgresql/{major}/docker" for major in range(18, NEWEST_MAJOR + 1))]
    return [DATA_DIRECTORY] if version < 18 else [f"/var/lib/postgresql/{version}/docker"]


def data_mount_before_18(image: str, pgdata: str | None, mounts: Iterable[tuple[str, Source]],
                         problem_kind: str = "data-mount-before-18") -> ConfProblem | None:
    """From 18 the postgres image's data directory is /var/lib/postgresql/<major>/docker, and its entrypoint refuses
    to start while /var/lib/postgresql/data, where data was mounted before 18, is a mount point and the data
    directory holds no database (docker-entrypoint.sh, docker_setup_env: "unused mount/volume"): the fatal problem
    at that mount (``mounts``: where each volume is mounted, normalised, at its line). A tag without a version is the
    newest (latest is 18)."""
    version = image_version(image)
    if not official_layout(image) or (version is None and image_tag(image) not in ("", "latest")):
        return None
    major = version or NEWEST_MAJOR
    if major < 18 or pgdata not in (None, f"/var/lib/postgresql/{major}/docker"):
        return None  # before 18, or PGDATA set elsewhere (the old place: the mount is the data directory)
    for target, source in mounts:
        if target == DATA_DIRECTORY:
            return ConfProblem(
                problem_kind,
                f"a volume is mounted at {DATA_DIRECTORY}, where the postgres image kept its data before 18: from "
                f"18 its data directory is /var/lib/postgresql/{major}/docker, and its entrypoint refuses to start "
                f"while {DATA_DIRECTORY} is a mount point (\"unused mount/volume\"): mount the volume at "
                "/var/lib/postgresql (a volume holding a database of an older major needs pg_upgrade first), or set "
                f"PGDATA: {DATA_DIRECTORY}", source, True)
    return None
