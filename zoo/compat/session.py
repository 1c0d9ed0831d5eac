"""What :func:`zoo.compat.install` changes in ``tf.compat.v1.Session``: repeated runs
read once.

A TF1 program runs the same fetches with the same feed keys at every step
(``session.run([train_op, loss], {x: batch_x, y: batch_y})``), and ``Session.run``
reads them anew at each call: it walks the fetches' structure, looks each fetch and
feed key up in the graph and checks each fed value. That is 0.15-0.2 ms of Python a
run with two feeds and two fetches on a 2-core CPU, 10-20 % of a small model's step
(docs/benchmark.md). So a session keeps, for each distinct fetch structure and feed
keys that ``Session.run`` ran without error twice, what it read (the graph's outputs
and operations, the fed tensors' dtypes and shapes), and later runs of them go
straight to the runtime call ``Session.run`` ends in: the same kernels, the same
results, the same errors (formatted by the session's ``_do_call``).

Still through ``Session.run``: the first two runs of each fetch structure and feed
keys (a run made once, as a program's set-up makes many, is not kept), runs with
``RunOptions`` that ask for something (a trace), feed keys other than tensors and
their names, fed values other than numpy arrays, numbers, lists and tuples (strings,
``TensorHandle``s) or ones ``Session.run`` would convert other than by a cast or
refuse, fetches other than tensors, operations, variables and names in lists, tuples
and dicts (a ``SparseTensor``...), fetches that are also fed, a closed session, runs
that fetch nothing, and more than :data:`MAX_KEPT` distinct runs in one session.
A ``RunMetadata`` passed without ``RunOptions`` is left as it is (``Session.run``
records nothing in it then, unless the session's config builds cost models).

Under :func:`zoo.compat.install` every session runs so (``BaseSession.run``, the
class ``tf.compat.v1.Session`` and ``InteractiveSession`` inherit ``run`` from);
:class:`CachedRunsCreator` gives one ``MonitoredSession`` the same without it (the
Estimator's). Private names touched: ``BaseSession._call_tf_sessionrun``, ``_do_call``
and ``_closed``, ``Tensor._as_tf_output`` and ``Operation._c_op`` (what ``Session.run``
itself hands the runtime; tests/zoo/test_compat_session.py names them).

Usage::

    creator = CachedRunsCreator(tf.compat.v1.train.ChiefSessionCreator(...))
    with tf.compat.v1.train.MonitoredSession(creator, hooks) as session:
        ...
"""

import collections
import functools
import types

import numpy as np
import tensorflow as tf

from layers.errors import ZooError
from zoo.compat import numpy_compat
from zoo.compat.change import Change

v1 = tf.compat.v1

#: Distinct fetch structures and feed keys a session keeps; runs of others go
#: through ``Session.run``.
MAX_KEPT = 32
#: Runs a session remembers having run once (one is kept at its second run).
MAX_SEEN = 1024

_GRAPH_ELEMENTS = (tf.Tensor, tf.Operation, tf.Variable)
# the session's attribute: ({key: _Step or _UNCACHED}, keys run once)
_RUNS = "_zoo_cached_runs"
_UNCACHED = object()  # a run whose fetches or feeds Session.run reads otherwise
_ORIGINAL = {}  # wrapper -> the Session.run it wraps


class CachedRunsCreator(v1.train.SessionCreator):
    """A ``SessionCreator`` whose sessions cache their runs (:func:`cache_runs`).

    Args:
        creator: the ``SessionCreator`` that makes and restores the session
            (``ChiefSessionCreator``, ``WorkerSessionCreator``, ...).

    Raises:
        ZooError: ``creator`` is not a ``SessionCreator``.
    """

    def __init__(self, creator):
        if not isinstance(creator, v1.train.SessionCreator):
            raise ZooError(
                f"CachedRunsCreator: expected a tf.compat.v1.train.SessionCreator, found "
                f"{type(creator).__name__}; pass e.g. ChiefSessionCreator(...)"
            )
        self._creator = creator

    def create_session(self):
        """Returns the wrapped creator's session, its runs cached."""
        return cache_runs(self._creator.create_session())


def cache_runs(session):
    """Makes ``session.run`` run runs it has seen from what it kept (as install() does).

    The session stays a ``tf.compat.v1.Session`` (savers, hooks and
    ``isinstance`` see the same object); only its ``run`` attribute changes.

    Args:
        session: a ``tf.compat.v1.Session``.

    Returns:
        The same session.

    Raises:
        ZooError: ``session`` is not a ``tf.compat.v1.Session``.
    """
    if not isinstance(session, v1.Session):
        raise ZooError(
            f"cache_runs: expected a tf.compat.v1.Session, found "
            f"{type(session).__name__}; pass the session a SessionCreator makes (for a "
            "MonitoredSession, wrap its creator in CachedRunsCreator)"
        )
    session.run = types.MethodType(with_cached_runs(_tensorflow_run()), session)
    return session


@functools.cache
def with_cached_runs(run):
    """``Session.run`` that runs fetches and feed keys it has seen from what it kept.

    Args:
        run: TensorFlow's ``BaseSession.run``.

    Returns:
        A function of ``run``'s signature (the same object for the same ``run``).
    """

    @functools.wraps(run)
    def cached_run(self, fetches, feed_dict=None, options=None, run_metadata=None):
        if (options is not None and options.ByteSize()) or self._closed:
            return run(self, fetches, feed_dict, options, run_metadata)
        steps, seen = self.__dict__.get(_RUNS) or self.__dict__.setdefault(
            _RUNS, ({}, set())
        )
        key = _structure(fetches), _feed_keys(feed_dict)
        step = steps.get(key) if None not in key else _UNCACHED
        values = step.values(feed_dict) if isinstance(step, _Step) else None
        if values is not None:
            return step.run(self, values)
        result = run(self, fetches, feed_dict, options, run_metadata)
        if step is None and key in seen and len(steps) < MAX_KEPT:
            # (the step keeps the fetches and feed keys whose ids are in its key)
            steps[key] = _Step.make(self, fetches, feed_dict)
        elif step is None:
            if len(seen) >= MAX_SEEN:
                seen.clear()
            seen.add(key)
        return result

    _ORIGINAL[cached_run] = run
    return cached_run


def changes():
    """``run`` of the class ``tf.compat.v1.Session`` inherits it from.

    Returns:
        A list of one :class:`~zoo.compat.change.Change`.
    """
    base = _run_class()
    name = f"{base.__module__}.{base.__name__}.run"
    return [Change(name, base, "run", with_cached_runs(_tensorflow_run()))]


def _run_class():
    """The class that defines ``tf.compat.v1.Session.run`` (``BaseSession``)."""
    return next(cls for cls in v1.Session.__mro__ if "run" in vars(cls))


def _tensorflow_run():
    """TensorFlow's own ``BaseSession.run``, installed or not."""
    run = vars(_run_class())["run"]
    return _ORIGINAL.get(run, run)


def _structure(fetches):
    """A hashable key of ``fetches``: their containers' types and keys and their
    leaves' identities (names by value); None where a leaf is not a graph element or
    name."""
    if isinstance(fetches, _GRAPH_ELEMENTS):
        return id(fetches)
    if isinstance(fetches, str):
        return fetches
    if isinstance(fetches, dict):
        keys, values = tuple(fetches), fetches.values()
    elif isinstance(fetches, (list, tuple)):
        keys, values = (), fetches
    else:
        return None
    leaves = [_structure(value) for value in values]
    return None if None in leaves else (type(fetches), keys, *leaves)


def _feed_keys(feed_dict):
    """A hashable key of ``feed_dict``'s keys in order (tensors by identity, names by
    value); None where a key is neither."""
    if not feed_dict:
        return ()
    keys = tuple(key if isinstance(key, str) else id(key) for key in feed_dict)
    return keys if all(isinstance(key, (str, tf.Tensor)) for key in feed_dict) else None


class _Step:
    """One run as kept: its runtime call, its feeds' checks, its fetches' structure.

    Args:
        call: ``call(*values)`` runs the step fed ``values`` (``feed_dict``'s order).
        build: ``build(values)`` gives the run's result from the fetched values.
        feeds: per feed key, the numpy dtype and static dimensions (None: unknown
            rank) ``Session.run`` checks a fed value against.
        kept: the fetches and feed keys whose identities key the step.
    """

    def __init__(self, call, build, feeds, kept):
        self.call, self.build, self.feeds, self.kept = call, build, feeds, kept

    @classmethod
    def make(cls, session, fetches, feed_dict):
        """The step of a run ``Session.run`` ran, or ``_UNCACHED`` for fetches or feeds
        it reads otherwise."""
        graph, leaves = session.graph, []
        try:
            fed = [
                graph.as_graph_element(key, allow_operation=False)
                for key in feed_dict or ()
            ]
            build = _builder(fetches, graph, leaves)
        except (TypeError, ValueError):  # a fetch or feed Session.run reads otherwise
            return _UNCACHED
        # unique by name, in the order first fetched
        fetched = {t.name: t for t in leaves if isinstance(t, tf.Tensor)}
        targets = {op.name: op for op in leaves if isinstance(op, tf.Operation)}
        if {tensor.name for tensor in fed} & fetched.keys() or not (fetched or targets):
            return _UNCACHED  # a fed fetch is its fed value; nothing to fetch, no run
        inputs = [tensor._as_tf_output() for tensor in fed]
        outputs = [tensor._as_tf_output() for tensor in fetched.values()]
        ops = [op._c_op for op in targets.values()]

        def call(*values):  # Session.run's own runtime call, its fetches read once
            fed_values = dict(zip(inputs, values, strict=True))
            return session._call_tf_sessionrun(None, fed_values, outputs, ops, None)

        index = {name: i for i, name in enumerate(fetched)}
        feeds = [(tensor.dtype.as_numpy_dtype, _dims(tensor)) for tensor in fed]
        kept = fetches, tuple(feed_dict or ())
        return cls(call, lambda values: build(values, index), feeds, kept)

    def values(self, feed_dict):
        """``feed_dict``'s values as ``Session.run`` would feed them, or None where it
        would convert one otherwise than by a cast, or refuse it."""
        if not feed_dict:
            return ()
        values = []
        for value, (dtype, dims) in zip(feed_dict.values(), self.feeds, strict=True):
            array = _as_array(value, dtype)
            if array is None or not _fits(array.shape, dims):
                return None
            values.append(array)
        return values

    def run(self, session, values):
        """The run's result, fed ``values``."""
        return self.build(session._do_call(self.call, *values))


def _builder(fetches, graph, leaves):
    """``build(values, index)`` giving ``fetches``' structure filled as ``Session.run``
    fills it (an operation's value None), appending each leaf's graph element to
    ``leaves``.

    Raises:
        TypeError, ValueError: a leaf the graph does not know (as ``as_graph_element``).
    """
    if isinstance(fetches, (*_GRAPH_ELEMENTS, str)):
        leaf = graph.as_graph_element(fetches, allow_tensor=True, allow_operation=True)
        leaves.append(leaf)
        if isinstance(leaf, tf.Operation):
            return lambda values, index: None
        return lambda values, index: values[index[leaf.name]]
    if isinstance(fetches, dict):
        parts = {key: _builder(value, graph, leaves) for key, value in fetches.items()}
        return functools.partial(_build_dict, fetches, parts)
    parts = [_builder(value, graph, leaves) for value in fetches]
    kind = list if isinstance(fetches, list) else type(fetches)
    if kind is list or kind is tuple:
        return lambda values, index: kind(part(values, index) for part in parts)
    return lambda values, index: kind(*(part(values, index) for part in parts))


def _build_dict(fetches, parts, values, index):
    """A dict of ``fetches``' type filled as ``Session.run`` fills it."""
    result = type(fetches)()
    if isinstance(fetches, collections.defaultdict):
        result.default_factory = fetches.default_factory
    for key, part in parts.items():
        result[key] = part(values, index)
    return result


def _dims(tensor):
    """``tensor``'s static dimensions (None for unknown ones), None for unknown rank."""
    return None if tensor.shape.rank is None else tuple(tensor.shape.as_list())


def _fits(shape, dims):
    """Whether an array of ``shape`` fits static ``dims``, as
    ``TensorShape.is_compatible_with`` says."""
    if dims is None:
        return True
    if len(shape) != len(dims):
        return False
    return all(d is None or d == n for d, n in zip(dims, shape, strict=True))


def _as_array(value, dtype):
    """``value`` as ``Session.run`` feeds it to a tensor of numpy ``dtype`` (a numpy
    array, number, list or tuple, converted as it converts one); None for other values
    and for an int the dtype cannot hold (``Session.run`` converts or refuses those
    itself)."""
    if type(value) is np.ndarray and value.dtype == dtype:
        return value
    if not isinstance(value, (np.ndarray, np.generic, int, float, list, tuple)):
        return None
    if not (np.issubdtype(dtype, np.number) or dtype is np.bool_):
        return None
    try:
        if dtype is np.bool_ and np.asarray(value).dtype != np.bool_:
            return None
        array = numpy_compat.np_asarray(value, dtype)  # Session.run's own conversion
    except (OverflowError, TypeError, ValueError):
        return None  # Session.run says why
    if isinstance(value, int) and array != value:
        return None  # an int the dtype cannot hold: Session.run says so
    return array
