"""pgvet's own errors. Each maps to a documented exit code; none should ever surface as a traceback."""

from __future__ import annotations

from pgvet.provenance import Source

EXIT_OK = 0
EXIT_FINDINGS = 1
EXIT_ERROR = 2


class PgvetError(Exception):
    """Base of every error pgvet reports to the user (exit code 2)."""

    exit_code = EXIT_ERROR

    def __init__(self, message: str, source: Source | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.source = source

    def __str__(self) -> str:
        return f"{self.source}: {self.message}" if self.source else self.message


class InputError(PgvetError):
    """An input file could not be read or parsed (names the file and line)."""


class ParseError(InputError):
    """A parser rejected its text. Raised by the pure functions in pgvet.inputs."""


class RulePackError(PgvetError):
    """A rule pack is invalid: bad YAML, unknown fact or function, type error."""


class UsageError(PgvetError):
    """The command line or configuration is wrong."""
