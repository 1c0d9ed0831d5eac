"""Opt-in, one call: unmodified TF1 code on this TensorFlow with Keras 3, no tf_keras.

:func:`install` changes attributes of TensorFlow's modules and of its ``Graph``
class, and :func:`uninstall` puts back exactly what was there:

* ``layers`` of every ``compat.v1`` namespace (``tf.compat.v1``, the module
  ``import tensorflow.compat.v1 as tf`` binds) becomes :mod:`layers.tf1` (under
  Keras 3 it raises "`dense` is not available with Keras 3");
* ``tensorflow.python.layers.normalization`` loads ``BatchNormalization`` from
  ``tf_keras.legacy_tf_layers.normalization``, a module neither Keras 3 nor
  tf_keras ships, and tf-slim's default ``batch_norm`` builds that class: the
  module's loader becomes :mod:`layers.tf1`;
* the names tf-slim 1.1.0 reads from TensorFlow's internal modules that
  TensorFlow 2.21 removed (``ops.Tensor`` in every ``batch_norm`` and
  ``smart_cond``, ``control_flow_ops.cond``, ``array_ops.stack`` ...; see
  :data:`REMOVED`) come back as the public function or class they were; a
  name that still exists is left alone;
* a weight regularizer of TensorFlow's own legacy layers (what tf-slim's
  ``conv2d`` and ``fully_connected`` build, ``weights_regularizer=``) is applied
  to the stored float32 variable when a precision policy
  (``zoo.training.precision``) hands the layer a cast read, and once per
  variable, as TF1 did (on the cast read it was a bfloat16 loss, which
  ``get_total_loss`` cannot add to a float32 one, and a new loss at each reuse);
* ``Graph.get_collection`` returns a :class:`Collection`, whose ``in`` compares
  tensors and variables by identity, as TF1's ``==`` did: tf-slim's
  ``batch_norm`` adds its moving statistics to ``variables_collections`` unless
  ``variable in tf.get_collection(name)`` (``_add_variable_to_collections``,
  as ``inception_v1``'s arg_scope asks; also ``slim.add_model_variable``), which
  TensorFlow 2's element-wise ``==`` makes raise eagerly and in ``tf.function``.
  TensorFlow's ``==`` itself stays as it is, for every thread.

Importing this module changes nothing and does not import TensorFlow.

Usage::

    import zoo.compat
    zoo.compat.install()          # ['tensorflow.compat.v1.layers', ...]
    import tf_slim as slim        # tf-slim 1.1.0 as released
    ...
    with zoo.compat.installed():  # or for a block only
        logits = tf.compat.v1.layers.dense(x, 10)
"""

import contextlib
import functools
import importlib
import re
import sys
import threading

from layers.errors import ZooError

TESTED = ((2, 16), (2, 21))  # the TensorFlow versions (major, minor) install() knows

_ABSENT = object()  # an attribute that did not exist before install()
_REGULARIZED = "_zoo_regularized"  # set on a variable a legacy layer regularized
_lock = threading.Lock()
_changed = []  # (name, module, attribute, value before install()), in install order


# Internal module -> {name: the public API that replaces it} for what tf-slim 1.1.0
# reads and TensorFlow 2.21 no longer has there.
REMOVED = {
    "tensorflow.python.framework.ops": {
        "Tensor": "Tensor", "IndexedSlices": "IndexedSlices",
    },
    "tensorflow.python.ops.array_ops": {"stack": "stack", "unstack": "unstack"},
    "tensorflow.python.ops.control_flow_ops": {
        "cond": "compat.v1.cond", "case": "compat.v1.case",
        "while_loop": "compat.v1.while_loop", "Assert": "compat.v1.Assert",
    },
    "tensorflow.python.ops.variable_scope": {"variable": "compat.v1.Variable"},
}  # fmt: skip
_V1_NAMESPACE = re.compile(r"tensorflow(\._api\.v\d)?(\.compat\.v\d)?\.compat\.v1")


class Collection(list):
    """A graph collection as ``get_collection`` returns it under :func:`install`.

    ``value in collection`` is TF1's: a tensor or variable is in it only as
    itself (TensorFlow 2 compares them element-wise, so the test raises in eager
    mode and in ``tf.function``, or answers by value); other values by ``==``.
    """

    def __contains__(self, value):
        tensors = _tensor_classes()
        by_value = not isinstance(value, tensors)
        return any(
            item is value or (by_value and not isinstance(item, tensors) and value == item)
            for item in self
        )


@functools.cache
def _tensor_classes():
    """The classes whose ``==`` TensorFlow 2 makes element-wise (imports TensorFlow)."""
    import tensorflow as tf

    return (tf.Tensor, tf.Variable)


@functools.cache
def _get_collection_as_tf1():
    """``Graph.get_collection`` returning a :class:`Collection` (the same one always,
    wrapping the method as TensorFlow defines it)."""
    from tensorflow.python.framework import ops

    get_collection = ops.Graph.get_collection

    @functools.wraps(get_collection)
    def get_collection_as_tf1(graph, name, scope=None):
        return Collection(get_collection(graph, name, scope))

    return get_collection_as_tf1


# TensorFlow's internal Keras 2 base layers, whose ``_handle_weight_regularization``
# its legacy layers call (the v1 one in graph mode, where tf-slim builds).
KERAS2_BASE_LAYERS = (
    "tensorflow.python.keras.engine.base_layer",
    "tensorflow.python.keras.engine.base_layer_v1",
)


@functools.cache
def _regularizing_stored_variables(module_name):
    """``Layer._handle_weight_regularization`` of the module ``module_name`` applied
    to the float32 variable behind a precision policy's cast read, once per variable
    (the same function always, wrapping the method as TensorFlow defines it)."""
    from layers.variables import stored_variable

    handle = importlib.import_module(module_name).Layer._handle_weight_regularization

    @functools.wraps(handle)
    def regularize_stored(layer, name, variable, regularizer):
        stored = stored_variable(variable)
        if stored is not variable:
            if getattr(stored, _REGULARIZED, False):
                return None  # a reuse: TF1 regularized a variable when it was made
            setattr(stored, _REGULARIZED, True)
        return handle(layer, name, stored, regularizer)

    return regularize_stored


def changes():
    """What :func:`install` changes where needed (it imports TensorFlow).

    Returns:
        ``(name, module, attribute, new value, replace)`` of each change (the
        module: a module, or the class ``Graph``);
        ``replace`` False: made only where the attribute is missing.
    """
    import tensorflow as tf
    from tensorflow.python.framework import ops

    from layers import tf1

    importlib.import_module("tensorflow.compat.v1")  # what `import ... as tf` binds
    namespaces = sorted(name for name in sys.modules if _V1_NAMESPACE.fullmatch(name))
    changes = [
        (f"{name}.layers", sys.modules[name], "layers", tf1, True) for name in namespaces
    ]
    normalization = importlib.import_module("tensorflow.python.layers.normalization")
    changes.append((normalization.__name__, normalization, "normalization", tf1, True))
    for module_name in KERAS2_BASE_LAYERS:
        method = "_handle_weight_regularization"
        layer_class = importlib.import_module(module_name).Layer
        regularize = _regularizing_stored_variables(module_name)
        changes.append(
            (f"{module_name}.Layer.{method}", layer_class, method, regularize, True)
        )
    get_collection = _get_collection_as_tf1()
    name = f"{ops.__name__}.Graph.get_collection"
    changes.append((name, ops.Graph, "get_collection", get_collection, True))
    for module_name, names in REMOVED.items():
        module = importlib.import_module(module_name)
        for attribute, public in names.items():
            value = functools.reduce(getattr, public.split("."), tf)
            changes.append((f"{module_name}.{attribute}", module, attribute, value, False))
    return changes


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


def install():
    """Makes TF1 code run as written: ``tf.compat.v1.layers`` and tf-slim 1.1.0.

    Imports ``tensorflow.compat.v1`` (as TF1 code does) to change its ``layers``
    too.

    Idempotent: a second call changes nothing and returns an empty list.

    Returns:
        The names of what was changed now, e.g.
        ``["tensorflow.compat.v1.layers", ...]``.

    Raises:
        ZooError: a TensorFlow outside the tested range (:data:`TESTED`).
    """
    import tensorflow as tf

    check_version(tf.__version__)
    changed = []
    with _lock:
        for name, module, attribute, value, replace in changes():
            before = getattr(module, attribute, _ABSENT)
            if before is value or (before is not _ABSENT and not replace):
                continue
            setattr(module, attribute, value)
            _changed.append((name, module, attribute, before))
            changed.append(name)
    return changed


def uninstall():
    """Puts back what :func:`install` changed; without install, does nothing.

    Returns:
        The names of what was restored (empty when nothing was installed).
    """
    restored = []
    with _lock:
        while _changed:
            name, module, attribute, before = _changed.pop()
            if before is _ABSENT:
                delattr(module, attribute)
            else:
                setattr(module, attribute, before)
            restored.append(name)
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
