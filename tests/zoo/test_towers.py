"""zoo.parallel.towers: N towers on shared variables against one tower and against numpy."""

import functools

import numpy as np
import pytest

from layers import Conv2D, Dense, ReadOut
from layers.errors import ScopeError, ShapeError, ZooError
from layers.normalization import BatchNorm, _current_settings
from tests.conftest import tf
from zoo import training
from zoo.data import DataSet
from zoo.data.batches import GraphBatches
from zoo.parallel import towers
from zoo.sharing import state
from zoo.training.checkpoints import Checkpointer

SIDE, CLASSES, BATCH = 4, 3, 8
RNG = np.random.default_rng(0)
IMAGES = RNG.normal(size=(64, SIDE * SIDE)).astype(np.float32)
LABELS = np.eye(CLASSES, dtype=np.float32)[RNG.integers(0, CLASSES, 64)]


def conv_net(batch_norm):
    """A model function: conv 3x3x2 (-> batch norm) -> ReLU -> softmax read-out."""

    def model(images, labels):
        conv = Conv2D(
            tf.reshape(images, [-1, SIDE, SIDE, 1]), 3, 1, 2, scope="conv",
            activation=tf.identity,
        )  # fmt: skip
        h = BatchNorm(conv.output, True).output if batch_norm else conv.output
        flat = tf.reshape(tf.nn.relu(h), [-1, SIDE * SIDE * 2])
        readout = ReadOut(flat, SIDE * SIDE * 2, CLASSES, names=("W_RO", "b_RO"))
        loss = tf.reduce_mean(
            tf.nn.softmax_cross_entropy_with_logits(labels=labels, logits=readout.logits)
        )
        return loss, {"accuracy": tf.reduce_mean(readout.output[:, 0])}

    return model


def variables(graph):
    return {v.op.name: v for v in graph.get_collection("variables")}


@functools.cache
def trained(n, batch_norm, steps_per_run=1):
    """The variables after 6 steps of ``train`` (each setting trained once)."""
    return train(n, conv_net(batch_norm), steps_per_run=steps_per_run)


def train(
    n, model, batch_norm="sync", steps_per_run=1, steps=6, checkpointer=None, xla=False
):
    """Trains ``steps`` steps of ``n`` towers with repeat_step; returns the variables."""
    graph = tf.Graph()
    with graph.as_default():
        tf.compat.v1.set_random_seed(1)
        batches = GraphBatches(DataSet(IMAGES, LABELS, seed=0), BATCH)
        loss_fn = towers.data_parallel(model, n, scope="net", batch_norm=batch_norm)
        optimizer = tf.compat.v1.train.GradientDescentOptimizer(0.5)
        step = training.repeat_step(
            loss_fn, optimizer, batches, steps_per_run, jit_compile=xla
        )
        init = tf.compat.v1.global_variables_initializer()
    with tf.compat.v1.Session(graph=graph, config=towers.session_config(n)) as session:
        towers.check_devices(session, n)
        session.run(init)
        batches.initialize(session)
        training.train_loop(
            session, step, None, batches, steps, BATCH, checkpointer=checkpointer
        )
        return session.run(variables(graph))


@pytest.mark.parametrize("batch_norm", [False, True], ids=["no_bn", "bn"])
def test_sync_towers_equal_one_tower(batch_norm):
    one, two = trained(1, batch_norm), trained(2, batch_norm)

    assert sorted(one) == sorted(two)
    assert max(np.abs(one[name] - two[name]).max() for name in one) <= 1e-5


def float64_conv_net(images, labels):
    """conv -> batch norm (the towers' moments) -> ReLU -> max-pool -> read-out, float64.

    Written with raw ops: the zoo's layers are float32 only. It reads the moments
    that ``batch_statistics`` hands to every BatchNorm built now.
    """
    moments, _ = _current_settings()
    f64 = tf.float64
    w = tf.compat.v1.get_variable("W", [3, 3, 1, 2], f64, tf.constant_initializer(0.3))
    conv = tf.nn.conv2d(tf.reshape(images, [-1, SIDE, SIDE, 1]), w, 1, "SAME")
    mean, variance = moments(conv, [0, 1, 2])
    h = tf.nn.relu(tf.nn.batch_normalization(conv, mean, variance, None, None, 1e-3))
    flat = tf.reshape(tf.nn.max_pool2d(h, 2, 2, "SAME"), [-1, SIDE * SIDE // 2])
    readout = tf.compat.v1.get_variable(
        "W_RO", [SIDE * SIDE // 2, CLASSES], f64, tf.constant_initializer(0.1)
    )
    logits = flat @ readout
    return tf.reduce_sum(tf.nn.softmax_cross_entropy_with_logits(labels, logits))


def test_sync_towers_in_float64_equal_one_tower_to_its_round_off():
    # Images of a zero background and a bright square, like Fashion-MNIST's: in
    # float32 their batch norm's backward pass cancels enough to leave ~1e-5.
    images = np.zeros((BATCH, SIDE, SIDE))
    images[:, 1:3, 1:3] = RNG.uniform(0.5, 1.0, size=(BATCH, 2, 2))
    weights = []
    for n in (1, 2):
        with tf.Graph().as_default() as graph:
            x = tf.constant(images.reshape(BATCH, -1))
            y = tf.constant(LABELS[:BATCH].astype(np.float64))
            loss, _ = towers.data_parallel(
                float64_conv_net, n, scope="net", batch_norm="sync", loss_reduction="sum"
            )(x, y)
            step = tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(loss)
            with tf.compat.v1.Session(config=towers.session_config(n)) as session:
                session.run(tf.compat.v1.global_variables_initializer())
                session.run(step)
                weights.append(session.run(variables(graph)))
    one, two = weights
    assert max(np.abs(one[name] - two[name]).max() for name in one) <= 1e-12


def test_towers_inside_a_k_step_loop_equal_one_step_per_run():
    one_per_run, three_per_run = trained(2, True), trained(2, True, steps_per_run=3)
    for name, value in one_per_run.items():
        np.testing.assert_allclose(three_per_run[name], value, atol=1e-6)


def test_sync_towers_in_an_xla_loop_equal_one_tower():
    one, two = (
        train(n, conv_net(True), steps_per_run=2, steps=2, xla=True) for n in (1, 2)
    )
    assert max(np.abs(one[name] - two[name]).max() for name in one) <= 1e-5


def test_a_resumed_run_of_towers_ends_with_the_same_weights(tmp_path):
    straight = trained(2, True, steps_per_run=3)
    train(2, conv_net(True), steps_per_run=3, steps=4, checkpointer=Checkpointer(tmp_path))
    resumed = train(
        2, conv_net(True), steps_per_run=3, checkpointer=Checkpointer(tmp_path, resume=True)
    )
    for name, value in straight.items():
        np.testing.assert_array_equal(resumed[name], value)


def test_the_nan_guard_stops_towers_at_the_bad_step(tmp_path):
    def model(images, labels):
        loss, metrics = conv_net(False)(images, labels)
        step = tf.compat.v1.train.get_or_create_global_step()
        return loss * tf.where(step >= 2, np.nan, 1.0), metrics

    graph = tf.Graph()
    with graph.as_default():
        batches = GraphBatches(DataSet(IMAGES, LABELS, seed=0), BATCH)
        global_step = tf.compat.v1.train.get_or_create_global_step()
        loss_fn = towers.data_parallel(model, 2, scope="net")
        optimizer = tf.compat.v1.train.GradientDescentOptimizer(0.5)
        step = training.repeat_step(loss_fn, optimizer, batches, 1, global_step=global_step)
        init = tf.compat.v1.global_variables_initializer()
    with tf.compat.v1.Session(graph=graph, config=towers.session_config(2)) as session:
        session.run(init)
        batches.initialize(session)
        with pytest.raises(training.NonFiniteLossError, match="found nan at step 2;"):
            training.train_loop(
                session, step, None, batches, 6, BATCH, checkpointer=Checkpointer(tmp_path)
            )


def test_per_tower_mode_updates_the_moving_statistics_once_from_tower_0(graph):
    decay = 0.9
    x = tf.compat.v1.placeholder(tf.float32, [BATCH, 2])

    def model(inputs):
        return tf.reduce_sum(BatchNorm(inputs, True, decay=decay).output)

    loss, _ = towers.data_parallel(model, 2, scope="net")(x)
    updates = tf.compat.v1.get_collection(tf.compat.v1.GraphKeys.UPDATE_OPS)
    moving = variables(graph)
    with tf.compat.v1.Session(config=towers.session_config(2)) as session:
        session.run(tf.compat.v1.global_variables_initializer())
        mean, variance = np.zeros(2), np.ones(2)
        for _ in range(3):
            batch = RNG.normal(3.0, 2.0, size=(BATCH, 2)).astype(np.float32)
            session.run([loss, updates], {x: batch})
            first = batch[: BATCH // 2]  # tower 0's shard
            mean = decay * mean + (1 - decay) * first.mean(0)
            variance = decay * variance + (1 - decay) * first.var(0)
        np.testing.assert_allclose(session.run(moving["net/bn/moving_mean"]), mean, 1e-5)
        np.testing.assert_allclose(
            session.run(moving["net/bn/moving_variance"]), variance, 1e-5
        )
    assert len(updates) == len(
        {op.name for op in updates if op.name.startswith("tower_0/")}
    )


def test_towers_share_the_variables_and_average_the_gradients(graph):
    x = tf.compat.v1.placeholder(tf.float32, [6, 3])
    y = tf.compat.v1.placeholder(tf.float32, [6, 1])

    def model(inputs, targets):
        w = tf.compat.v1.get_variable("w", [3, 1])
        return tf.reduce_mean(tf.square(inputs @ w - targets))

    loss, _ = towers.data_parallel(model, 3, scope="linear")(x, y)
    (w,) = tf.compat.v1.global_variables()
    assert w.name == "linear/w:0" and w.device == "/device:CPU:0"
    reads = [op for op in graph.get_operations() if op.type == "MatMul"]
    assert sorted(op.device for op in reads) == [f"/device:CPU:{i}" for i in range(3)]
    (gradient,) = tf.gradients(loss, [w])
    xs, ys = RNG.normal(size=(6, 3)), RNG.normal(size=(6, 1))
    with tf.compat.v1.Session(config=towers.session_config(3)) as session:
        session.run(tf.compat.v1.global_variables_initializer())
        w_value = session.run(w)
        found = session.run(gradient, {x: xs, y: ys})
    per_tower = [
        2 * xi.T @ (xi @ w_value - yi) / len(xi)
        for xi, yi in zip(np.split(xs, 3), np.split(ys, 3), strict=True)
    ]
    np.testing.assert_allclose(found, np.mean(per_tower, axis=0), rtol=1e-5)


def test_summed_losses_add_up(graph):
    x = tf.compat.v1.placeholder(tf.float32, [4, 1])

    def model(inputs):
        return tf.reduce_sum(inputs * tf.compat.v1.get_variable("w", [], tf.float32))

    summed, _ = towers.data_parallel(model, 2, scope="s", loss_reduction="sum")(x)
    averaged, _ = towers.data_parallel(model, 2, scope="m")(x)
    with tf.compat.v1.Session(config=towers.session_config(2)) as session:
        session.run(tf.compat.v1.global_variables_initializer())
        w = session.run(tf.compat.v1.global_variables())
        values = session.run([summed, averaged], {x: [[1.0], [2.0], [3.0], [4.0]]})
    np.testing.assert_allclose(values, [10 * w[0], 5 * w[1]], rtol=1e-6)


@pytest.mark.parametrize("batch_norm", towers.BATCH_NORM_MODES)
def test_the_towers_create_no_variable_of_their_own(graph, batch_norm):
    x = tf.compat.v1.placeholder(tf.float32, [BATCH, SIDE * SIDE])
    y = tf.compat.v1.placeholder(tf.float32, [BATCH, CLASSES])
    with tf.compat.v1.variable_scope("one"):
        towers.data_parallel(conv_net(True), 1, scope="net")(x, y)
    with tf.compat.v1.variable_scope("two"):
        towers.data_parallel(conv_net(True), 2, scope="net", batch_norm=batch_norm)(x, y)
    names = [v.op.name for v in tf.compat.v1.global_variables()]
    one = [name.removeprefix("one/") for name in names if name.startswith("one/")]
    two = [name.removeprefix("two/") for name in names if name.startswith("two/")]
    assert one == two and len(one) == 8  # conv W, b; gamma, beta, 2 moving; W_RO, b_RO
    assert len(tf.compat.v1.trainable_variables()) == 12


def test_a_state_copy_reads_the_towers_variables(graph):
    x = tf.compat.v1.placeholder(tf.float32, [BATCH, SIDE * SIDE])
    y = tf.compat.v1.placeholder(tf.float32, [BATCH, CLASSES])
    towers.data_parallel(conv_net(True), 2, scope="online", batch_norm="sync")(x, y)
    with tf.compat.v1.variable_scope("target"):
        conv_net(True)(x, y)
    copy = state.copy_scope("online", "target", include_non_trainable=True)
    with tf.compat.v1.Session(config=towers.session_config(2)) as session:
        session.run(tf.compat.v1.global_variables_initializer())
        session.run(copy.op)
        online, target = (
            session.run(tf.compat.v1.global_variables(scope))
            for scope in ("online", "target")
        )
    assert len(copy.pairs) == 8
    for a, b in zip(online, target, strict=True):
        np.testing.assert_array_equal(a, b)


def build_error(model, n=2, shape=(BATCH, 2), **kwargs):
    """Builds ``n`` towers of ``model`` on a placeholder in a new graph."""
    with tf.Graph().as_default():
        x = tf.compat.v1.placeholder(tf.float32, shape)
        towers.data_parallel(model, n, scope="net", **kwargs)(x)


def dense(inputs):
    w = tf.compat.v1.get_variable("w", [2, 1])
    return tf.reduce_sum(inputs @ w)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"n": 0}, "expected the number of towers to be an int >= 1, found 0"),
        ({"n": True}, "expected the number of towers to be an int >= 1, found True"),
        (
            {"batch_norm": "all"},
            "expected batch_norm to be one of per-tower, sync, found 'all'",
        ),
        (
            {"loss_reduction": "max"},
            "expected loss_reduction to be one of mean, sum, found",
        ),
        ({"scope": ""}, "expected scope a non-empty string, found ''"),
    ],
)
def test_bad_arguments_are_refused(kwargs, message):
    n = kwargs.pop("n", 2)
    with pytest.raises(ZooError, match=message):
        towers.data_parallel(dense, n, **{"scope": "net", **kwargs})


def test_a_batch_that_does_not_split_is_refused():
    with pytest.raises(ShapeError, match="expected a batch divisible by 3 towers, found 8"):
        build_error(dense, n=3)


def test_more_towers_than_gpus_are_refused(monkeypatch):
    monkeypatch.setattr(tf.config, "list_physical_devices", lambda kind: ["GPU:0"])
    with pytest.raises(ZooError, match=r"expected at most 1 towers \(one per GPU\)"):
        build_error(dense)


def test_a_session_without_the_towers_devices_is_refused(graph):
    with tf.compat.v1.Session() as session:
        with pytest.raises(ZooError, match="found the session without cpu:1;.*"
                           r"session_config\(2\)"):  # fmt: skip
            towers.check_devices(session, 2)


@pytest.mark.parametrize("batch_norm", towers.BATCH_NORM_MODES)
def test_a_new_variable_in_a_later_tower_is_refused(batch_norm):
    def model(inputs):
        extra = tf.Variable(1.0, name="extra")
        return dense(inputs) * extra

    with pytest.raises(ScopeError, match="tower 1: towers: expected tower 1 to reuse "
                       "tower 0's variables, found it creating 'extra'"):  # fmt: skip
        build_error(model, batch_norm=batch_norm)


def test_a_loss_that_is_not_a_scalar_is_refused():
    with pytest.raises(ZooError, match="tower 0: towers: expected model_fn to return a "
                       "scalar loss"):  # fmt: skip
        build_error(lambda inputs: inputs)


@pytest.mark.parametrize("batch_norm", towers.BATCH_NORM_MODES)
def test_an_error_in_a_tower_names_the_tower(batch_norm):
    built = []

    def model(inputs):
        built.append(1)
        if len(built) == 2:
            raise KeyError("oops")
        return tf.reduce_sum(BatchNorm(inputs, True).output)

    with pytest.raises(KeyError, match="oops") as caught:
        build_error(model, batch_norm=batch_norm)
    assert caught.value.__notes__ == ["(raised while building tower 1)"]


def test_sync_towers_that_build_different_batch_norms_are_refused():
    built = []

    def model(inputs):
        first = not built
        built.append(1)
        h = BatchNorm(inputs, True).output
        if first:  # tower 0 only
            h = BatchNorm(h, True, scope="bn_2").output
        return tf.reduce_sum(h)

    message = (
        "tower 0: towers: expected every tower to reach synchronized batch norm call 3, "
        "found tower 1 finished after 2"
    )
    with pytest.raises(ZooError, match=message):
        build_error(model, batch_norm="sync")


def test_sync_batch_norm_with_a_training_tensor_is_refused():
    def model(inputs):
        training = tf.compat.v1.placeholder_with_default(True, [])
        return tf.reduce_sum(BatchNorm(inputs, training).output)

    with pytest.raises(ZooError, match="tower 0: towers: expected synchronized batch "
                       "norm built in training mode"):  # fmt: skip
        build_error(model, batch_norm="sync")


def test_an_ema_inside_the_towers_finds_tower_0s_shadow_variables(graph):
    applied = []

    def model(inputs):
        loss = dense(inputs)
        ema = tf.compat.v1.train.ExponentialMovingAverage(0.9)
        applied.append(ema.apply(tf.compat.v1.trainable_variables()))
        return loss

    x = tf.compat.v1.placeholder(tf.float32, [BATCH, 2])
    towers.data_parallel(model, 2, scope="net")(x)
    names = [v.op.name for v in tf.compat.v1.global_variables()]
    assert names == ["net/w", "net/net/w/ExponentialMovingAverage"]  # one shadow
    assert len(applied) == 2  # an update per tower: build the EMA outside the towers


def test_the_weights_of_two_towers_runs_are_compared_without_optimizer_slots(graph):
    x = tf.compat.v1.placeholder(tf.float32, [BATCH, 2])

    def model(inputs):
        return tf.reduce_sum(Dense(BatchNorm(inputs, True).output, 2, 1, scope="fc").output)

    loss, _ = towers.data_parallel(model, 2, scope="net")(x)
    tf.compat.v1.train.MomentumOptimizer(0.1, 0.9).minimize(loss)
    tf.compat.v1.get_variable("elsewhere", [1])  # outside the scope: not a weight
    weights = towers.scope_weights("net", slots=("Momentum",))
    assert sorted(weights) == [
        "net/bn/beta", "net/bn/gamma", "net/bn/moving_mean", "net/bn/moving_variance",
        "net/fc/W", "net/fc/b",
    ]  # fmt: skip
    assert "net/fc/W/Momentum" in towers.scope_weights("net")
    a = {name: RNG.normal(size=v.shape).astype(np.float32) for name, v in weights.items()}
    b = {name: value.copy() for name, value in a.items()}
    b["net/fc/W"][0, 0] += 0.25
    b["net/bn/moving_variance"][1] -= 0.5
    diffs = towers.weight_differences(a, b)
    assert diffs == pytest.approx(
        {
            name: {"net/fc/W": 0.25, "net/bn/moving_variance": 0.5}.get(name, 0.0)
            for name in a
        }
    )
    assert towers.largest_difference(a, b) == pytest.approx(0.5)
    assert towers.statistics_differences(a, b) == pytest.approx(
        {"moving_mean": 0.0, "moving_variance": 0.5}
    )
    del b["net/fc/b"]
    message = r"weight_differences: expected the same names .* found \['net/fc/b'\] in one"
    with pytest.raises(ZooError, match=message):
        towers.weight_differences(a, b)
