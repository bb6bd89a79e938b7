"""A host's fix: its target configuration shown as a diff and written into its files (writer.py)."""
