"""Opt-in, one call: unmodified TF1 code on this TensorFlow with Keras 3 (tf_keras only
for the ``tf.keras`` of TF1 code).

:func:`install` changes attributes of TensorFlow's modules and classes (and
entries of ``sys.modules``), and :func:`uninstall` puts back exactly what was
there. Each module of this package says what it changes, in :data:`PARTS` order:

* :mod:`zoo.compat.namespaces`: ``tf.compat.v1.layers`` becomes :mod:`layers.tf1`
  (TF 1.15's ``tf.layers``);
* :mod:`zoo.compat.nn`: ``conv2d_transpose`` and its siblings of every
  ``compat.v1`` namespace's ``nn`` give their output TF 1.x's static shape;
* :mod:`zoo.compat.tf_slim`: the internal names tf-slim 1.1.0 reads that
  TensorFlow 2.21 removed, its batch norm's loader, its weight regularizers
  under a precision policy;
* :mod:`zoo.compat.graph_collections`: ``get_collection`` with TF1's identity
  ``in`` (tf-slim's collections);
* :mod:`zoo.compat.session`: ``Session.run`` sends fetches and feed keys it ran
  before straight to its runtime call (less Python a step, the same results);
* :mod:`zoo.compat.numpy_compat`: TensorFlow's conversion of values to arrays
  (``py_func``'s results, ``Dataset.from_generator``'s elements, fed values) reads
  the NumPy version once, not at every value;
* :mod:`zoo.compat.contrib`: ``tf.contrib`` and ``tensorflow.contrib.*``, TF 1.15's
  names mapped to ours or tf-slim's;
* :mod:`zoo.compat.estimator`: ``tf.estimator`` and ``tf.compat.v1.estimator``
  (TF 1.15's Estimator, canned estimators, export, TPUEstimator on CPU) and the
  module paths programs import (``tensorflow_estimator...``);
* :mod:`zoo.compat.examples`: ``tensorflow.examples.tutorials.mnist.input_data``
  (TF 1.x's MNIST tutorials' ``read_data_sets``).
* :mod:`zoo.compat.keras`: ``keras`` of every ``compat.v1`` namespace becomes
  tf_keras's Keras 2 (TF 2.15's ``tf.keras``), imported on first use; TF2's
  ``tf.keras`` and ``import keras`` stay Keras 3.

Importing this package changes nothing and does not import TensorFlow.

Usage::

    import zoo.compat
    zoo.compat.install()          # ['tensorflow.compat.v1.layers', ...]
    import tf_slim as slim        # tf-slim 1.1.0 as released
    ...
    with zoo.compat.installed():  # or for a block only
        logits = tf.compat.v1.layers.dense(x, 10)

    zoo.compat.install(tf1_paths=["old_repo"])  # old_repo's modules: TF 1.15's API
    import model                                # old_repo/model.py, as it is

``python -m zoo.compat run SCRIPT`` runs a TF1 program so, and ``python -m
zoo.compat check DIR`` reports the TF 1.x names a repository uses
(docs/tf1-paths.md).
"""

import contextlib
import importlib
import re
import threading

from layers.errors import ZooError
from zoo.compat.change import ABSENT, Change
from zoo.compat.graph_collections import Collection

__all__ = ["PARTS", "TESTED", "Change", "Collection", "apply", "changes", "check_version",
           "install", "installed", "uninstall"]  # fmt: skip

TESTED = ((2, 16), (2, 21))  # the TensorFlow versions (major, minor) install() knows
# in order
PARTS = ("namespaces", "nn", "tf_slim", "graph_collections", "session", "numpy_compat",
         "contrib", "estimator", "examples", "keras")

_lock = threading.Lock()
_changed = []  # (change, value before install()), in install order


def changes():
    """What :func:`install` changes where needed (it imports TensorFlow).

    Returns:
        The :class:`~zoo.compat.change.Change` of every part, in :data:`PARTS`
        order.
    """
    return [
        change
        for part in PARTS
        for change in importlib.import_module(f"{__name__}.{part}").changes()
    ]


def check_version(version):
    """Raises unless TensorFlow ``version`` lies in :data:`TESTED`.

    Raises:
        ZooError: another version.
    """
    found = re.match(r"(\d+)\.(\d+)", str(version))
    major_minor = tuple(map(int, found.groups())) if found else None
    if major_minor is None or not TESTED[0] <= major_minor <= TESTED[1]:
        raise ZooError(
            "zoo.compat.install: expected TensorFlow 2.16 to 2.21 (the versions whose "
            f"internals it was tested on), found {version}; install one "
            "(pip install 'tensorflow>=2.16,<2.22'), or leave install() out and call "
            "layers.tf1 directly"
        )


def install(tf1_paths=()):
    """Makes TF1 code run as written: ``tf.compat.v1.layers`` and tf-slim 1.1.0.

    Imports ``tensorflow.compat.v1`` (as TF1 code does) to change its ``layers``
    too.

    Idempotent: a second call changes nothing and returns an empty list.

    Args:
        tf1_paths: folders whose modules (source files under them, imported from
            now on) see TensorFlow 1.15's API as they are:
            ``import tensorflow as tf`` gives ``tf.compat.v1``, v2 behaviour is
            turned off at the first such import (:mod:`zoo.compat.tf1_paths`).

    Returns:
        The names of what was changed now, e.g.
        ``["tensorflow.compat.v1.layers", ...]``.

    Raises:
        ZooError: a TensorFlow outside the tested range (:data:`TESTED`), or a
            tf1 path that is no folder (then nothing is changed).
    """
    import tensorflow as tf

    check_version(tf.__version__)
    by_path = []
    if tf1_paths:
        from zoo.compat.tf1_paths import MetaPathChange

        by_path.append(MetaPathChange([tf1_paths] if isinstance(tf1_paths, str)
                                      else tf1_paths))  # fmt: skip
    return apply([*changes(), *by_path])


def apply(more):
    """Makes the changes ``more`` as :func:`install` makes its own, for a part that
    changes what it loads on first use (:mod:`zoo.compat.keras`);
    :func:`uninstall` puts them back.

    Returns:
        The names of what was changed now (not what was there already).
    """
    changed = []
    with _lock:
        for change in more:
            before = change.current()
            if before is change.value or (before is not ABSENT and not change.replace):
                continue
            change.put(change.value)
            _changed.append((change, before))
            changed.append(change.name)
    return changed


def uninstall():
    """Puts back what :func:`install` changed; without install, does nothing.

    Returns:
        The names of what was restored (empty when nothing was installed).
    """
    restored = []
    with _lock:
        while _changed:
            change, before = _changed.pop()
            change.put(before)
            restored.append(change.name)
    return restored


@contextlib.contextmanager
def installed():
    """:func:`install` for a block: on leaving it, uninstalls what it installed.

    Yields:
        What :func:`install` changed (empty when it was installed already; then
        it stays installed after the block).
    """
    changed = install()
    try:
        yield changed
    finally:
        if changed:
            uninstall()
