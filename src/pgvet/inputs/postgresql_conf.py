"""postgresql.conf, read exactly as PostgreSQL 15–18 reads it (guc-file.l and conffiles.c).

Public API (the snapshot calls exactly this)::

    parse_conf_text(text: str, path: str) -> tuple[list[ConfSetting | ConfDirective], list[ConfProblem]]
        One file, pure: every ``name = value`` line as a ConfSetting, every include line as a
        ConfDirective, every syntax error as a ConfProblem, all with Source(path, line).

    load_conf(main: Path, *, root: Path, auto_conf: Path | None = None,
              display_base: Path | None = None) -> ConfResult
        The main file with its includes followed, then ``postgresql.auto.conf``: every occurrence in
        the order PostgreSQL reads them (later wins: ``ConfResult.effective()``; a line repeated later under
        the same spelling is skipped: ``ConfResult.applied()``), every problem.

Grammar, as PostgreSQL's lexer has it: a line is ``name [=] value [# comment]``; the name is an
identifier or ``prefix.name``; the value is one token: an identifier, an unquoted string
(``en_US.UTF-8``, ``/a:b``), an integer with unit letters (``8GB``, ``0x1F``, ``-1``), a real
(``0.5``, ``1e-3`` only with a dot, even ``.``), or a single-quoted string where ``''`` is a quote and
the backslash escapes ``\\b \\f \\n \\r \\t \\ooo`` hold (a backslash before any other character gives
that character; an escape giving byte 0 ends the value). Tokens never span lines. Bytes 0x80–0xFF
are letters. A syntax error is reported at the line of the offending token ("near token") or, when
the line ended too early, at the line before the end of line ("near end of line" — which is line
N−1 when the file ends without a newline on line N, as PostgreSQL counts). Parsing resumes at the
next line; after 100 syntax errors the file is abandoned (the ``pg_file_settings`` view gives up
after the first: ``syntax_error_limit=1`` reproduces it).

Includes (``include``, ``include_if_exists``, ``include_dir``, names case-insensitive): relative
paths are joined to the directory of the including file and normalised; absolute ones are used
as given. ``include_dir`` reads the ``*.conf`` files not starting with ``.`` in byte order of their
names, skipping directories, and stops at the first file that has an error (as PostgreSQL does).
Nesting deeper than 10 is refused with PostgreSQL's message; an include cycle runs into that limit
exactly as in PostgreSQL, and pgvet adds a ``cycle`` problem naming it (a file including itself
directly is refused at once: "configuration file recursion"). Any error in the main file
(or its includes) stops PostgreSQL before ``postgresql.auto.conf``, so auto.conf is then not read
(a ``not-read`` note says so).

Safety, pgvet's own rules: a file whose real path (symlinks followed) is outside ``root`` is not
read (``outside-root``); a file larger than 16 MiB, or files that add up to more than 16 MiB or 100,000 lines in
one load, are an InputError (the host is not judged, rather than judged without them); at most 10,000 files are
read in one load (``too-many-files``) so an include_dir fan-out cannot hang pgvet.
Unreadable files, directories given as files and symlink loops are problems, never exceptions.

Decoding: PostgreSQL reads bytes. pgvet decodes a file as UTF-8, or, when it is not valid UTF-8,
as Latin-1 (each byte one character, so lines and tokens stay exactly PostgreSQL's) with an
``encoding`` note. Octal escapes are assembled as bytes and decoded as UTF-8, invalid bytes shown
as ``\\xNN``.

Problem kinds: ``syntax``, ``too-many-errors``, ``missing-include``, ``missing-include-if-exists``
(a note: PostgreSQL logs "skipping missing configuration file"), ``missing-include-dir``,
``empty-include``, ``empty-include-dir``, ``depth``, ``recursion`` (a file including itself, which
PostgreSQL rejects by name), ``cycle`` (pgvet's: a longer cycle), ``outside-root``, ``unreadable``,
``too-many-files``, ``encoding``, ``not-read``. ``fatal`` is True where PostgreSQL
would refuse to start.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from pgvet.errors import InputError
from pgvet.inputs.reading import InGitDirectory, LeadsOut, NotRegular, find_mark_in_bytes, read_input
from pgvet.paths import real_path_within
from pgvet.provenance import Source

if TYPE_CHECKING:
    from pgvet.inputs.conf_templates import TemplateLine

__all__ = [
    "ConfDirective",
    "ConfProblem",
    "ConfResult",
    "ConfSetting",
    "load_conf",
    "parse_conf_text",
    "quote_setting",
]

CONF_FILE_MAX_DEPTH = 10  # PostgreSQL's limit on include nesting (conffiles.h)
MAX_SYNTAX_ERRORS = 100  # per file, then PostgreSQL abandons the file
MAX_FILE_BYTES = 16 * 1024 * 1024
MAX_FILES = 10_000
# What all the files of one load may hold together: a tree of files each under MAX_FILE_BYTES must not make a
# host take gigabytes either (each setting costs a few kilobytes once judged: an unknown one is a finding).
# PostgreSQL's sample postgresql.conf is 30 kB of 850 lines.
MAX_TREE_BYTES = MAX_FILE_BYTES
MAX_TREE_LINES = 100_000
INCLUDE_KINDS = ("include", "include_if_exists", "include_dir")


class ConfSetting(NamedTuple):
    """One ``name = value`` line (a named tuple: cheaper to make than a frozen dataclass, and made for every line)."""

    name: str  # lower-case (ASCII letters folded, as PostgreSQL finds a parameter by its name)
    value: str  # de-quoted, de-escaped
    raw: str  # the value token as written
    quoted: bool
    source: Source
    written: str  # the name as written: PostgreSQL tells repeated lines apart by it (ConfResult.applied)


class ConfDirective(NamedTuple):
    """One include line: ``kind`` is ``include``, ``include_if_exists`` or ``include_dir``."""

    kind: str
    target: str  # de-quoted, de-escaped path as written
    raw: str
    source: Source


class ConfProblem(NamedTuple):
    """A syntax error, a missing include, depth exceeded, a file outside the root…"""

    kind: str
    message: str  # PostgreSQL's wording where PostgreSQL reports it
    source: Source
    fatal: bool  # True when PostgreSQL would refuse to start because of it
    # an include's path as its directive wrote it, for the problems about one: the message's paths may be
    # absolute, and a finding's fingerprint must not change from one checkout to another
    target: str | None = None


_new_tuple = tuple.__new__


@dataclass(slots=True, eq=False, repr=False)
class ConfResult:
    settings: list[ConfSetting] = field(default_factory=list)  # every occurrence, in applying order
    problems: list[ConfProblem] = field(default_factory=list)
    files: list[str] = field(default_factory=list)  # every file read, in order
    unmarked_files: set[str] = field(default_factory=set)  # those with no suppression comment (see HostFacts)
    # a template's lines (templates=True): where each is, with how many settings precede it in applying order
    templated: list[tuple[int, TemplateLine, Source]] = field(default_factory=list)

    def effective(self) -> dict[str, ConfSetting]:
        """The last occurrence of each name: the one whose value the parameter ends up with."""
        return {setting.name: setting for setting in self.settings}

    def applied(self) -> dict[str, ConfSetting]:
        """The lines PostgreSQL applies, by the name as written: the last line of each spelling.

        ProcessConfigFile skips a line when a later line has exactly the same name (compared with strcmp,
        so ``Work_Mem`` does not skip an earlier ``work_mem``, nor ``work_mem`` an earlier ``sort_mem``) and
        applies the others in order: only an applied line's value is checked, and can stop the server.
        """
        return {setting.written: setting for setting in self.settings}


# --- lexer: flex semantics (longest match, ties to the earlier rule) -----------------------------

# Bytes 0x80-0xFF are letters for PostgreSQL's lexer, so any non-ASCII character is one. Each class is
# written as the negation of the ASCII characters it lacks: one class is a fast loop in re, where
# `[A-Za-z_]|[^\x00-\x7f]` was an alternation tried at every character, and a \x80-\U0010ffff range
# is slow to compile at every start. tests/inputs/test_pgconf.py checks them against every code point.
# LETTER and ID (a setting name's part) are also the fix writer's and the redaction's.
LETTER = r"[^\x00-\x40\x5b-\x5e\x60\x7b-\x7f]"  # [A-Za-z_] or non-ASCII
_ID_CHAR = r"[^\x00-\x2f\x3a-\x40\x5b-\x5e\x60\x7b-\x7f]"  # [A-Za-z_0-9] or non-ASCII
_UNQUOTED_CHAR = r"[^\x00-\x2c\x3b-\x40\x5b-\x5e\x60\x7b-\x7f]"  # [A-Za-z_0-9\-._:/] or non-ASCII
ID = rf"{LETTER}{_ID_CHAR}*"
# A quoted string, '(?:[^'\\\n]|\\.|'')*' in flex, is found by string_end: as one pattern, Python's re kept
# a backtracking record for each character of the token (a 15 MiB value took 2.6 GB). Its stretches between
# quotes are unambiguous, matched possessively (no record kept).
_STRING_STRETCH = re.compile(r"(?:[^'\\\n]++|\\.)*+")
_ESCAPE = re.compile(r"\\(?:[0-7]{1,3}|.)|''", re.DOTALL)
_ESCAPED_BYTES = {"b": b"\b", "f": b"\f", "n": b"\n", "r": b"\r", "t": b"\t", "''": b"'"}
_REAL = r"[-+]?[0-9]*\.[0-9]*(?:[Ee][-+]?[0-9]+)?"
_QUALIFIED_ID = re.compile(rf"{ID}\.{ID}")
# Token kinds in the lexer's rule order, which breaks ties between equally long matches. A STRING, the only
# token that starts with a quote, is found by string_end.
_TOKEN_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("ID", re.compile(ID)),
    ("QUALIFIED_ID", _QUALIFIED_ID),
    ("UNQUOTED_STRING", re.compile(rf"{LETTER}{_UNQUOTED_CHAR}*")),
    ("INTEGER", re.compile(r"[-+]?(?:0x[0-9a-fA-F]+|[0-9]+)[a-zA-Z]*")),
    ("INTEGER", re.compile(r"[-+]?[0-9]+[a-zA-Z]*")),  # "0xg" is 0 with unit letters "xg"
    ("REAL", re.compile(_REAL)),
    ("EQUALS", re.compile(r"=")),
)
_SKIP = re.compile(r"[ \t\r]+|#[^\n]*")
_VALUE_KINDS = frozenset({"ID", "STRING", "INTEGER", "REAL", "UNQUOTED_STRING"})
_EOL = "EOL"
_EOF = "EOF"
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")

# The lines that hold a token (not only blanks and a comment), found by the '\n' before them in the text
# with a '\n' put in front: re scans for a literal '\n' in C, where '^' would be tried at every character.
_CONTENT_LINE = re.compile(r"\n[ \t\r]*+(?=[^ \t\r#\n])")
class _Lexer:
    """Yields (kind, text); ``lineno`` counts like ConfigFileLineno (bumped by each newline)."""

    def __init__(self, text: str, pos: int, lineno: int) -> None:
        self.text = text
        self.pos = pos
        self.lineno = lineno

    def next(self) -> tuple[str, str]:
        text, length = self.text, len(self.text)
        while True:
            if self.pos >= length:
                return _EOF, ""
            if text[self.pos] == "\n":
                self.pos += 1
                self.lineno += 1
                return _EOL, "\n"
            skipped = _SKIP.match(text, self.pos)
            if skipped is None:
                break
            self.pos = skipped.end()
        best_kind, best_end = "ERROR", self.pos + 1
        if text[self.pos] == "'":
            end = string_end(text, self.pos)
            if end > self.pos:
                best_kind, best_end = "STRING", end
            token = text[self.pos:best_end]
            self.pos = best_end
            return best_kind, token
        best_length = 0
        for kind, pattern in _TOKEN_PATTERNS:
            match = pattern.match(text, self.pos)
            if match is not None and match.end() - self.pos > best_length:
                best_kind, best_end, best_length = kind, match.end(), match.end() - self.pos
        token = text[self.pos:best_end]
        self.pos = best_end
        return best_kind, token


def string_end(text: str, start: int) -> int:
    """Where the longest quoted string token starting at ``start`` (a quote) ends, or ``start`` when there is
    none: each quote after a stretch may close the string, and a doubled one may instead go on."""
    end = start
    index = start + 1
    stretch = _STRING_STRETCH.match
    while True:
        index = stretch(text, index).end()  # type: ignore[union-attr]  # (an empty stretch matches)
        if not text.startswith("'", index):
            return end  # a newline, a backslash before one, or the end of the text: no closing quote here
        end = index + 1
        if not text.startswith("'", end):
            return end
        index = end + 1


def _descape(token: str) -> str:
    """The value of a quoted token, as PostgreSQL's GUC_scanstr computes it (C strings included)."""
    if token.isascii() and "\\" not in token and "'" not in token[1:-1] and "\0" not in token:
        return token[1:-1]  # nothing to undo (most values): what the escapes below give
    if "\0" in token:  # C sees the token up to the NUL and drops its last char as the closing quote
        token = token[: token.index("\0")]
    inner = token[1:]
    out = bytearray()
    done = 0
    # The last character is taken to be the closing quote and dropped at the end, as in C.
    for escape in _ESCAPE.finditer(inner):
        out += inner[done:escape.start()].encode("utf-8", "surrogateescape")
        done = escape.end()
        sequence = escape.group()
        if sequence == "''" or sequence[1] in "bfnrt":
            out += _ESCAPED_BYTES[sequence if sequence == "''" else sequence[1]]
        elif "0" <= sequence[1] <= "7":
            out.append(int(sequence[1:], 8) & 0xFF)  # C keeps the low byte of \777
        else:
            out += sequence[1].encode("utf-8", "surrogateescape")
    out += inner[done:].encode("utf-8", "surrogateescape")
    value = bytes(out[:-1]) if out else b""
    if b"\0" in value:  # an escape giving byte 0 ends the C string
        value = value[: value.index(b"\0")]
    return value.decode("utf-8", "backslashreplace")


def quote_setting(value: str) -> str:
    """A value as postgresql.conf reads it back (_descape): in single quotes, a quote doubled and a backslash escaped
    (the file's strings take C-like escapes: 'C:\\new' would read as a line feed, and a final backslash would leave
    the string open)."""
    return "'" + value.replace("\\", "\\\\").replace("'", "''") + "'"


def _syntax_problem(path: str, line: int, near: str | None) -> ConfProblem:
    where = "near end of line" if near is None else f'near token "{near}"'
    return ConfProblem("syntax", f'syntax error in file "{path}" line {line}, {where}', Source(path, line), True)


def _too_large(shown: str, here: Source) -> InputError:
    """Judging the settings without a file's content would be a silent wrong answer: the host is refused."""
    return InputError(f"{shown} is larger than {MAX_FILE_BYTES} bytes: pgvet does not read it", here)


def _tree_too_large(shown: str, here: Source, what: str) -> InputError:
    return InputError(f"with {shown}, the configuration files hold more than {what}, more than pgvet reads in one "
                      "host: it does not judge them", here)


def parse_conf_text(text: str, path: str, *, syntax_error_limit: int = MAX_SYNTAX_ERRORS,
                    ) -> tuple[list[ConfSetting | ConfDirective], list[ConfProblem]]:
    """Parse one configuration file's text; includes are returned as ConfDirective, not followed.

    ``syntax_error_limit``: the file is abandoned after that many syntax errors; 100 at server
    start, 1 in the ``pg_file_settings`` view (PostgreSQL gives up at once when it logs at DEBUG).

    Lines are independent in PostgreSQL's grammar (no token spans a newline): each content line is
    parsed alone, its number counted from the '\n's before it.
    """
    lines = "\n" + text  # every line, the first too, follows a '\n'
    entries: list[ConfSetting | ConfDirective] = []
    problems: list[ConfProblem] = []
    errors = 0
    position, counted, lineno = 0, 0, 0  # lineno: the '\n's of lines[:counted]
    search, count = _CONTENT_LINE.search, lines.count
    while (found := search(lines, position)) is not None:
        start = found.start() + 1
        lineno += count("\n", counted, start)
        counted = start
        lexer = _Lexer(lines, found.end(), lineno)
        problem = _parse_line(lexer, path, entries)
        if problem is not None:
            problems.append(problem)
            errors += 1
            if errors >= syntax_error_limit:
                problems.append(ConfProblem(
                    "too-many-errors", f'too many syntax errors found, abandoning file "{path}"',
                    Source(path, problem.source.line), True))
                break
        position = lexer.pos - 1  # the '\n' that ended the line starts the next one (at the end: no line)
    return entries, problems


def _parse_line(lexer: _Lexer, path: str, entries: list[ConfSetting | ConfDirective]) -> ConfProblem | None:
    """One content line through the lexer, up to and with its end of line: its entry or its syntax error."""
    kind, token = lexer.next()
    if kind in ("ID", "QUALIFIED_ID"):
        name = token
        kind, token = lexer.next()
        if kind == "EQUALS":
            kind, token = lexer.next()
        if kind in _VALUE_KINDS:
            raw, quoted = token, kind == "STRING"
            kind, token = lexer.next()
            if kind in (_EOL, _EOF):
                # At EOF PostgreSQL counts as if a newline had been read.
                line = lexer.lineno - 1 if kind == _EOL else lexer.lineno
                entries.append(_entry(name, raw, quoted, Source(path, line)))
                return None
    # A syntax error: near the offending token, or near the end of the line it ended.
    if kind in (_EOL, _EOF):
        return _syntax_problem(path, lexer.lineno - 1, None)
    problem = _syntax_problem(path, lexer.lineno, token)
    # The rest of the line is skipped, as PostgreSQL skips its tokens: no token spans a newline, so the next
    # '\n' is the end of line the lexer would reach (a line of a million '=' took seconds token by token).
    end = lexer.text.find("\n", lexer.pos)
    if end < 0:
        lexer.pos = len(lexer.text)
    else:
        lexer.pos, lexer.lineno = end + 1, lexer.lineno + 1
    return problem


def _entry(name: str, raw: str, quoted: bool, source: Source) -> ConfSetting | ConfDirective:
    value = _descape(raw) if quoted else raw
    folded = name.lower() if name.isascii() else name.translate(_ASCII_LOWER)  # lower() is the faster
    if folded in INCLUDE_KINDS:
        return ConfDirective(folded, value, raw, source)
    return _new_tuple(ConfSetting, (folded, value, raw, quoted, source, name))  # ConfSetting(...) without its __new__


# --- loader: includes, auto.conf, safety -----------------------------------------------------------


def _is_blank(name: str) -> bool:
    return name.strip(" \t\r\n") == ""


def _within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


@dataclass(slots=True, eq=False, repr=False)
class _Loader:
    root: str  # as given: every file is read beneath it but the top files the user named (``given``)
    display_base: str | None  # absolute, lexical
    syntax_error_limit: int
    given: frozenset[str]  # absolute paths of the top files the user named
    # the files are a renderer's sources: their template lines set aside (conf_templates.without_template_lines)
    templates: Callable[[str], tuple[str, list[TemplateLine]]] | None
    server_dir: str | None = None  # the server's directory that root stands for (a collected snapshot)
    result: ConfResult = field(default_factory=ConfResult)
    stack: list[str] = field(default_factory=list)  # absolute paths of the files being read
    real_paths: dict[str, str | None] = field(default_factory=dict)  # real_path, worked out once, when needed
    real_root: str = ""  # the root's real path: the directory the user gave is theirs to resolve
    cycles_seen: set[Source] = field(default_factory=set)
    files_read: int = 0
    bytes_read: int = 0
    lines_read: int = 0

    def __post_init__(self) -> None:
        self.real_root = os.path.realpath(self.root)

    def real_path(self, path: str) -> str | None:
        """``path`` (absolute) with its links resolved beneath the root, as its files are read; None when it lies
        outside the root or a link leads it out: where is never looked up on the machine that lints (an include of
        /net/HOST/… had an automounter mount from that host, and an include_dir through a link of the machine's
        into the repository listed its files)."""
        if path not in self.real_paths:
            self.real_paths[path] = real_path_within(os.path.abspath(path), self.real_root, os.path.abspath(self.root))
        return self.real_paths[path]

    def display(self, path: str) -> str:
        if self.display_base is not None:
            head, name = os.path.split(path)
            if head == self.display_base and name not in ("", ".", ".."):
                return name  # what relpath gives for a file of the base itself (most files), without its work
            if _within(path, self.display_base):
                return os.path.relpath(path, self.display_base)
        return path

    def problem(self, kind: str, message: str, source: Source, fatal: bool = True, target: str | None = None) -> None:
        self.result.problems.append(ConfProblem(kind, message, source, fatal, target))

    def outside(self, path: str, shown: str) -> str:
        """An include outside the snapshot, said as written and whether a symbolic link leads it out — never where
        to: a repository's link resolved on the machine that lints it would show what lies there."""
        link = _within(os.path.abspath(path), os.path.abspath(self.root))
        return f"include outside the snapshot: {shown}{' (a symbolic link leads out of it)' if link else ''}; not read"

    def absolute(self, location: str, calling: Source) -> str:
        """AbsoluteConfigLocation: absolute as given, else joined to the calling file's directory. An absolute path
        into the server's directory that the root stands for is the root's copy of it."""
        if os.path.isabs(location):
            if self.server_dir is not None:
                normal = os.path.normpath(location)
                if _within(normal, self.server_dir):
                    return os.path.join(os.path.abspath(self.root), os.path.relpath(normal, self.server_dir))
            return location
        return os.path.normpath(os.path.join(os.path.dirname(calling.path), location))

    def parse_file(self, location: str, *, strict: bool, calling: Source | None, calling_abs: str | None,
                   depth: int) -> bool:
        """ParseConfigFile: False when PostgreSQL's would (an error that makes the load fail)."""
        here = calling or Source(location)
        if depth > CONF_FILE_MAX_DEPTH:
            self.problem("depth", f'could not open configuration file "{location}": maximum nesting depth exceeded',
                         here)
            return False
        if _is_blank(location):
            self.problem("empty-include", f'empty configuration file name: "{location}"', here)
            return False
        absolute = location if calling_abs is None else self.absolute(location, Source(calling_abs))
        if calling_abs is not None and absolute == calling_abs:
            # PostgreSQL rejects a file including itself by name; longer cycles run into the depth limit.
            self.problem("recursion", f'configuration file recursion in "{self.display(calling_abs)}"', here)
            return False
        shown = self.display(absolute)
        if calling is not None:  # the caller chose the top files
            real = self.real_path(absolute)
            if real is not None and calling not in self.cycles_seen and any(
                    self.real_path(each) == real for each in self.stack):
                self.cycles_seen.add(calling)
                self.problem("cycle", f'include cycle: "{shown}" is already being read when {calling} includes '
                             "it; PostgreSQL follows the cycle until the nesting depth limit", calling)
        data = self.read(absolute, shown, strict=strict, here=here, include=None if calling is None else location)
        if isinstance(data, bool):
            return data
        self.stack.append(absolute)
        try:
            return self.parse_bytes(data, absolute, shown, depth)
        finally:
            self.stack.pop()

    def read(self, absolute: str, shown: str, *, strict: bool, here: Source, include: str | None = None,
             ) -> bytes | bool:
        """The file's bytes, or whether the load may go on without them. ``include``: the file as an include
        names it (None for a top file). Every file is read beneath the root, except the top files the user named,
        which may be pipes (``--postgresql-conf <(…)``): an included one must be a regular file there."""
        if self.files_read >= MAX_FILES:
            self.problem("too-many-files", f"more than {MAX_FILES} configuration files; {shown} not read", here)
            return False
        root = None if include is None and absolute in self.given else self.root
        try:
            data, status = read_input(absolute, MAX_FILE_BYTES, root)
        except IsADirectoryError:
            # PostgreSQL opens a directory as a file and fails at its first read, even for include_if_exists.
            self.problem("unreadable", f'input in flex scanner failed at file "{shown}" line 1', Source(shown, 1))
            return False
        except NotRegular:
            # A named pipe would wait for a writer, a device never end: neither is a configuration file.
            self.problem("unreadable", f'could not read configuration file "{shown}": not a regular file '
                         "(a pipe or a device); not read", here)
            return False
        except InGitDirectory:
            if include is not None:
                self.problem("outside-root", f"include in a git directory: {shown} (git's files, not the host's); "
                             "not read", here, fatal=False, target=include)
                return True
            self.problem("unreadable", f'could not open configuration file "{shown}": in a git directory', here)
            return False
        except LeadsOut as error:
            if include is not None:
                self.problem("outside-root", self.outside(absolute, shown), here, fatal=False, target=include)
                return True
            self.problem("unreadable", f'could not open configuration file "{shown}": {error.strerror}', here)
            return False
        except OSError as error:
            reason = error.strerror or str(error)
            if not strict:
                self.problem("missing-include-if-exists", f'skipping missing configuration file "{shown}"', here,
                             fatal=False)
                return True
            if isinstance(error, FileNotFoundError) and here.line is not None:
                self.problem("missing-include", f'could not open configuration file "{shown}": {reason}', here)
            else:
                self.problem("unreadable", f'could not open configuration file "{shown}": {reason}', here)
            return False
        if status.st_size > MAX_FILE_BYTES:
            raise _too_large(shown, here)
        if len(data) > MAX_FILE_BYTES:
            raise _too_large(shown, here)
        self.files_read += 1
        self.bytes_read += len(data)
        if self.bytes_read > MAX_TREE_BYTES:
            raise _tree_too_large(shown, here, f"{MAX_TREE_BYTES} bytes")
        self.lines_read += data.count(b"\n")
        if self.lines_read > MAX_TREE_LINES:
            raise _tree_too_large(shown, here, f"{MAX_TREE_LINES} lines")
        return data

    def parse_bytes(self, data: bytes, absolute: str, shown: str, depth: int) -> bool:
        self.result.files.append(shown)
        if find_mark_in_bytes(data) is None:
            self.result.unmarked_files.add(shown)
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as error:
            text = data.decode("latin-1")
            line = data.count(b"\n", 0, error.start) + 1
            self.problem("encoding", f"{shown} is not valid UTF-8; read as Latin-1", Source(shown, line),
                         fatal=False)
        template_lines: list[TemplateLine] = []
        if self.templates is not None:
            text, template_lines = self.templates(text)
        entries, problems = parse_conf_text(text, shown, syntax_error_limit=self.syntax_error_limit)
        ok = not problems
        # Keep PostgreSQL's single list order: a file's syntax errors interleave with its includes.
        pending = iter(problems)
        problem = next(pending, None)
        templated = iter(template_lines)
        template = next(templated, None)
        for entry in entries:
            while problem is not None and (problem.source.line or 0) < (entry.source.line or 0):
                self.result.problems.append(problem)
                problem = next(pending, None)
            while template is not None and template.line < (entry.source.line or 0):
                self.result.templated.append((len(self.result.settings), template, Source(shown, template.line)))
                template = next(templated, None)
            if isinstance(entry, ConfSetting):
                self.result.settings.append(entry)
            elif entry.kind == "include_dir":
                ok = self.parse_dir(entry, absolute, depth + 1) and ok
            else:
                ok = self.parse_file(entry.target, strict=entry.kind == "include", calling=entry.source,
                                     calling_abs=absolute, depth=depth + 1) and ok
        while problem is not None:
            self.result.problems.append(problem)
            problem = next(pending, None)
        while template is not None:
            self.result.templated.append((len(self.result.settings), template, Source(shown, template.line)))
            template = next(templated, None)
        return ok

    def parse_dir(self, directive: ConfDirective, calling_abs: str, depth: int) -> bool:
        """ParseConfigDirectory: the *.conf files of a directory, in byte order of their names."""
        here = directive.source
        if _is_blank(directive.target):
            self.problem("empty-include-dir", f'empty configuration directory name: "{directive.target}"', here)
            return False
        directory = self.absolute(directive.target, Source(calling_abs))
        shown = self.display(directory)
        real = self.real_path(directory)
        if real is None:
            self.problem("outside-root", self.outside(directory, shown), here, fatal=False, target=directive.target)
            return True
        try:
            names = os.listdir(directory)
        except OSError as error:
            self.problem("missing-include-dir", f'could not open configuration directory "{shown}": '
                         f"{error.strerror or error}", here)
            return False
        files: list[str] = []
        for name in names:
            if len(os.fsencode(name)) < 6 or name.startswith(".") or not name.endswith(".conf"):
                continue
            path = os.path.normpath(os.path.join(directory, name))
            try:
                if stat.S_ISDIR(os.stat(path).st_mode):
                    continue
            except OSError:
                self.problem("unreadable", f'could not stat file "{self.display(path)}"', here)
                return False
            files.append(path)
        for path in sorted(files, key=os.fsencode):
            if not self.parse_file(path, strict=True, calling=here, calling_abs=calling_abs, depth=depth):
                return False  # PostgreSQL stops reading the directory at the first file with an error
        return True


def load_conf(main: Path, *, root: Path, auto_conf: Path | None = None, display_base: Path | None = None,
              syntax_error_limit: int = MAX_SYNTAX_ERRORS, given: Collection[Path] = (),
              templates: Callable[[str], tuple[str, list[TemplateLine]]] | None = None,
              server_dir: str | None = None) -> ConfResult:
    """Read ``main`` with its includes, then ``auto_conf``, as PostgreSQL does at startup.

    Every file is read beneath ``root`` (inputs/reading.py, open_input), but the top files in ``given``, which the
    user named: an included file resolving outside it is not read (an ``outside-root`` problem). Source
    paths are relative to ``display_base`` when given, else the paths PostgreSQL would show. ``server_dir``: the
    directory on the server that ``root`` is a copy of (a collected snapshot's configuration directory): an
    absolute include into it is read from ``root``.
    ``syntax_error_limit=1`` reproduces the ``pg_file_settings`` view instead of server start. ``templates``: the
    files are a repository's, which a renderer may write: the function that sets a text's template lines aside
    (inputs/conf_templates.py), their lines kept in ConfResult.templated, not judged as PostgreSQL would read them
    unrendered.
    """
    loader = _Loader(os.fspath(root), os.path.abspath(display_base) if display_base is not None else None,
                     syntax_error_limit, frozenset(os.path.abspath(path) for path in given), templates,
                     server_dir=None if server_dir is None else os.path.normpath(server_dir))
    main_path = os.path.abspath(main)
    ok = loader.parse_file(main_path, strict=True, calling=None, calling_abs=None, depth=0)
    if auto_conf is not None:
        auto_path = os.path.abspath(auto_conf)
        if ok:
            loader.parse_file(auto_path, strict=False, calling=None, calling_abs=None, depth=0)
        else:
            loader.problem("not-read", f"{loader.display(auto_path)} not read: PostgreSQL stops after the errors in "
                           f"{loader.display(main_path)}", Source(loader.display(auto_path)), fatal=False)
    return loader.result
