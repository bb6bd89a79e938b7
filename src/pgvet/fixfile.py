"""The fix as a file: every finding's fix of a host consolidated into one change.

A `sysctl.d/90-postgresql.conf` with the computed kernel values, the postgresql.conf lines and the
equivalent ALTER SYSTEM statements. When two rules suggest different values for one key, the fix of the
more severe finding wins and the other is shown as a comment. Nothing is written unless asked: with
``write``, the sysctl.d file is written in the host directory, and postgresql.conf is edited in place
(the effective line's value replaced, comments kept, or the line appended) after a ``.bak`` copy.
"""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from pgvet.findings import HostResult, quote_setting

SYSCTL_FILE = "sysctl.d/90-postgresql.conf"


@dataclass(slots=True)
class Change:
    value: str
    rules: list[str] = field(default_factory=list)
    overruled: list[str] = field(default_factory=list)  # "value (RULE)" suggestions that lost


@dataclass(slots=True)
class ConsolidatedFix:
    host: str
    sysctl: dict[str, Change] = field(default_factory=dict)
    postgresql: dict[str, Change] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def consolidate(result: HostResult) -> ConsolidatedFix:
    fix = ConsolidatedFix(result.host.name)
    for finding in sorted(result.findings, key=lambda item: -item.rank):
        if finding.suppressed is not None or finding.baseline:
            continue
        label = f"{finding.rule_id} {finding.rule_name}"
        for target, suggestions in ((fix.sysctl, finding.fix.sysctl), (fix.postgresql, finding.fix.postgresql)):
            for key, value in suggestions.items():
                change = target.get(key)
                if change is None:
                    target[key] = Change(value, [label])
                elif change.value == value:
                    change.rules.append(label)
                else:
                    change.overruled.append(f"{value} ({label})")
        if finding.fix.text and not (finding.fix.sysctl or finding.fix.postgresql):
            fix.notes.append(f"{label}: {' '.join(finding.fix.text.split())}")
    # Setting vm.dirty_bytes zeroes vm.dirty_ratio and the other way round: the byte values, more precise
    # on large hosts, win, or the file would undo itself.
    pairs = (("vm.dirty_ratio", "vm.dirty_bytes"), ("vm.dirty_background_ratio", "vm.dirty_background_bytes"))
    for ratio, size in pairs:
        if ratio in fix.sysctl and size in fix.sysctl:
            dropped = fix.sysctl.pop(ratio)
            fix.sysctl[size].overruled.append(f"{ratio} = {dropped.value} ({', '.join(dropped.rules)})")
    return fix


def render(fix: ConsolidatedFix) -> str:
    out = [f"# pgvet fix for {fix.host}", ""]
    if fix.sysctl:
        out += [f"# --- {SYSCTL_FILE} (apply with: sysctl --system) ---"]
        for key, change in sorted(fix.sysctl.items()):
            out.append(f"# {', '.join(change.rules)}" + (f"; also suggested: {', '.join(change.overruled)}"
                                                          if change.overruled else ""))
            out.append(f"{key} = {change.value}")
        out.append("")
    if fix.postgresql:
        out += ["# --- postgresql.conf ---"]
        for name, change in sorted(fix.postgresql.items()):
            also = f"; also suggested: {', '.join(change.overruled)}" if change.overruled else ""
            out.append(f"{name} = {quote_setting(change.value)}    # {', '.join(change.rules)}{also}")
        out += ["", "-- --- or, on the running server (a restart may be needed) ---"]
        out += [f"ALTER SYSTEM SET {name} = {quote_setting(change.value)};"
                for name, change in sorted(fix.postgresql.items())]
        out.append("")
    if fix.notes:
        out += ["# --- to do by hand ---", *[f"# {note}" for note in fix.notes], ""]
    if not (fix.sysctl or fix.postgresql or fix.notes):
        out.append("# nothing to change")
    return "\n".join(out) + "\n"


def _setting_line(name: str) -> re.Pattern[str]:
    return re.compile(rf"^(\s*{re.escape(name)}\s*=?\s*)('(?:[^']|'')*'|[^\s#]+)(.*)$", re.IGNORECASE)


def write(fix: ConsolidatedFix, host_dir: Path) -> list[Path]:
    """Write the sysctl.d file and edit postgresql.conf in place (with a .bak copy); the paths written."""
    written: list[Path] = []
    if fix.sysctl:
        target = host_dir / SYSCTL_FILE
        target.parent.mkdir(parents=True, exist_ok=True)
        rules = sorted({rule for change in fix.sysctl.values() for rule in change.rules})
        lines = [f"# Written by pgvet fix: {', '.join(rules)}"]
        lines += [f"{key} = {change.value}" for key, change in sorted(fix.sysctl.items())]
        target.write_text("\n".join(lines) + "\n", encoding="utf-8")
        written.append(target)
    conf = host_dir / "postgresql.conf"
    if fix.postgresql and conf.is_file():
        shutil.copy2(conf, conf.with_name(conf.name + ".bak"))
        lines = conf.read_text(encoding="utf-8", errors="surrogateescape").splitlines()
        for name, change in sorted(fix.postgresql.items()):
            pattern = _setting_line(name)
            hits = [index for index, line in enumerate(lines) if pattern.match(line)]
            value = quote_setting(change.value)
            if hits:
                index = hits[-1]  # the effective (last) line of this file
                match = pattern.match(lines[index])
                assert match is not None
                lines[index] = f"{match.group(1)}{value}{match.group(3)}"
            else:
                lines.append(f"{name} = {value}    # pgvet fix: {', '.join(change.rules)}")
        conf.write_text("\n".join(lines) + "\n", encoding="utf-8", errors="surrogateescape")
        written.append(conf)
    return written
