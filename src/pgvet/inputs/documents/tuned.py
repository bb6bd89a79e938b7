"""A tuned profile (tuned.conf): the kernel settings its plugins write, as sysctl settings at their lines.

``[sysctl]`` is read as sysctl.d; ``[vm]`` dirty_bytes/dirty_background_bytes (a ``%`` value is the ratio) and
``[scheduler]`` sched_* (the kernel.sched_* sysctls tuned writes before Linux 5.13) map to their sysctls; ``[vm]``
transparent_hugepages (and .defrag) to the thp.* facts sysfs gives (the machine's where a snapshot has none). A
disk's read-ahead and I/O scheduler, an ``include=`` of another profile, ``${…}`` variables, ``>``/``<``
assignments and sections that apply only on some machines are notes. A profile describes
the machine, not a PostgreSQL host: it is not ``hosting``.
"""

from __future__ import annotations

from pgvet.errors import ParseError
from pgvet.inputs.documents import DeclaredHost, DocumentKind
from pgvet.inputs.sysctl import SysctlSetting, declared_sysctl_value, normalise_key
from pgvet.provenance import Located, Source

MAX_PROFILE_CHARS = 256 * 1024

# [vm] options and the sysctl each writes; a value ending in % writes the ratio instead (tuned's plugin_vm)
_VM_SYSCTLS = {
    "dirty_bytes": ("vm.dirty_bytes", "vm.dirty_ratio"),
    "dirty_background_bytes": ("vm.dirty_background_bytes", "vm.dirty_background_ratio"),
    "dirty_ratio": ("vm.dirty_ratio", "vm.dirty_ratio"),
    "dirty_background_ratio": ("vm.dirty_background_ratio", "vm.dirty_background_ratio"),
}
# [vm] options that set what sysfs shows of transparent huge pages, with the values the kernel takes (tuned's
# plugin_vm writes the value into /sys/kernel/mm/transparent_hugepage/enabled or defrag)
_THP_FACTS = {
    "transparent_hugepages": ("thp.enabled", ("always", "madvise", "never")),
    "transparent_hugepage": ("thp.enabled", ("always", "madvise", "never")),
    "transparent_hugepage.defrag": ("thp.defrag", ("always", "defer", "defer+madvise", "madvise", "never")),
}
# Options that say what a disk's item would hold, which documents do not declare (the sysfs input has them)
_UNMAPPED_FACTS = {
    ("disk", "readahead"): "disk.read_ahead_kb",
    ("disk", "elevator"): "disk.scheduler",
}
# The options of every section that choose where it applies, not what it sets (tuned's profiles/unit.py)
_UNIT_OPTIONS = ("priority", "type", "enabled", "replace", "prepend", "drop", "devices", "devices_udev_regex",
                 "cpuinfo_regex", "uname_regex", "script_pre", "script_post")
_CONDITIONS = ("cpuinfo_regex", "uname_regex")


def _recognises(name: str, text: str) -> bool:
    return any(header in text for header in ("[main]", "[sysctl]", "[vm]"))


Section = tuple[str, int, list[tuple[str, str, int]]]  # name, line, (option, value, line)


def _sections(text: str, path: str) -> list[Section]:
    """Python's configparser as tuned sets it: ``=`` only, ``#`` also after a value, duplicates allowed (the last
    option wins when applied), an indented line continues the value before it."""
    sections: list[Section] = []
    for number, line in enumerate(text.split("\n"), 1):
        stripped = line.strip()
        if not stripped or stripped[0] in "#;":
            continue
        if line[0] in " \t" and sections and sections[-1][2]:
            option, value, option_line = sections[-1][2][-1]
            sections[-1][2][-1] = (option, f"{value} {_uncommented(stripped)}".strip(), option_line)
            continue
        if stripped.startswith("[") and stripped.endswith("]"):
            sections.append((stripped[1:-1].strip(), number, []))
            continue
        option, separator, value = stripped.partition("=")
        if not sections:
            raise ParseError("an option before any [section]: tuned refuses the profile", Source(path, number))
        if not separator or not option.strip():
            raise ParseError(f"{stripped!r} is no `option=value` line: tuned refuses the profile",
                             Source(path, number))
        sections[-1][2].append((option.strip(), _uncommented(value), number))
    return sections


def _uncommented(value: str) -> str:
    for index, character in enumerate(value):
        if character == "#" and (index == 0 or value[index - 1] in " \t"):
            return value[:index].strip()
    return value.strip()


def parse_tuned(text: str, path: str) -> list[DeclaredHost]:
    if len(text) > MAX_PROFILE_CHARS:
        raise ParseError(f"{len(text)} characters: more than pgvet reads in a tuned profile ({MAX_PROFILE_CHARS})",
                         Source(path, 1))
    sections = _sections(text, path)
    parts = path.replace("\\", "/").split("/")
    name = parts[-2] if len(parts) > 1 and parts[-2] else "tuned"
    declared = DeclaredHost("tuned", name, Source(path, sections[0][1] if sections else 1), hosting=False)
    for section, line, options in sections:
        values = dict((option, value) for option, value, _ in options)
        plugin = values.get("type", section)
        if section == "main":
            declared.notes.extend(f"{path}:{number}: include={value}: that profile applies first and is not read "
                                  "here (give its tuned.conf to pgvet too)"
                                  for option, value, number in options if option == "include")
            continue
        if section == "variables":
            continue  # the values that use them are notes
        if values.get("enabled", "true") not in ("True", "true", "1"):
            continue
        conditions = [option for option in _CONDITIONS if option in values]
        if conditions and plugin in ("sysctl", "vm", "scheduler"):
            declared.notes.append(f"{path}:{line}: [{section}] applies only where {' and '.join(conditions)} match: "
                                  "not read")
            continue
        for option, value, number in options:
            if option not in _UNIT_OPTIONS:
                _option(declared, plugin, section, option, value, Source(path, number))
    return [declared]


def _option(declared: DeclaredHost, plugin: str, section: str, option: str, value: str, source: Source) -> None:
    if plugin == "vm" and option in _THP_FACTS:
        name, accepted = _THP_FACTS[option]
        if value.strip() in accepted:
            declared.machine[name] = Located(value.strip(), source)
        else:
            declared.notes.append(f"{source}: [{section}] {option}={value}: not a value the kernel takes "
                                  f"({', '.join(accepted)}): not read")
        return
    fact = _UNMAPPED_FACTS.get((plugin, option))
    if fact is not None:
        declared.notes.append(f"{source}: [{section}] {option}={value}: would be {fact}, which documents "
                              "do not declare yet: not read")
        return
    if plugin == "sysctl":
        key = normalise_key(option)
    elif plugin == "vm" and option in _VM_SYSCTLS:
        by_value, by_ratio = _VM_SYSCTLS[option]
        key, value = (by_ratio, value.rstrip()[:-1].strip()) if value.rstrip().endswith("%") else (by_value, value)
    elif plugin == "scheduler" and option.startswith("sched_"):
        key = f"kernel.{option}"
    else:
        return  # cpu, disk, net, audio…: nothing pgvet judges
    if "${" in value:
        declared.notes.append(f"{source}: {option}={value} uses a tuned variable: not read")
    elif value[:1] in "<>" and value:
        declared.notes.append(f"{source}: {option}={value} is set only if it is "
                              f"{'greater' if value[0] == '>' else 'smaller'} than the running value: not read")
    else:
        text = value[1:-1] if len(value) > 1 and value[0] == value[-1] == '"' else value
        declared.sysctl.append(SysctlSetting(key, declared_sysctl_value(key, text), source))


KIND = DocumentKind("tuned", "a tuned profile (tuned.conf): its [sysctl], [vm] and [scheduler] kernel settings",
                    ("tuned.conf",), _recognises, parse_tuned)
