"""Report files (``--output``) of ``pgvet lint`` and ``pgvet check``: written whole or not at all, never through a
link (pgvet.output_file), or to a stream (a pipe, a terminal, /dev/stdout)."""

from __future__ import annotations

from pathlib import Path

from pgvet.output_file import OutputFile


class ReportFile:
    """A report file as a text stream: the report's text, UTF-8, file names that are not UTF-8 (surrogates) escaped
    as on standard output (__main__), which in JSON is JSON's own escape of them. Put in place when the run ends
    well, removed otherwise; ``private`` (set while the hosts are reported) makes it 0600. A failure to write is
    a usage error naming the file."""

    def __init__(self, path: Path) -> None:
        self.out = OutputFile(path, streams=True)

    @property
    def private(self) -> bool:
        return self.out.private

    @private.setter
    def private(self, value: bool) -> None:
        self.out.private = value

    def write(self, text: str, /) -> object:
        self.out.write(text.encode("utf-8", errors="backslashreplace"))
        return len(text)

    def __enter__(self) -> ReportFile:
        return self

    def __exit__(self, failed: type[BaseException] | None, *_: object) -> None:
        self.out.__exit__(failed)
