"""``python -m pgvet`` and the ``pgvet`` command (its entry point in pyproject.toml).

Ctrl-C is exit code 130 and one line at any moment (SIGTERM 143, SIGHUP 129: pgvet.interrupt), also while the
command line's modules are still being imported (typer alone is slow to import): nothing but the built-in
gc is imported here before the ``try``. Every command line goes to typer (cli.app), an existing file whose name
reads as an option made a path first (files_named_like_options).

The cycle collector is off from the start: the modules, the dependencies' and pgvet's, and the rule pack make
objects that live as long as the command, and each of its passes walked them again to find nothing. A lint's
batches of hosts turn it on, with passes far apart (run.workers), so that a cycle an input makes is still freed.
"""

import gc


def main() -> None:
    gc.disable()
    try:
        from pgvet.interrupt import stop_on_signals

        stop_on_signals()
        _run()
    except BaseException as error:
        from pgvet.interrupt import Stopped, exit_stopped

        cause = _cause(error)
        if isinstance(cause, KeyboardInterrupt):
            exit_stopped(interrupt=cause)
        if isinstance(cause, Stopped):
            exit_stopped(cause.signum)
        raise
    finally:
        # The command is over and the process ends: the interpreter's exit would walk every object the command
        # left in search of garbage cycles, only to free memory the process gives back anyway. What is buffered
        # is still written at exit (the standard streams are flushed, pgvet's own files already closed).
        gc.freeze()


def _cause(error: BaseException) -> BaseException | None:
    """What ended the command, as far as a signal goes. CPython 3.11 wraps what a descriptor's __set_name__ raises
    (a dataclass's fields, while a module that defines one loads) in a RuntimeError: a signal at that moment arrives
    as one. typer turns a Ctrl-C met while it reads the command line into exit 130 without a word: a SystemExit
    raised while handling its Exit, which the KeyboardInterrupt caused."""
    if isinstance(error, RuntimeError):
        return error.__cause__
    if isinstance(error, SystemExit) and error.__context__ is not None:
        return error.__context__.__cause__
    return error


def _run() -> None:
    import sys
    import warnings

    from pgvet.errors import PgvetError

    for stream in (sys.stdout, sys.stderr):  # file names that are not UTF-8 are shown escaped, not a crash
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors="backslashreplace")
    # ruamel.yaml warns on stderr, with its own source lines, about YAML it still reads (an anchor defined
    # twice, which YAML allows: an alias takes the latest); what pgvet refuses it says itself.
    warnings.filterwarnings("ignore", module=r"ruamel\.yaml")

    sys.argv[1:] = files_named_like_options(sys.argv[1:])
    try:
        from pgvet.cli import app

        app()
        sys.stdout.flush()  # a full disk or a closed pipe is said here, not at the interpreter's exit
    except OSError as error:  # standard output that cannot be written (> /dev/full); inputs are read as InputError
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # what is still buffered goes nowhere
        if isinstance(error, BrokenPipeError):
            sys.exit(1)  # a reader that went away (| head): as `pgvet lint` and click have it
        # with a file name, not standard output: the file may have been read as well as written
        said = f"{error.filename}" if error.filename else "cannot write standard output"
        _say(f"pgvet: error: {said}: {error.strerror or error}")
        sys.exit(2)
    except PgvetError as error:
        _say(f"pgvet: error: {error}")
        sys.exit(error.exit_code)


def files_named_like_options(arguments: list[str]) -> list[str]:
    """The command line with each argument that reads as an option with its value (``-o/etc/sysctl.d/x.conf``,
    ``--config=x.yaml``) but names a file that exists (a repository's directory ``-o``) made a path
    (``./-o/etc/sysctl.d/x.conf``), so that it is linted as the file it is. pre-commit passes a repository's files
    after the hook's options without ``--`` (as ``pgvet lint $(git ls-files)`` does): such a name wrote a report over
    any file of the user's, and ``--config=x.yaml`` made pgvet trust a configuration naming files outside the
    repository. A bare option (``-o``, ``--exit-zero``: no value in it, never one of the hook's file names), ``-`` and
    ``--`` stay options whatever exists."""
    import os

    return [f"./{argument}" if argument.startswith("-") and not argument.lstrip("-").replace("-", "").isalnum()
            and argument not in ("-", "--") and os.path.lexists(argument) else argument for argument in arguments]


def _say(message: str) -> None:
    """An error on stderr, on one line, its control characters escaped: a name given on the command line or read
    from a file may hold an escape sequence or a line feed, which must not reach the terminal or a CI log as one."""
    import sys

    from pgvet.report import one_line

    print(one_line(message), file=sys.stderr)


if __name__ == "__main__":
    main()
