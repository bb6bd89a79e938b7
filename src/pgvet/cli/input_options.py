"""The options naming input files one by one (--sysctl, --meminfo…; names and help from inputs/registry.py),
for hosts that are not laid out as a snapshot directory: `lint` and `facts` take them all, and explicit_inputs
makes them the inputs of one host."""

from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from pgvet.inputs.registry import KINDS
from pgvet.snapshot.discovery import SnapshotInputs, given_inputs


def _input_option(kind: str) -> Any:
    return typer.Option(KINDS[kind].option, help=KINDS[kind].option_help)


SysctlOpt = Annotated[Optional[Path], _input_option("sysctl")]  # noqa: UP045
SysctlConfOpt = Annotated[Optional[list[Path]], _input_option("sysctl_conf")]  # noqa: UP045
MeminfoOpt = Annotated[Optional[Path], _input_option("meminfo")]  # noqa: UP045
LscpuOpt = Annotated[Optional[Path], _input_option("lscpu")]  # noqa: UP045
MountsOpt = Annotated[Optional[Path], _input_option("mounts")]  # noqa: UP045
SysfsOpt = Annotated[Optional[Path], _input_option("sysfs")]  # noqa: UP045
HostYamlOpt = Annotated[Optional[Path], _input_option("host_yaml")]  # noqa: UP045
ConfOpt = Annotated[Optional[Path], _input_option("postgresql_conf")]  # noqa: UP045
AutoConfOpt = Annotated[Optional[Path], _input_option("postgresql_auto_conf")]  # noqa: UP045
PgSettingsOpt = Annotated[Optional[Path], _input_option("pg_settings")]  # noqa: UP045


def explicit_inputs(sysctl: Path | None, sysctl_conf: list[Path] | None, meminfo: Path | None, lscpu: Path | None,
                    mounts: Path | None, sysfs: Path | None, host_yaml: Path | None, postgresql_conf: Path | None,
                    auto_conf: Path | None, pg_settings: Path | None) -> SnapshotInputs | None:
    """The input files given one by one (--sysctl, --meminfo…), or None when none was."""
    return given_inputs({"sysctl": sysctl, "sysctl_conf": list(sysctl_conf or []), "meminfo": meminfo, "lscpu": lscpu,
                         "mounts": mounts, "sysfs": sysfs, "host_yaml": host_yaml, "postgresql_conf": postgresql_conf,
                         "auto_conf": auto_conf, "pg_settings": pg_settings})
