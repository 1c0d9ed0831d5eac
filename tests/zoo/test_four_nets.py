"""Four TF1 nets nobody here wrote, through graph mode, ``zoo.share`` and ``ZooLayer``.

tf-slim 1.1.0's ``alexnet_v2``, ``resnet_v1_50`` and ``inception_v1`` from the installed
``tf_slim`` package, as released (after ``zoo.compat.install()``), and a
CIFAR-10-tutorial-shaped ``inference()`` (``tests.zoo.tf1_code.cifar_style``: raw
``get_variable``, weight decay in the ``"losses"`` collection, a reshape by the static
batch). Each at the smallest input it accepts, batch 2, 5 classes. The checks, per path:
the variable names of the graph build; a ``Saver`` checkpoint restored with output
difference 0 in evaluation; the regularization losses equal in count and value; every
training step lowers the loss (SGD on one fixed batch at a rate per net that does not
overshoot: :data:`LEARNING_RATES`); the moving statistics move in training and not in
evaluation, each by an update op of its own (two per batch norm, as TF adds); in Keras,
``.keras`` save and load give the same output. docs/migrating.md has the table.

TF1 code is graph code: it needs no AutoGraph, whose conversion of tf-slim's ResNet and
Inception on every trace cost three quarters of this file's time. Those two run
unconverted (``tf.autograph.experimental.do_not_convert``); AlexNet, the tutorial's net
and docs/migrating.md's small TF-Slim ResNet (tests/zoo/test_migrating_doc.py) go
through AutoGraph as a user's function does by default. Each net's tests share one
graph-mode run: ``make test`` keeps them on one worker (``--dist loadgroup``).
"""

import importlib.util

import keras
import numpy as np
import pytest
import tensorflow as tf

import zoo.compat
from tests.zoo import tf1_code
from zoo.sharing.keras import ZooLayer
from zoo.sharing.share import checkpoint_name, restore_by_name, share

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("tf_slim") is None, reason="needs tf-slim"
)
v1 = tf.compat.v1
BATCH, CLASSES = 2, tf1_code.CLASSES
# Each path trains by SGD on one fixed batch, at a rate per net that does not overshoot,
# so that every step lowers the loss whatever the machine's arithmetic: batch norm on 2
# images makes the loss steep (at 1e-4 inception_v1's rose after a step of fit, and
# resnet_v1_50's after a graph step, even at 1e-5); cifar10's is flat (at 1e-2 a step
# lowers it by 3e-3)
LEARNING_RATES = {"alexnet_v2": 1e-5, "resnet_v1_50": 1e-6, "inception_v1": 1e-5,
                  "cifar10": 1e-2}  # fmt: skip
GRAPH_STEPS = 6
MOVING = ("/moving_mean", "/moving_variance")


def slim_net(name, training, images):
    """tf-slim's net ``name`` on ``images``, its arg_scope, 5 classes, no dropout (a
    training loss without noise, to see it fall in a few steps): the logits."""
    import tf_slim as slim  # noqa: PLC0415  (after zoo.compat.install())
    from tf_slim.nets import alexnet, inception_v1, resnet_v1  # noqa: PLC0415

    net, arg_scope = {
        "alexnet_v2": (alexnet.alexnet_v2, alexnet.alexnet_v2_arg_scope),
        "resnet_v1_50": (resnet_v1.resnet_v1_50, resnet_v1.resnet_arg_scope),
        "inception_v1": (inception_v1.inception_v1, inception_v1.inception_v1_arg_scope),
    }[name]
    no_dropout = {} if name == "resnet_v1_50" else {"dropout_keep_prob": 1.0}
    with slim.arg_scope(arg_scope()):
        logits, _ = net(images, num_classes=CLASSES, is_training=training, **no_dropout)
    return tf.reshape(logits, [images.shape[0], CLASSES])


@keras.saving.register_keras_serializable(package="tests")
def alexnet_v2(images, training):
    return slim_net("alexnet_v2", training, images)


@keras.saving.register_keras_serializable(package="tests")
@tf.autograph.experimental.do_not_convert
def resnet_v1_50(images, training):
    return slim_net("resnet_v1_50", training, images)


@keras.saving.register_keras_serializable(package="tests")
@tf.autograph.experimental.do_not_convert
def inception_v1(images, training):
    return slim_net("inception_v1", training, images)


@keras.saving.register_keras_serializable(package="tests")
def cifar10(images, training):
    """The tutorial's ``inference(images)``: no training argument of its own."""
    del training
    return tf1_code.cifar_style(images)


# name -> (function, input shape: the smallest each accepts)
NETS = {
    "alexnet_v2": (alexnet_v2, (195, 195, 3)),  # fc6 is a 5x5 VALID convolution
    "resnet_v1_50": (resnet_v1_50, (64, 64, 3)),  # 32 is 1x1 in block4: batch norm of 2
    "inception_v1": (inception_v1, (193, 193, 3)),  # a 7x7 VALID average pool at the end
    "cifar10": (cifar10, (tf1_code.SIDE, tf1_code.SIDE, tf1_code.CHANNELS)),
}
SLOW = {"alexnet_v2", "resnet_v1_50", "inception_v1"}
# tf-slim names its end points by the variable scope's name scope
# (``sc.original_name_scope``), which TensorFlow keeps only in a graph: None eagerly.
GRAPH_ONLY = {"alexnet_v2": "max_pool2d", "inception_v1": "conv2d"}
PARAMS = [
    pytest.param(
        name,
        id=name,
        marks=[pytest.mark.xdist_group(f"four_nets_{name}")]
        + ([pytest.mark.slow] if name in SLOW else []),
    )
    for name in NETS
]


@pytest.fixture(scope="module", autouse=True)
def installed():
    with zoo.compat.installed():
        yield


@pytest.fixture(scope="module", autouse=True)
def eager_arithmetic():
    """Grappler off, so that a Session and ``tf.function`` compute in the order the code
    does, as eager mode does: its arithmetic optimizer regroups each resnet
    bottleneck's sum (the batch norm's ``x * scale + offset`` plus the shortcut) and
    the outputs differ in the last bits (docs/migrating.md). Its other passes only
    cost time here (a sixth of this file's CPU), on graphs run for a few steps."""
    before = tf.config.optimizer.get_experimental_options()
    tf.config.optimizer.set_experimental_options({"disable_meta_optimizer": True})
    yield
    off = before.get("disable_meta_optimizer", False)
    tf.config.optimizer.set_experimental_options({"disable_meta_optimizer": off})


def inputs(name, rows=BATCH, seed=0):
    shape = NETS[name][1]
    return np.random.default_rng(seed).uniform(size=[rows, *shape]).astype(np.float32)


def labels(rows=BATCH):
    return np.arange(rows) % CLASSES


def penalties():
    """The graph's regularization losses and what the code put into ``"losses"``."""
    return v1.get_collection(v1.GraphKeys.REGULARIZATION_LOSSES) + v1.get_collection(
        v1.GraphKeys.LOSSES
    )


def moving(variables):
    """Copies of the moving statistics among ``{name: variable}``, by name."""
    return {n: np.array(v.numpy()) for n, v in variables.items() if n.endswith(MOVING)}


def assert_restored(variables, checkpoint, found, expected):
    """Every variable holds its checkpoint entry bit for bit; the output equals the
    graph program's exactly (with the same grappler options: :func:`eager_arithmetic`)."""
    reader = tf.train.load_checkpoint(checkpoint)
    for entry, variable in variables.items():
        np.testing.assert_array_equal(variable.numpy(), reader.get_tensor(entry))
    np.testing.assert_array_equal(found, expected)


def same_values(a, b):
    return a.keys() == b.keys() and all(np.array_equal(a[n], b[n]) for n in a)


def training_step(loss, optimizer):
    """tf-slim's training op (``create_train_op``): the update ops of ``UPDATE_OPS``
    behind one barrier the loss waits for, then the step; its value is the loss before
    the step. (The same as ``minimize`` under ``control_dependencies(UPDATE_OPS)``, but
    not every gradient op depends on each of the 114 update ops: 214,000 graph edges
    fewer in inception_v1, whose first step's graph optimization took 8 of its 22 s.)"""
    import tf_slim as slim  # noqa: PLC0415  (after zoo.compat.install())

    return slim.learning.create_train_op(loss, optimizer, global_step=None)


class GraphRun:
    """The TF1 program: built in a graph, trained a few steps, saved with a Saver."""

    def __init__(self, name, directory):
        function, _ = NETS[name]
        x, y = inputs(name), labels()
        with tf.Graph().as_default():
            v1.set_random_seed(0)  # the initial weights: the same run every time
            images = v1.placeholder(tf.float32, x.shape)
            training = v1.placeholder_with_default(False, [])
            logits = function(images, training)
            penalty = sorted(penalties(), key=lambda t: t.name)
            cross_entropy = tf.reduce_mean(
                tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits)
            )
            optimizer = v1.train.GradientDescentOptimizer(LEARNING_RATES[name])
            train = training_step(cross_entropy + tf.add_n(penalty), optimizer)
            self.names = [checkpoint_name(v) for v in v1.global_variables()]
            statistics = [v for v in v1.global_variables() if v.op.name.endswith(MOVING)]
            self.updates = len(v1.get_collection(v1.GraphKeys.UPDATE_OPS))
            self.statistics = len(statistics)
            with v1.Session() as session:
                session.run(v1.global_variables_initializer())
                start = session.run(statistics)
                self.evaluated = session.run(logits, {images: x})
                self.still = all(map(np.array_equal, session.run(statistics), start))
                self.losses = []  # each before its step's update: the first at the start
                for _ in range(GRAPH_STEPS):
                    self.losses.append(session.run(train, {images: x, training: True}))
                self.moved = [
                    not np.allclose(*pair)
                    for pair in zip(session.run(statistics), start, strict=True)
                ]
                self.checkpoint = v1.train.Saver().save(session, str(directory / "tf1"))
                self.expected = session.run(logits, {images: x})
                self.penalty = session.run(penalty)
            self.restored = self.restore(function, x)

    def restore(self, function, x):
        """The checkpoint restored by a Saver into a new graph: the output."""
        with tf.Graph().as_default():
            images = v1.placeholder(tf.float32, x.shape)
            logits = function(images, False)
            with v1.Session() as session:
                v1.train.Saver().restore(session, self.checkpoint)
                return session.run(logits, {images: x})


@pytest.fixture(scope="module")
def graph_runs(tmp_path_factory):
    """name -> its :class:`GraphRun`, made once per module."""
    runs = {}

    def run(name):
        if name not in runs:
            runs[name] = GraphRun(name, tmp_path_factory.mktemp(name))
        return runs[name]

    return run


@pytest.mark.parametrize("name", PARAMS)
def test_graph_mode_trains_restores_and_moves_its_statistics(graph_runs, name):
    run = graph_runs(name)
    assert len(run.names) == len(set(run.names)) > 0
    np.testing.assert_array_equal(run.restored, run.expected)
    assert len(run.penalty) > 0 and all(value > 0 for value in run.penalty)
    assert all(np.diff(run.losses) < 0)  # each step lowers the loss
    has_batch_norm = name in ("resnet_v1_50", "inception_v1")
    assert bool(run.moved) == has_batch_norm and all(run.moved) and run.still
    assert run.updates == run.statistics  # two update ops per batch norm, as TF adds


def rename_into(scope, names):
    """``restore_by_name``'s map of the checkpoint's top scopes under ``scope``."""
    return {f"{top}/": f"{scope}/{top}/" for top in {n.split("/")[0] for n in names}}


class SharedRun:
    """``zoo.share`` of a net, eagerly or inside ``tf.function``."""

    def __init__(self, name, function_mode):
        self.scope = f"{name}_{'function' if function_mode else 'eager'}"
        self.shared = share(NETS[name][0], self.scope)
        self.call = tf.function(self.penalized) if function_mode else self.penalized

    def penalized(self, x, training):
        """The logits and every penalty of this call, as in the graph build."""
        logits = self.shared(x, training=training)
        return logits, self.shared.regularization_losses

    @property
    def names(self):
        return [
            checkpoint_name(v).removeprefix(self.scope + "/") for v in self.shared.variables
        ]

    @property
    def by_name(self):
        return dict(zip(self.names, self.shared.variables, strict=True))


@pytest.mark.parametrize("function_mode", [False, True], ids=["eager", "tf_function"])
@pytest.mark.parametrize("name", PARAMS)
def test_share_builds_the_graphs_names_restores_exactly_and_trains(
    graph_runs, name, function_mode
):
    if name in GRAPH_ONLY and not function_mode:
        pytest.skip(f"tf-slim's {GRAPH_ONLY[name]} reads a name scope eager mode lacks")
    run = graph_runs(name)
    shared = SharedRun(name, function_mode)
    x, y = inputs(name), labels()
    shared.call(x, False)
    assert sorted(shared.names) == sorted(run.names)
    restore_by_name(
        shared.shared.variables, run.checkpoint, rename=rename_into(shared.scope, run.names)
    )
    logits, penalty = shared.call(x, False)
    assert_restored(shared.by_name, run.checkpoint, logits, run.expected)
    np.testing.assert_allclose(sorted(np.array(penalty)), sorted(run.penalty), rtol=1e-6)
    assert len(penalty) == len(run.penalty)

    start = moving(shared.by_name)
    shared.call(x, False)
    assert same_values(moving(shared.by_name), start)
    optimizer = keras.optimizers.SGD(LEARNING_RATES[name])
    variables = shared.shared.trainable_variables

    def step():
        with tf.GradientTape() as tape:
            logits, penalty = shared.penalized(x, True)
            loss = tf.reduce_mean(
                tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits)
            )
            loss += tf.add_n(penalty)
        optimizer.apply_gradients(
            zip(tape.gradient(loss, variables), variables, strict=True)
        )
        return loss

    step = tf.function(step) if function_mode else step
    losses = [float(step()) for _ in range(4)]
    assert all(np.diff(losses) < 0)
    moved = moving(shared.by_name)
    assert all(not np.allclose(moved[n], start[n]) for n in start)


class KerasRun:
    """A Keras 3 model around ``ZooLayer`` of a net, the static batch in its input."""

    def __init__(self, name):
        function, shape = NETS[name]
        self.layer = ZooLayer(function)
        inputs = keras.Input(shape, batch_size=BATCH)
        self.model = keras.Model(inputs, self.layer(inputs))


@pytest.mark.parametrize("name", PARAMS)
def test_zoo_layer_restores_exactly_trains_and_saves(graph_runs, name, tmp_path):
    run = graph_runs(name)
    keras.utils.set_random_seed(0)
    net = KerasRun(name)
    layer, model = net.layer, net.model
    assert sorted(layer.variable_names) == sorted(run.names)
    restore_by_name(layer.tf1_variables, run.checkpoint)
    model.compile(  # before the first predict, which compile would trace again
        keras.optimizers.SGD(LEARNING_RATES[name]),
        keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    )
    x, y = inputs(name, rows=2 * BATCH), labels(2 * BATCH)  # x[:BATCH]: the graph's
    start = moving(layer.tf1_variables)
    evaluated = model.predict(x, batch_size=BATCH, verbose=0)
    assert same_values(moving(layer.tf1_variables), start)
    found = evaluated[:BATCH]
    assert_restored(layer.tf1_variables, run.checkpoint, found, run.expected)
    penalty = model.losses  # values of the weights, eagerly
    np.testing.assert_allclose(sorted(np.array(penalty)), sorted(run.penalty), rtol=1e-6)
    assert len(penalty) == len(run.penalty)

    # one fixed batch: each epoch's loss is its step's, before the update
    history = model.fit(x[:BATCH], y[:BATCH], BATCH, epochs=4, verbose=0).history["loss"]
    assert all(np.diff(history) < 0)
    fitted = moving(layer.tf1_variables)
    assert all(not np.allclose(fitted[n], start[n]) for n in start)
    predicted = model.predict(x, batch_size=BATCH, verbose=0)
    assert same_values(moving(layer.tf1_variables), fitted)

    model.save(tmp_path / f"{name}.keras")
    loaded = keras.saving.load_model(tmp_path / f"{name}.keras")
    np.testing.assert_array_equal(loaded.predict(x, batch_size=BATCH, verbose=0), predicted)
