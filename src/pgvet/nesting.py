"""A guard for YAML documents: brackets nested thousands deep make ruamel.yaml's pure-Python parser slow
and then recursive, long before they could mean anything in a host.yaml or a rule file."""

from __future__ import annotations

MAX_NESTING = 100


def too_deep(text: str) -> int | None:
    """The line where ``[`` / ``{`` nesting first exceeds MAX_NESTING, or None. Brackets inside quotes and
    comments count too: a legitimate document never comes near the limit either way."""
    if "[" not in text and "{" not in text:
        return None  # the usual document: spare the walk over every character
    depth = 0
    line = 1
    for char in text:
        if char in "[{":
            depth += 1
            if depth > MAX_NESTING:
                return line
        elif char in "]}":
            depth = max(0, depth - 1)
        elif char == "\n":
            line += 1
    return None
