"""postgres' one-letter command-line options (postmaster.c, PostmasterMain's getopt): which take a value, and
the parameter each sets, as a service unit, pg_ctl -o or a container's command gives them."""

# getopt's string "B:bC:c:D:d:EeFf:h:ijk:lN:OPp:r:S:sTt:W:-:": the letters that take a value
VALUE_LETTERS = frozenset("BCcDdfhkNprStW")

# letter → (parameter, the value a letter without one sets)
_PARAMETERS: dict[str, tuple[str, str | None]] = {
    "B": ("shared_buffers", None), "N": ("max_connections", None), "p": ("port", None),
    "h": ("listen_addresses", None), "k": ("unix_socket_directories", None), "S": ("work_mem", None),
    "F": ("fsync", "off"), "i": ("listen_addresses", "*"), "l": ("ssl", "on")}

# a bare number is in the parameter's own unit, as postmaster.c passes it to SetConfigOption
_BARE_UNITS = {"shared_buffers": 8, "work_mem": 1}


def letter_parameter(letter: str) -> str | None:
    """The parameter a letter option sets, or None (-D, -c and the debugging ones are not parameters of this table)."""
    entry = _PARAMETERS.get(letter)
    return None if entry is None else entry[0]


def letter_setting(letter: str, value: str | None) -> tuple[str, str] | None:
    """``(parameter, value)`` a letter option sets (``-B 1000`` → shared_buffers 8000kB), or None."""
    entry = _PARAMETERS.get(letter)
    if entry is None:
        return None
    parameter, flag_value = entry
    text = flag_value if flag_value is not None else (value or "")
    if parameter in _BARE_UNITS and text.isdigit():
        text = f"{int(text) * _BARE_UNITS[parameter]}kB"
    return parameter, text
