"""zoo.compat.estimator.cached_runs: a session's repeated runs through cached
callables give what Session.run gives, one callable per fetch structure; feeds,
traces and fetches it cannot key go through Session.run, errors included; the
Estimator's sessions use it."""

import collections

import numpy as np
import pytest
import tensorflow as tf

import zoo.compat
from layers.errors import ZooError
from tests.zoo import estimator_model as m
from zoo.compat.estimator import cached_runs

v1 = tf.compat.v1

Pair = collections.namedtuple("Pair", "step loss")


@pytest.fixture
def graph_session():
    """A graph with a counter (its update op, ``2 * counter``, 3 times a placeholder) and
    two sessions of it: one plain, one with cached runs that counts the callables
    it makes."""
    graph = tf.Graph()
    with graph.as_default():
        counter = v1.get_variable("counter", [], initializer=v1.zeros_initializer())
        update = v1.assign_add(counter, 1.0).op
        double = 2.0 * counter
        tripled = 3.0 * v1.placeholder(tf.float32, [], name="fed")
        plain, cached = v1.Session(), v1.Session()
        for session in (plain, cached):
            session.run(v1.global_variables_initializer())
    made = []
    make_callable = cached.make_callable
    cached.make_callable = lambda fetches: made.append(fetches) or make_callable(fetches)
    cached_runs.cache_runs(cached)
    with tf.Graph().as_default():
        elsewhere = tf.constant(1.0)
    parts = {"graph": graph, "update": update, "double": double, "tripled": tripled,
             "counter": counter, "elsewhere": elsewhere}  # fmt: skip
    yield plain, cached, made, parts
    plain.close()
    cached.close()


def test_results_equal_session_run_one_callable_per_structure(graph_session):
    plain, cached, made, p = graph_session
    fetch_sets = [
        p["update"],
        [p["update"], p["double"]],
        {"a": p["double"], "b": [p["double"], "double_name:0"]},
        Pair(p["update"], p["double"]),
        (p["counter"], "mul:0"),
    ]
    with p["graph"].as_default():
        tf.identity(p["double"], name="double_name")
    for _ in range(3):
        for fetches in fetch_sets:
            expected, found = plain.run(fetches), cached.run(fetches)
            assert type(found) is type(expected)
            assert repr(found) == repr(expected)
    assert len(made) == len(fetch_sets)  # made once each, then reused


def test_feeds_and_traces_go_through_session_run(graph_session):
    _, cached, made, p = graph_session
    assert cached.run(p["tripled"], {"fed:0": 2.0}) == 6.0
    metadata = v1.RunMetadata()
    options = v1.RunOptions(trace_level=v1.RunOptions.FULL_TRACE)
    cached.run(p["update"], options=options, run_metadata=metadata)
    assert metadata.step_stats.dev_stats  # the trace Session.run records
    assert made == []


def test_unkeyed_fetches_and_full_cache_still_run(graph_session, monkeypatch):
    _, cached, made, p = graph_session
    with p["graph"].as_default():
        sparse = tf.sparse.SparseTensor([[0]], p["double"][None], [2])
    assert cached.run(sparse).values.tolist() == [0.0]  # not a key: Session.run
    monkeypatch.setattr(cached_runs, "MAX_CALLABLES", 1)
    assert cached.run(p["double"]) == 0.0
    assert cached.run([p["double"], p["double"]]) == [0.0, 0.0]  # over the limit
    assert len(made) == 1


@pytest.mark.parametrize(
    "fetches, error",
    [
        (lambda p: None, TypeError),
        (lambda p: [p["double"], None], TypeError),
        (lambda p: "no_such_tensor:0", ValueError),
        (lambda p: p["elsewhere"], ValueError),  # another graph's tensor
    ],
)
def test_errors_are_session_runs(graph_session, fetches, error):
    plain, cached, _, p = graph_session
    wrong = fetches(p)
    messages = []
    for session in (plain, cached):
        with pytest.raises(error) as raised:
            session.run(wrong)
        messages.append(str(raised.value))
    assert messages[0] == messages[1]


def test_what_is_not_a_session_or_creator_is_refused_by_name():
    with pytest.raises(
        ZooError,
        match=r"^cache_runs: expected a tf.compat.v1.Session, found str; "
        r"pass the session a SessionCreator makes \(for a MonitoredSession, wrap its "
        r"creator in CachedRunsCreator\)$",
    ):
        cached_runs.cache_runs("session")
    with pytest.raises(
        ZooError,
        match=r"^CachedRunsCreator: expected a tf.compat.v1.train.SessionCreator, found "
        r"function; pass e.g. ChiefSessionCreator\(...\)$",
    ):
        cached_runs.CachedRunsCreator(lambda: None)  # a factory, not a creator


class _SessionRuns(v1.train.SessionRunHook):
    """Notes whether the session hooks are given runs cached callables."""

    def after_create_session(self, session, coord):
        self.cached = session.run.__name__ == "cached_run"


def test_estimator_sessions_cache_their_runs(tmp_path):
    zoo.compat.uninstall()
    zoo.compat.install()
    try:
        x, y = m.data()
        estimator = tf.estimator.Estimator(m.model_fn, str(tmp_path), params={"hidden": 4})
        hooks = {name: _SessionRuns() for name in ("train", "evaluate", "predict")}
        estimator.train(m.input_fn(x, y), steps=3, hooks=[hooks["train"]])
        metrics = estimator.evaluate(
            m.input_fn(x, y, repeat=False), steps=2, hooks=[hooks["evaluate"]]
        )
        next(estimator.predict(m.input_fn(x, y, repeat=False), hooks=[hooks["predict"]]))
    finally:
        zoo.compat.uninstall()
    assert {name: hook.cached for name, hook in hooks.items()} == dict.fromkeys(hooks, True)
    assert metrics["global_step"] == 3 and np.isfinite(metrics["loss"])
