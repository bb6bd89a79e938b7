"""Delimited stretches of a document's text (Helm's ``{{ … }}``, Jinja's ``{% … %}``, envsubst's ``${…}``) found in
linear time.

The patterns these replace (``\\{\\{.*?\\}\\}``, ``\\$\\{[^}]*\\}``) are tried again from every opener when none
closes: a line of 64 kB of ``{{`` took a Patroni file minutes, 1 MiB hours. Here an opener that finds no closer
is given up for the rest of the text (or of its line), and where each delimiter next occurs is searched for once.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence


class _Next:
    """Where a needle next occurs in a text, at or after a position: searched again only past what was found."""

    __slots__ = ("_at", "_from", "_needle", "_text")

    def __init__(self, text: str, needle: str) -> None:
        self._text, self._needle = text, needle
        self._from, self._at = 0, self._text.find(needle)

    def at(self, position: int) -> int:
        """The next occurrence at or after ``position``, -1 when there is none."""
        if position >= self._from and (self._at == -1 or self._at >= position):
            return self._at
        self._from, self._at = position, self._text.find(self._needle, position)
        return self._at


def spans(text: str, pairs: Sequence[tuple[str, str]], across_lines: bool = False) -> Iterator[tuple[int, int]]:
    """The stretches from an opener to its closer, (start, end) leftmost first and none overlapping, as
    ``re.finditer`` finds them with ``OPEN.*?CLOSE|…`` (``pairs`` in that order; across_lines: ``OPEN[^C]*C``,
    whose stretch may hold a line feed, for a one-character closer)."""
    openers = [_Next(text, opener) for opener, _ in pairs]
    closers = [_Next(text, closer) for _, closer in pairs]
    line_feeds = _Next(text, "\n")
    given_up = [False] * len(pairs)
    allowed = [0] * len(pairs)  # where each opener may start: past a line feed no closer of its line came before
    position = 0
    while True:
        best: tuple[int, int] | None = None
        for index, opener in enumerate(openers):
            if not given_up[index]:
                start = opener.at(max(position, allowed[index]))
                if start == -1:
                    given_up[index] = True
                elif best is None or start < best[0]:
                    best = (start, index)
        if best is None:
            return
        start, index = best
        inner = start + len(pairs[index][0])
        end = closers[index].at(inner)
        if end == -1:  # no later opener of this kind finds a closer either
            given_up[index] = True
            continue
        if not across_lines:
            line_feed = line_feeds.at(inner)
            if line_feed != -1 and line_feed < end:  # every opener of this kind before that line feed fails too
                allowed[index] = line_feed + 1
                continue
        position = end + len(pairs[index][1])
        yield start, position


def replaced(text: str, pairs: Sequence[tuple[str, str]], replacement: str, across_lines: bool = False) -> str:
    """The text with each stretch (spans) replaced, as ``re.sub`` replaces each match."""
    pieces: list[str] = []
    done = 0
    for start, end in spans(text, pairs, across_lines):
        pieces += (text[done:start], replacement)
        done = end
    if not pieces:
        return text
    pieces.append(text[done:])
    return "".join(pieces)
