"""postgres' command-line options as the settings of a document that starts the server with them: a Compose
service's command, a systemd unit's ExecStart. postmaster.c reads ``-c name=value``, ``--name=value`` and the
one-letter options (pgparams/options.py); they outrank postgresql.conf and postgresql.auto.conf."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import NamedTuple

from pgvet.inputs.documents import DeclaredHost, any_parameter_unknown, conf_setting
from pgvet.inputs.postgresql_conf import ConfProblem
from pgvet.pgparams.options import VALUE_LETTERS, letter_parameter, letter_setting
from pgvet.provenance import Source

# where the tool fills in a variable ($VAR, ${VAR…}; $$ is a dollar): placeholder
_DOLLAR = re.compile(r"(?<!\$)\$[{A-Za-z_]")


def placeholder(text: str) -> bool:
    """Whether the tool fills in part of the text from the environment. A ``${`` closes at the first ``}`` after it:
    once none follows, no later one closes either (a pattern trying each ``${`` again was quadratic)."""
    last_brace = text.rfind("}")
    return any(match.group()[1] != "{" or last_brace >= match.end() for match in _DOLLAR.finditer(text))


class Dialect(NamedTuple):
    """How a tool gives postgres its words: the kind of its problems, how it writes ``-c`` and its value as two
    words, what it fills in (a word pgvet cannot know) and by what."""

    problem_kind: str  # "compose-command"
    two_words: str  # '"-c", "name=value" as two items'
    filled_in: Callable[[str], bool] = placeholder
    filled_by: str = "an environment variable"
    escapes: tuple[tuple[str, str], ...] = (("$$", "$"),)  # what the tool writes for a character it would fill in

    def unescaped(self, word: str) -> str:
        for escape, character in self.escapes:
            word = word.replace(escape, character)
        return word


def read_options(declared: DeclaredHost, arguments: list[tuple[str, Source]], dialect: Dialect) -> None:
    """postgres' options (the words after the program, each at its line) as the declared host's settings, the last
    one of a name winning as postgres reads them; what is filled in makes its parameter unknown."""
    index = 0
    while index < len(arguments):
        word, source = arguments[index]
        index += 1
        if word.startswith("-c") and word[2:3].isspace():  # one word: postgres takes the name with its spaces
            declared.problems.append(ConfProblem(
                dialect.problem_kind, f"{word!r} is one argument: postgres reads the parameter name "
                f"{word[2:].partition('=')[0]!r}, spaces included, and does not start (unrecognized configuration "
                f"parameter); write {dialect.two_words}", source, True))
            continue
        if not _literal(declared, word, source, dialect):
            if len(word) > 2 and word[0] == "-" and (parameter := letter_parameter(word[1])):  # -p${PORT}
                declared.unknown[f"pg.{parameter}"] = source
            continue
        word = dialect.unescaped(word)
        if word.startswith("--"):
            _assignment(declared, word[2:], word, source, dialect)
        elif word.startswith("-") and len(word) > 1:
            letter, value = word[1], word[2:] or None
            if value is None and letter in VALUE_LETTERS and index < len(arguments):
                value, source = arguments[index]  # the value's line
                index += 1
                if not _literal(declared, value, source, dialect, setting=letter == "c"):
                    if (parameter := letter_parameter(letter)) is not None:  # -p ${PORT}: set, to what pgvet
                        declared.unknown[f"pg.{parameter}"] = source  # cannot know
                    continue
                value = dialect.unescaped(value)
            if letter == "c":
                _assignment(declared, value or "", word, source, dialect)
            elif (setting := letter_setting(letter, value)) is not None:
                declared.settings.append(conf_setting(*setting, source))
            else:
                declared.notes.append(f"{source}: postgres option -{letter}: not read")
        else:
            declared.notes.append(f"{source}: {word}: not a postgres option, not read")


def _assignment(declared: DeclaredHost, assignment: str, word: str, source: Source, dialect: Dialect) -> None:
    name, equals, value = assignment.partition("=")
    if not equals:
        said = f"--{name}" if word.startswith("--") else f"-c {name}"  # postmaster.c's wording
        declared.problems.append(ConfProblem(dialect.problem_kind, f"{said} requires a value: postgres does not "
                                             "start (write -c name=value)", source, True))
        return
    if any(char.isspace() for char in name):  # postgres keeps the spaces of the word in the name
        declared.problems.append(ConfProblem(
            dialect.problem_kind, f"postgres reads the parameter name {name!r}, spaces included, and does not start "
            "(unrecognized configuration parameter); write name=value without spaces", source, True))
        return
    declared.unknown.pop(f"pg.{name.replace('-', '_').lower()}", None)  # the last one postgres reads wins
    declared.settings.append(conf_setting(name.replace("-", "_"), value, source))


def _literal(declared: DeclaredHost, word: str, source: Source, dialect: Dialect, setting: bool = True) -> bool:
    """False, with a note, for a word the tool fills in; ``setting``: the word may set parameters (not a letter
    option's value, -p ${PORT})."""
    if dialect.filled_in(word):
        declared.notes.append(f"{source}: {word} is left to {dialect.filled_by}: skipped")
        # --name=value, -cname=value or name=value (after -c)
        option = word[2:] if word.startswith(("--", "-c")) else word
        name, equals, _ = option.partition("=")
        if equals and not dialect.filled_in(name):  # set, to what pgvet cannot know: not judged on a default
            declared.unknown[f"pg.{name.replace('-', '_').lower()}"] = source
        elif setting and not (word.startswith("-") and not word.startswith(("--", "-c"))):
            # a name, or whole words (${PG_ARGS} is split into words after it is filled in), may set any parameter
            any_parameter_unknown(declared, source)
        return False
    return True


def flow_items(name: str, value: str) -> str:
    """A parameter as two items of a flow list of words (``["postgres", "-c", "name=value"]``): postgres takes each
    item as one word and refuses ``-c name=value`` as one (it reads the name with the space before it)."""
    return ", ".join(_double_quoted(item) for item in ("-c", f"{name}={value}"))


def block_items(name: str, value: str) -> str:
    """A parameter as two items of a block list of words, a line each."""
    return "\n".join(f"- {_double_quoted(item)}" for item in ("-c", f"{name}={value}"))


def _double_quoted(item: str) -> str:
    """A list item in double quotes: JSON's escapes are YAML's too."""
    return json.dumps(literal_dollars(item), ensure_ascii=False)


def literal_dollars(text: str) -> str:
    """A ``$`` as Compose and Kubernetes write a literal one (each fills in ``$VAR`` or ``$(VAR)``): ``$$``."""
    return text.replace("$", "$$")
