"""zoo.compat.session: a session's repeated runs, read once and kept, give what
Session.run gives (results, fed values' casts, errors), one kept run per fetch
structure and feed keys; what cannot be kept goes through Session.run; install()
caches every session's runs and uninstall() puts TensorFlow's run back; the
Estimator's sessions are cached without install()."""

import collections

import numpy as np
import pytest
import tensorflow as tf

import zoo.compat
from layers.errors import ZooError
from tests.zoo import estimator_model as m
from zoo.compat import session as session_lib

v1 = tf.compat.v1

Pair = collections.namedtuple("Pair", "step loss")


def counting(made):
    """``_Step.make`` that appends each step it keeps to ``made``."""
    make = session_lib._Step.make

    def counted(*args):
        step = make(*args)
        if isinstance(step, session_lib._Step):
            made.append(step)
        return step

    return counted


@pytest.fixture
def graph_session(monkeypatch):
    """A graph with a counter (its update op, ``2 * counter``, ``3 * fed``, a float
    placeholder of shape [None, 2] and ``fed_int`` an int32, ``tick`` an update of
    another variable: fetched with the counter's reads without racing its update) and
    two sessions of it: one plain, one with cached runs, and the runs kept
    (``_Step.make``'s calls)."""
    graph = tf.Graph()
    with graph.as_default():
        counter = v1.get_variable("counter", [], initializer=v1.zeros_initializer())
        update = v1.assign_add(counter, 1.0).op
        double = 2.0 * counter
        fed = v1.placeholder(tf.float32, [], name="fed")
        rows = v1.placeholder(tf.float32, [None, 2], name="rows")
        fed_int = v1.placeholder(tf.int32, [], name="fed_int")
        parts = {"graph": graph, "update": update, "double": double, "fed": fed,
                 "tripled": 3.0 * fed, "counter": counter, "rows": rows,
                 "row_sums": tf.reduce_sum(rows, 1), "fed_int": fed_int,
                 "int_plus": fed_int + 1,
                 "checked": tf.debugging.check_numerics(rows, "rows")}  # fmt: skip
        ticks = v1.get_variable("ticks", [], initializer=v1.zeros_initializer())
        parts["tick"] = v1.assign_add(ticks, 1.0).op
        plain, cached = v1.Session(), v1.Session()
        for session in (plain, cached):
            session.run(v1.global_variables_initializer())
    made = []
    monkeypatch.setattr(session_lib._Step, "make", counting(made))
    session_lib.cache_runs(cached)
    with tf.Graph().as_default():
        parts["elsewhere"] = tf.constant(1.0)
    yield plain, cached, made, parts
    plain.close()
    cached.close()


def same(found, expected):
    return type(found) is type(expected) and repr(found) == repr(expected)


def test_the_private_session_names_it_uses_are_there():
    graph = tf.Graph()
    with graph.as_default():
        tensor = tf.constant(1.0)
    session = v1.Session(graph=graph)
    assert callable(session._call_tf_sessionrun) and callable(session._do_call)
    assert tensor._as_tf_output() is not None and tensor.op._c_op is not None
    assert session._closed is False
    session.close()
    assert session._closed is True


def test_results_equal_session_run_one_kept_run_per_structure(graph_session):
    plain, cached, made, p = graph_session
    defaults = collections.defaultdict(list, {"d": p["double"]})
    fetch_sets = [
        p["update"],
        # an update and a read of its variable in one run race: the update is another's
        [p["tick"], p["double"]],
        {"a": p["double"], "b": [p["double"], "double_name:0"]},
        Pair(p["tick"], p["double"]),
        (p["counter"], "mul:0", p["tick"].name),
        defaults,
    ]
    with p["graph"].as_default():
        tf.identity(p["double"], name="double_name")
    for _ in range(3):
        for fetches in fetch_sets:
            assert same(cached.run(fetches), plain.run(fetches))
    assert len(made) == len(fetch_sets)  # made at the second run of each, then reused
    assert cached.run(defaults).default_factory is list


@pytest.mark.parametrize(
    "value",
    [np.ones((3, 2), np.float32), np.ones((3, 2)), np.ones((1, 2), np.int64) * 7],
    ids=["float32", "float64_cast", "int64_cast"],
)
def test_fed_arrays_are_cast_as_session_run_casts_them(graph_session, value):
    plain, cached, made, p = graph_session
    fetches = [p["row_sums"], p["update"]]
    for scale in (1, 2, 3):
        assert same(cached.run(fetches, {p["rows"]: value * scale}),
                    plain.run(fetches, {p["rows"]: value * scale}))  # fmt: skip
    assert len(made) == 1


def test_fed_lists_and_tuples_are_converted_as_session_run_converts_them(graph_session):
    plain, cached, made, p = graph_session
    fetches = [p["row_sums"], p["update"]]
    for value in ([[1, 2], [3, 4]], [[0.1, 0.2]], ((1e3, -2), (True, 3)), [[2**60, 1]]):
        assert same(cached.run(fetches, {p["rows"]: value}),
                    plain.run(fetches, {p["rows"]: value}))  # fmt: skip
    assert len(made) == 1
    assert made[0].values({p["rows"]: [[1, 2]]}) is not None  # kept: not Session.run's


def test_fed_numbers_and_names_as_session_run_feeds_them(graph_session):
    plain, cached, made, p = graph_session
    for number in (2.0, 3, np.float64(0.1), np.float32(4.5), True):
        assert same(cached.run(p["tripled"], {"fed:0": number}),
                    plain.run(p["tripled"], {"fed:0": number}))  # fmt: skip
    for number in (5, np.int64(7)):
        assert cached.run(p["int_plus"], {p["fed_int"]: number}) == number + 1
    assert len(made) == 2


@pytest.mark.parametrize(
    "feeds, error",
    [
        (lambda p: {p["fed_int"]: 2**40}, TypeError),  # an int the dtype cannot hold
        (lambda p: {p["fed_int"]: 2.5}, None),  # Session.run truncates: 2 + 1
        (lambda p: {p["fed_int"]: [4]}, ValueError),  # a list: shape (1,) for ()
        (lambda p: {p["fed_int"]: [[1], 2]}, ValueError),  # a ragged list
        (lambda p: {p["fed_int"]: "4"}, None),  # a string: Session.run converts it
        (lambda p: {p["fed_int"]: tf.constant(1)}, TypeError),  # a tensor
    ],
    ids=["int_overflow", "float_to_int", "list_shape", "ragged_list", "string", "tensor"],
)
def test_what_session_run_refuses_or_converts_otherwise_it_does(
    graph_session, feeds, error
):
    plain, cached, _, p = graph_session
    cached.run(p["int_plus"], {p["fed_int"]: 1})
    cached.run(p["int_plus"], {p["fed_int"]: 1})  # kept now
    wrong, results = feeds(p), []
    for session in (plain, cached):
        if error is None:
            results.append(session.run(p["int_plus"], wrong))
            continue
        with pytest.raises(error) as raised:
            session.run(p["int_plus"], wrong)
        results.append(str(raised.value))
    assert same(results[1], results[0])


def test_wrong_shapes_and_runtime_errors_say_what_session_run_says(graph_session):
    plain, cached, _, p = graph_session
    good = {p["rows"]: np.ones((2, 2), np.float32)}
    for _ in range(2):
        cached.run(p["checked"], good)  # kept from now on
    wrong_shape = {p["rows"]: np.ones((2, 3), np.float32)}
    nan = {p["rows"]: np.full((2, 2), np.nan, np.float32)}
    for feeds, error in ((wrong_shape, ValueError), (nan, tf.errors.InvalidArgumentError)):
        messages = []
        for session in (plain, cached):
            with pytest.raises(error) as raised:
                session.run(p["checked"], feeds)
            messages.append(str(raised.value))
        assert messages[0] == messages[1]
        assert "rows" in messages[0]


def test_traces_fetched_feeds_and_unkeyed_runs_go_through_session_run(graph_session):
    plain, cached, made, p = graph_session
    with p["graph"].as_default():
        sparse = tf.sparse.SparseTensor([[0]], p["double"][None], [2])
    for _ in range(2):
        assert cached.run(sparse).values.tolist() == plain.run(sparse).values.tolist()
    metadata = v1.RunMetadata()
    options = v1.RunOptions(trace_level=v1.RunOptions.FULL_TRACE)
    for _ in range(2):
        cached.run(p["update"], options=options, run_metadata=metadata)
    assert metadata.step_stats.dev_stats  # the trace Session.run records
    for _ in range(2):  # a fed fetch is its fed value; nothing fetched, nothing run
        assert cached.run([p["fed"], p["tripled"]], {p["fed"]: 2.0}) == [2.0, 6.0]
        assert cached.run([]) == plain.run([]) and cached.run({}) == plain.run({})
    assert made == []


def test_run_metadata_without_options_is_filled_as_session_run_fills_it(graph_session):
    plain, cached, made, p = graph_session
    found = []
    for session in (plain, cached, cached, cached):  # the third through the kept run
        metadata = v1.RunMetadata()
        session.run(p["update"], options=v1.RunOptions(), run_metadata=metadata)
        found.append(metadata.SerializeToString())
    assert len(set(found)) == 1 and len(made) == 1


def test_runs_made_once_are_not_kept_and_leave_room_for_the_loop(graph_session):
    _, cached, made, p = graph_session
    with p["graph"].as_default():
        set_up = [
            v1.assign(p["counter"], float(i)) for i in range(2 * session_lib.MAX_KEPT)
        ]
    for assign in set_up:  # a program's set-up: many runs, each once
        cached.run(assign)
    for _ in range(3):
        cached.run([p["update"], p["double"]])
    assert len(made) == 1


def test_a_full_cache_still_runs(graph_session, monkeypatch):
    _, cached, made, p = graph_session
    monkeypatch.setattr(session_lib, "MAX_KEPT", 1)
    for _ in range(2):
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
def test_fetch_errors_are_session_runs(graph_session, fetches, error):
    plain, cached, _, p = graph_session
    wrong = fetches(p)
    messages = []
    for session in (plain, cached, cached):
        with pytest.raises(error) as raised:
            session.run(wrong)
        messages.append(str(raised.value))
    assert messages[0] == messages[1] == messages[2]


def test_a_closed_session_says_so(graph_session):
    _, cached, _, p = graph_session
    for _ in range(2):
        cached.run(p["double"])
    cached.close()
    with pytest.raises(RuntimeError, match="^Attempted to use a closed Session.$"):
        cached.run(p["double"])


def mlp_weights(steps, made):
    """The weights of a TF1 MLP after ``steps`` Adam steps on fed batches, and how many
    runs its session kept (``made`` grows by one a run kept)."""
    before = len(made)
    with tf.Graph().as_default():
        v1.set_random_seed(1)
        x, y = v1.placeholder(tf.float32, [None, 4]), v1.placeholder(tf.int32, [None])
        hidden = tf.nn.relu(x @ v1.get_variable("w", [4, 8]))
        logits = hidden @ v1.get_variable("out", [8, 3])
        loss = v1.losses.sparse_softmax_cross_entropy(y, logits)
        train = v1.train.AdamOptimizer(0.01).minimize(loss)
        with v1.Session() as session:
            session.run(v1.global_variables_initializer())
            data_x, data_y = m.data(64)
            for step in range(steps):
                batch = slice(step % 4 * 16, step % 4 * 16 + 16)
                session.run([train, loss], {x: data_x[batch], y: data_y[batch]})
            return session.run(v1.trainable_variables()), len(made) - before


def test_install_caches_every_sessions_runs_and_uninstall_puts_run_back(monkeypatch):
    zoo.compat.uninstall()
    run, kept = v1.Session.run, []
    monkeypatch.setattr(session_lib._Step, "make", counting(kept))
    plain, made_plain = mlp_weights(20, kept)
    changed = zoo.compat.install()
    try:
        assert "tensorflow.python.client.session.BaseSession.run" in changed
        assert v1.Session.run is v1.InteractiveSession.run is not run
        cached, made = mlp_weights(20, kept)
    finally:
        zoo.compat.uninstall()
    assert v1.Session.run is run and made_plain == 0
    assert made == 1  # the step's (the initializer and the weights' ran once)
    for found, expected in zip(cached, plain, strict=True):
        np.testing.assert_array_equal(found, expected)  # bit for bit


def test_what_is_not_a_session_or_creator_is_refused_by_name():
    with pytest.raises(
        ZooError,
        match=r"^cache_runs: expected a tf.compat.v1.Session, found str; "
        r"pass the session a SessionCreator makes \(for a MonitoredSession, wrap its "
        r"creator in CachedRunsCreator\)$",
    ):
        session_lib.cache_runs("session")
    with pytest.raises(
        ZooError,
        match=r"^CachedRunsCreator: expected a tf.compat.v1.train.SessionCreator, found "
        r"function; pass e.g. ChiefSessionCreator\(...\)$",
    ):
        session_lib.CachedRunsCreator(lambda: None)  # a factory, not a creator


class _SessionRuns(v1.train.SessionRunHook):
    """Notes whether the session its hooks are given caches its runs."""

    def after_create_session(self, session, coord):
        self.cached = session.run.__func__ is session_lib.with_cached_runs(
            session_lib._tensorflow_run()
        )


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
