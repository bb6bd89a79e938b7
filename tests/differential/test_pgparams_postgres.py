"""parse_value against real PostgreSQL servers: the same setting when accepted, the same error when not.

One server per major for the whole session (scripts/gen_pgparams.py's Server): ``set_config`` and a read
back in one statement for parameters a superuser session can change (so a tiny timeout cannot cancel the
probe), ``postgres -C`` for postmaster/sighup ones and transaction_timeout.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pgvet.pgparams import Param, load_param_table
from pgvet.pgparams.units import InvalidValue, parse_value

# gen_pgparams needs psycopg (and its libpq); tests/conftest.py puts scripts/ on the path
gen_pgparams = pytest.importorskip("gen_pgparams", exc_type=ImportError)

pytestmark = pytest.mark.postgres

_servers: dict[int, gen_pgparams.Server] = {}


@pytest.fixture(scope="session")
def servers() -> Iterator[Callable[[int], gen_pgparams.Server]]:
    def server(major: int) -> gen_pgparams.Server:
        if major not in _servers:
            _servers[major] = gen_pgparams.Server(major)
        return _servers[major]

    yield server
    for running in _servers.values():
        running.stop()
    _servers.clear()


def setting_text(param: Param, native: int | float | bool | str) -> str:
    """How pg_settings.setting (and postgres -C) print a native value."""
    if isinstance(native, bool):
        return "on" if native else "off"
    if isinstance(native, float):
        return f"{native:g}"
    return str(native)


def assert_agrees(server: gen_pgparams.Server, param: Param, text: str) -> None:
    expected = server.set_value(param.name, text)
    try:
        parsed = parse_value(param, text)
    except InvalidValue as invalid:
        assert isinstance(expected, gen_pgparams.Rejection), f"{param.name}={text!r}: PostgreSQL accepts {expected!r}"
        assert (invalid.message, invalid.hint) == (expected.message, expected.hint), f"{param.name}={text!r}"
    else:
        assert not isinstance(expected, gen_pgparams.Rejection), \
            f"{param.name}={text!r}: PostgreSQL rejects it: {expected}, we read {parsed}"
        assert setting_text(param, parsed.native) == expected, f"{param.name}={text!r}"


# Spellings of numbers: decimal, fractions, exponents, hexadecimal (int and float), octal, signs.
_numbers = st.one_of(
    st.integers(-3_000_000_000, 3_000_000_000).map(str),
    st.integers(0, 10**6).map(lambda n: f"0x{n:x}"),
    st.integers(0, 10**6).map(lambda n: f"0{n:o}"),
    st.floats(-1e7, 1e7, allow_nan=False).map(lambda x: f"{x:.4g}"),
    st.floats(0, 1e4, allow_nan=False).map(repr),
    st.sampled_from(["0", "-1", "1", ".5", "-.5", "1.", "1e3", "1E-2", "2.5e", "0x", "0x1.8", "08", "0b11",
                     "99999999999999999999", "1e400", "1e-400", "inf", "-Infinity", "nan", "", "+", "1_0"]),
)
_units = st.sampled_from(["", "", "B", "kB", "MB", "GB", "TB", "us", "ms", "s", "min", "h", "d",
                          "kb", "KB", "gb", "k", "m", "sec", "bytes", "x", "8kB"])
_blanks = st.sampled_from(["", "", " ", "  ", "\t"])
_numeric_values = st.builds(lambda a, n, b, u, c: a + n + b + u + c, _blanks, _numbers, _blanks, _units, _blanks)
_garbage = st.text(alphabet="0123456789.eExX+- kBMGTsmin", max_size=8)
numeric_texts = st.one_of(_numeric_values, _numeric_values, _garbage)


def _cased(word: str) -> st.SearchStrategy[str]:
    return st.lists(st.booleans(), min_size=len(word), max_size=len(word)).map(
        lambda upper: "".join(char.upper() if flag else char for char, flag in zip(word, upper, strict=True)))


_bool_words = st.sampled_from(["on", "off", "true", "false", "yes", "no", "1", "0", "o", "of", "t", "f", "y", "n",
                               "tr", "fals", "onn", "offf", "yess", "2", "00", "", "enable"])
bool_texts = st.one_of(
    _bool_words.flatmap(_cased),
    _bool_words.flatmap(lambda word: st.sampled_from([word + " ", " " + word])),
)


def enum_texts(param: Param) -> st.SearchStrategy[str]:
    words = [*param.enumvals, *(spelling for spelling, _ in param.hidden_enumvals), "debug", "archive", "true",
             "1", "", "none", "auto"]
    word = st.sampled_from(words)
    return st.one_of(word.flatmap(_cased), word.map(lambda w: w[:-1]), word.map(lambda w: w + " "))


# (parameter, values): a spread of units and types, present in 13–18 (12 has no
# log_parameter_max_length_on_error: skipped there) and without check hooks that would reject or rewrite
# values (those are not reproduced).
SESSION_PARAMS = {
    "work_mem": numeric_texts,                          # kB
    "temp_buffers": numeric_texts,                      # 8kB
    "effective_cache_size": numeric_texts,              # 8kB
    "log_parameter_max_length_on_error": numeric_texts,  # B, -1 special
    "statement_timeout": numeric_texts,                 # ms
    "log_min_duration_statement": numeric_texts,        # ms, -1 special
    "vacuum_cost_delay": numeric_texts,                 # real, ms
    "random_page_cost": numeric_texts,                  # real, up to DBL_MAX
    "cursor_tuple_fraction": numeric_texts,             # real, 0 .. 1
    "default_statistics_target": numeric_texts,         # integer without unit
    "extra_float_digits": numeric_texts,                # integer without unit, negative minimum
    "enable_seqscan": bool_texts,
    "jit": bool_texts,
}
SESSION_ENUMS = ("synchronous_commit", "client_min_messages", "default_transaction_isolation", "bytea_output")
STARTUP_PARAMS = ("shared_buffers", "min_wal_size", "checkpoint_timeout", "log_rotation_age")  # 8kB, MB, s, min
STARTUP_ENUMS = ("wal_level", "huge_pages")

_settings = settings(max_examples=40, deadline=None, derandomize=True,
                     suppress_health_check=[HealthCheck.function_scoped_fixture])
_startup_settings = settings(max_examples=15, deadline=None, derandomize=True,
                             suppress_health_check=[HealthCheck.function_scoped_fixture])


@pytest.mark.parametrize("name", sorted(SESSION_PARAMS))
def test_session_parameter_values_agree(pg_major: int, servers: Callable[[int], gen_pgparams.Server],
                                        name: str) -> None:
    param = load_param_table(pg_major).params.get(name)
    if param is None:
        pytest.skip(f"PostgreSQL {pg_major} has no {name}")
    server = servers(pg_major)

    @_settings
    @given(text=SESSION_PARAMS[name])
    def check(text: str) -> None:
        assert_agrees(server, param, text)

    check()


@pytest.mark.parametrize("name", SESSION_ENUMS)
def test_session_enum_values_agree(pg_major: int, servers: Callable[[int], gen_pgparams.Server], name: str) -> None:
    param = load_param_table(pg_major).params[name]
    server = servers(pg_major)

    @_settings
    @given(text=enum_texts(param))
    def check(text: str) -> None:
        assert_agrees(server, param, text)

    check()


@pytest.mark.parametrize("name", STARTUP_PARAMS + STARTUP_ENUMS)
def test_startup_parameter_values_agree(pg_major: int, servers: Callable[[int], gen_pgparams.Server],
                                        name: str) -> None:
    """postmaster and sighup parameters, through ``postgres -C`` (values without newlines)."""
    param = load_param_table(pg_major).params[name]
    server = servers(pg_major)
    texts = enum_texts(param) if param.vartype == "enum" else numeric_texts

    @_startup_settings
    @given(text=texts)
    def check(text: str) -> None:
        assert_agrees(server, param, text)

    check()


# Timeouts small enough to cancel the probe, or end its session, if it let them act (1 or 2 ms; 0 disables).
_TINY_TIMEOUTS = ["1500us", "1499us", "1.5ms", "0.5ms", "0.4ms", "1", "2147483647", "2147483648", "-1"]
EDGE_CASES = {
    "work_mem": ["64", "63", "2147483647", "2147483648", "1TB", "2TB", "0.5MB", "1.5kB", "1536B", "1537B", "0x40",
                 "0100", " 4MB", "4MB ", "4 MB", "4MB x", "4 M B", "-0", "1e2kB", "1.5e3kB", "0x1.8MB", "4mb"],
    "shared_buffers": ["16384", "128MB", "0.5GB", "1TB", "8TB", "15", "16", "131072kB", "1 GB", "1.0000001GB"],
    "statement_timeout": ["1d", "25d", "24.9d", "1.5s", "1.0005s", "1.5ms", "0.5ms", "1500us", "1499us", "2h",
                          "1 min", "-1", "1mins"],
    "vacuum_cost_delay": ["0.5", "500us", "0.0015s", "1.5us", "100", "100.000001", "0.1ms", "2ms", "inf"],
    "random_page_cost": ["1.1", "1e308", "1.7976931348623157e308", "1e309", "-0", "0x1p3", "4 ms"],
    "checkpoint_timeout": ["29", "30", "30s", "0.5min", "1d", "1.01d", "5min", "86400", "86401", "300000ms"],
    "wal_level": ["archive", "HOT_STANDBY", "Replica", "logical", "minimal ", "full"],
    "lock_timeout": _TINY_TIMEOUTS,
    "idle_in_transaction_session_timeout": _TINY_TIMEOUTS,
    "idle_session_timeout": _TINY_TIMEOUTS,
    "transaction_timeout": _TINY_TIMEOUTS,  # 17+
    # check_autovacuum_work_mem raises 0 < v < 1MB (64kB from 17) to that minimum, and 0 too; -1 stays
    "autovacuum_work_mem": ["0", "1", "63", "64", "65", "500kB", "1023", "1024", "1MB", "0.5MB", "-1", "-2", "2MB"],
    # check_datestyle: the half not given from the default (German's order DMY), prefixes, conflicts
    "datestyle": ["iso, mdy", "ISO", "German", "sql, dmy", "Postgres,YMD", "euro", "European", "US", "NonEuropean",
                  "dmy, german", "German, MDY", "MDY, German", "default", "default, sql", "SQL, default", "",
                  " ", "iso, sql", "iso, sql, nonsense", "ymd, dmy", "nonsense", "iso mdy", "iso,,mdy", "iso,",
                  '"ISO", "DMY"', "Eurotrash"],
}


@pytest.mark.parametrize("name", sorted(EDGE_CASES))
def test_edge_cases_agree(pg_major: int, servers: Callable[[int], gen_pgparams.Server], name: str) -> None:
    params = load_param_table(pg_major).params
    if name not in params:
        pytest.skip(f"PostgreSQL {pg_major} has no {name}")
    param = params[name]
    server = servers(pg_major)
    for text in EDGE_CASES[name]:
        assert_agrees(server, param, text)
