"""TF1 code by path: modules under given folders see TensorFlow 1.15's API.

:func:`zoo.compat.install` with ``tf1_paths=[DIR, ...]`` puts a finder on
``sys.meta_path`` (before Python's path finder). A module whose source file lies
under one of the folders is loaded as usual (bytecode cache, tracebacks with its
own lines) but executed with ``__builtins__`` of its own: a copy of the builtins
whose ``__import__`` resolves TensorFlow's names the TF1 way (:func:`resolve`).
``IMPORT_NAME`` looks ``__import__`` up in the frame's builtins, which every
function of the module inherits from its globals, so nothing is rewritten; the
real ``sys.modules["tensorflow"]`` stays TensorFlow 2's for every other module
(Keras, tensorflow-datasets, tf-slim, this package).

In a TF1 file (:func:`resolve`):

* ``tensorflow`` is ``tensorflow.compat.v1`` as install() left it, and
  ``tensorflow.A.B`` the attribute chain ``.A.B`` of it where that exists
  (``tensorflow.keras`` is whatever ``tf.compat.v1.keras`` is);
* ``tensorflow.compat...`` and ``tensorflow.contrib...`` are the real import
  (install() made the contrib modules entries of ``sys.modules``);
* the ``tensorflow.python`` paths of :data:`MOVED` (TF 1.15's modules whose
  TensorFlow 2.21 module changed or left) are ours, except the modules of
  :data:`KEPT` below them, which TensorFlow 2.21 still has (the real import);
* anything else is the real module (``tensorflow.python.framework.ops``).

v2 behaviour: the first TF1 import of TensorFlow calls
``tf.compat.v1.disable_v2_behavior()`` (as TF 1.x ran) when it was on; removing
the finder (``uninstall()``) turns it on again only then (eager execution only
if graph mode's global default graph was never used: TensorFlow's rule).

Not seen (they use the real builtins): ``importlib.import_module("tensorflow")``,
``exec`` of a string with globals of its own, C extensions, and names added to
the ``builtins`` module after the TF1 module was loaded.
"""

import ast
import builtins
import functools
import importlib
import importlib.machinery
import os
import sys
import sysconfig
import types
import warnings

from layers.errors import ZooError
from zoo.compat.change import ABSENT

__all__ = ["KEPT", "MOVED", "Finder", "MetaPathChange", "TF2_MARKERS", "resolve",
           "tf1_builtins", "tf1_import", "tf2_uses"]  # fmt: skip

# TF 1.15's module paths under tensorflow.python whose TF 2.21 module changed or
# left -> where TF1 code finds them now ("tensorflow.X": the TF1 resolution of X).
MOVED = {
    "tensorflow.python.ops.rnn_cell": "layers.tf1.rnn_cell",
    "tensorflow.python.ops.rnn_cell_impl": "layers.tf1.rnn_cell",
    "tensorflow.python.layers": "layers.tf1",
    "tensorflow.python.layers.layers": "layers.tf1",
    **{f"tensorflow.python.layers.{leaf}": f"layers.tf1.{leaf}"
       for leaf in ("base", "core", "convolutional", "normalization", "pooling")},
    "tensorflow.python.keras": "tensorflow.keras",
}  # fmt: skip

_REAL = ("tensorflow.compat", "tensorflow.contrib")  # prefixes imported as they are
# TF 1.15's modules under a MOVED package that TF 2.21 still has: imported as they are
KEPT = {"tensorflow.python.layers.utils"}  # smart_cond, normalize_tuple, conv_output_length

# What marks a TF2 program: a module imported, or an attribute of TensorFlow.
TF2_MARKERS = {
    "keras": "import keras (Keras 3)",
    "function": "tf.function",
    "GradientTape": "tf.GradientTape (eager gradients)",
    "enable_eager_execution": "tf.enable_eager_execution",
}


def _v1():
    return importlib.import_module("tensorflow.compat.v1")


def _moved(name):
    """The target of ``name``'s longest :data:`MOVED` prefix with the rest of
    ``name`` appended, or None."""
    parts = name.split(".")
    for end in range(len(parts), 2, -1):
        target = MOVED.get(".".join(parts[:end]))
        if target is not None:
            return ".".join([target, *parts[end:]])
    return None


def resolve(name):
    """The object TF1 code gets for the module path ``name`` (``tensorflow...``).

    Args:
        name: a dotted name starting with ``tensorflow``.

    Returns:
        A module (or, for an attribute chain of ``compat.v1``, whatever it holds).

    Raises:
        ImportError: the real import of a name with no TF1 mapping failed.
    """
    if name == "tensorflow":
        return _v1()
    if name.startswith(_REAL) or name in KEPT:
        return importlib.import_module(name)
    moved = _moved(name)
    if moved is not None:
        return resolve(moved) if moved.startswith("tensorflow.") else (
            importlib.import_module(moved))  # fmt: skip
    try:
        return functools.reduce(getattr, name.split(".")[1:], _v1())
    except AttributeError:
        return importlib.import_module(name)


class _View(types.ModuleType):
    """A module that reads as ``base`` except for some children (what TF1 code
    gets for ``tensorflow.python.ops`` when it imports ``rnn_cell`` from it)."""

    def __init__(self, base, children):
        super().__init__(getattr(base, "__name__", "tensorflow"))
        self._zoo_base = base
        self.__dict__.update(children)

    def __getattr__(self, name):
        return getattr(self._zoo_base, name)


def tf1_import(name, globals=None, locals=None, fromlist=(), level=0):
    """``__import__`` of TF1 code: TensorFlow's names by :func:`resolve`, every
    other import as the real ``__import__``."""
    if level or not (name == "tensorflow" or name.startswith("tensorflow.")):
        return builtins.__import__(name, globals, locals, fromlist, level)
    _disable_v2_behavior()
    if fromlist and name.startswith(_REAL):
        return builtins.__import__(name, globals, locals, fromlist, level)
    if not fromlist:  # `import tensorflow.a.b [as c]`: the top, whose chain leads there
        node = resolve(name)
        parts = name.split(".")
        for end in range(len(parts) - 1, 0, -1):
            parent = resolve(".".join(parts[:end]))
            child = parts[end]
            if getattr(parent, child, None) is not node:
                parent = _View(parent, {child: node})
            node = parent
        return node
    module = resolve(name)
    moved = {item: f"{name}.{item}" for item in fromlist
             if f"{name}.{item}" in MOVED or f"{name}.{item}" in KEPT}
    if isinstance(module, types.ModuleType) and module.__name__ == name:
        # a real module: its submodules imported as Python does
        builtins.__import__(
            name, globals, locals, [item for item in fromlist if item not in moved], 0
        )
    if moved:
        return _View(module, {item: resolve(path) for item, path in moved.items()})
    return module


@functools.cache
def tf1_builtins():
    """The ``__builtins__`` of TF1 code: a copy of the builtins with
    :func:`tf1_import` as ``__import__``."""
    return {**vars(builtins), "__import__": tf1_import}


_v2_disabled_by_us = []  # [True] once the first TF1 import turned v2 behaviour off


def _disable_v2_behavior():
    if _v2_disabled_by_us or not Finder.active:
        return
    import tensorflow as tf

    if tf.__internal__.tf2.enabled():
        tf.compat.v1.disable_v2_behavior()
        _v2_disabled_by_us.append(True)


def _enable_v2_behavior():
    """Turns v2 behaviour on again if a TF1 import turned it off.

    TensorFlow turns eager execution on only while graph mode's global default
    graph is unused ("must be called at program startup"); where it was used,
    every other v2 behaviour comes back and a warning says eager did not.
    """
    if not _v2_disabled_by_us:
        return
    import tensorflow as tf

    _v2_disabled_by_us.clear()
    v1 = tf.compat.v1
    try:
        v1.enable_v2_behavior()
    except ValueError as refused:  # raised after tf2.enable(), before the rest
        for enable in (v1.enable_v2_tensorshape, v1.enable_resource_variables,
                       v1.enable_tensor_equality, v1.enable_control_flow_v2):  # fmt: skip
            enable()
        warnings.warn(
            "zoo.compat.uninstall: expected to turn eager execution on again, found "
            f"TensorFlow refusing ({refused}: graph mode's global default graph was "
            "used); the other v2 behaviours are back; run eager code in a new process",
            RuntimeWarning, stacklevel=4)  # fmt: skip


def tf2_uses(tree):
    """Where a module's syntax tree marks a TF2 program (:data:`TF2_MARKERS`).

    Args:
        tree: an ``ast.Module``.

    Returns:
        ``[(line, what), ...]`` in source order.
    """
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            names = [alias.name for alias in node.names] if isinstance(node, ast.Import) \
                else [node.module or ""] if not node.level else []  # fmt: skip
            if any(name.split(".")[0] == "keras" for name in names):
                found.append((node.lineno, TF2_MARKERS["keras"]))
        elif (isinstance(node, ast.Attribute) and node.attr in TF2_MARKERS
              and node.attr != "keras" and isinstance(node.value, ast.Name)
              and node.value.id in ("tf", "tensorflow")):  # fmt: skip
            found.append((node.lineno, TF2_MARKERS[node.attr]))
    return sorted(found)


def _names(code):
    """Every name a code object and those nested in it read."""
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _names(const)
    return names


def warn_if_tf2(path, code):
    """Warns once per process when TF1 code at ``path`` looks like a TF2 program.

    Args:
        path: the module's source file.
        code: its code object (read first: the source is parsed only when the
            code names a marker).
    """
    if Finder.warned or not _names(code) & set(TF2_MARKERS):
        return
    with open(path, "rb") as source:
        uses = tf2_uses(ast.parse(source.read(), path))
    if uses:
        Finder.warned = True
        line, what = uses[0]
        warnings.warn_explicit(
            f"expected a TF1 program, found {what}, a TF2 program's; it runs with "
            "TensorFlow 1.15's API and v2 behaviour off here (run it with python "
            "instead)", UserWarning, path, line)  # fmt: skip


class _Loader(importlib.machinery.SourceFileLoader):
    """Python's source loader, the module made with :func:`tf1_builtins` (so no
    frame of this loader shows in the module's tracebacks)."""

    def create_module(self, spec):
        module = types.ModuleType(spec.name)
        module.__builtins__ = tf1_builtins()
        return module

    def get_code(self, fullname):
        code = super().get_code(fullname)
        warn_if_tf2(self.path, code)
        return code


def _under(path, folder):
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


@functools.cache
def _installed():
    """The folders of the standard library and installed packages (never TF1 code,
    even inside a TF1 folder, as a repository's own ``.venv``), as given and real."""
    paths = sysconfig.get_paths()
    folders = {paths[key] for key in ("stdlib", "platstdlib", "purelib", "platlib")}
    return tuple({form(folder) for folder in folders
                  for form in (os.path.abspath, os.path.realpath)})  # fmt: skip


def _tf1_file(origin, folders):
    return any(_under(origin, f) for f in folders) and not any(
        _under(origin, f) for f in _installed()
    )


class Finder:
    """The ``sys.meta_path`` finder of TF1 code under ``folders``.

    Asks Python's path finder only where a module could lie under a folder
    (its search path and a folder nest), so other imports cost one prefix test
    per path entry. The standard library and installed packages are never TF1
    code, even when they lie under a folder (a repository's own ``.venv``).

    Args:
        folders: absolute folders whose source files are TF1 code.
    """

    active = 0  # finders on sys.meta_path (v2 behaviour is turned off only then)
    warned = False  # the TF2-program warning was given

    def __init__(self, folders):
        self.folders = tuple(folders)

    def __eq__(self, other):
        return isinstance(other, Finder) and other.folders == self.folders

    __hash__ = None

    def __repr__(self):
        return f"Finder({list(self.folders)})"

    def _relevant(self, entry):
        entry = os.path.abspath(entry or os.getcwd())
        return any(_under(entry, f) or _under(f, entry) for f in self.folders)

    def find_spec(self, fullname, path=None, target=None):
        """A spec whose loader is TF1's for a source file under the folders, the
        path finder's spec for other modules it found, or None."""
        if path is None:  # top level: sys.path, up to its last entry that matters
            entries = list(sys.path)
            last = max((i for i, e in enumerate(entries) if self._relevant(e)), default=-1)
            entries = entries[: last + 1]
        else:
            entries = list(path)
            if not any(self._relevant(e) for e in entries):
                return None
        if not entries:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, entries, target)
        source = importlib.machinery.SourceFileLoader
        if (spec is not None and isinstance(spec.loader, source)
                and _tf1_file(spec.origin, self.folders)):  # fmt: skip
            spec.loader = _Loader(spec.loader.name, spec.loader.path)
        return spec

    def invalidate_caches(self):
        """Nothing is cached here (Python's path finder keeps its own)."""


def checked_folders(folders):
    """The absolute paths of ``folders``, each once.

    Raises:
        ZooError: one is no folder.
    """
    found = []
    for folder in folders:
        absolute = os.path.abspath(os.fspath(folder))
        if not os.path.isdir(absolute):
            raise ZooError(
                f"{folder}: expected a folder of TF1 code (tf1_paths, --tf1-path), found "
                f"{'a file' if os.path.exists(absolute) else 'nothing'}; give an existing "
                "folder")  # fmt: skip
        found.append(absolute)
    return list(dict.fromkeys(found))


class MetaPathChange:
    """The change install(tf1_paths=...) makes: ``finder`` on ``sys.meta_path``,
    before Python's path finder (a :class:`~zoo.compat.change.Change`'s interface).

    Args:
        folders: the TF1 folders.

    Raises:
        ZooError: a folder that does not exist.
    """

    replace = False  # an equal finder already there stays

    def __init__(self, folders):
        self.value = Finder(checked_folders(folders))
        self.name = f"sys.meta_path: TF1 code under {', '.join(self.value.folders)}"

    def current(self):
        """The equal finder on ``sys.meta_path``, or :data:`ABSENT`."""
        return next((f for f in sys.meta_path if f == self.value), ABSENT)

    def put(self, value):
        """Puts the finder before Python's path finder; :data:`ABSENT` takes it out
        (and turns v2 behaviour on again if the last finder's TF1 import turned it
        off)."""
        if value is ABSENT:
            sys.meta_path[:] = [f for f in sys.meta_path if f is not self.value]
            Finder.active -= 1
            if not Finder.active:
                _enable_v2_behavior()
            return
        at = next((i for i, f in enumerate(sys.meta_path)
                   if f is importlib.machinery.PathFinder), len(sys.meta_path))  # fmt: skip
        sys.meta_path.insert(at, value)
        Finder.active += 1
