"""``pgvet lint`` without typer, for start-up time.

typer 0.2x validates every parameter through a pydantic TypeAdapter: importing pydantic and building
the adapters costs more than the whole lint of a host, and importing typer itself a third of a one-host
lint's start. The options of ``lint`` are plain (texts, paths, numbers, flags, repeated options), so this
module reads them from the same typer declarations (the ``lint`` function's signature: nothing is declared
twice) and calls the command's work, lint_command.run_lint. What it read of the declarations is kept in
pgvet's cache directory, keyed by the files it was read from (cli.py, this module, typer's): a lint then
imports neither pgvet.cli nor typer.

Anything it does not understand exactly — ``--help``, an unknown or abbreviated option, a missing
value, a number out of range, a file name that is not valid UTF-8, a declaration it has no rule for —
makes it step aside (``run`` returns False) and typer parses the command line as always, with its own
messages. tests/cli/test_fastcli.py checks that both give the command the same arguments.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import types
import typing
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pgvet import __version__

# ParameterInfo attributes and the values under which typer does nothing but convert the text.
_PLAIN = {"callback": None, "envvar": None, "is_eager": False, "prompt": False, "count": False, "parser": None,
          "click_type": None, "expose_value": True, "exists": False, "resolve_path": False, "allow_dash": False,
          "path_type": None, "file_okay": True, "dir_okay": True, "writable": False, "default_factory": None,
          "max": None, "clamp": False}
_SCALARS: tuple[type, ...] = (str, int, Path, bool)
_KINDS = {kind.__name__: kind for kind in _SCALARS}


class _Unsupported(Exception):
    """Not something this parser reproduces exactly: leave the command line to typer."""


@dataclass(slots=True)
class _Param:
    name: str
    kind: type  # str, int, Path or bool
    multiple: bool
    default: Any
    minimum: int | None = None
    readable: bool = True  # a path that exists must be readable (typer's check); False: the command says


def _unwrap(annotation: Any) -> tuple[type, bool]:
    """(scalar type, repeated) of ``X``, ``Optional[X]``, ``list[X]``, ``Optional[list[X]]``."""
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        arguments = [argument for argument in typing.get_args(annotation) if argument is not type(None)]
        if len(arguments) != 1:
            raise _Unsupported(annotation)
        annotation = arguments[0]
    multiple = typing.get_origin(annotation) is list
    if multiple:
        (annotation,) = typing.get_args(annotation)
    if annotation not in _SCALARS or (multiple and annotation is bool):
        raise _Unsupported(annotation)
    return annotation, multiple


@dataclass(slots=True)
class _Spec:
    options: dict[str, tuple[_Param, Any]]  # option spellings → (parameter, the value a flag sets)
    positional: _Param | None
    params: list[_Param]


def _spec(command: Callable[..., Any]) -> _Spec:
    """What ``command``'s typer declarations say, as this module reads command lines (_Unsupported when unsure)."""
    from typer.models import ArgumentInfo, OptionInfo, ParameterInfo
    from typer.utils import get_params_from_function

    options: dict[str, tuple[_Param, Any]] = {}
    positional: _Param | None = None
    params: list[_Param] = []
    for name, meta in get_params_from_function(command).items():  # typer's own reading of the declarations
        info = meta.default
        if not isinstance(info, ParameterInfo) or any(getattr(info, key, value) != value
                                                      for key, value in _PLAIN.items()):
            raise _Unsupported(name)
        kind, multiple = _unwrap(meta.annotation)
        param = _Param(name, kind, multiple, info.default, getattr(info, "min", None), info.readable)
        params.append(param)
        if isinstance(info, ArgumentInfo):
            if positional is not None or not multiple:
                raise _Unsupported(name)
            positional = param
            continue
        if not isinstance(info, OptionInfo):
            raise _Unsupported(name)
        spelled = name.replace("_", "-")
        declarations = list(info.param_decls or ()) or [f"--{spelled}/--no-{spelled}" if kind is bool
                                                        else f"--{spelled}"]
        for declaration in declarations:
            on, slash, off = declaration.partition("/")
            if kind is not bool and slash:
                raise _Unsupported(declaration)
            options[on.strip()] = (param, True if kind is bool else None)
            if slash:
                options[off.strip()] = (param, False)
    return _Spec(options, positional, params)


def _spec_json(spec: _Spec) -> str | None:
    """The spec as JSON, None when a default is not a plain JSON value (it is then read again each time)."""
    if any(type(param.default) not in (type(None), bool, int, str) for param in spec.params):
        return None
    return json.dumps({
        "params": [[param.name, param.kind.__name__, param.multiple, param.default, param.minimum, param.readable]
                   for param in spec.params],
        "positional": spec.positional.name if spec.positional is not None else None,
        "options": {spelling: [param.name, value] for spelling, (param, value) in spec.options.items()}})


def _spec_from_json(text: str) -> _Spec | None:
    """The spec _spec_json wrote, None for anything else (a truncated, foreign or edited file): its parameters
    must be run_lint's, each default of its kind, the positional one a list of paths."""
    from pgvet.lint_command import run_lint

    code = run_lint.__code__
    expected = set(code.co_varnames[code.co_argcount:code.co_argcount + code.co_kwonlyargcount])
    try:
        document = json.loads(text)
        params = {name: _Param(name, _KINDS[kind], multiple, default, minimum, readable)
                  for name, kind, multiple, default, minimum, readable in document["params"]}
        positional = params[document["positional"]] if document["positional"] is not None else None
        options = {spelling: (params[name], value) for spelling, (name, value) in document["options"].items()}
    except (ValueError, TypeError, KeyError, AttributeError, RecursionError):
        return None
    if set(params) != expected or positional is None or positional.kind is not Path or not positional.multiple:
        return None
    for param in params.values():
        if (type(param.multiple) is not bool or type(param.readable) is not bool
                or type(param.minimum) not in (type(None), int)
                or not (param.default is None or (not param.multiple and type(param.default) is param.kind))):
            return None
    if any(type(spelling) is not str or value not in (None, True, False) for spelling, (_, value) in options.items()):
        return None
    return _Spec(options, positional, list(params.values()))


def _declarations_key() -> str | None:
    """What the spec of ``lint`` was read from: this module, cli.py and typer (their sizes and times), pgvet's
    version and Python's; None when typer cannot be found (typer then says what is wrong)."""
    from importlib.machinery import PathFinder  # importlib.util's find_spec would import 4 ms of modules more

    typer = PathFinder.find_spec("typer")  # a typer installed otherwise than on sys.path: no key, read each time
    if typer is None or typer.origin is None:
        return None
    parts = [__version__, sys.version]
    for path in (__file__, os.path.join(os.path.dirname(__file__), "cli.py"), typer.origin):
        try:
            status = os.stat(path)
        except OSError:
            return None
        parts.append(f"{path}:{status.st_size}:{status.st_mtime_ns}")
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:32]


def lint_spec() -> _Spec:
    """The spec of ``lint``: from the cache when it was read from the same files, else from typer's reading of
    cli.lint (importing typer), then kept for the next run."""
    from pgvet import cache

    key = _declarations_key()
    name = f"lint-options-{key}.json" if key is not None else None
    if name is not None:
        data = cache.read(name)
        try:
            cached = _spec_from_json(data.decode("utf-8")) if data is not None else None
        except UnicodeDecodeError:
            cached = None
        if cached is not None:
            return cached
    from pgvet import cli

    spec = _spec(cli.lint)
    text = _spec_json(spec)
    if name is not None and text is not None:
        # an unwritable cache only costs reading the declarations again; one spec is current, the others go
        cache.write(name, text.encode("utf-8"), replaces="lint-options-")
    return spec


def _convert(param: _Param, text: str) -> Any:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise _Unsupported(text) from None  # not UTF-8: typer's validation decides
    if param.kind is int:
        try:
            number = int(text)
        except ValueError:
            raise _Unsupported(text) from None
        if param.minimum is not None and number < param.minimum:
            raise _Unsupported(text)
        return number
    if param.kind is Path:
        if not text or "\0" in text or (param.readable and os.path.exists(text) and not os.access(text, os.R_OK)):
            raise _Unsupported(text)  # typer reports an unreadable path itself
        return Path(text)
    return text


def parse(command: Callable[..., Any], argv: Sequence[str]) -> dict[str, Any]:
    """The keyword arguments typer would call ``command`` with; _Unsupported when unsure."""
    return _parse(_spec(command), argv)


def _parse(spec: _Spec, argv: Sequence[str]) -> dict[str, Any]:
    options, positional, params = spec.options, spec.positional, spec.params
    given: dict[str, list[Any]] = {}
    tokens = iter(argv)
    only_positional = False
    for token in tokens:
        if only_positional or token == "-" or not token.startswith("-"):
            if positional is None:
                raise _Unsupported(token)
            given.setdefault(positional.name, []).append(_convert(positional, token))
            continue
        if token == "--":
            only_positional = True
            continue
        name, equals, inline = token.partition("=") if token.startswith("--") else (token, "", "")
        if name not in options:
            raise _Unsupported(token)
        param, flag_value = options[name]
        if param.kind is bool:
            if equals:
                raise _Unsupported(token)
            given[param.name] = [flag_value]
            continue
        value = inline if equals else next(tokens, None)
        if value is None or (not equals and value.startswith("-")):
            raise _Unsupported(token)
        given.setdefault(param.name, []).append(_convert(param, value))
    arguments: dict[str, Any] = {}
    for param in params:
        values = given.get(param.name)
        if not values:
            arguments[param.name] = param.default  # typer gives None for a repeated option never given
        else:
            arguments[param.name] = values if param.multiple else values[-1]
    return arguments


def run(argv: Sequence[str]) -> bool:
    """Run ``pgvet lint`` when the command line is one this module parses exactly (exits); else False."""
    if not argv or argv[0] != "lint":
        return False
    try:
        arguments = _parse(lint_spec(), argv[1:])
    except _Unsupported:
        return False
    from pgvet.lint_command import run_lint

    try:
        code = run_lint(**arguments)  # pgvet's own errors (PgvetError) go up to __main__, which says them
    except BrokenPipeError:
        # as click does: a reader that went away (| head) is no error of ours
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        code = 1
    sys.exit(code)
