"""The options naming input files one by one (--sysctl, --meminfo…), for hosts that are not laid out as a snapshot
directory: `lint` and `facts` take them all, and explicit_inputs makes them the inputs of one host."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from pgvet.snapshot import SnapshotInputs

SysctlOpt = Annotated[Optional[Path], typer.Option("--sysctl", help="Output of `sysctl -a`.")]  # noqa: UP045
SysctlConfOpt = Annotated[Optional[list[Path]], typer.Option(  # noqa: UP045
    "--sysctl-conf", help="sysctl.conf / sysctl.d file (repeat).")]
MeminfoOpt = Annotated[Optional[Path], typer.Option("--meminfo", help="A copy of /proc/meminfo.")]  # noqa: UP045
LscpuOpt = Annotated[Optional[Path], typer.Option("--lscpu", help="Output of `lscpu` or `lscpu -J`.")]  # noqa: UP045
MountsOpt = Annotated[Optional[Path], typer.Option("--mounts", help="`mount`, /proc/mounts or `findmnt -l`.")]  # noqa: UP045
SysfsOpt = Annotated[Optional[Path], typer.Option("--sysfs", help="The `grep -H .` dump of sysfs files.")]  # noqa: UP045
HostYamlOpt = Annotated[Optional[Path], typer.Option("--host-yaml", help="host.yaml: what cannot be read.")]  # noqa: UP045
ConfOpt = Annotated[Optional[Path], typer.Option("--postgresql-conf", help="postgresql.conf (includes followed).")]  # noqa: UP045
AutoConfOpt = Annotated[Optional[Path], typer.Option("--auto-conf", help="postgresql.auto.conf.")]  # noqa: UP045
PgSettingsOpt = Annotated[Optional[Path], typer.Option("--pg-settings", help="pg_settings.json from `pgvet collect`.")]  # noqa: UP045


def explicit_inputs(sysctl: Path | None, sysctl_conf: list[Path] | None, meminfo: Path | None, lscpu: Path | None,
                    mounts: Path | None, sysfs: Path | None, host_yaml: Path | None, postgresql_conf: Path | None,
                    auto_conf: Path | None, pg_settings: Path | None) -> SnapshotInputs | None:
    """The input files given one by one (--sysctl, --meminfo…), or None when none was."""
    explicit = SnapshotInputs(sysctl=sysctl, sysctl_conf=list(sysctl_conf or []), meminfo=meminfo, lscpu=lscpu,
                              mounts=mounts, sysfs=sysfs, host_yaml=host_yaml, postgresql_conf=postgresql_conf,
                              postgresql_auto_conf=auto_conf, pg_settings=pg_settings)
    return None if explicit.is_empty() else explicit
