"""TensorFlow's ``compat.v1`` namespaces: what :func:`zoo.compat.install` changes in
them.

``layers`` of every ``compat.v1`` namespace (``tf.compat.v1``, the module
``import tensorflow.compat.v1 as tf`` binds) becomes :mod:`layers.tf1` (under
Keras 3 it raises "`dense` is not available with Keras 3"), and ``nn.rnn_cell``
:mod:`layers.tf1.rnn_cell` (under Keras 3: "`LSTMCell` is not available with
Keras 3").
"""

import importlib
import re
import sys

from zoo.compat.change import Change

_V1_NAMESPACE = re.compile(r"tensorflow(\._api\.v\d)?(\.compat\.v\d)?\.compat\.v1")


def v1_namespaces():
    """Every loaded module that is a ``compat.v1`` namespace (imports
    ``tensorflow.compat.v1``, as TF1 code does), sorted by name."""
    importlib.import_module("tensorflow.compat.v1")
    names = sorted(name for name in sys.modules if _V1_NAMESPACE.fullmatch(name))
    return [sys.modules[name] for name in names]


def changes():
    """``<namespace>.layers`` and ``<namespace>.nn.rnn_cell`` for each ``compat.v1``
    namespace.

    Returns:
        A list of :class:`~zoo.compat.change.Change`.
    """
    from layers import tf1

    return [
        change
        for ns in v1_namespaces()
        for change in (
            Change(f"{ns.__name__}.layers", ns, "layers", tf1),
            Change(f"{ns.nn.__name__}.rnn_cell", ns.nn, "rnn_cell", tf1.rnn_cell),
        )
    ]
