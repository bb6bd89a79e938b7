"""pgvet: a static configuration advisor and linter for PostgreSQL hosts."""

__version__ = "0.1.0"
