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
"""

import dataclasses

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
        if tf.executing_eagerly() or tf.inside_function():
            raise EagerError(
                "HParams: expected a graph (`with tf.Graph().as_default():`), found "
                "eager execution or tf.function, where a hyperparameter cannot be fed; "
                "build the HParams and the model inside a graph"
            )
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
