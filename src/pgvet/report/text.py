"""The human report: findings by host and severity, with values, the offending line, the fix, and a
picture of where the RAM goes. Plain text when not on a terminal, with NO_COLOR, or under pre-commit.
"""

from __future__ import annotations

import io
import sys
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console
from rich.text import Text

from pgvet.findings import Finding, HostResult, LintResult
from pgvet.report.memory import MemoryPicture, memory_picture, render_bar, size_text

if TYPE_CHECKING:
    from pgvet.report import ReportOptions

SEVERITY_STYLE = {"error": "bold red", "warning": "yellow", "info": "cyan"}
MAX_SHOWN_FILE = 1024 * 1024


def offending_line(root: str, path: str, line: int | None) -> str | None:
    """The text of a line in a file of the host directory; never reads outside it or a big file."""
    if line is None or path.startswith("<"):
        return None
    base = Path(root).resolve()
    try:
        file = (base / path).resolve()
        file.relative_to(base)
        if not file.is_file() or file.stat().st_size > MAX_SHOWN_FILE:
            return None
        with file.open(encoding="utf-8", errors="replace") as handle:
            for number, text in enumerate(handle, 1):
                if number == line:
                    return text.rstrip("\n")
    except (OSError, ValueError):
        return None
    return None


_NOT_SIZES = ("ratio", "count", "pages", "connections", "workers", "percent", "disks", "cpus")


def _value_text(name: str, value: object) -> str:
    """Values as numbers; large integers that measure memory also in IEC units."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, int) and value >= 1024 * 1024 and not any(word in name for word in _NOT_SIZES):
        return f"{value} ({size_text(value)})"
    return str(value)


def _finding(console: Console, finding: Finding, host: HostResult) -> None:
    from pgvet.report import relative_path

    head = Text()
    head.append(f"{finding.severity.upper():<8}", SEVERITY_STYLE[finding.severity])
    head.append(f"{finding.rule_id} ", "bold")
    head.append(finding.rule_name, "bold")
    if finding.subject:
        head.append(f"  [{finding.subject}]", "dim")
    if finding.suppressed:
        head.append(f"  (suppressed: {finding.suppressed})", "dim")
    elif finding.baseline:
        head.append("  (in baseline)", "dim")
    console.print(head)
    console.print(Text(" ".join(finding.message.split())), style="default")
    if finding.path:
        place = relative_path(finding.path, host.host.root)
        place += f":{finding.line}" if finding.line else ""
        shown = offending_line(host.host.root, finding.path, finding.line)
        at = Text("  at ", "dim")
        at.append(place, "underline")
        if shown is not None:
            at.append("   " + shown.strip(), "italic")
        console.print(at)
    if finding.values:
        values = ", ".join(f"{name} = {_value_text(name, value)}" for name, value in finding.values.items())
        console.print(Text("  values: " + values, "dim"))
    fix_lines = [f"sysctl: {key} = {value}" for key, value in finding.fix.sysctl.items()]
    fix_lines += [f"postgresql.conf: {key} = {value}" for key, value in finding.fix.postgresql.items()]
    fix_lines += finding.fix.alter_system()
    if finding.fix.text:
        fix_lines.append(" ".join(finding.fix.text.split()))
    for index, line in enumerate(fix_lines):
        console.print(Text(("  fix: " if index == 0 else "       ") + line, "green"))
    console.print()


def _memory(console: Console, picture: MemoryPicture, width: int) -> None:
    bar_width = max(20, min(width - 4, 72))
    title = f"Where the RAM goes ({size_text(picture.ram)})"
    if picture.estimated:
        title += " — shared memory estimated from shared_buffers"
    console.print(Text(title, "bold"))
    runs, markers = render_bar(picture, bar_width)
    bar = Text("  ")
    for text, style in runs:
        bar.append(text, style)
    console.print(bar)
    if markers.strip():
        console.print(Text("  " + markers, "bold"))
    for segment in picture.segments:
        share = segment.size / picture.ram * 100
        line = Text("  ")
        line.append(segment.char * 2, segment.style)
        line.append(f" {segment.label:<36}{size_text(segment.size):>11}  {share:5.1f} %")
        console.print(line)
    if picture.commit_limit is not None:
        console.print(Text(f"  ┃  CommitLimit (overcommit strict){'':<4}{size_text(picture.commit_limit):>11}  "
                           f"{picture.commit_limit / picture.ram * 100:5.1f} %"))
    if picture.overcommitted:
        console.print(Text(f"  ▲  RAM ends here: {size_text(picture.overcommitted)} more than RAM is promised",
                           "bold red"))
    console.print()


def _host(console: Console, host: HostResult, verbose: bool, width: int) -> None:
    from pgvet.report import relative_path

    header = Text(host.host.name, "bold underline")
    header.append(f"  ({relative_path('.', host.host.root)})", "dim")
    console.print(header)
    console.print()
    picture = memory_picture(host.host)
    if picture is not None:
        _memory(console, picture, width)
    for warning in host.host.warnings:
        console.print(Text(f"warning: {warning}", "yellow"))
    if verbose:
        for note in host.host.notes:
            console.print(Text(f"note: {note}", "dim"))
    if host.host.warnings or (verbose and host.host.notes):
        console.print()
    for finding in sorted(host.findings, key=lambda item: (-item.rank, item.rule_id, item.subject or "")):
        _finding(console, finding, host)
    if not host.findings:
        console.print(Text("no findings", "green"))
        console.print()
    if verbose and host.not_evaluated:
        console.print(Text("not evaluated:", "dim"))
        for item in host.not_evaluated:
            why = item.reason or "missing " + ", ".join(item.missing)
            subject = f" [{item.subject}]" if item.subject else ""
            console.print(Text(f"  {item.rule_id} {item.rule_name}{subject}: {why}", "dim"))
        console.print()


def _summary(result: LintResult) -> str:
    counts: Counter[str] = Counter(
        finding.severity for host in result.hosts for finding in host.findings
        if finding.suppressed is None and not finding.baseline
    )
    parts = [f"{counts[severity]} {severity}{'s' if counts[severity] != 1 and severity != 'info' else ''}"
             for severity in ("error", "warning", "info")]
    hosts = len(result.hosts)
    line = f"{', '.join(parts)} on {hosts} host{'s' if hosts != 1 else ''}"
    if result.errors:
        line += f"; {len(result.errors)} host{'s' if len(result.errors) != 1 else ''} could not be read"
    not_evaluated = sum(len(host.not_evaluated) for host in result.hosts)
    if not_evaluated:
        line += f"; {not_evaluated} rule evaluations skipped for missing inputs (--verbose lists them)"
    return line


def render(result: LintResult, options: ReportOptions) -> str:
    from pgvet.report import use_color

    color = use_color(options, sys.stdout.isatty())
    buffer = io.StringIO()
    width = options.width or (Console().width if color else 100)
    console = Console(file=buffer, width=width, force_terminal=color, no_color=not color, highlight=False,
                      emoji=False, soft_wrap=False)
    for error in result.errors:
        place = str(error.source) if error.source else error.host
        console.print(Text(f"error: {place}: {error.message}", "bold red"))
    if result.errors:
        console.print()
    for host in result.hosts:
        _host(console, host, options.verbose, width)
    for notice in result.notices:
        console.print(Text(f"notice: {notice}", "yellow"))
    console.print(Text(_summary(result), "bold"))
    return buffer.getvalue()
