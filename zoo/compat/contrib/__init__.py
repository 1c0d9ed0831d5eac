"""``tf.contrib`` again: a map from TF 1.15's contrib names to ours or tf-slim's,
and what :func:`zoo.compat.install` changes to reach it.

After install(), ``tf.contrib`` is an attribute of ``tensorflow`` and of every
``compat.v1`` namespace, and ``tensorflow.contrib.<module>`` an entry of
``sys.modules`` for each module of :data:`SOURCES` (and the deeper paths of
:data:`ALIASES` real programs import), so each of these works::

    tf.contrib.rnn.LSTMCell(64)
    import tensorflow.contrib.slim as slim
    from tensorflow.contrib.training import HParams

A name is looked up on first use in its module's sources, in order (nothing is
imported before), so a provider that is missing (tf-slim not installed) costs
nothing until a name needs it. What the map does not provide raises a
:class:`ContribError` naming TF 1.15's module and the nearest replacement
(:data:`zoo.compat.contrib.names.REPLACEMENTS`); a name TF 1.15 never had says
so. ``import tensorflow.contrib.<unknown>`` raises the same error, through a
finder every contrib module's ``__path__`` leads to.
"""

import difflib
import functools
import importlib
import sys
import types

from layers.errors import ZooError
from zoo.compat.change import Change
from zoo.compat.contrib.names import MODULES, NAMES, PACKAGES, REPLACEMENTS

__all__ = ["ALIASES", "ContribError", "ContribModule", "SOURCES", "changes", "modules"]

ROOT = "tensorflow.contrib"
PATH_ENTRY = "<zoo.compat.contrib>"  # every contrib module's __path__: the finder's key

# TF 1.15's contrib module -> where its names come from, in order: a module
# ("tf_slim") or an object in one ("tensorflow:compat.v1.nn").
SOURCES = {
    "layers": ("tf_slim", "zoo.compat.contrib.layers", "tensorflow:compat.v1.nn"),
    "slim": ("tf_slim",),
    "slim.nets": ("tf_slim.nets",),
    "framework": ("tf_slim", "tensorflow:compat.v1.train", "tensorflow:compat.v1",
                  "tensorflow"),
    "training": ("zoo.compat.contrib.training", "tf_slim.training.training",
                 "tf_slim.training.evaluation"),
    "learn": ("zoo.compat.contrib.learn",),
    "data": ("tensorflow:data.experimental",),
    "lookup": ("tensorflow:compat.v1.lookup", "tensorflow:compat.v1.lookup.experimental",
               "zoo.compat.contrib.lookup", "tensorflow.python.ops.lookup_ops"),
    "rnn": ("layers.tf1.rnn_cell", "layers.tf1.rnn", "layers.tf1.legacy_seq2seq",
            "zoo.compat.contrib.rnn", "tensorflow:compat.v1.nn"),
    "seq2seq": ("layers.tf1.seq2seq",),
    "legacy_seq2seq": ("layers.tf1.legacy_seq2seq",),
    "tpu": ("zoo.compat.estimator.tpu",),
    "crf": ("zoo.compat.contrib.crf",),
    "learn.datasets": (),  # its module mnist only; its other names raise the error
    "learn.datasets.mnist": ("zoo.compat.examples.input_data",),
    "staging": ("tensorflow.python.ops.data_flow_ops",),  # TF 1.15's StagingArea itself
    "tensorboard.plugins.projector": ("tensorboard.plugins.projector",),
    "factorization": ("zoo.compat.contrib.factorization",
                      "zoo.compat.estimator.canned.kmeans"),
    "estimator": ("zoo.compat.contrib.estimator", "zoo.compat.estimator.extenders",
                  "zoo.compat.estimator.early_stopping",
                  "zoo.compat.estimator.hooks.hooks", "zoo.compat.estimator.canned.dnn",
                  "zoo.compat.estimator.canned.linear",
                  "zoo.compat.estimator.canned.dnn_linear_combined"),
    "predictor": ("zoo.compat.contrib.predictor",),
}  # fmt: skip

# TF 1.15's deeper module paths that real programs import -> the module of
# SOURCES whose names they get.
ALIASES = {
    **{f"seq2seq.python.ops.{leaf}": "seq2seq" for leaf in (
        "attention_wrapper", "basic_decoder", "beam_search_decoder", "decoder",
        "helper", "loss")},
    **{f"rnn.python.ops.{leaf}": "rnn" for leaf in ("rnn_cell", "core_rnn_cell", "rnn")},
    "legacy_seq2seq.python.ops.seq2seq": "legacy_seq2seq",
    **{f"layers.python.layers.{leaf}": "layers" for leaf in (
        "layers", "initializers", "regularizers")},
    "learn.python.learn.datasets.mnist": "learn.datasets.mnist",
    "training.python.training.hparam": "training",
    "factorization.python.ops.clustering_ops": "factorization",
}  # fmt: skip

# a provider's top module -> its package, if not ours
PIP = {"tf_slim": "tf-slim", "tensorboard": "tensorboard"}


class ContribError(ZooError, AttributeError):
    """A ``tf.contrib`` name the map does not provide, or TF 1.15 never had; an
    ``AttributeError`` too, so ``hasattr`` and ``getattr(..., default)`` still answer."""


class ContribModule(types.ModuleType):
    """One module of the contrib tree: its children, and its names resolved on
    first use from its sources.

    Args:
        path: the module's path under ``tensorflow.contrib`` (``"rnn"``), or
            ``""`` for ``tensorflow.contrib`` itself.
        sources: where its names come from (see :data:`SOURCES`).
        names: the names TF 1.15 had there, or None for any of its sources'.
    """

    def __init__(self, path, sources=(), names=None):
        super().__init__(f"{ROOT}.{path}".rstrip("."))
        self.__path__ = [PATH_ENTRY]
        self._zoo_path, self._zoo_sources, self._zoo_names = path, sources, names
        self._zoo_children = {}

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        if name in self._zoo_children:
            return self._zoo_children[name]
        value = self._zoo_resolve(name)
        setattr(self, name, value)
        return value

    def __dir__(self):
        return sorted({*super().__dir__(), *self._zoo_children, *(self._zoo_names or ())})

    def _zoo_resolve(self, name):
        """The value of ``name`` in the first source that has it.

        Raises:
            ContribError: TF 1.15 never had ``name`` here, no source has it, or a
                source it needs is not installed.
        """
        label = f"tf.contrib.{self._zoo_path}.{name}"
        known = self._zoo_names
        if known is not None and name not in known:
            raise self._never(label, name)
        missing = []
        for source in self._zoo_sources:
            try:
                namespace = _load(source)
            except ModuleNotFoundError as err:
                if err.name in missing:  # a source built on a missing one
                    continue
                module = source.partition(":")[0]
                if err.name is None or not f"{module}.".startswith(f"{err.name}."):
                    raise  # the source is there, and broken: not ours to hide
                missing.append(err.name)
                continue
            if hasattr(namespace, name):
                return getattr(namespace, name)
        if missing:
            packages = [PIP.get(module.split(".")[0]) for module in missing]
            fix = (
                f"pip install {' '.join(filter(None, packages))}"
                if any(packages)
                else "update scope-zoo to a version that has it"
            )
            raise ContribError(
                f"{label}: expected module {' or '.join(missing)} (where zoo.compat "
                f"finds TF 1.15's {self.__name__}.{name}), found none installed; {fix}"
            )
        replacement = REPLACEMENTS.get(f"{self._zoo_path}.{name}".lstrip("."))
        raise ContribError(
            f"{label}: expected a name zoo.compat provides, found TF 1.15's "
            f"{self.__name__}.{name}, which it does not provide; "
            + (f"use {replacement}" if replacement else "see docs/contrib.md")
        )

    def _never(self, label, name):
        if not self._zoo_sources and not self._zoo_names and self._zoo_path:  # a path
            return ContribError(
                f"{label}: expected one of {sorted(self._zoo_children)} (the modules "
                f"zoo.compat maps under {self.__name__}), found {name!r}; import the "
                f"name from {ROOT}.{self._zoo_path.split('.')[0]} instead"
            )
        near = difflib.get_close_matches(name, sorted(self._zoo_names), n=1)
        return ContribError(
            f"{label}: expected a name of TF 1.15's {self.__name__}, found {name!r}, "
            "which TF 1.15 never had there" + (f"; did you mean {near[0]}?" if near else "")
        )


def _load(source):
    """The object a source names: ``"module"`` or ``"module:attribute.path"``."""
    module, _, attributes = source.partition(":")
    found = importlib.import_module(module)
    return functools.reduce(getattr, filter(None, attributes.split(".")), found)


class _Root(ContribModule):
    """``tensorflow.contrib``: its modules are its names."""

    def _zoo_resolve(self, name):
        if name not in MODULES | PACKAGES:
            raise self._never(f"tf.contrib.{name}", name)
        replacement = REPLACEMENTS.get(name)
        raise ContribError(
            f"tf.contrib.{name}: expected a module zoo.compat maps "
            f"({', '.join(sorted(self._zoo_children))}), found TF 1.15's {ROOT}.{name}, "
            "which it does not map; "
            + (f"use {replacement}" if replacement else "see docs/contrib.md")
        )


class _Finder:
    """The path entry finder of :data:`PATH_ENTRY`: ``import tensorflow.contrib.X``
    for an ``X`` the map lacks raises :class:`ContribError`, as ``tf.contrib.X``."""

    @staticmethod
    def find_spec(fullname, target=None):
        parent, _, name = fullname.rpartition(".")
        module = modules().get(parent)
        if module is not None:
            getattr(module, name)  # raises ContribError if the map lacks it
        return None  # a name that is no module: ModuleNotFoundError, as in TF 1.15

    @staticmethod
    def invalidate_caches():
        """Nothing is cached."""


FINDER = _Finder()


@functools.cache
def modules():
    """``{sys.modules name: ContribModule}`` of the whole tree, made once (so a
    second install() finds them in place); importing nothing.

    Returns:
        A dict from ``"tensorflow.contrib"`` and each ``"tensorflow.contrib.<path>"``
        to its module.
    """
    tree = {"": _Root("", names=MODULES)}
    for path in [*SOURCES, *ALIASES]:
        key = ALIASES.get(path, path)
        parts = path.split(".")
        for depth in range(1, len(parts) + 1):
            sub, parent = ".".join(parts[:depth]), tree[".".join(parts[: depth - 1])]
            if sub not in tree:
                leaf = depth == len(parts)
                tree[sub] = (ContribModule(sub, SOURCES[key], NAMES.get(key)) if leaf
                             else ContribModule(sub, names=frozenset()))  # fmt: skip
                parent._zoo_children[parts[depth - 1]] = tree[sub]
    return {module.__name__: module for module in tree.values()}


def changes():
    """``sys.modules`` entries of the contrib tree, its finder, and ``contrib`` of
    ``tensorflow`` and of every ``compat.v1`` namespace.

    Returns:
        A list of :class:`~zoo.compat.change.Change`.
    """
    import tensorflow as tf

    from zoo.compat.namespaces import v1_namespaces

    tree = modules()
    found = [Change(f"sys.modules[{name!r}]", sys.modules, name, module)
             for name, module in tree.items()]  # fmt: skip
    found.append(
        Change(
            f"sys.path_importer_cache[{PATH_ENTRY!r}]",
            sys.path_importer_cache,
            PATH_ENTRY,
            FINDER,
        )
    )
    for namespace in [tf, *v1_namespaces()]:
        name = f"{namespace.__name__}.contrib"
        found.append(Change(name, namespace, "contrib", tree[ROOT]))
    return found
