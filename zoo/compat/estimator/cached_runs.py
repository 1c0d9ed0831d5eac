"""Sessions whose repeated runs go through ``Session.make_callable``.

``tf.compat.v1.Session.run`` reads its fetches anew at every call (it walks their
structure and looks each one up in the graph): about 0.1 ms of Python a run on a
2-core CPU, more with the nested fetches a ``MonitoredSession`` merges from its
hooks. An Estimator asks for the same fetches at every step (the train op and the
loss, and each hook's global step or loss), so its session keeps one callable per
distinct fetch structure and runs that: the same kernels, the same results, less
Python per step (docs/benchmark.md, the estimator row).

A run with feeds, or with ``RunOptions`` that ask for something (a trace), goes
through ``Session.run`` as before, and so does any fetch that is not a graph
tensor, operation, variable or name in lists, tuples and dicts.

Usage::

    creator = CachedRunsCreator(tf.compat.v1.train.ChiefSessionCreator(...))
    with tf.compat.v1.train.MonitoredSession(creator, hooks) as session:
        ...
"""

import tensorflow as tf

from layers.errors import ZooError

v1 = tf.compat.v1

#: Distinct fetch structures a session keeps callables for; runs of others go
#: through ``Session.run``.
MAX_CALLABLES = 32

_GRAPH_ELEMENTS = (tf.Tensor, tf.Operation, tf.Variable)


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
    """Makes ``session.run`` run a cached ``make_callable`` for fetches it has seen.

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
    run, callables = session.run, {}

    def cached_run(fetches, feed_dict=None, options=None, run_metadata=None):
        if feed_dict or (options is not None and options.ByteSize()):
            return run(fetches, feed_dict, options, run_metadata)
        key = _structure(fetches)
        entry = callables.get(key) if key is not None else None
        if entry is None:
            if key is None or len(callables) >= MAX_CALLABLES:
                return run(fetches, feed_dict, options, run_metadata)
            # (the fetches kept with their callable keep the ids of the key alive)
            entry = callables[key] = session.make_callable(fetches), fetches
        return entry[0]()

    session.run = cached_run
    return session


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
