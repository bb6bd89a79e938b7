"""``python -m pgvet`` and the ``pgvet`` command (its entry point in pyproject.toml).

Ctrl-C is exit code 130 and one line at any moment, also while the command line's modules are still being
imported (typer alone takes a tenth of a second): nothing is imported here before the ``try``.
"""


def main() -> None:
    try:
        from pgvet.cli import main as run

        run()
    except KeyboardInterrupt:
        from pgvet.interrupt import exit_interrupted

        exit_interrupted()


if __name__ == "__main__":
    main()
