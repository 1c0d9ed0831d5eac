"""``zoo-tf1`` (``python -m zoo.compat run``): a TF1 program as ``python`` runs
it, unedited, with TensorFlow 1.15's API in its own files.

Usage::

    zoo-tf1 [--tf1-path DIR]... SCRIPT [ARGS...]
    zoo-tf1 [--tf1-path DIR]... -m MODULE [ARGS...]

As ``python SCRIPT ARGS`` (``sys.argv``, ``__main__``, ``__file__``,
``sys.path[0]``, exit status, ``KeyboardInterrupt``, tracebacks of the files'
own lines), after :func:`zoo.compat.install` with ``tf1_paths`` the script's
folder (for ``-m``, the current folder and the module's package) and each
``--tf1-path``, and with v2 behaviour off (``tf.compat.v1.disable_v2_behavior()``,
as TF 1.x ran). Bad input (a missing script, module or folder, a folder given as
the script) is one line on stderr and exit status 2, before TensorFlow starts
(for ``-m``, after); Python 2 syntax is Python's own ``SyntaxError``.
"""

import atexit
import importlib.util
import os
import signal
import sys
import traceback
import types

from layers.errors import ZooError
from zoo.compat import tf1_paths as by_path

__all__ = ["USAGE", "main", "parse", "run"]

USAGE = "usage: zoo-tf1 [--tf1-path DIR]... (SCRIPT | -m MODULE) [ARGS...]"
_OWN_FILES = {__file__, "<frozen runpy>", os.path.join(os.path.dirname(__file__),
                                                        "__main__.py")}  # fmt: skip


def parse(argv):
    """Splits the runner's options from the program and its arguments.

    Args:
        argv: the arguments after ``zoo-tf1`` (or ``run``).

    Returns:
        ``(tf1_paths, program, is_module, program_args)``.

    Raises:
        ZooError: no program, an unknown option, or ``--tf1-path`` without a value.
    """
    tf1_paths, rest = [], list(argv)
    while rest and rest[0].startswith("-") and rest[0] != "-":
        option = rest.pop(0)
        if option == "--":
            break
        name, has_value, value = option.partition("=")
        if name == "--tf1-path":
            if not has_value:
                if not rest:
                    raise ZooError(f"--tf1-path: expected a folder, found nothing; {USAGE}")
                value = rest.pop(0)
            tf1_paths.append(value)
        elif option == "-m":
            if not rest:
                raise ZooError(f"-m: expected a module name, found nothing; {USAGE}")
            return tf1_paths, rest[0], True, rest[1:]
        else:
            raise ZooError(f"{option}: expected --tf1-path DIR or -m MODULE, found "
                           f"{option!r}; {USAGE}")  # fmt: skip
    if not rest:
        raise ZooError(f"zoo-tf1: expected a script, found nothing; {USAGE}")
    return tf1_paths, rest[0], False, rest[1:]


def _script(path):
    """``(__main__ module, code, tf1 folder)`` of a script file, before TensorFlow."""
    if os.path.isdir(path):
        raise ZooError(
            f"{path}: expected a Python script, found a folder; give the program's "
            "entry script (e.g. main.py) in it, or -m MODULE"
        )
    if not os.path.isfile(path):
        raise ZooError(f"{path}: expected a Python script, found nothing; check the path")
    main = types.ModuleType("__main__")
    main.__file__ = os.path.abspath(path)
    with open(path, "rb") as source:
        code = compile(source.read(), main.__file__, "exec", dont_inherit=True)
    main.__cached__ = None
    main.__loader__ = importlib.machinery.SourceFileLoader("__main__", path)
    sys.path[0] = os.path.dirname(os.path.realpath(path))
    sys.argv[0] = path
    return main, code, sys.path[0]


def _module(name):
    """``(__main__ module, code)`` of ``-m name``, after install()."""
    try:
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.submodule_search_locations is not None:
            spec = importlib.util.find_spec(f"{name}.__main__")
    except ModuleNotFoundError as err:  # a parent package that is not there
        if err.name is None or not f"{name}.".startswith(f"{err.name}."):
            raise
        spec = None
    if spec is None or spec.loader is None:
        raise _missing_module(name)
    code = spec.loader.get_code(spec.name)
    main = types.ModuleType("__main__")
    main.__file__, main.__cached__ = spec.origin, spec.cached
    main.__spec__, main.__loader__, main.__package__ = spec, spec.loader, spec.parent
    sys.argv[0] = spec.origin
    return main, code


def _missing_module(name):
    return ZooError(f"-m {name}: expected a module importable from {sys.path[0]}, "
                    "found none; run from the folder that holds it")  # fmt: skip


def _module_folder(name):
    """The folder of ``name``'s top package when it lies outside the current
    folder (the runner's other TF1 folder), else None; imports nothing.

    Raises:
        ZooError: no top module of that name.
    """
    top = importlib.util.find_spec(name.split(".")[0])
    if top is None:
        raise _missing_module(name)
    if not top.submodule_search_locations:
        return None
    folder = list(top.submodule_search_locations)[0]
    return None if folder.startswith(os.getcwd() + os.sep) else folder


def _trimmed(tb):
    """``tb`` without its leading frames of this runner and runpy."""
    while tb is not None and tb.tb_frame.f_code.co_filename in _OWN_FILES:
        tb = tb.tb_next
    return tb


_exit_by_sigint = []


def _finish():
    """Last at exit: dies of SIGINT after an uncaught KeyboardInterrupt, as
    Python does."""
    if _exit_by_sigint:
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)


def run(tf1_paths, program, is_module, program_args):
    """Runs a program as ``python`` would, its files seeing TF 1.15's API.

    Args:
        tf1_paths: extra folders of TF1 code.
        program: a script path, or a module name when ``is_module``.
        is_module: ``program`` is ``-m``'s module.
        program_args: the program's arguments (``sys.argv[1:]``).

    Returns:
        1 after an uncaught exception (printed as Python prints it), else 0;
        ``SystemExit`` passes through.

    Raises:
        ZooError: bad input, before anything runs.
        SyntaxError: the script's (Python 2 syntax).
    """
    tf1_paths = by_path.checked_folders(tf1_paths)
    sys.argv[1:] = program_args
    if is_module:
        sys.path[0] = os.getcwd()
        if program.startswith(".") or not program:
            raise ZooError(f"-m {program}: expected an absolute module name, found a "
                           "relative one; name it from the current folder")  # fmt: skip
        folders = [os.getcwd(), *filter(None, [_module_folder(program)]), *tf1_paths]
    else:
        main, code, folder = _script(program)
        folders = [folder, *tf1_paths]

    import tensorflow as tf

    import zoo.compat

    zoo.compat.install(tf1_paths=folders)
    tf.compat.v1.disable_v2_behavior()
    if is_module:
        main, code = _module(program)
    main.__builtins__ = by_path.tf1_builtins()
    by_path.warn_if_tf2(main.__file__, code)
    sys.modules["__main__"] = main
    atexit.register(_finish)
    try:
        exec(code, vars(main))  # noqa: S102 (the program, as python runs it)
    except SystemExit:
        raise
    except BaseException as err:  # noqa: BLE001 (printed as Python prints it)
        err.__traceback__ = _trimmed(err.__traceback__)
        sys.excepthook(type(err), err, err.__traceback__)
        if isinstance(err, KeyboardInterrupt):
            _exit_by_sigint.append(True)
        return 1
    return 0


def main(argv=None):
    """The console script ``zoo-tf1``.

    Args:
        argv: the arguments (default ``sys.argv[1:]``).

    Returns:
        The exit status.
    """
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] in (["-h"], ["--help"]):
        print(__doc__)
        return 0
    try:
        return run(*parse(argv))
    except ZooError as err:
        print(f"zoo-tf1: {err}", file=sys.stderr)
        return 2
    except SyntaxError as err:
        traceback.print_exception(type(err), err, None)
        return 1
