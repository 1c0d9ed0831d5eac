"""HParams: values change in a finalized graph, bad updates change nothing."""

import numpy as np
import pytest
import tensorflow as tf

from layers import EagerError, ZooError
from zoo.models import mlp_classifier
from zoo.training.hparams import HParams, SameStart, SweepGraph, hparam_grid

v1 = tf.compat.v1

# The seed's input and outputs ("0x03, network rebuilt"): a = 0.7, then a = 0.3.
SEED_INPUT = np.array([0.3715132, 0.97066691, 0.05802148, 0.38615892, 0.61126987])
SEED_AT_07 = [False, True, False, False, False]
SEED_AT_03 = [True, True, False, True, True]


def test_seed_threshold_changes_without_rebuilding(graph):
    options = {"a": 0.7}
    x = v1.placeholder(tf.float32, [None])
    frozen = tf.greater_equal(x, options["a"])  # the seed's bug: a constant
    hp = HParams(kinds={"a": "threshold"}, a=options["a"])
    judged = tf.greater_equal(x, hp["a"])
    graph.finalize()
    with v1.Session() as session:
        assert session.run(judged, hp.feed({x: SEED_INPUT})).tolist() == SEED_AT_07
        options["a"] = 0.3
        hp.update(a=options["a"])
        assert session.run(judged, hp.feed({x: SEED_INPUT})).tolist() == SEED_AT_03
        assert session.run(frozen, {x: SEED_INPUT}).tolist() == SEED_AT_07
    assert hp.values == {"a": 0.3}


def test_finalized_graph_follows_three_value_changes(graph):
    """One clipped SGD step on l2 * ||w||^2 / 2, against numpy, for three settings."""
    w = v1.get_variable("w", initializer=tf.constant([3.0, -4.0]))
    hp = HParams(learning_rate=0.1, l2=1.0, clip_norm=1.0)
    loss = hp["l2"] * tf.nn.l2_loss(w)
    (grad,) = tf.gradients(loss, [w])
    step = v1.assign_sub(w, hp["learning_rate"] * tf.clip_by_norm(grad, hp["clip_norm"]))
    init = v1.global_variables_initializer()
    graph.finalize()
    n_ops = len(graph.get_operations())
    with v1.Session() as session:
        for lr, l2, clip in ((0.1, 1.0, 1.0), (0.5, 2.0, 100.0), (0.0, 3.0, 0.5)):
            hp.update(learning_rate=lr, l2=l2, clip_norm=clip)
            session.run(init)
            start = session.run(w)
            gradient = l2 * start
            gradient *= min(1.0, clip / np.linalg.norm(gradient))
            after = session.run(step, hp.feed())
            np.testing.assert_allclose(after, start - lr * gradient, rtol=1e-6)
    assert len(graph.get_operations()) == n_ops


def test_keep_prob_and_l2_reach_the_mlp_classifier(graph):
    x = v1.placeholder(tf.float32, [None, 4])
    y = v1.placeholder(tf.float32, [None, 2])
    hp = HParams(keep_prob=1.0, l2=0.0)
    model = mlp_classifier(x, y, hidden=(64,), l2=hp["l2"], keep_prob=hp["keep_prob"])
    hidden = model.layers[1].input  # the hidden output after dropout
    init = v1.global_variables_initializer()
    graph.finalize()
    feed = {x: np.ones((3, 4)), y: np.eye(2)[[0, 1, 0]]}
    with v1.Session() as session:
        session.run(init)
        w = session.run(model.layers[0].w)
        kept, loss = session.run([hidden, model.loss], hp.feed(feed))
        hp.update(keep_prob=0.5, l2=2.0)
        dropped = session.run(hidden, hp.feed(feed))
        evaluated, loss_l2 = session.run([hidden, model.loss], hp.feed(feed, keep_prob=1.0))
    assert ((kept != 0) & (dropped == 0)).any()
    np.testing.assert_allclose(dropped[dropped != 0], 2 * kept[dropped != 0], rtol=1e-6)
    np.testing.assert_allclose(evaluated, kept)
    np.testing.assert_allclose(loss_l2 - loss, 2.0 * np.sum(w**2) / 2, rtol=1e-4)
    assert hp.values == {"keep_prob": 0.5, "l2": 2.0}  # the override changed nothing


BAD_UPDATES = [
    (
        {"momentum": 0.9},
        r"HParams.update: expected names among .* found unknown \['momentum'\]",
    ),
    (
        {"learning_rate": "0.1"},
        r"expected learning_rate to be a finite number >= 0, found '0.1'",
    ),
    ({"learning_rate": True}, r"expected learning_rate to be .*, found True"),
    ({"learning_rate": None}, r"expected learning_rate to be .*, found None"),
    (
        {"learning_rate": -0.1},
        r"expected learning_rate to be a finite number >= 0, found -0.1",
    ),
    (
        {"keep_prob": 0.0},
        r"expected keep_prob to be a finite number in \(0, 1\], found 0.0",
    ),
    (
        {"keep_prob": 1.5},
        r"expected keep_prob to be a finite number in \(0, 1\], found 1.5",
    ),
    ({"l2": -1e-3}, r"expected l2 to be a finite number >= 0, found -0.001"),
    ({"clip_norm": 0}, r"expected clip_norm to be a finite number > 0, found 0"),
    ({"threshold": float("nan")}, r"expected threshold to be a finite number, found nan"),
    # one good value with one bad: the good one is not stored either
    ({"learning_rate": 0.5, "keep_prob": 2}, r"expected keep_prob .* found 2;"),
]


@pytest.mark.parametrize(("values", "message"), BAD_UPDATES)
def test_bad_update_raises_and_keeps_previous_values(graph, values, message):
    hp = HParams(learning_rate=0.1, keep_prob=0.5, l2=0.01, clip_norm=5.0, threshold=0.0)
    before = hp.values
    with pytest.raises(ZooError, match=message):
        hp.update(**values)
    assert hp.values == before
    assert set(hp.feed().values()) == set(before.values())


def test_numpy_and_int_values_are_accepted(graph):
    hp = HParams(learning_rate=np.float32(0.25), l2=0)
    hp.update(l2=np.int64(2))
    assert hp.values == {"learning_rate": 0.25, "l2": 2.0}
    assert hp.names == ["learning_rate", "l2"]


def test_bad_feed_override_and_unknown_tensor(graph):
    hp = HParams(keep_prob=0.5)
    with pytest.raises(ZooError, match=r"HParams.feed: expected keep_prob .* found 0;"):
        hp.feed(keep_prob=0)
    with pytest.raises(ZooError, match=r"HParams: expected names among \['keep_prob'\]"):
        hp["dropout"]


@pytest.mark.parametrize(
    ("kinds", "values", "message"),
    [
        ({}, {}, r"HParams: expected at least one hyperparameter, found none"),
        (
            {},
            {"momentum": 0.9},
            r"expected each kind to be one of .* found momentum: momentum",
        ),
        ({"a": "cutoff"}, {"a": 0.5}, r"found a: cutoff; name the kind in kinds="),
        ({"b": "threshold"}, {"a": 0.5}, r"expected kinds= to name .* found \['b'\]"),
        ({}, {"keep_prob": 0.0}, r"HParams: expected keep_prob to be a finite number in"),
    ],
)
def test_bad_construction(graph, kinds, values, message):
    with pytest.raises(ZooError, match=message):
        HParams(kinds=kinds, **values)


def test_eager_construction_raises():
    assert tf.executing_eagerly()
    with pytest.raises(EagerError, match=r"HParams: expected a graph .* found eager"):
        HParams(learning_rate=0.1)


def quadratic(hp):
    """One SGD step on l2 * ||w||^2 / 2 from a random start (w of 3 values)."""
    w = v1.get_variable("w", [3], initializer=v1.random_normal_initializer())
    loss = hp["l2"] * tf.nn.l2_loss(w)
    step = v1.train.GradientDescentOptimizer(hp["learning_rate"]).minimize(loss)
    return w, step


def test_same_start_restarts_every_configuration_from_the_first_draw(graph):
    hp = HParams(learning_rate=0.1, l2=1.0)
    w, step = quadratic(hp)
    start = SameStart()
    graph.finalize()
    with v1.Session() as session:
        for lr in (0.1, 0.5, 0.0):
            hp.update(learning_rate=lr)
            start.restart(session)
            np.testing.assert_array_equal(session.run(w), start.weights[0])
            session.run(step, hp.feed())
            expected = (1 - lr) * start.weights[0]  # the gradient of ||w||^2 / 2 is w
            np.testing.assert_allclose(session.run(w), expected, rtol=1e-6)
            # ||w - w0|| / ||w0|| = lr
            np.testing.assert_allclose(start.relative_change(session), lr, rtol=1e-6)
    assert start.variables == [w]


def test_same_start_refuses_no_variables_eager_and_an_early_change(graph):
    with pytest.raises(ZooError, match=r"SameStart: expected variables to restart, found"):
        SameStart()
    start = SameStart([v1.get_variable("w", [2])])
    with v1.Session() as session:
        with pytest.raises(ZooError, match=r"relative_change: expected starting weights"):
            start.relative_change(session)


def test_same_start_in_eager_mode_raises():
    with pytest.raises(EagerError, match=r"SameStart: expected a graph .* found eager"):
        SameStart()


def test_a_sweep_graph_runs_a_grid_in_one_finalized_graph():
    configurations = hparam_grid(learning_rate=[0.5, 0.0], l2=[1.0, 2.0])
    assert configurations == [
        {"learning_rate": 0.5, "l2": 1.0},
        {"learning_rate": 0.5, "l2": 2.0},
        {"learning_rate": 0.0, "l2": 1.0},
        {"learning_rate": 0.0, "l2": 2.0},
    ]
    with SweepGraph(quadratic, seed=3, learning_rate=0.1, l2=1.0) as sweep:
        w, step = sweep.built
        n_ops = len(sweep.graph.get_operations())
        for values in configurations:
            sweep.restart(**values)
            sweep.run(step)
            moved = values["learning_rate"] * values["l2"]
            np.testing.assert_allclose(sweep.relative_change(), moved, rtol=1e-6)
            once_more = sweep.run(w, learning_rate=0.0)  # an override for one run
            np.testing.assert_allclose(once_more, (1 - moved) * sweep.start.weights[0])
        assert sweep.graph.finalized and len(sweep.graph.get_operations()) == n_ops
        first = sweep.start.weights[0]
    with SweepGraph(quadratic, seed=3, learning_rate=0.1, l2=1.0) as again:
        again.restart()
        np.testing.assert_array_equal(again.start.weights[0], first)  # one seed, one start
    with pytest.raises(RuntimeError, match="closed Session"):
        sweep.run(w)  # the context closed the session


@pytest.mark.parametrize(
    ("axes", "message"),
    [({}, r"found no axis"), ({"l2": [0.1], "keep_prob": []}, r"found \['keep_prob'\]")],
)
def test_a_grid_without_values_is_refused(axes, message):
    with pytest.raises(
        ZooError, match=r"hparam_grid: expected at least one value .*" + message
    ):
        hparam_grid(**axes)
