"""The human report: findings by host and severity, with values, the offending line, the fix, and a
picture of where the RAM goes; for a fleet, a summary of the hosts with the most findings and of the
findings on the most hosts. Plain text when not on a terminal, with NO_COLOR, or under pre-commit.

Written host by host (``Writer``); the hosts that could not be read are listed first, so the hosts'
sections are held (Spool) until the run ends.
"""

from __future__ import annotations

import io
import os
import re
import sys
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

from rich.cells import cell_len
from rich.console import Console
from rich.segment import Segment, Segments
from rich.table import Table
from rich.text import Text

from pgvet.findings import Finding, HostError, HostResult, LintResult
from pgvet.inputs.reading import read_input
from pgvet.numbers import size_text
from pgvet.report import (
    Spool,
    cut,
    error_label,
    host_file_path,
    one_line,
    printed,
    prose,
    relative_path,
    render_with_writer,
    use_color,
    visible,
)
from pgvet.report.memory import MemoryPicture, bar_cells, marker_line, memory_picture
from pgvet.run.summary import TOP_RULES, RunSummary

if TYPE_CHECKING:
    from rich.console import JustifyMethod, OverflowMethod
    from rich.containers import Lines

    from pgvet.report import Out, ReportOptions, RunInfo

SEVERITY_STYLE = {"error": "bold red", "warning": "yellow", "info": "cyan"}
MAX_SHOWN_FILE = 1024 * 1024
LABEL_WIDTH = 9  # the column that holds at / from / values / fix, and the severity before the rule
NOT_A_FILE = "<"  # Source paths such as <default> and <derived>

# A line that may hold a secret is not quoted: a password beside the parameters on one line (a compose file's flow
# mapping with POSTGRES_PASSWORD, a Patroni file in flow style, a Secret, a conninfo, a URI with its credentials, a
# command such as archive_command's, or a custom setting: a dotted name set with '=' or ':' that is no kernel
# parameter), which pgvet.live.redact hides too; or an HTTP credential (a healthcheck's or a label's Authorization
# header, Bearer or Basic, an API key header, a cookie). Each dotted name is scanned once from its start: linear.
_KERNEL_NAMESPACES = "abi|crypto|debug|dev|fs|kernel|net|sunrpc|user|vm"
_MAY_HOLD_SECRET = re.compile(r"pass|pwd|secret|token|credential|api[_-]?key|private|_command|://[^\s/@]*@"
                              r"|authori[sz]ation|bearer|cookie"
                              rf"|(?<![\w$.])(?!(?:{_KERNEL_NAMESPACES})\.)[^\W\d][\w$]*\.[\w.$]*\s*[=:]",
                              re.IGNORECASE)

MAX_EVIDENCE = 3  # evidence places shown per finding without --verbose
MAX_KEPT_WRAPPED = 4096  # characters of the longest text whose wrapped lines are kept (_plain_wrapped)


class HostFiles:
    """The lines of a host's files, as one report of the host shows them: each file is resolved, checked and read
    once for all the places that point into it (a host shows tens, in a few files), not once per place. A report
    made later, with files rewritten in between, has its own."""

    def __init__(self, root: str) -> None:
        self.root = root
        self._lines: dict[str, list[str] | None] = {}  # by path as findings give it
        self._shown: dict[tuple[str, int], str | None] = {}  # each line shown once looked at

    def line(self, path: str, number: int | None) -> str | None:
        """Line ``number`` of a file, without its '\\n' and the '\\r' before it (CRLF). Only regular files under
        the host's root (opened beneath it, links resolved inside it) and at most 1 MiB are read: a report never
        leaks other files. None for a line that may hold a secret (_MAY_HOLD_SECRET); a long one cut (report.cut).
        Each line is looked at once, however many findings point at it (it was searched and escaped for each)."""
        if number is None or number < 1 or path.startswith(NOT_A_FILE):
            return None
        if (path, number) in self._shown:
            return self._shown[path, number]
        if path not in self._lines:
            self._lines[path] = self._read(path)
        lines = self._lines[path]
        if lines is None or number > len(lines):
            return None
        text = lines[number - 1]
        shown = None if _MAY_HOLD_SECRET.search(text) else text[:-1] if text.endswith("\r") else text
        self._shown[path, number] = shown = None if shown is None else cut(shown)
        return shown

    def _read(self, path: str) -> list[str] | None:
        """A file's lines split at '\\n' only: line numbers count line feeds, as PostgreSQL's lexer, ``sed -n Np``
        and ``grep -n`` do (a '\\r' alone is inside its line). None for a file that cannot be shown."""
        try:  # beneath the host's directory, never out of it (inputs/reading.py, open_input)
            data, status = read_input(os.path.join(self.root, path), MAX_SHOWN_FILE, self.root)
        except OSError:
            return None
        if status.st_size > MAX_SHOWN_FILE or len(data) > MAX_SHOWN_FILE:
            return None
        lines = data.decode("utf-8", errors="replace").split("\n")
        if not lines[-1]:  # the line feed that ends the last line starts none
            lines.pop()
        return lines


# Values whose names say they count things rather than measure memory, even when large.
_NOT_SIZES = ("ratio", "count", "pages", "needed", "available", "suggested", "connections", "workers", "percent",
              "disks", "cpus", "processes", "timeout", "occurrences", "requested", "allocated", "_age", "seconds")
# Names that are no sizes as whole words (transaction IDs left before wraparound, an age in seconds), not as
# part of a longer name.
_NOT_SIZE_NAMES = frozenset({"left", "age"})
# Words that make a name a size whatever else it says (suggested_max_wal_size, one_percent_bytes).
_SIZE_WORDS = ("size", "bytes")


def _is_size(name: str) -> bool:
    return any(word in name for word in _SIZE_WORDS) or (
        name not in _NOT_SIZE_NAMES and not any(word in name for word in _NOT_SIZES))


def value_text(name: str, value: object) -> str:
    """A value as people read it: memory in IEC units beside the exact bytes, ratios with 3 digits."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, int | float):
        if abs(value) >= 1024 * 1024 and _is_size(name):
            return f"{round(value)} ({size_text(value)})"
        if isinstance(value, float):
            return str(round(value)) if value.is_integer() or abs(value) >= 1000 else f"{value:.3g}"
    return "null" if value is None else str(value)


def _place(path: str, line: int | None, host: HostResult, options: ReportOptions) -> str:
    place = host_file_path(path, host, options.repo_root)
    return f"{place}:{line}" if line else place


def _location_row(path: str, line: int | None, host: HostResult, files: HostFiles, options: ReportOptions) -> Text:
    """``path:line   the line as written``, on one line: cut with an ellipsis rather than wrapped."""
    shown = files.line(path, line)
    text = Text(one_line(_place(path, line, host, options)), "underline", no_wrap=True, overflow="ellipsis")
    if shown is not None and shown.strip():
        text.append("   " + visible(" ".join(shown.split())), "italic")
    return text


def print_finding(console: Console, finding: Finding, host: HostResult, files: HostFiles, options: ReportOptions,
                  *, heading: bool = True, snapshot_places: bool = True) -> None:
    """The finding's block: severity and rule (unless ``heading`` is False), message, place, values, fix.

    ``snapshot_places`` False: places in the host directory are left out (a snapshot that was removed);
    absolute ones, such as a live server's configuration files, are still shown. ``files``: the host's, read once
    for all its findings.
    """
    if heading:
        head = Text()
        head.append(f"{finding.severity.upper():<{LABEL_WIDTH}}", SEVERITY_STYLE[finding.severity])
        head.append(f"{finding.rule_id} {finding.rule_name}", "bold")
        if finding.subject:
            head.append(f"  [{one_line(finding.subject)}]", "dim")
        print_line(console, head)
    # what the inputs hold (values, names, lines) is shown escaped: an escape sequence would reach the terminal
    rows: list[tuple[str, Text]] = [("", Text(prose(finding.message)))]
    if finding.path and (snapshot_places or Path(finding.path).is_absolute()):
        rows.append(("  at", _location_row(finding.path, finding.line, host, files, options)))
    places: list[tuple[str, int | None]] = []
    for item in finding.evidence:
        source = item.source
        place = (source.path, source.line) if source is not None else None
        if place and not place[0].startswith(NOT_A_FILE) and place != (finding.path, finding.line) and (
                place not in places) and (snapshot_places or Path(place[0]).is_absolute()):
            places.append(place)
    listed = places if options.verbose else places[:MAX_EVIDENCE]
    for path, number in listed:
        rows.append(("  from", _location_row(path, number, host, files, options)))
    if len(places) > len(listed):
        rows.append(("", Text(f"and {len(places) - len(listed)} more (--verbose lists them)", "dim")))
    pairs = [cut(one_line(f"{name} = {value_text(name, value)}")) for name, value in finding.values.items()]
    if pairs and len(", ".join(pairs)) <= console.width - LABEL_WIDTH:
        rows.append(("  values", Text(", ".join(pairs), "dim")))
    else:  # one per line rather than a name cut from its value
        for index, pair in enumerate(pairs):
            rows.append(("  values" if index == 0 else "", Text(pair, "dim")))
    fix_lines = [Text(one_line(f"sysctl: {key} = {value}")) for key, value in finding.fix.sysctl.items()]
    fix_lines += [Text(one_line(line)) for line in finding.fix.postgresql_lines(*(host.declared_by or (None,)))]
    if finding.fix.text:
        fix_lines.append(Text(prose(finding.fix.text)))
    for index, line in enumerate(fix_lines):
        line.stylize("green")
        rows.append(("  fix" if index == 0 else "", line))
    print_rows(console, rows)
    print_blank(console)


_LABEL_STYLE = "dim"  # the labels: at, from, values, fix


def _plain(console: Console) -> bool:
    """Whether the console writes no styles (no colour system: a file, a pipe, NO_COLOR): its lines are then
    written as text, without rich's rendering, which cost more than evaluating the rules (tests hold the two
    to the same output)."""
    return console.color_system is None


def print_line(console: Console, text: Text) -> None:
    """``console.print(text, overflow="fold")``: the text wrapped to the console's width."""
    if _plain(console):
        console.file.write("".join(f"{line}\n" for line in _plain_lines(text, console, console.width)))
    else:
        console.print(text, overflow="fold")


def _print_cropped(console: Console, text: Text) -> None:
    """``console.print(text, no_wrap=True, crop=True)``: one line, cut at the console's width."""
    plain = text.plain
    if _plain(console) and _fits(plain, console.width):
        console.file.write(plain + "\n")
    else:
        console.print(text, no_wrap=True, crop=True)


def print_blank(console: Console) -> None:
    if _plain(console):
        console.file.write("\n")
    else:
        console.print()


def _fits(plain: str, width: int) -> bool:
    """Whether a text is one line that rich would print as it is within ``width`` cells: no line break, no
    tab to expand (control codes were taken out when the Text was made)."""
    return "\n" not in plain and "\t" not in plain and cell_len(plain) <= width


def _plain_lines(text: Text, console: Console, width: int) -> list[str]:
    """The lines ``text.wrap`` gives, as plain text. A text that fits, the usual row, is already its only
    line: rich's wrapping is left out for it."""
    plain = text.plain
    if _fits(plain, width):
        return [plain]
    wrap = _plain_wrapped if len(plain) <= MAX_KEPT_WRAPPED else _plain_wrapped.__wrapped__
    return list(wrap(console, plain, width, text.justify, text.overflow, text.no_wrap))


@lru_cache(maxsize=1024)
def _plain_wrapped(console: Console, plain: str, width: int, justify: JustifyMethod | None,
                   overflow: OverflowMethod | None, no_wrap: bool | None) -> tuple[str, ...]:
    """The plain lines of a text that wraps, kept for the run: a fleet's hosts repeat their findings' messages and
    fixes, which each host wrapped anew. Plain lines depend on the text and these, not on its styles; a Text's
    plain text makes the same Text again (its control codes were stripped when made)."""
    text = Text(plain, justify=justify, overflow=overflow, no_wrap=no_wrap)
    return tuple(line.plain for line in _wrapped(text, console, width))


def _wrapped(text: Text, console: Console, width: int) -> Lines:
    """The text's lines as a table cell of ``width`` wraps them: a word longer than the width is folded."""
    return text.wrap(console, width, justify=text.justify or "default", overflow=text.overflow or "fold",
                     no_wrap=bool(text.no_wrap))


def print_rows(console: Console, rows: list[tuple[str, Text]], label_style: str = _LABEL_STYLE) -> None:
    """Rows of a label (LABEL_WIDTH wide) and a text wrapped in the rest of the width — what a
    two-column ``Table.grid`` prints, the text wrapped by rich as a table cell wraps it, without the
    table's measuring and cropping of every cell, which made the text report of a large fleet take minutes."""
    available = console.width - LABEL_WIDTH
    plain = _plain(console) and available > 0  # narrower, rich crops the labels' column too
    if plain and not any("\t" in text.plain for _, text in rows):
        # The grid is as wide as its widest text, at most the available width: the others fit in it, as they fit
        # in the available width, so the lines are the same at that width, without measuring every text. A tab
        # is not measured as wide as the wrapping expands it.
        _write_plain_rows(console, rows, available)
        return
    # the grid is as wide as its widest text needs (at most the console's width), and pads every cell to it
    width = max(1, min(available, max(cell_len(line) for _, text in rows for line in text.plain.split("\n"))))
    if plain:
        _write_plain_rows(console, rows, width)
    else:
        _print_styled_rows(console, rows, width, label_style)


def _write_plain_rows(console: Console, rows: list[tuple[str, Text]], width: int) -> None:
    """The rows without styles, as text: what _print_styled_rows prints on a console without colours (where
    rich writes no styles), less the blanks that pad each cell (the report drops them), without rich's
    styled segments — most reports, fleets' included, go to files and pipes."""
    out: list[str] = []
    for label, text in rows:
        for index, line in enumerate(_plain_lines(text, console, width)):
            out.append(f"{label if index == 0 else '':<{LABEL_WIDTH}}{line}\n")
    console.file.write("".join(out))


def _print_styled_rows(console: Console, rows: list[tuple[str, Text]], width: int, label_style: str) -> None:
    style = console.get_style(label_style)
    segments: list[Segment] = []
    for label, text in rows:  # a word longer than the width is folded (the table cut it with an ellipsis)
        for index, line in enumerate(_wrapped(text, console, width)):
            segments.append(Segment(f"{label if index == 0 else '':<{LABEL_WIDTH}}", style))
            cell = Text(end="")
            cell.append_text(line)  # the line's own style becomes a span: Text.render leaves it out
            pad = width - line.cell_len
            if pad > 0:  # a cell is padded to its width in the text's style, as the table did
                cell.append(" " * pad, line.style)
            segments.extend(Segment.simplify(cell.render(console)))
            segments.append(Segment.line())
    console.print(Segments(segments), end="")


def print_memory(console: Console, picture: MemoryPicture, width: int) -> None:
    bar_width = max(20, min(width - 4, 72))
    title = Text("Where the cgroup's memory goes" if picture.cgroup else "Where the RAM goes", "bold")
    title.append(f" ({size_text(picture.ram)}{', memory.max' if picture.cgroup else ''})", "bold")
    if picture.estimated:
        title.append("  shared memory estimated from shared_buffers", "dim")
    print_line(console, title)
    bar = Text("  ")
    for segment, cells in zip(picture.segments, bar_cells(picture, bar_width), strict=True):
        bar.append(segment.char * cells, segment.style)
    _print_cropped(console, bar)
    markers = marker_line(picture, bar_width)
    if markers:
        _print_cropped(console, Text("  " + markers, "bold"))
    legend: list[tuple[Text, Text, Text, Text]] = []
    for segment in picture.segments:
        size = size_text(segment.size) if segment.size else "nothing left"
        legend.append((Text("  " + segment.char * 2, segment.style), Text(segment.label), Text(size),
                       Text(f"{segment.size / picture.ram * 100:.1f} %")))
    if picture.commit_limit is not None:
        share = f"{picture.commit_limit / picture.ram * 100:.1f} %"
        legend.append((Text("   ┃", "bold"), Text("CommitLimit (overcommit strict)"),
                       Text(size_text(picture.commit_limit)), Text(share)))
    if picture.overcommitted:
        # two rows: the mark is RAM's size, and what is promised beyond it is more on top of that (one row read as
        # the RAM: `▲ end of RAM; promised beyond it 188.3 GiB 100.0 %`)
        legend.append((Text("   ▲", "bold red"), Text("end of RAM", "bold red"),
                       Text(size_text(picture.ram), "bold red"), Text("100.0 %", "bold red")))
        legend.append((Text(""), Text("promised beyond RAM, more than it holds", "bold red"),
                       Text(f"+{size_text(picture.overcommitted)}", "bold red"),
                       Text(f"+{picture.overcommitted / picture.ram * 100:.1f} %", "bold red")))
    _print_legend(console, legend)
    print_blank(console)


LEGEND_GLYPH_WIDTH = 4  # two cells of the glyph, under the bar's two-space indent


def _print_legend(console: Console, rows: list[tuple[Text, Text, Text, Text]]) -> None:
    """The legend's grid: glyph, label, then size and share aligned right, a blank between columns. Without
    colours and when it fits, written as text: rich's table costs more than the rest of a host's report."""
    widths = [LEGEND_GLYPH_WIDTH] + [max((cell_len(row[column].plain) for row in rows), default=0)
                                     for column in (1, 2, 3)]
    if _plain(console) and sum(widths) + len(widths) - 1 <= console.width and all(
            cell_len(row[0].plain) <= LEGEND_GLYPH_WIDTH for row in rows):
        lines = []
        for glyph, label, size, share in rows:
            lines.append(" ".join((_padded(glyph.plain, widths[0]), _padded(label.plain, widths[1]),
                                   _padded(size.plain, widths[2], right=True),
                                   _padded(share.plain, widths[3], right=True))) + "\n")
        console.file.write("".join(lines))
        return
    legend = Table.grid(padding=(0, 1))
    legend.add_column(width=LEGEND_GLYPH_WIDTH, no_wrap=True)
    legend.add_column(no_wrap=True)
    legend.add_column(justify="right", no_wrap=True)
    legend.add_column(justify="right", no_wrap=True)
    for row in rows:
        legend.add_row(*row)
    console.print(legend)


def _padded(text: str, width: int, *, right: bool = False) -> str:
    """``text`` filled with blanks to ``width`` terminal cells (a wide character takes two)."""
    blanks = " " * (width - cell_len(text))
    return blanks + text if right else text + blanks


def _counted(finding: Finding) -> bool:
    return finding.suppressed is None and not finding.baseline


def _host(console: Console, host: HostResult, options: ReportOptions, width: int) -> None:
    header = Text(one_line(host.host_facts.name), "bold underline")
    header.append(f"  {one_line(relative_path('.', host.host_facts.root, options.repo_root))}", "dim")
    print_line(console, header)
    print_blank(console)
    picture = memory_picture(host.host_facts)
    if picture is not None:
        print_memory(console, picture, width)
    for warning in host.host_facts.warnings:
        print_line(console, Text(f"warning: {one_line(warning)}", "yellow"))
    if options.verbose:
        for note in host.host_facts.notes:
            print_line(console, Text(f"note: {one_line(note)}", "dim"))
    if host.host_facts.warnings or (options.verbose and host.host_facts.notes):
        print_blank(console)
    active = sorted((finding for finding in host.findings if _counted(finding)),
                    key=lambda item: (-item.rank, item.rule_id, item.subject or ""))
    files = HostFiles(host.host_facts.root)
    for finding in active:
        print_finding(console, finding, host, files, options)
    if not active:
        print_line(console, Text("no findings", "green"))
        print_blank(console)
    quiet = [finding for finding in host.findings if not _counted(finding)]
    if quiet:
        grid = Table.grid()
        grid.add_column(width=LABEL_WIDTH, no_wrap=True)
        grid.add_column(ratio=1)
        for finding in sorted(quiet, key=lambda item: (-item.rank, item.rule_id)):
            why = f"suppressed: {finding.suppressed}" if finding.suppressed is not None else "in the baseline"
            grid.add_row(finding.severity, one_line(f"{finding.rule_id} {finding.rule_name} ({why})"), style="dim")
        console.print(grid)
        console.print()
    if options.verbose and host.not_evaluated:
        console.print(Text("not evaluated:", "dim"))
        for item in host.not_evaluated:
            why = item.reason or "missing " + ", ".join(item.missing)
            subject = f" [{item.subject}]" if item.subject else ""
            console.print(Text(one_line(f"  {item.rule_id} {item.rule_name}{subject}: {why}"), "dim"))
        console.print()


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def summary_line(result: LintResult, verbose: bool) -> str:
    """``2 errors, 5 warnings, 3 info on 2 hosts``, then what was not counted and what not evaluated."""
    return summary_text(RunSummary.of(result), verbose)


def summary_text(summary: RunSummary, verbose: bool) -> str:
    counts = summary.counts
    line = (f"{_plural(counts['error'], 'error')}, {_plural(counts['warning'], 'warning')}, {counts['info']} info "
            f"on {_plural(summary.hosts, 'host')}")
    if summary.hosts_failed:
        line += f"; {_plural(summary.hosts_failed, 'host')} could not be read"
    quiet = [f"{count} {what}" for count, what in (
        (summary.suppressed, "suppressed"), (summary.baseline_only, "in the baseline")) if count]
    if quiet:
        line += f"\nnot counted: {', '.join(quiet)}"
    skipped = summary.not_evaluated
    if skipped:
        listed = "listed above" if verbose else "--verbose lists them"
        line += f"\n{skipped} rule{' was' if skipped == 1 else 's were'} not evaluated (missing inputs; {listed})"
    return line


def print_fleet(console: Console, summary: RunSummary) -> None:
    """The hosts with the most findings (errors first), and the findings on the most hosts."""
    worst = summary.hosts_by_worst
    unread = f" (and {summary.hosts_failed} that could not be read)" if summary.hosts_failed else ""
    console.print(Text(f"Fleet: {_plural(summary.hosts, 'host')}{unread}", "bold"))
    console.print(Text(f"{worst['error']} with errors, {worst['warning']} with warnings (no error), "
                       f"{worst['info']} with info only, {worst['clean']} without findings"))
    console.print()
    hosts = Table.grid(padding=(0, 2))
    hosts.add_column(no_wrap=True, overflow="ellipsis", max_width=48)
    for _ in range(3):
        hosts.add_column(justify="right", no_wrap=True)
    hosts.add_row("host", "errors", "warnings", "info", style="bold")
    listed = summary.top_hosts()
    for row in listed:
        hosts.add_row(one_line(row.host), Text(str(row.error), SEVERITY_STYLE["error"] if row.error else ""),
                      Text(str(row.warning), SEVERITY_STYLE["warning"] if row.warning else ""), str(row.info))
    console.print(hosts)
    if summary.hosts > len(listed):
        console.print(Text(f"… and {summary.hosts - len(listed)} more", "dim"))
    console.print()
    rules = summary.top_rules()
    if not rules:
        return
    console.print(Text("Most frequent findings", "bold"))
    table = Table.grid(padding=(0, 2))
    table.add_column(no_wrap=True)
    table.add_column(no_wrap=True)
    table.add_column(justify="right", no_wrap=True)
    table.add_row("rule", "severity", "hosts", style="bold")
    for rule in rules[:TOP_RULES]:
        table.add_row(f"{rule.rule_id} {rule.rule_name}", Text(rule.severity, SEVERITY_STYLE[rule.severity]),
                      str(rule.hosts))
    console.print(table)
    if len(rules) > TOP_RULES:
        console.print(Text(f"… and {len(rules) - TOP_RULES} more rules", "dim"))
    console.print()


def report_console(options: ReportOptions) -> tuple[Console, io.StringIO, int]:
    """A console writing into a buffer: colour as the options and terminal say, the terminal's width or 100."""
    on_terminal = sys.stdout.isatty()
    color = use_color(options, on_terminal)
    width = options.width or (Console().width if on_terminal else 100)
    buffer = io.StringIO()
    # a height too: with the width alone, rich asks the terminal for its size at every print and wrap (a
    # tenth of the text report's time); nothing printed here fills a height
    console = Console(file=buffer, width=width, height=25, force_terminal=color, no_color=not color,
                      highlight=False, emoji=False, markup=False, color_system="standard" if color else None)
    return console, buffer, width


class Writer:
    def __init__(self, run: RunInfo, options: ReportOptions, out: Out) -> None:
        self.options = options
        self.out = out
        self.console, self.buffer, self.width = report_console(options)
        self.errors: list[HostError] = []
        self.sections = Spool()

    def _take(self) -> str:
        """What was printed since the last call. Rich pads table cells to the column width; trailing blanks
        only get in the way of diffs and editors."""
        text = self.buffer.getvalue()
        self.buffer.seek(0)
        self.buffer.truncate()
        return printed(text)

    def host(self, host: HostResult) -> None:
        _host(self.console, host, self.options, self.width)
        self.sections.write(self._take())

    def error(self, error: HostError) -> None:
        self.errors.append(error)

    def finish(self, notices: list[str], summary: RunSummary) -> None:
        console = self.console
        for error in self.errors:
            label = error_label(error, self.options.repo_root)
            console.print(Text(one_line(f"error: {label}: {error.message}"), "bold red"))
        if self.errors:
            console.print()
        self.out.write(self._take())
        self.sections.copy_to(self.out)
        for notice in notices:
            console.print(Text(one_line(f"notice: {notice}"), "yellow"))
        if summary.is_fleet():
            print_fleet(console, summary)
        console.print(Text(summary_text(summary, self.options.verbose), "bold"))
        self.out.write(self._take())

    def close(self) -> None:
        self.sections.close()


def render(result: LintResult, options: ReportOptions) -> str:
    return render_with_writer(Writer, result, options)
