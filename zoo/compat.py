"""Opt-in, one call: unmodified TF1 code on this TensorFlow with Keras 3, no tf_keras.

:func:`install` changes three attributes of TensorFlow's modules, and
:func:`uninstall` puts back exactly what was there:

* ``tf.compat.v1.layers`` becomes :mod:`layers.tf1` (under Keras 3 it raises
  "`dense` is not available with Keras 3");
* ``tensorflow.python.framework.ops.Tensor``, gone in TensorFlow 2.21 and read
  by tf-slim 1.1.0 in every ``batch_norm`` and ``smart_cond``, becomes
  ``tf.Tensor`` (where it still exists it is that class already, left alone);
* ``tensorflow.python.layers.normalization`` loads ``BatchNormalization`` from
  ``tf_keras.legacy_tf_layers.normalization``, a module neither Keras 3 nor
  tf_keras ships, and tf-slim's default ``batch_norm`` builds that class: the
  module's loader becomes :mod:`layers.tf1`.

Importing this module changes nothing and does not import TensorFlow.

Usage::

    import zoo.compat
    zoo.compat.install()          # ['tf.compat.v1.layers', ...]
    import tf_slim as slim        # tf-slim 1.1.0 as released
    ...
    with zoo.compat.installed():  # or for a block only
        logits = tf.compat.v1.layers.dense(x, 10)
"""

import contextlib
import re
import threading

from layers.errors import ZooError

TESTED = ((2, 16), (2, 21))  # the TensorFlow versions (major, minor) install() knows

_ABSENT = object()  # an attribute that did not exist before install()
_lock = threading.Lock()
_changed = []  # (name, module, attribute, value before install()), in install order


def _changes():
    """``(name, module, attribute, new value)`` of each change install() makes."""
    import tensorflow as tf
    from tensorflow.python.framework import ops
    from tensorflow.python.layers import normalization

    from layers import tf1

    return [
        ("tf.compat.v1.layers", tf.compat.v1, "layers", tf1),
        ("tensorflow.python.framework.ops.Tensor", ops, "Tensor", tf.Tensor),
        ("tensorflow.python.layers.normalization", normalization, "normalization", tf1),
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


def install():
    """Makes TF1 code run as written: ``tf.compat.v1.layers`` and tf-slim 1.1.0.

    Idempotent: a second call changes nothing and returns an empty list.

    Returns:
        The names of what was changed now, e.g. ``["tf.compat.v1.layers", ...]``.

    Raises:
        ZooError: a TensorFlow outside the tested range (:data:`TESTED`).
    """
    import tensorflow as tf

    check_version(tf.__version__)
    changed = []
    with _lock:
        for name, module, attribute, value in _changes():
            before = getattr(module, attribute, _ABSENT)
            if before is value:
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
