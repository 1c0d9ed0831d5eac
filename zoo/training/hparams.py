"""Named hyperparameters that are graph inputs, so a new value needs no new graph.

A Python number handed to a graph builder is frozen into the graph as a constant:
``tf.greater_equal(x, options["a"])`` keeps comparing with the old ``a`` after
``options["a"]`` changes, until the network is rebuilt. :class:`HParams` makes each
hyperparameter a scalar graph input instead; :meth:`HParams.update` changes the value
and :meth:`HParams.feed` hands it to the next ``session.run``, with no new op, so the
graph can be finalized once and a whole sweep runs in one graph and one session.

Usage::

    with tf.Graph().as_default() as graph:
        hp = HParams(learning_rate=0.01, keep_prob=0.5, l2=1e-4)
        model = mlp_classifier(x, y, l2=hp["l2"], keep_prob=hp["keep_prob"])
        train = tf.compat.v1.train.GradientDescentOptimizer(hp["learning_rate"]).minimize(
            model.loss
        )
        init = tf.compat.v1.global_variables_initializer()
    graph.finalize()
    with tf.compat.v1.Session(graph=graph) as session:
        for lr in (0.1, 0.01):
            hp.update(learning_rate=lr)  # validated; nothing changes if it is bad
            session.run(init)
            session.run(train, hp.feed({x: images, y: labels}))
            session.run(model.accuracy, hp.feed({x: xs, y: ys}, keep_prob=1.0))

Why ``placeholder_with_default`` and not non-trainable variables:

* the value lives in Python, not in a session: ``update`` needs no session and no
  assign op, and the same graph serves any number of sessions;
* re-initializing the model (``global_variables_initializer``, which a sweep runs
  between configurations) cannot reset a hyperparameter, and checkpoints of the
  model do not carry hyperparameters as if they were weights;
* one run can override a value without changing it (``hp.feed(..., keep_prob=1.0)``
  to evaluate without dropout), where a variable would need assign, run, assign back.

The price: a run whose feed does not come from :meth:`HParams.feed` gets the value
given at construction (the placeholder's default). Build every feed through it.

Hyperparameters used outside the graph (a threshold or a clip applied to fetched
numpy arrays) are read from :attr:`HParams.values` at the moment they are used, never
copied at construction; one ``update`` then moves the in-graph and the Python use
together::

    scores = session.run(model.y_pred, hp.feed({x: xs}))
    decided = scores.max(axis=1) >= hp.values["threshold"]  # read now, not at build

A sweep in one graph also needs every configuration to start from the same weights:
:class:`SameStart` re-initializes the variables to the weights drawn the first time,
with no new op; :class:`SweepGraph` holds a model built once with both, finalized, and
its session; :func:`hparam_grid` lists the configurations::

    def build(hp):                          # a new graph, the seed set
        x, y = placeholders()
        model = mlp_classifier(x, y, l2=hp["l2"], keep_prob=hp["keep_prob"])
        sgd = tf.compat.v1.train.GradientDescentOptimizer(hp["learning_rate"])
        return x, y, model, sgd.minimize(model.loss)

    with SweepGraph(build, seed=0, learning_rate=0.01, keep_prob=0.5, l2=0.0) as sweep:
        x, y, model, train = sweep.built
        for values in hparam_grid(learning_rate=[0.1, 0.01], keep_prob=[0.5, 1.0]):
            sweep.restart(**values)            # new values, the same starting weights
            sweep.run(train, {x: images, y: labels})
            sweep.run(model.accuracy, {x: xs, y: ys}, keep_prob=1.0)
"""

import dataclasses
import itertools

import numpy as np
import tensorflow as tf

from layers.checks import number_problem, require
from layers.errors import EagerError, ZooError


@dataclasses.dataclass(frozen=True)
class Kind:
    """What values a kind of hyperparameter accepts.

    Attributes:
        bounds: the bounds of :func:`layers.checks.number_problem` (``low``,
            ``high``, ``low_open``, ``high_open``); none for any finite number.
        example: a good value, named in the message of a bad one.
    """

    bounds: dict
    example: float


KINDS = {
    "threshold": Kind({}, 0.5),
    "keep_prob": Kind({"low": 0, "high": 1, "low_open": True}, 0.5),
    "learning_rate": Kind({"low": 0}, 0.01),
    "l2": Kind({"low": 0}, 1e-4),
    "clip_norm": Kind({"low": 0, "low_open": True}, 10.0),
}


def check_value(owner, name, kind, value):
    """Returns ``value`` as a float if ``kind`` accepts it.

    Args:
        owner: who checks (used in the message), e.g. ``"HParams.update"``.
        name: the hyperparameter's name.
        kind: a key of :data:`KINDS`.
        value: the candidate value.

    Returns:
        ``float(value)``.

    Raises:
        ZooError: ``value`` is not a real number (a string, a bool, None), is not
            finite, or is outside what ``kind`` accepts.
    """
    kind = KINDS[kind]
    problem = number_problem(value, **kind.bounds, name=name)
    require(owner, problem, f"pass e.g. {name}={kind.example:g}")
    return float(value)


class HParams:
    """Scalar float32 hyperparameters as ``placeholder_with_default`` graph inputs.

    Each name's kind is the name itself (``learning_rate``, ``keep_prob``, ``l2``,
    ``clip_norm``, ``threshold``) unless ``kinds`` says otherwise, which lets the
    seed's threshold be called ``a``: ``HParams(kinds={"a": "threshold"}, a=0.7)``.

    Args:
        kinds: optional ``{name: kind}`` for names that are not kinds themselves.
        **values: the initial value of each hyperparameter.

    Raises:
        ZooError: no hyperparameters, an unknown kind, or a bad initial value.
        EagerError: built in eager execution or inside ``tf.function``, where a
            placeholder cannot be fed and the value would be a frozen constant.
    """

    def __init__(self, kinds=None, **values):
        kinds = dict(kinds or {})
        _require_graph("HParams", "a hyperparameter cannot be fed")
        if not values:
            raise ZooError(
                "HParams: expected at least one hyperparameter, found none; pass e.g. "
                "HParams(learning_rate=0.01)"
            )
        if set(kinds) - set(values):
            raise ZooError(
                f"HParams: expected kinds= to name passed hyperparameters, found "
                f"{sorted(set(kinds) - set(values))} without a value; pass a value for "
                "each name in kinds="
            )
        self._kinds = {name: kinds.get(name, name) for name in values}
        unknown = sorted(
            f"{name}: {kind}" for name, kind in self._kinds.items() if kind not in KINDS
        )
        if unknown:
            raise ZooError(
                f"HParams: expected each kind to be one of {', '.join(KINDS)}, found "
                f"{', '.join(unknown)}; name the kind in kinds=, e.g. "
                "kinds={'a': 'threshold'}"
            )
        self._values = self._checked("HParams", values)
        with tf.name_scope("hparams"):
            self._tensors = {
                name: tf.compat.v1.placeholder_with_default(
                    tf.constant(value, tf.float32), shape=[], name=name
                )
                for name, value in self._values.items()
            }

    def __getitem__(self, name):
        """Returns the scalar float32 tensor of ``name``, to pass to builders.

        Raises:
            ZooError: ``name`` is not one of :attr:`names`.
        """
        self._check_names("HParams", [name])
        return self._tensors[name]

    def __repr__(self):
        items = ", ".join(f"{name}={value!r}" for name, value in self._values.items())
        return f"HParams({items})"

    @property
    def names(self):
        """The hyperparameters' names, in construction order."""
        return list(self._kinds)

    @property
    def values(self):
        """A copy of the current ``{name: float}``, for uses outside the graph."""
        return dict(self._values)

    def update(self, **values):
        """Sets new values, all or nothing; they take effect in the next fed run.

        Args:
            **values: new values of some of the hyperparameters.

        Raises:
            ZooError: an unknown name, a value of the wrong type, or a value out of
                range. Every value is checked before any is stored, so after an
                error all hyperparameters keep their previous values.
        """
        self._values.update(self._checked("HParams.update", values))

    def feed(self, feed_dict=None, **overrides):
        """Returns ``feed_dict`` plus every hyperparameter's current value.

        Args:
            feed_dict: the run's other feeds (placeholders of data), or None.
            **overrides: values for this run only, e.g. ``keep_prob=1.0`` to
                evaluate without dropout; the stored values do not change.

        Returns:
            A new dict for ``session.run(..., feed_dict=...)``.

        Raises:
            ZooError: an override has an unknown name or a bad value.
        """
        values = {**self._values, **self._checked("HParams.feed", overrides)}
        fed = {self._tensors[name]: value for name, value in values.items()}
        return {**(feed_dict or {}), **fed}

    def _checked(self, owner, values):
        self._check_names(owner, values)
        return {
            name: check_value(owner, name, self._kinds[name], value)
            for name, value in values.items()
        }

    def _check_names(self, owner, names):
        unknown = [name for name in names if name not in self._kinds]
        if unknown:
            raise ZooError(
                f"{owner}: expected names among {self.names}, found unknown {unknown}; "
                "declare every hyperparameter when the HParams is built"
            )


class SameStart:
    """Puts the variables back to the same starting weights, with no new op.

    Build it in the graph after the model and its optimizer, before
    ``graph.finalize()``. Each :meth:`restart` runs the initializer of every global
    variable: the first draws the starting weights of ``variables`` and keeps them,
    the later ones feed those weights to the variables' initializers, so every
    configuration of a one-graph sweep starts alike (other variables, such as
    optimizer slots, start from their initializers each time).

    Args:
        variables: the variables whose start is kept; None: the trainable ones.

    Raises:
        EagerError: built in eager execution or inside ``tf.function``.
        ZooError: there are no such variables.

    Attributes:
        variables: the variables whose start is kept.
        weights: their starting weights (arrays), None before the first restart.

    Usage::

        start = SameStart()                  # in the graph, after minimize
        graph.finalize()
        for values in hparam_grid(learning_rate=[0.1, 0.01]):
            hp.update(**values)
            start.restart(session)            # the same weights every time
            ...                               # train
            moved = start.relative_change(session)
    """

    def __init__(self, variables=None):
        _require_graph("SameStart", "the starting weights cannot be fed")
        v1 = tf.compat.v1
        self.variables = list(v1.trainable_variables() if variables is None else variables)
        if not self.variables:
            raise ZooError(
                "SameStart: expected variables to restart, found none; build the model "
                "first, or pass variables="
            )
        self._initial_values = [v.initial_value for v in self.variables]
        self._init = v1.global_variables_initializer()
        self.weights = None

    def restart(self, session):
        """Initializes every global variable, ``variables`` to the starting weights.

        Args:
            session: a session of the graph the SameStart was built in.
        """
        start = {}
        if self.weights is not None:
            start = dict(zip(self._initial_values, self.weights, strict=True))
        session.run(self._init, start)
        if self.weights is None:
            self.weights = session.run(self.variables)

    def relative_change(self, session):
        """Returns ``||weights - starting weights|| / ||starting weights||``.

        The norms are over all of ``variables`` together.

        Raises:
            ZooError: called before the first :meth:`restart`.
        """
        if self.weights is None:
            raise ZooError(
                "SameStart.relative_change: expected starting weights, found none; "
                "call restart(session) first"
            )
        now = session.run(self.variables)
        moved = sum(np.sum((a - b) ** 2) for a, b in zip(now, self.weights, strict=True))
        size = sum(np.sum(b**2) for b in self.weights)
        return float(np.sqrt(moved / size))


class SweepGraph:
    """A model built once with :class:`HParams` in a finalized graph, and its session.

    ``build(hparams)`` makes the model and its training op in a new graph, after the
    graph-level seed; a :class:`SameStart` made after it keeps the starting weights;
    then the graph is finalized and a session opened. Each configuration of a sweep
    is then :meth:`restart` (new values, the same starting weights) and runs through
    :meth:`run`, whose feeds carry the hyperparameters. Use it as a context manager,
    or :meth:`close` it.

    Args:
        build: ``build(hparams) -> anything``, kept as :attr:`built`.
        seed: the graph-level seed (two SweepGraphs of one seed start from the same
            weights and draw the same random numbers), or None.
        kinds: as :class:`HParams`.
        **values: the hyperparameters' initial values.

    Raises:
        ZooError: as :class:`HParams` and :class:`SameStart`.

    Attributes:
        graph, session, hparams, start, built: the graph, its session, the
            :class:`HParams`, the :class:`SameStart` and what ``build`` returned.
    """

    def __init__(self, build, seed=None, kinds=None, **values):
        self.graph = tf.Graph()
        with self.graph.as_default():
            if seed is not None:
                tf.compat.v1.set_random_seed(seed)
            self.hparams = HParams(kinds, **values)
            self.built = build(self.hparams)
            self.start = SameStart()
        self.graph.finalize()
        self.session = tf.compat.v1.Session(graph=self.graph)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def restart(self, **values):
        """Sets hyperparameters and puts every variable back to the same start.

        Raises:
            ZooError: a bad hyperparameter (nothing changes then).
        """
        self.hparams.update(**values)
        self.start.restart(self.session)

    def feed(self, feed_dict=None, **overrides):
        """Returns ``feed_dict`` plus every hyperparameter (:meth:`HParams.feed`)."""
        return self.hparams.feed(feed_dict, **overrides)

    def run(self, fetches, feed_dict=None, **overrides):
        """Runs ``fetches`` with :meth:`feed`'s feeds; returns what the session returns."""
        return self.session.run(fetches, self.feed(feed_dict, **overrides))

    def relative_change(self):
        """Returns how far the weights moved since the restart
        (:meth:`SameStart.relative_change`)."""
        return self.start.relative_change(self.session)

    def close(self):
        """Closes the session."""
        self.session.close()


def hparam_grid(**axes):
    """Returns every combination of the axes' values, the first axis varying slowest.

    Args:
        **axes: ``name=values`` per hyperparameter, e.g. ``learning_rate=[0.1, 0.01]``.

    Returns:
        A list of ``{name: value}``, one per point, for :meth:`HParams.update`.

    Raises:
        ZooError: no axis, or an axis without values.
    """
    axes = {name: list(values) for name, values in axes.items()}
    empty = [name for name, values in axes.items() if not values]
    if not axes or empty:
        raise ZooError(
            f"hparam_grid: expected at least one value on each of at least one axis, "
            f"found {empty or 'no axis'}; pass e.g. hparam_grid(learning_rate=[0.1, 0.01])"
        )
    points = itertools.product(*axes.values())
    return [dict(zip(axes, point, strict=True)) for point in points]


def _require_graph(owner, why):
    """Raises EagerError in eager execution or inside ``tf.function``."""
    if tf.executing_eagerly() or tf.inside_function():
        raise EagerError(
            f"{owner}: expected a graph (`with tf.Graph().as_default():`), found eager "
            f"execution or tf.function, where {why}; build the {owner} and the model "
            "inside a graph"
        )
