"""Output formats. Each is a module with ``render(result, options) -> str``, imported only when used.

The formats of ``pgvet lint`` also have a ``Writer`` (see ``HostWriter``): ``pgvet lint`` hands it each
host as soon as it is linted and keeps nothing of it, so the memory of a run does not grow with its
hosts; their ``render`` is that writer run over a finished result.
"""

from __future__ import annotations

import importlib
import io
import json
import os
import re
import shutil
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import IO, Any, NamedTuple, Protocol

from pgvet.errors import UsageError
from pgvet.findings import Finding, HostError, HostResult, LintResult, RuleMeta
from pgvet.inputs.reading import open_input
from pgvet.paths import is_inside, real_path_in, real_path_within, repository_of
from pgvet.run.summary import RunSummary

# What a report for people or for XML must not carry as it is: C0 controls but tab and line feed, DEL, C1, lone
# surrogates (bytes that were not UTF-8) and U+FFFE/U+FFFF. A value of a configuration file can hold them (ESC
# included: an escape sequence would reach the terminal or CI log), and XML cannot hold most of them at all. Nor
# the bidirectional formatting characters (marks, embeddings, overrides, isolates): a right-to-left override
# reorders what a terminal with bidi support or a web page shows after it. Nor the line and paragraph separators
# (U+2028, U+2029), which editors, browsers and some log viewers break a line at: a value would start a line of its
# own there.
_NOT_VISIBLE = ("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069"
                "\ud800-\udfff\ufffe\uffff]")
# A backslash that would otherwise read as the start of such an escape, or of another backslash's, is doubled:
# one before a backslash, x, u, U, r or n (one_line writes a line feed \n), or before a character written as an
# escape. Else a value spelt r\u202eole printed as one holding the override does (docs/decisions.md).
_MISREAD_BACKSLASH = f"\\\\(?=[\\\\xuUrn\\n]|{_NOT_VISIBLE})"


@lru_cache(maxsize=1)
def _not_visible() -> re.Pattern[str]:
    return re.compile(f"{_NOT_VISIBLE}|{_MISREAD_BACKSLASH}")


def _escaped(match: re.Match[str]) -> str:
    character = match.group()
    return "\\\\" if character == "\\" else character.encode("unicode_escape").decode("ascii")


def visible(text: str) -> str:
    """``text`` with each such character written as its Python escape (``\\x1b``, ``\\udcff``), and a backslash
    that would read as an escape's start as ``\\\\``: what it shows is told apart from what it escaped (a
    backslash elsewhere, ``enable\\_%``, ``C:\\data``, stays one). Applied once to a text: not again to its output."""
    return _not_visible().sub(_escaped, text)


def one_line(text: str) -> str:
    """``visible(text)`` with its line feeds escaped too, for what a report prints within a line (a host's name, a
    file's path): a name holding one must not start a line of its own (``::error::…`` is a command to GitHub)."""
    return visible(text).replace("\n", "\\n")


_BLANKS = re.compile(r"[ \t]+")


# Characters of one value or place a terminal report shows, the rest written '…': rich expands a tab to 8 cells and
# folds a table cell a character at a time (pgvet facts on a postgresql.conf value of 2 MB of tabs took 2.3 GB).
MAX_SHOWN_TEXT = 1000


def cut(text: str) -> str:
    """The text, or its first MAX_SHOWN_TEXT characters and an ellipsis."""
    return text if len(text) <= MAX_SHOWN_TEXT else text[:MAX_SHOWN_TEXT] + "…"


def printed(text: str) -> str:
    """A console's text as a report prints it: each line without its trailing blanks (rich pads table cells), and
    none read as a workflow command (without_commands)."""
    return without_commands("".join(line.rstrip() + "\n" for line in text.splitlines()))


def without_commands(text: str) -> str:
    """The text with no line that GitHub Actions reads as a workflow command. The runner takes any line of a step's
    output that starts with ``::`` once leading blanks are trimmed for one (``::error::``, ``::add-mask::``,
    ``::stop-commands::``): a value a console wraps onto a line of its own, or a line of a rule pack's text, must
    not start one, so a word joiner (U+2060, invisible) goes between those two colons."""
    if "::" not in text:
        return text
    lines = text.split("\n")
    for index, line in enumerate(lines):
        rest = line.lstrip()
        if rest.startswith("::"):
            lines[index] = f"{line[:len(line) - len(rest)]}:\u2060{rest[1:]}"
    return "\n".join(lines)


def prose(text: str) -> str:
    """A message or a fix's text on one line, as reports print it: runs of blanks folded to one, and a line break
    that a value brought in (a database named with one) written ``\\n`` like any other invisible character —
    folded into a blank it would name another database in the SQL the text gives."""
    return one_line(_BLANKS.sub(" ", text.strip()))


# ASCII punctuation, which CommonMark lets a backslash make literal (and only it).
_MARKDOWN_PUNCTUATION = re.compile(r"([!-/:-@\[-`{-~])")


def markdown_text(text: str) -> str:
    """Text of another's (a repository's values, a rule pack's words) as inert Markdown: every ASCII punctuation
    character escaped, so that its Markdown or HTML (``![x](https://…)``, ``<img src=…>``, a link, emphasis) renders
    as the characters it is — an image would be fetched from another's server whenever the page is viewed —, a
    pipe ends no table cell, and a backslash before a backslash is no escape (``r\\\\u202e`` shown as an escaped
    override). GFM's autolinks are found in the text once escapes are read: an address (``ops\\@evil.example``
    became a mailto link) is broken by a word joiner (U+2060, invisible) before its ``@``; a ``www.`` or
    ``https://`` is left as text."""
    return _MARKDOWN_PUNCTUATION.sub(r"\\\1", text).replace("\\@", "\u2060\\@")


class ReportOptions(NamedTuple):
    color: bool | None = None  # None: decide from the terminal, NO_COLOR and PRE_COMMIT
    verbose: bool = False
    width: int | None = None
    repo_root: Path | None = None  # paths are relative to it (None: the current directory): report_options


Renderer = Callable[[LintResult, ReportOptions], str]

# format name → module under pgvet.report
_MODULES = {
    "text": "text",
    "concise": "concise",
    "json": "json_report",
    "jsonl": "jsonl",
    "sarif": "sarif",
    "github": "github",
    "junit": "junit",
    "gitlab": "gitlab",
    "html": "html",
    "summary": "summary_view",
}


class _Formats(Mapping[str, Renderer]):
    """The registry: importing a format's module only when it is asked for keeps start-up fast."""

    def __getitem__(self, name: str) -> Renderer:
        module = importlib.import_module(f"pgvet.report.{_MODULES[name]}")
        renderer: Renderer = module.render
        return renderer

    def __iter__(self) -> Iterator[str]:
        return iter(_MODULES)

    def __len__(self) -> int:
        return len(_MODULES)


FORMATS: Mapping[str, Renderer] = _Formats()


class Out(Protocol):
    """Where a writer writes: standard output, a file, a buffer."""

    def write(self, text: str, /) -> object: ...


class RunInfo(Protocol):
    """What a report knows of a run before its first host (a LintRun, or a finished LintResult)."""

    @property
    def tool_version(self) -> str: ...
    @property
    def pack_version(self) -> str: ...
    @property
    def rules(self) -> dict[str, RuleMeta]: ...
    @property
    def compared_with_baseline(self) -> bool: ...


class HostWriter(Protocol):
    """A report written host by host: ``host`` and ``error`` as the run goes, ``finish`` once at the end;
    ``close`` after it, or instead of it when the run fails, gives back what the writer held (its spools)."""

    def host(self, host: HostResult) -> None: ...
    def error(self, error: HostError) -> None: ...
    def finish(self, notices: list[str], summary: RunSummary) -> None: ...
    def close(self) -> None: ...


WriterFactory = Callable[[RunInfo, "ReportOptions", Out], HostWriter]


def writer_factory(name: str) -> WriterFactory:
    """The format's host-by-host writer."""
    factory: WriterFactory = importlib.import_module(f"pgvet.report.{_MODULES[name]}").Writer
    return factory


def render_with_writer(factory: WriterFactory, result: LintResult, options: ReportOptions) -> str:
    """A finished result through a host-by-host writer (the formats' ``render``)."""
    out = io.StringIO()
    writer = factory(result, options, out)
    try:
        for error in result.errors:
            writer.error(error)
        for host in result.hosts:
            writer.host(host)
        writer.finish(result.notices, RunSummary.of(result))
    finally:
        writer.close()
    return out.getvalue()


def json_text(value: Any, depth: int) -> str:
    """``value`` as ``json.dumps(document, indent=2)`` writes it ``depth`` levels deep in a document."""
    return json.dumps(value, indent=2, ensure_ascii=False, default=str).replace("\n", "\n" + "  " * depth)


class JsonArray:
    """An array of an indented JSON document whose items come one by one, ``depth`` levels deep: the text
    after its ``[``, each item on a line of its own (a record per line: a fleet's thousands of findings are
    written by the json module's C encoder, which does not indent, and a line is a record for grep and diff)."""

    def __init__(self, out: Out, depth: int) -> None:
        self.out = out
        self.depth = depth
        self.count = 0

    def add(self, item: Any) -> None:
        self.out.write(("\n" if not self.count else ",\n") + "  " * self.depth
                       + json.dumps(item, ensure_ascii=False, default=str))
        self.count += 1

    def close(self) -> None:
        self.out.write("\n" + "  " * (self.depth - 1) + "]" if self.count else "]")


class Spool:
    """Text held back until the end of a run (what a format prints after something only the end knows):
    in memory up to SPOOL_MEMORY characters, then in a temporary file."""

    SPOOL_MEMORY = 4 * 1024 * 1024

    def __init__(self) -> None:
        self._parts: list[str] = []
        self._size = 0
        self._file: IO[str] | None = None

    def write(self, text: str) -> None:
        if self._file is not None:
            self._file.write(text)
            return
        self._parts.append(text)
        self._size += len(text)
        if self._size > self.SPOOL_MEMORY:
            # surrogatepass: file names that are not UTF-8 come back as they went in. Closed by copy_to or
            # close; an unnamed file, so nothing is left behind even when the process is killed.
            self._file = tempfile.TemporaryFile("w+", encoding="utf-8", errors="surrogatepass")  # noqa: SIM115
            self._file.writelines(self._parts)
            self._parts = []

    def copy_to(self, out: Out) -> None:
        if self._file is None:
            for part in self._parts:
                out.write(part)
            return
        try:
            self._file.seek(0)
            shutil.copyfileobj(self._file, out)
        finally:
            self.close()

    def close(self) -> None:
        """The temporary file closed (its writer's ``close``): when a run fails, at once, not when the
        traceback that holds the writer goes."""
        if self._file is not None:
            self._file.close()


def destinations(formats: Sequence[str], outputs: Sequence[Path]) -> list[tuple[str, Path | None]]:
    """Each --format with its --output (None: standard output), checked: UsageError when they do not pair."""
    if len(outputs) > len(formats):
        raise UsageError("each --output needs its --format (they pair up in order)")
    paired: list[tuple[str, Path | None]] = [
        (fmt, outputs[position] if position < len(outputs) and str(outputs[position]) != "-" else None)
        for position, fmt in enumerate(formats)]
    if sum(1 for _, destination in paired if destination is None) > 1:
        raise UsageError("only one --format can go to standard output; give the others an --output file")
    files = [os.path.realpath(destination) for _, destination in paired if destination is not None]
    for position, file in enumerate(files):
        if file in files[:position]:  # each format would truncate and write over the other
            raise UsageError(f"{file} is the --output of two formats; give each its own file")
    for fmt, _ in paired:
        if fmt not in FORMATS:
            raise UsageError(f"unknown --format {fmt!r}; choose from {', '.join(sorted(FORMATS))}")
    return paired


def default_format() -> str:
    """GitHub annotations under GitHub Actions, else the text report."""
    return "github" if os.environ.get("GITHUB_ACTIONS") == "true" else "text"


# The formats a code host reads (code scanning, workflow annotations, Code Quality, test tabs): it looks their
# files up from the repository's root, wherever in the repository pgvet ran.
REPOSITORY_FORMATS = frozenset({"sarif", "github", "gitlab", "junit"})


def report_options(fmt: str, *, color: bool | None, verbose: bool) -> ReportOptions:
    """A format's options: its paths relative to the repository's root (the nearest directory at or above the
    current one that holds .git) for REPOSITORY_FORMATS, to the current directory for the others, which a user
    opens from where they are."""
    root = repository_of(os.getcwd()) if fmt in REPOSITORY_FORMATS else None
    return ReportOptions(color=color, verbose=verbose, repo_root=Path(root) if root is not None else None)


def use_color(options: ReportOptions, is_terminal: bool) -> bool:
    if options.color is not None:
        return options.color
    if os.environ.get("NO_COLOR") or os.environ.get("PRE_COMMIT"):
        return False
    return is_terminal


def relative_path(path: str, root: str, repo_root: Path | None = None, cwd: str | None = None) -> str:
    """A finding's path as the user knows it: the host directory joined with the file, relative to
    ``repo_root`` (or the current directory) when it lies under it, else absolute. ``cwd``: the current directory, when
    the caller asked for it once for many paths."""
    return _relative_path(path, root, repo_root, cwd or os.getcwd(), False)


def host_file_path(path: str, host: HostResult, repo_root: Path | None = None, cwd: str | None = None) -> str:
    """relative_path of a file of the host (a finding's path): a name its directory's listing showed as a
    regular file is no link, and its real path is known without asking the file system (an lstat per file
    per host, a visible share of a fleet's system calls)."""
    facts = host.host_facts
    return _relative_path(path, facts.root, repo_root, cwd or os.getcwd(), path in facts.regular_files,
                          facts.places_local)


def error_path(error: HostError, repo_root: Path | None = None) -> str | None:
    """The file a host's error names (or the host directory, when it is what failed) as findings' paths are
    shown: relative to ``repo_root`` (or the current directory) when it lies under it, else absolute; None
    when no file is at fault (an internal error). ``error.source`` is relative to the host."""
    source = error.source
    if source is None:
        return None
    if error.root is None or source.path == error.root:  # no host directory, or the directory itself
        return relative_path(source.path, ".", repo_root)
    return relative_path(source.path, error.root, repo_root)


def error_place(error: HostError, repo_root: Path | None = None) -> str | None:
    """``error_path`` with the line (``hosts/a/host.yaml:2``): the input that failed as the findings' paths show
    files, from where the run is, not from the host directory (`host.yaml:2` would not say which host's)."""
    place = error_path(error, repo_root)
    if place is None or error.source is None:
        return None
    return f"{place}:{error.source.line}" if error.source.line else place


def error_label(error: HostError, repo_root: Path | None = None) -> str:
    """The host and the input that failed (``a: hosts/a/host.yaml:2``); the host alone when the place is its
    own name (`pgvet lint fixtures`: "fixtures", not "fixtures: fixtures") or unknown."""
    place = error_place(error, repo_root)
    return f"{error.host}: {place}" if place and place != error.host else error.host


@lru_cache(maxsize=1024)
def _relative_path(path: str, root: str, repo_root: Path | None, cwd: str, regular: bool, local: bool = False) -> str:
    """relative_path, once per place: a host's findings point at a few files, each many times; a run's
    files do not move while it reports them. Strings and os.path, not Path objects: this runs for every
    file of every host of a fleet. ``regular``: ``path`` is a name of ``root`` known to be no link. Links are
    resolved beneath the host directory only (the directory itself, as given, is the user's): a place outside it
    (a snapshot's sourcefile, a host's link out) is named as written, never looked up on the machine that runs
    pgvet, whose links a report would otherwise show (and whose automounter a lookup may set off), unless the places
    are this machine's own (``local``: pgvet check)."""
    absolute = os.path.isabs(path)
    base = _real(os.path.join(cwd, repo_root) if repo_root is not None else cwd)
    given_root = os.path.normpath(os.path.join(cwd, root))
    written = os.path.normpath(path if absolute else os.path.join(given_root, path))
    try:
        real_root = _real(os.path.join(cwd, root))
        if regular:
            resolved: str | None = os.path.join(real_root, path)
        elif absolute and local:
            resolved = os.path.realpath(path)
        else:
            resolved = real_path_within(written, real_root, given_root)
    except (OSError, ValueError):  # ValueError: a name holding a NUL byte, which no file has (a snapshot's word)
        resolved = None
    if resolved is None:
        resolved = written
    if resolved == base:
        return "."
    if is_inside(resolved, base):
        return resolved[len(base.rstrip(os.sep)) + 1:]
    # outside: absolute (docs/output.md), as annotations and SARIF must name it; `../x` would depend on the cwd
    return written


@lru_cache(maxsize=64)
def _real(absolute: str) -> str:
    """A directory's real path: the base and a host's root serve every file of the host. A fleet's hosts share
    their parent directory, kept here: a host's root is worked out from it with one lstat (real_path_in), not
    one for each directory of its path."""
    parent, name = os.path.split(absolute)
    if name and os.path.normpath(absolute) == absolute:  # no '.', '..' nor '//' to resolve in order
        return real_path_in(_real(parent), name)
    return os.path.realpath(absolute)


def anchor(finding: Finding, host: HostResult) -> tuple[Path, int | None]:
    """The file and line a finding is shown at by formats that need a file (SARIF, GitLab, annotations):
    its own place; else the first evidence read from a file of the host (the sysctl line behind a
    derived value); else where the configuration document that declares the host declares it (one directory
    may hold several); else a file that stands for the host (host.yaml, postgresql.conf, else the first
    file by name); only an empty host directory is returned itself (line None). Code scanning shows a
    result only on a file of the repository."""
    root = Path(host.host_facts.root)
    candidates = [(finding.path, finding.line)] if finding.path else []
    candidates += [(item.source.path, item.source.line) for item in finding.evidence if item.source is not None]
    declared_by = host.declared_by
    if declared_by is not None:
        candidates.append((declared_by[0].path, declared_by[0].line))
    regular = host.host_facts.regular_files
    local = host.host_facts.places_local
    for path, line in candidates:
        if path and not path.startswith("<") and (
                _host_file(root, path, regular) or (local and os.path.isabs(path) and os.path.isfile(path))):
            return root / path, line  # an absolute path is itself
    for name in ("host.yaml", "host.yml", "postgresql.conf"):
        if _host_file(root, name, regular):
            return root / name, None
    try:  # a regular file of the directory itself, no link: nothing but the directory's listing is asked
        with os.scandir(root) as entries:
            files = sorted(root / entry.name for entry in entries if entry.is_file(follow_symlinks=False))
    except OSError:
        files = []
    return (files[0], None) if files else (root, None)


def _host_file(root: Path, path: str, regular: set[str]) -> bool:
    """Whether ``path`` is a regular file beneath the host's directory, links resolved inside it as its inputs are
    opened: a place outside it (a server's sourcefile in a snapshot, ``/etc/shadow``, a link of the host's out) is
    never looked up on the machine that runs pgvet, whose files a report would otherwise tell exist (unless they are
    its own: ``places_local``)."""
    if path in regular:  # listed as a regular file by the host's discovery: no link
        return True
    try:
        descriptor, _ = open_input(os.path.join(root, path), str(root))
    except OSError:
        return False
    os.close(descriptor)
    return True


def anchor_path(target: Path, host: HostResult, repo_root: Path | None) -> str:
    """An anchor's file as formats that name it show it: relative to the repository root (or the current
    directory) when under it. ``anchor`` joins the host's root, itself relative to the current directory
    when given so: made absolute, the path is not read as relative to the root a second time."""
    facts = host.host_facts
    return Path(_relative_path(os.path.abspath(target), facts.root, repo_root, os.getcwd(), False,
                               facts.places_local)).as_posix()
