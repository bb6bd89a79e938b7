"""What the Bitnami PostgreSQL container image (bitnami/containers bitnami/postgresql, libpostgresql.sh) writes into
the postgresql.conf it generates, from its environment: the values it writes whatever that says, the variables that
set a parameter each, synchronous replication. The charts that run it (bitnami.py) and compose services of its image
(compose.py) give it its variables.
"""

from __future__ import annotations

import re

from pgvet.inputs.documents import DeclaredHost, conf_setting, get, yaml_line
from pgvet.inputs.documents._kubernetes import helm_text
from pgvet.inputs.postgresql_conf import ConfSetting
from pgvet.provenance import Source

# What the container writes into the postgresql.conf it generates (no primary.configuration), whatever its
# environment, beside PostgreSQL's defaults (its sample file's): libpostgresql.sh's
# postgresql_configure_replication_parameters, run on the primary and the replicas alike, standalone too. (It also
# writes wal_level, from POSTGRESQL_WAL_LEVEL, replica by default, as PostgreSQL's; fsync from POSTGRESQL_FSYNC.)
_CONTAINER_VALUES = {"max_wal_size": "400MB", "max_wal_senders": "16", "hot_standby": "on"}
# and the WAL it keeps for the replicas: wal_keep_size from PostgreSQL 13, wal_keep_segments before
_CONTAINER_WAL_KEEP = (("wal_keep_size", "128MB"), ("wal_keep_segments", "12"))
# Where pgvet says a value of the container's own comes from (no line of the values sets it).
CONTAINER_SOURCE = "<bitnami container: libpostgresql.sh>"
# The container's variables whose value it writes into the postgresql.conf it generates, each as a parameter
# (libpostgresql.sh: postgresql_configure_replication_parameters, _fsync, _logging, _connections, _timezone and
# postgresql_initialize's own lines)
_CONTAINER_ENVIRONMENT = {"POSTGRESQL_MAX_CONNECTIONS": "max_connections",
                          "POSTGRESQL_TCP_KEEPALIVES_IDLE": "tcp_keepalives_idle",
                          "POSTGRESQL_TCP_KEEPALIVES_INTERVAL": "tcp_keepalives_interval",
                          "POSTGRESQL_TCP_KEEPALIVES_COUNT": "tcp_keepalives_count",
                          "POSTGRESQL_STATEMENT_TIMEOUT": "statement_timeout",
                          "POSTGRESQL_SHARED_PRELOAD_LIBRARIES": "shared_preload_libraries",
                          "POSTGRESQL_WAL_LEVEL": "wal_level",
                          "POSTGRESQL_FSYNC": "fsync",
                          "POSTGRESQL_PASSWORD_ENCRYPTION": "password_encryption",
                          "POSTGRESQL_DEFAULT_TOAST_COMPRESSION": "default_toast_compression",
                          "POSTGRESQL_LOG_CONNECTIONS": "log_connections",
                          "POSTGRESQL_LOG_DISCONNECTIONS": "log_disconnections",
                          "POSTGRESQL_LOG_HOSTNAME": "log_hostname",
                          "POSTGRESQL_LOG_LINE_PREFIX": "log_line_prefix",
                          "POSTGRESQL_LOG_TIMEZONE": "log_timezone",
                          "POSTGRESQL_TIMEZONE": "timezone"}
# A container's variables by name: the value as its template prints it (None for one pgvet cannot know) and its line.
Variables = dict[str, tuple[str | None, Source]]


def container_values(version: int | None) -> list[ConfSetting]:
    """What the container writes into the postgresql.conf it generates whatever its environment says (the image's
    own run.sh: libpostgresql.sh's postgresql_configure_replication_parameters), for a server of ``version``."""
    keep = _CONTAINER_WAL_KEEP[0 if version is None or version >= 13 else 1]
    return [conf_setting(name, value, Source(CONTAINER_SOURCE)) for name, value in (*_CONTAINER_VALUES.items(), keep)]


def extra_environment(declared: DeclaredHost, variables: object, path: str) -> list[tuple[str, ConfSetting]]:
    """The settings the container writes from the section's ``extraEnvVars`` (after the chart's own variables: the
    last of a name wins in Kubernetes): POSTGRESQL_MAX_CONNECTIONS and the others of libpostgresql.sh's
    postgresql_configure_connections, and POSTGRESQL_SHARED_PRELOAD_LIBRARIES. A value from elsewhere (``valueFrom``,
    a template) is one pgvet cannot know: the rules reading it are not evaluated."""
    settings: list[tuple[str, ConfSetting]] = []
    for name, text, source in env_entries(variables, path):
        parameter = _CONTAINER_ENVIRONMENT.get(name)
        if parameter is None:
            continue
        if text is None:
            declared.notes.append(f"{source}: extraEnvVars {name} is set from elsewhere: {parameter} not read")
            declared.unknown[f"pg.{parameter}"] = source
        elif text.strip():  # the container sets the parameter only from a variable that is not empty
            settings.append((f"extraEnvVars {name}", conf_setting(parameter, text, source)))
    return settings


def env_entries(variables: object, path: str) -> list[tuple[str, str | None, Source]]:
    """An ``extraEnvVars`` list's entries: each variable's name, its value as the template prints it (None for one
    pgvet cannot know: ``valueFrom``, a template) and its line."""
    entries: list[tuple[str, str | None, Source]] = []
    for index, item in enumerate(variables if isinstance(variables, list) else []):
        text = helm_text(get(item, "value"))
        source = Source(path, yaml_line(item, "value") if "value" in item else yaml_line(variables, index))
        entries.append((str(get(item, "name") or ""), None if text is None or "{{" in text else text, source))
    return entries


def container_variable(variables: Variables, name: str,
                        default: str) -> tuple[str | None, Source | None]:
    """A variable as the container reads it (postgresql-env.sh): POSTGRESQL_<name>, else its alias POSTGRES_<name>
    where it has one (the replication ones do), else its default; an empty value is none."""
    for prefix in ("POSTGRESQL_", "POSTGRES_"):
        value, source = variables.get(prefix + name, ("", None))
        if value is None or value:
            return value, source
    return default, None


def synchronous_settings(declared: DeclaredHost, variables: Variables) -> list[tuple[str, ConfSetting]]:
    """synchronous_commit and synchronous_standby_names, which the container writes on a primary (replication mode
    master, its default) with synchronous replicas (libpostgresql.sh, postgresql_configure_synchronous_replication:
    POSTGRESQL_NUM_SYNCHRONOUS_REPLICAS above 0): the first from POSTGRESQL_SYNCHRONOUS_COMMIT_MODE, the second
    ``[POSTGRESQL_SYNCHRONOUS_REPLICAS_MODE] N ("name", …)`` of the names in POSTGRESQL_CLUSTER_APP_NAME."""
    mode, _ = container_variable(variables, "REPLICATION_MODE", "master")
    count, count_source = container_variable(variables, "NUM_SYNCHRONOUS_REPLICAS", "0")
    if mode == "slave" or count_source is None:
        return []
    names = ("synchronous_commit", "synchronous_standby_names")
    if mode is None or count is None or not count.strip().isdigit():  # what bash's (( )) makes of it: unknown
        for name in names:
            declared.notes.append(f"{count_source}: {name} not read: the replication mode or the number of "
                                  "synchronous replicas is not known")
            declared.unknown[f"pg.{name}"] = count_source
        return []
    if int(count) == 0:
        return []
    commit, commit_source = container_variable(variables, "SYNCHRONOUS_COMMIT_MODE", "on")
    application, application_source = container_variable(variables, "CLUSTER_APP_NAME", "")
    settings: list[tuple[str, ConfSetting]] = []
    if commit is None:
        declared.unknown["pg.synchronous_commit"] = commit_source or count_source
    else:
        settings.append(("POSTGRESQL_SYNCHRONOUS_COMMIT_MODE",
                         conf_setting("synchronous_commit", commit, commit_source or count_source)))
    if application is None:
        declared.unknown["pg.synchronous_standby_names"] = application_source or count_source
        return settings
    standby_names = f"{int(count)} ({_application_names(application)})"
    prefix, _ = container_variable(variables, "SYNCHRONOUS_REPLICAS_MODE", "")
    if prefix:
        standby_names = f"{prefix} {standby_names}"
    settings.append(("POSTGRESQL_NUM_SYNCHRONOUS_REPLICAS",
                     conf_setting("synchronous_standby_names", standby_names, count_source)))
    return settings


def _application_names(application: str) -> str:
    """The standby names the container lists: the application name, or of a list (repmgr's nodes, split at commas
    and semicolons) each host's first label, each double-quoted."""
    if "," not in application:
        return f'"{application}"'
    nodes = application.replace(",", " ").replace(";", " ").split()
    hosts = [re.split(r"[:/?#]", re.sub(r"^[^:/?#]+://|^//", "", node), maxsplit=1)[0].split(".")[0]
             for node in nodes]
    return ",".join(f'"{host}"' for host in hosts)


def set_properties(declared: DeclaredHost, settings: list[tuple[str, ConfSetting]]) -> None:
    """Settings the container writes into a postgresql.conf it did not generate (libpostgresql.sh's
    postgresql_set_property on its copy of the mounted file): a line of the parameter is replaced where it is, else
    the setting is appended at the file's end, below its include_dir (so it wins over conf.d)."""
    for _, setting in settings:
        placed = [index for index, own in enumerate(declared.settings) if own.name == setting.name]
        for index in placed:
            declared.settings[index] = setting
        if not placed:
            declared.settings.append(setting)
