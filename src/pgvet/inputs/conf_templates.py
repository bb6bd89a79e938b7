"""A repository's postgresql.conf that a template engine renders: its template lines set aside.

Configuration repositories keep postgresql.conf as the source of a renderer — Jinja (Ansible), Go templates (Helm),
ERB (Chef), envsubst, or a ``sed`` or configure step replacing ``__NAME__`` and ``@NAME@``. PostgreSQL would refuse
such a line as it stands, but it never sees it: pgvet judges the rendered file's other lines, and the parameters the
template's expressions set are unknown (their rules not evaluated, with why) rather than syntax errors or invalid
values — a default judged in their place would be a silent wrong answer.

Applied only to the files of a host that no machine capture, live server or collection describes: there a file is
what the server reads, and PostgreSQL's verdict stands.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from pgvet.inputs.delimited import spans
from pgvet.inputs.postgresql_conf import string_end

# Where a renderer's syntax starts: a line without any of these is left as it is.
_MARKERS = ("{{", "{%", "{#", "<%", "$", "__", "@", "%")
# Jinja's and Go's expressions, statements and comments, and ERB's: rendered wherever they are, quotes or not.
_TEMPLATE = (("{%", "%}"), ("{#", "#}"), ("{{", "}}"), ("<%", "%>"))
# envsubst's ${NAME}: outside quotes only — in a quoted command (archive_command) it is the shell's, at run time.
_SUBSTITUTION = (("${", "}"),)
# A whole value that a substitution step replaces: envsubst's ${NAME} and $NAME (upper case: PostgreSQL's own
# '$libdir' is a value), sed's __NAME__, configure's @NAME@, %NAME% — quoted or not.
_WHOLE_PLACEHOLDER = re.compile(
    r"""(['"]?)(?:\$[A-Z_][A-Z0-9_]*|\$\{[^'"}]*\}|__[A-Z][A-Z0-9_]*__|@[A-Za-z_][A-Za-z0-9_]*@|%[A-Z_][A-Z0-9_]*%)\1""")
# A line's parameter: its name (PostgreSQL's identifier, dotted for an extension's), followed by a blank, = or the end.
_SETTING = re.compile(r"[ \t]*([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)?)(?=[ \t=]|$)[ \t]*=?[ \t]*(.*)")
_OPENS = frozenset({"if", "for", "range", "with", "unless", "while", "case", "macro", "block", "define", "filter",
                    "call", "raw", "autoescape"})
_BRANCHES = frozenset({"elif", "else", "elsif", "when"})
_CLOSES = frozenset({"end", "endif", "endfor", "endmacro", "endblock", "endfilter", "endcall", "endraw",
                     "endwith", "endautoescape"})
_INCLUDES = frozenset({"include", "include_if_exists", "include_dir"})
_COMMENT = "#"  # the keyword of a template's comment ({# #}, <%# %>, {{/* */}})
SHOWN_CHARACTERS = 80  # of a template line quoted in a note


class TemplateLine(NamedTuple):
    """A line a renderer writes: the parameter it sets (lower case), or None where it may set any."""

    line: int
    name: str | None
    text: str  # as written (its blanks one space), cut to SHOWN_CHARACTERS


def might_be_template(text: str) -> bool:
    return any(marker in text for marker in _MARKERS)


def without_template_lines(text: str) -> tuple[str, list[TemplateLine]]:
    """The text with each line a renderer writes made empty (the line numbers of the others kept), and those lines.

    A statement line ({% if %}, {{ end }}, <% end %>) sets nothing. Of an if, the first branch is read and the
    others are set aside, as the Patroni reader does (its branches set the same parameters, and a parameter set in
    both would look repeated). A line holding an expression, or whose whole value is a placeholder (__NAME__), sets
    the parameter it names to a value pgvet cannot know; one whose name is an expression, or that is one expression
    ({{ .Values.extraConfig }}, {% include %}), may set any. An expression in a comment sets nothing; a statement
    there still opens or closes its block, as the renderer runs it."""
    if not might_be_template(text):
        return text, []
    lines = text.split("\n")
    found: list[TemplateLine] = []
    blocks: list[bool] = []  # the open blocks, innermost last: whether each is past its first branch
    past_first = 0  # how many of them are
    for index, line in enumerate(lines):
        skipping = past_first > 0
        if not skipping and not might_be_template(line):
            continue
        unquoted = _unquoted(line) if "${" in line or "#" in line else line
        comment = _comment_start(unquoted)
        delimited = sorted([*spans(line, _TEMPLATE), *spans(unquoted, _SUBSTITUTION)])
        keywords = [_keyword(line[start:end]) for start, end in delimited]
        for keyword in keywords:
            if keyword in _OPENS:
                blocks.append(False)
            elif keyword in _BRANCHES and blocks and not blocks[-1]:
                blocks[-1] = True
                past_first += 1
            elif keyword in _CLOSES and blocks:
                past_first -= blocks.pop()
        written = [(span, keyword) for span, keyword in zip(delimited, keywords, strict=True) if span[0] < comment]
        shape = _shape(line[:comment], written)
        if skipping or (written and not shape.strip()):
            lines[index] = ""
            continue
        setting = _SETTING.fullmatch(shape)
        if not (any(keyword is None for _, keyword in written)
                or (setting is not None and _placeholder(setting.group(2)))):
            if written:  # a line holding statements, which render as nothing
                lines[index] = shape + line[comment:]
            continue
        lines[index] = ""
        shown = " ".join(line.split())
        name = setting.group(1).lower() if setting is not None else None
        found.append(TemplateLine(index + 1, None if name in _INCLUDES else name,  # an unknown file sets any
                                  shown if len(shown) <= SHOWN_CHARACTERS else shown[:SHOWN_CHARACTERS - 1] + "…"))
    return "\n".join(lines), found


def _keyword(delimited: str) -> str | None:
    """A statement's keyword ({% if x %}: if; {{- end }}: end; <% end %>: end; <% items.each do |i| %>: for; a
    comment: #); None for an expression ({{ x }}, <%= x %>, ${X}, {% include %}: what it writes is unknown)."""
    if delimited.startswith(("{#", "<%#")):
        return _COMMENT
    if delimited.startswith(("${", "<%=")):
        return None
    inner = delimited[2:-2].strip(" \t-+~")
    if delimited.startswith("{{") and inner.startswith("/*"):
        return _COMMENT
    word = inner.split(None, 1)[0] if inner else ""
    if delimited.startswith("<%"):
        _, do, after = inner.rpartition(" do")
        after = after.strip()
        return "for" if do and (not after or (after[0] == after[-1] == "|" and len(after) > 1)) else word
    if delimited.startswith("{%"):
        return None if word in ("include", "import") else word
    return word if word in _OPENS or word in _BRANCHES or word in _CLOSES else None


def _unquoted(line: str) -> str:
    """The line with what its single-quoted strings hold blanked (their length kept), as PostgreSQL's lexer finds
    them (string_end)."""
    pieces: list[str] = []
    done = 0
    while (start := line.find("'", done)) != -1:
        end = string_end(line, start)
        if end == start:  # no closing quote: a quote, no string
            pieces.append(line[done:start + 1])
            done = start + 1
            continue
        pieces += (line[done:start], " " * (end - start))
        done = end
    pieces.append(line[done:])
    return "".join(pieces)


def _comment_start(unquoted: str) -> int:
    """Where PostgreSQL's comment starts: the first # outside quotes that opens or closes no template comment."""
    position = 0
    while (found := unquoted.find("#", position)) != -1:
        if unquoted[found - 1:found] not in ("{", "%") and unquoted[found + 1:found + 2] != "}":
            return found
        position = found + 1
    return len(unquoted)


def _shape(line: str, written: list[tuple[tuple[int, int], str | None]]) -> str:
    """The line with its statements taken out and each expression a NUL (no parameter name holds one)."""
    pieces: list[str] = []
    done = 0
    for (start, end), keyword in written:
        pieces += (line[done:start], "\0" if keyword is None else "")
        done = end
    pieces.append(line[done:])
    return "".join(pieces)


def _placeholder(value: str) -> bool:
    return _WHOLE_PLACEHOLDER.fullmatch(value.strip()) is not None
