"""The postgresql.conf text of the Bitnami PostgreSQL chart's values (bitnami.py): ``primary.configuration`` and the
``extendedConfiguration`` texts, the mappings of the chart before 11, and the order in which the container's
postgresql.conf, its conf.d and the settings the container writes from its environment apply."""

from __future__ import annotations

import math
import posixpath
import re
from typing import Any, NamedTuple

from pgvet.inputs.documents import DeclaredHost, embedded_conf, yaml_line
from pgvet.inputs.documents._kubernetes import at, helm_text
from pgvet.inputs.postgresql_conf import ConfDirective, ConfProblem, ConfSetting, parse_conf_text
from pgvet.provenance import Source


class ChartConf(NamedTuple):
    """A postgresql.conf text of the values: its settings and include lines, each at its line of the YAML file."""

    entries: list[ConfSetting | ConfDirective]
    key: str  # the values' key that holds it (primary.configuration), for notes
    place: Source  # that key's line


def apply_conf(declared: DeclaredHost, main: ChartConf | None, extended: ChartConf | None,
           environment: list[tuple[str, ConfSetting]], mount_path: str, *, conf_d_unseen: bool) -> None:
    """The host's settings in the order PostgreSQL applies them. Without ``main`` (the whole postgresql.conf of the
    values), the container's own postgresql.conf: the settings it writes there from its environment, each in place
    of the sample file's line for it, above the ``include_dir = 'conf.d'`` it adds near the file's end, where the
    chart mounts ``extended`` (conf.d/override.conf). With ``main``, the container writes none of them (it writes
    into postgresql.conf only when it generates it: libpostgresql.sh, postgresql_initialize's create_conf_file),
    and conf.d is read where an include line of ``main`` names it, wherever that line is: a setting below it wins
    over conf.d's, one above it loses (PostgreSQL reads an included file at the include line's place).
    ``conf_d_unseen``: the chart mounts an existing ConfigMap as conf.d, pgvet cannot see what it holds."""
    extended_settings: list[ConfSetting] = []
    if extended is not None:
        for entry in extended.entries:
            if isinstance(entry, ConfDirective):
                declared.problems.append(_missing_include(entry, extended.key))
            else:
                extended_settings.append(entry)
    if main is None:
        declared.settings.extend(setting for _, setting in environment)
        declared.settings.extend(extended_settings)
        return
    reads_conf_d = False
    for entry in main.entries:
        if isinstance(entry, ConfSetting):
            declared.settings.append(entry)
            continue
        included = _included(entry, mount_path)
        if included is None:
            declared.problems.append(_missing_include(entry, main.key))
            continue
        reads_conf_d = True
        declared.settings.extend(extended_settings)
        if included == "override.conf" and extended is None and not conf_d_unseen and entry.kind == "include":
            declared.problems.append(ConfProblem(
                "missing-include", f"include '{entry.target}' in {main.key}: the chart writes no "
                "conf.d/override.conf without an extendedConfiguration, and PostgreSQL refuses a missing include",
                entry.source, True, entry.target))
    if extended is not None and extended.entries and not reads_conf_d:
        declared.notes.append(f"{extended.place}: {extended.key} not read: {main.key}, the whole postgresql.conf, "
                              "has no include_dir = 'conf.d', where the chart mounts it, so PostgreSQL never reads it")
    for key, setting in environment:
        declared.notes.append(
            f"{setting.source}: {key} not applied: the container writes it into the postgresql.conf it generates, "
            f"and {main.key} replaces that file (set {setting.name} in {main.key})")


def _missing_include(entry: ConfDirective, key: str) -> ConfProblem:
    return ConfProblem("missing-include", f"{entry.kind} '{entry.target}' in {key}: the chart mounts no file beside "
                       "it, pgvet cannot follow it", entry.source, entry.kind != "include_if_exists", entry.target)


def _included(entry: ConfDirective, mount_path: str) -> str | None:
    """What of the chart's conf.d an include line of the whole postgresql.conf reads: ``conf.d`` (include_dir of
    it), ``override.conf`` (include or include_if_exists of extendedConfiguration's file), else None. Its path is
    relative to the directory of the postgresql.conf PostgreSQL reads, /opt/bitnami/postgresql/conf, where the
    container copies the chart's mounted <mountPath>/conf (that one's conf.d/ is the same file); ./conf.d,
    conf.d/ and the absolute paths of either name it too."""
    target = posixpath.normpath(posixpath.join(_CONF_DIR, entry.target)) if entry.target else ""
    conf_d = {f"{_CONF_DIR}/conf.d", posixpath.normpath(f"{mount_path}/conf/conf.d")}
    if entry.kind == "include_dir":
        return "conf.d" if target in conf_d else None
    return "override.conf" if posixpath.dirname(target) in conf_d and target.endswith("/override.conf") else None


def conf_text(declared: DeclaredHost, section: dict[str, Any], where: str, key: str, configmap_key: str | None,
          path: str) -> ChartConf | None:
    """A postgresql.conf text in a YAML value: each line at its line of the YAML file (a literal block keeps the
    lines; any other scalar is one place, its key's line). Syntax errors keep PostgreSQL's message, which names the
    file the chart writes the text to. None when there is none, or it is in a ConfigMap pgvet cannot see."""
    configmap = section.get(configmap_key) if configmap_key is not None else None
    if isinstance(configmap, str) and configmap:
        declared.notes.append(f"{configmap_key}: {configmap}: that ConfigMap's configuration is not in this file "
                              f"(the chart ignores {key} then)")
        return None  # not seen: not judged
    text = section.get(key)
    if text is not None and not isinstance(text, str):
        declared.notes.append(f"{at(section, key, path)}: {key} is no text (the postgresql.conf lines the chart "
                              "writes): not read")
        return None
    if text is None or not text.strip():
        return None
    key_line = yaml_line(section, key) or 1
    return ChartConf(embedded_conf(declared, text, key_line, path, _WRITTEN_TO[key]), f"{where}.{key}",
                     Source(path, key_line))


def rendered_conf(declared: DeclaredHost, values: dict[str, Any], key: str, configmap_key: str,
              path: str) -> ChartConf | None:
    """A mapping of parameters of the chart before 11 (``postgresqlConfiguration``, ``postgresqlExtendedConf``), as
    its templates write it into postgresql.conf or conf.d/override.conf: a line per key in the keys' order, the key
    in snake case (Sprig's snakecase), a text value in single quotes as it is, any other as Go prints it
    (``{{ $key | snakecase }} = '{{ $value }}'``, charts 10.3.14 to 10.16.3: before, a text went unquoted); each
    line at its key's line of the YAML file."""
    configmap = values.get(configmap_key)
    if isinstance(configmap, str) and configmap:
        declared.notes.append(f"{configmap_key}: {configmap}: that ConfigMap's configuration is not in this file "
                              f"(the chart ignores {key} then)")
        return None
    mapping = values.get(key)
    if not mapping:
        return None
    if not isinstance(mapping, dict):
        declared.notes.append(f"{at(values, key, path)}: {key} is no mapping (of parameters in camelCase): not read")
        return None
    lines: list[str] = []
    places: list[Source] = []
    for name in sorted(mapping, key=str):  # Go's templates range over a map in its keys' order
        value, place = mapping[name], at(mapping, name, path)
        text = helm_text(value)
        if text is None or (isinstance(value, float) and not math.isfinite(value)):
            declared.notes.append(f"{place}: {key}.{name} is no text, number or boolean: not read")
            continue
        line = f"{snake_case(str(name))} = " + (f"'{text}'" if isinstance(value, str) else text)
        for part in line.split("\n"):
            lines.append(part)
            places.append(place)
    entries, problems = parse_conf_text("\n".join(lines) + "\n", _WRITTEN_TO[key])
    for problem in problems:
        declared.problems.append(ConfProblem(problem.kind, problem.message, places[(problem.source.line or 1) - 1],
                                             problem.fatal, problem.target))
    return ChartConf([entry._replace(source=places[(entry.source.line or 1) - 1]) for entry in entries], key,
                 at(values, key, path))


def snake_case(key: str) -> str:
    """A key as Sprig's snakecase writes it: sharedBuffers → shared_buffers, maxWALSize → max_wal_size."""
    return _WORD_START.sub("_", re.sub(r"[\s-]", "_", key)).lower()


_WRITTEN_TO = {"configuration": "postgresql.conf", "extendedConfiguration": "conf.d/override.conf",
               "postgresqlConfiguration": "postgresql.conf", "postgresqlExtendedConf": "conf.d/override.conf"}
# The container's configuration directory (POSTGRESQL_CONF_DIR): the postgresql.conf PostgreSQL reads and its conf.d,
# where the container copies what the chart mounts in <mountPath>/conf
_CONF_DIR = "/opt/bitnami/postgresql/conf"
_WORD_START = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
