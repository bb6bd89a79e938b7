"""The inputs of a host, one module per kind of file: each a pure parser, text → typed values with their
file and line (registry.py lists the kinds and what each gives)."""
