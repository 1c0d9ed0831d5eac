"""The contenders :mod:`experiments.bench.speed` times, each as ``run(steps)``.

Our loop fed three ways (in-graph batches, ``feed_dict``, one fixed batch), Keras 3
``model.fit`` at its defaults and at its best, a hand-written ``tf.function`` loop,
and the compute and matmul limits; see :mod:`experiments.bench.speed` for what
each one measures. A ``case`` is a :class:`experiments.bench.speed.Case`.

This module imports TensorFlow and Keras: the benchmark imports it after its flags
are parsed.
"""

import dataclasses
import functools
import gc

import keras
import numpy as np
import tensorflow as tf
from tensorflow.core.protobuf.rewriter_config_pb2 import RewriterConfig

from experiments.bench import precision as bf16
from zoo import training
from zoo.data.batches import GraphBatches, batch_dataset
from zoo.models import autoencoder, mlp_classifier
from zoo.training import precision

LEARNING_RATE = 0.1
N_HIDDEN = 625
MLP_HIDDEN = (625, 625)
MLP_L2 = 0.01


# --------------------------------------------------------------------------- ours


def build_ours(case, x, y):
    """Builds the zoo model on ``x``/``y`` and returns its loss."""
    if case.model == "autoencoder":
        return autoencoder(x, tied=case.tied, scope="ae").loss
    return mlp_classifier(x, y, scope="mlp", hidden=MLP_HIDDEN, l2=MLP_L2).loss


def session_config(args):
    """Returns the ``ConfigProto`` of the session-based contenders from the flags."""
    return tf.compat.v1.ConfigProto(
        inter_op_parallelism_threads=args.inter_op,
        intra_op_parallelism_threads=args.intra_op,
    )


def zoo_step(case, loss_of=None):
    """Returns ``(looped, fed)``, the two ways :func:`ours` builds a step of ``case``.

    ``looped(batches, steps_per_run, xla)`` returns the
    :class:`zoo.training.RepeatedStep` over a batch source; ``fed(x, y)`` returns
    ``(train_op, loss)`` on placeholders. Adagrad 0.1, as every model here;
    ``loss_of(x, y)`` builds the loss (default: :func:`build_ours` of ``case``).
    """
    loss_of = loss_of or (lambda x, y: build_ours(case, x, y))

    def looped(batches, steps_per_run, xla):
        return training.repeat_step(
            loss_of,
            tf.compat.v1.train.AdagradOptimizer(LEARNING_RATE),
            batches,
            steps_per_run,
            jit_compile=xla,
        )

    def fed(x, y):
        loss = loss_of(x, y)
        return tf.compat.v1.train.AdagradOptimizer(LEARNING_RATE).minimize(loss), loss

    return looped, fed


def ours(
    case,
    train,
    args,
    source="graph",
    steps_per_run=1,
    xla=False,
    step=None,
    policy="float32",
):
    """Returns ``run(steps)`` for our training loop.

    Args:
        case: the :class:`Case`.
        train: the training :class:`zoo.data.DataSet` (copied, so every
            contender starts at the same batch).
        args: the flags (session config, seed).
        source: ``"graph"`` (:class:`zoo.data.batches.GraphBatches`, as the
            autoencoder experiment does), ``"feed"`` (``next_batch`` through
            ``feed_dict``), or ``"fixed"`` (one batch held in a variable: no
            input cost at all); the first two run ``training.train_loop``.
        steps_per_run: training steps per ``session.run`` (a ``tf.while_loop``
            of :func:`zoo.training.repeat_step` when above 1).
        xla: compile the loop with XLA (``repeat_step(jit_compile=True)``).
        step: ``(looped, fed)`` as :func:`zoo_step` returns (its default): how
            a training step of the model is built.
        policy: the precision policy the step is built under
            (:func:`zoo.training.precision.policy`).

    Every in-graph contender of a case is built in one graph and runs in one
    session (:func:`_case_graph`), each under a variable scope of its own; those
    with in-graph batches read one copy of the training arrays.
    """
    looped, fed = step or zoo_step(case)
    batches = dataclasses.replace(train, epoch=0, position=0)
    home = _case_graph(train, args)
    with home.graph.as_default(), tf.compat.v1.variable_scope(None, "contender"):
        built = len(tf.compat.v1.global_variables())
        if source in ("graph", "fixed"):
            if source == "graph":
                source_batches = GraphBatches(
                    batches, case.batch_size, arrays_of=home.arrays
                )
                home.arrays = home.arrays or source_batches
            else:
                source_batches = FixedBatch(batches, case.batch_size)
            with precision.policy(policy):
                train_op, loss = looped(source_batches, steps_per_run, xla), None
        else:
            x = tf.compat.v1.placeholder(tf.float32, [None, train.images.shape[1]], "x")
            y = tf.compat.v1.placeholder(tf.float32, [None, train.labels.shape[1]], "y")
            with precision.policy(policy):
                train_op, loss = fed(x, y)
        init = tf.compat.v1.variables_initializer(tf.compat.v1.global_variables()[built:])
    session = home.session
    session.run(init)
    feed = None
    if source == "graph":
        batches = source_batches
        batches.initialize(session)
    elif source == "feed":

        def feed(images, labels):
            return {x: images, y: labels} if case.model == "mlp" else {x: images}

    if source == "fixed":
        return repeat_callable(session.make_callable(train_op.train_op), steps_per_run)

    def run(steps):
        training.train_loop(session, train_op, loss, batches, steps, case.batch_size, feed)

    return run


_CASE_GRAPHS = {}


@dataclasses.dataclass
class _CaseGraph:
    graph: tf.Graph
    session: tf.compat.v1.Session
    arrays: GraphBatches | None = None  # the batches that hold the arrays' copy


def _case_graph(train, args):
    """Returns the graph and session of the in-graph contenders on ``train`` (until
    :func:`release`): one copy of the arrays in one session, not one per contender."""
    key = id(train.images)
    if key not in _CASE_GRAPHS:
        graph = tf.Graph()
        with graph.as_default():
            tf.compat.v1.set_random_seed(args.seed)
        session = tf.compat.v1.Session(graph=graph, config=session_config(args))
        _CASE_GRAPHS[key] = (train.images, _CaseGraph(graph, session))
    return _CASE_GRAPHS[key][1]


class FixedBatch:
    """One batch held in variables, drawn again by every step: no input cost at all.

    It has what :func:`zoo.training.repeat_step` reads of a
    :class:`zoo.data.batches.GraphBatches` (``images``, ``labels``, ``draw()``,
    ``window``).
    """

    window = 256

    def __init__(self, train, batch_size):
        self.images, self.labels = (
            tf.Variable(array, trainable=False).value()
            for array in train.next_batch(batch_size)
        )

    def draw(self):
        return self.images, self.labels


def repeat_callable(step, steps_per_run):
    """Returns ``run(steps)`` calling ``step()`` (``steps_per_run`` steps a call).

    ``steps`` must be a multiple of ``steps_per_run`` (:func:`time_rounds` makes
    its rounds so), or the run would train more steps than it counts.
    """

    def run(steps):
        assert steps % steps_per_run == 0, (steps, steps_per_run)
        for _ in range(steps // steps_per_run):
            step()

    return run


def needed_matmuls(case, n_in, n_classes):
    """Lists the matrix products a training step of ``case`` cannot do without.

    They are read from the graph of the loss and its gradients with respect to
    the trainable variables, so products no variable needs (the gradient of the
    input) are left out even where ``minimize`` computes them.

    Returns:
        A list of ``(a_shape, b_shape, transpose_a, transpose_b)``.
    """
    graph = tf.Graph()
    with graph.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [case.batch_size, n_in])
        y = tf.compat.v1.placeholder(tf.float32, [case.batch_size, n_classes])
        grads = tf.gradients(build_ours(case, x, y), tf.compat.v1.trainable_variables())
    needed = tf.compat.v1.graph_util.extract_sub_graph(
        graph.as_graph_def(), [g.op.name for g in grads]
    )
    shapes = []
    for node in needed.node:
        if node.op == "MatMul":
            op = graph.get_operation_by_name(node.name)
            a, b = (t.shape.as_list() for t in op.inputs)
            shapes.append((a, b, op.get_attr("transpose_a"), op.get_attr("transpose_b")))
    return shapes


def matmul_limit(shapes, args):
    """Returns ``run(steps)`` running only the given matrix products per step.

    Grappler's dependency optimizer would drop products whose results nothing
    reads, so it is switched off for this session.
    """
    graph = tf.Graph()
    with graph.as_default():
        rng = np.random.default_rng(args.seed)
        products = []
        for a_shape, b_shape, transpose_a, transpose_b in shapes:
            a = tf.Variable(rng.random(a_shape, dtype=np.float32))
            b = tf.Variable(rng.random(b_shape, dtype=np.float32))
            products.append(
                tf.matmul(a, b, transpose_a=transpose_a, transpose_b=transpose_b)
            )
        step = tf.group(*products)
        init = tf.compat.v1.global_variables_initializer()
    graph.finalize()
    config = session_config(args)
    config.graph_options.rewrite_options.dependency_optimization = RewriterConfig.OFF
    session = tf.compat.v1.Session(graph=graph, config=config)
    session.run(init)

    def run(steps):
        for _ in range(steps):
            session.run(step)

    return run


# --------------------------------------------------------------------------- TF2


# id(images) -> (images, labels, their eager variables): one copy of a data set for
# every TF2 contender (a copy each held 190 MB of Fashion-MNIST apiece), kept for the
# process (a bench row's, which times one data set). Variables, not eager tensors: tf.data
# copies the eager tensors a pipeline captures when it is iterated (190 MB more).
_EAGER_COPIES = {}


def _in_variables(train):
    """Returns eager variables holding copies of ``train``'s images and labels."""
    return tuple(tf.Variable(a, trainable=False) for a in (train.images, train.labels))


def one_copy(train):
    """Returns ``train`` over the eager copy of its arrays that :func:`eager_batches` reads.

    Its images and labels are read-only numpy views of those variables' values, so the
    numpy readers (``feed_dict``, ``next_batch``, ``GraphBatches``' initialization) and
    the TF2 contenders hold the data once; drop ``train`` to free its own arrays.
    """
    variables = _in_variables(train)
    images, labels = (np.asarray(v.value()) for v in variables)
    _EAGER_COPIES[id(images)] = (images, labels, variables)
    return dataclasses.replace(train, images=images, labels=labels)


def eager_batches(train, batch_size, seed):
    """Returns the endless ``tf.data`` batches of ``train`` for the TF2 contenders,
    all reading one eager copy of its arrays (:func:`one_copy`'s, or made here once)."""
    key = id(train.images)
    if key not in _EAGER_COPIES:
        _EAGER_COPIES[key] = (train.images, train.labels, _in_variables(train))
    return batch_dataset(*_EAGER_COPIES[key][2], batch_size, seed)


def release():
    """Frees what the contenders of a case held (their sessions and Keras models), so
    the next case reuses that memory instead of adding to it."""
    for _, home in _CASE_GRAPHS.values():
        home.session.close()
    _CASE_GRAPHS.clear()
    keras.backend.clear_session()
    gc.collect()


class TiedAutoencoder(keras.layers.Layer):
    """Keras layer ``sigmoid(x @ W + b) @ W.T + c``: the decoder reads the encoder's kernel.

    Args:
        units: width of the code.
    """

    def __init__(self, units, **kwargs):
        super().__init__(**kwargs)
        self.units = units

    def build(self, input_shape):
        n_in = input_shape[-1]
        truncated = keras.initializers.TruncatedNormal(stddev=0.05)
        self.kernel = self.add_weight(shape=(n_in, self.units), initializer=truncated)
        self.encoder_bias = self.add_weight(shape=(self.units,), initializer="zeros")
        self.decoder_bias = self.add_weight(shape=(n_in,), initializer="zeros")

    def call(self, x):
        code = keras.ops.sigmoid(keras.ops.matmul(x, self.kernel) + self.encoder_bias)
        return keras.ops.matmul(code, keras.ops.transpose(self.kernel)) + self.decoder_bias


def keras_model(case, n_in, n_classes, steps_per_execution=1, jit_compile="auto"):
    """Returns the compiled Keras 3 model of ``case`` (outputs are logits)."""
    truncated = keras.initializers.TruncatedNormal(stddev=0.05)
    if case.model == "autoencoder":
        if case.tied:
            layers = [TiedAutoencoder(N_HIDDEN)]
        else:
            layers = [
                keras.layers.Dense(N_HIDDEN, "sigmoid", kernel_initializer=truncated),
                keras.layers.Dense(n_in, kernel_initializer=truncated),
            ]
        loss = keras.losses.BinaryCrossentropy(from_logits=True)
    else:
        l2 = keras.regularizers.L2(MLP_L2 / 2)  # tf.nn.l2_loss is sum(w**2) / 2
        layers = [
            keras.layers.Dense(
                n, "relu", kernel_initializer=truncated, kernel_regularizer=l2
            )
            for n in MLP_HIDDEN
        ]
        layers.append(
            keras.layers.Dense(
                n_classes, kernel_initializer=keras.initializers.RandomNormal(stddev=0.05)
            )
        )
        loss = keras.losses.CategoricalCrossentropy(from_logits=True, reduction="sum")
    model = keras.Sequential([keras.Input((n_in,)), *layers])
    model.compile(
        optimizer=keras.optimizers.Adagrad(LEARNING_RATE),
        loss=loss,
        steps_per_execution=steps_per_execution,
        jit_compile=jit_compile,
    )
    return model


def keras_fit(case, train, args, steps_per_execution=1, jit_compile="auto"):
    """Returns ``run(steps)`` calling ``model.fit`` for ``steps`` steps.

    Args:
        case, train, args: as :func:`ours`.
        steps_per_execution: Keras's steps per call of its compiled function.
        jit_compile: Keras's ``compile(jit_compile=...)``: "auto", True or False.
    """
    keras.utils.set_random_seed(args.seed)
    model = keras_model(
        case, train.images.shape[1], train.labels.shape[1], steps_per_execution, jit_compile
    )
    dataset = eager_batches(train, case.batch_size, args.seed)
    if case.model == "autoencoder":

        @tf.autograph.experimental.do_not_convert
        def images_as_targets(images, _labels):
            return images, images

        dataset = dataset.map(images_as_targets)

    def run(steps):
        model.fit(dataset, epochs=1, steps_per_epoch=steps, shuffle=False, verbose=0)

    return run


def tf_function(case, train, args, steps_per_call=1):
    """Returns ``run(steps)`` of a hand-written ``tf.function`` + ``GradientTape`` loop.

    Args:
        case, train, args: as :func:`ours`.
        steps_per_call: training steps per ``tf.function`` call (a
            ``tf.while_loop`` inside it, the step compiled with XLA, when above 1).
    """
    tf.random.set_seed(args.seed)
    n_in, n_classes = train.images.shape[1], train.labels.shape[1]
    if case.model == "autoencoder":
        widths = [n_in, N_HIDDEN] if case.tied else [n_in, N_HIDDEN, n_in]
    else:
        widths = [n_in, *MLP_HIDDEN, n_classes]
    weights = [
        tf.Variable(tf.random.truncated_normal([m, n], stddev=0.05))
        for m, n in zip(widths[:-1], widths[1:], strict=False)
    ]
    out_widths = [N_HIDDEN, n_in] if case.model == "autoencoder" else widths[1:]
    biases = [tf.Variable(tf.zeros([n])) for n in out_widths]
    params = weights + biases
    accumulators = [tf.Variable(tf.fill(p.shape, 0.1)) for p in params]

    def loss_of(images, labels):
        if case.model == "autoencoder":
            decoder_w = tf.transpose(weights[0]) if case.tied else weights[1]
            code = tf.sigmoid(images @ weights[0] + biases[0])
            logits = code @ decoder_w + biases[1]
            return tf.reduce_mean(
                tf.nn.sigmoid_cross_entropy_with_logits(labels=images, logits=logits)
            )
        h = images
        for w, b in zip(weights[:-1], biases[:-1], strict=True):
            h = tf.nn.relu(h @ w + b)
        logits = h @ weights[-1] + biases[-1]
        cross_entropy = tf.reduce_sum(
            tf.nn.softmax_cross_entropy_with_logits(labels=labels, logits=logits)
        )
        return cross_entropy + MLP_L2 * tf.add_n([tf.nn.l2_loss(w) for w in weights[:-1]])

    def step(images, labels):
        with tf.GradientTape() as tape:
            loss = loss_of(images, labels)
        updates = [
            tf.raw_ops.ResourceApplyAdagradV2(
                var=param.handle,
                accum=accumulator.handle,
                lr=tf.constant(LEARNING_RATE),
                epsilon=tf.constant(0.0),
                grad=grad,
            )
            for param, accumulator, grad in zip(
                params, accumulators, tape.gradient(loss, params), strict=True
            )
        ]
        with tf.control_dependencies(updates):
            return tf.identity(loss)

    # As Keras does: the step compiled, the loop around it not (it reads tf.data).
    compiled_step = tf.function(step, jit_compile=True, autograph=False)

    @tf.function(autograph=False)
    def steps_in_one_call(iterator):
        if steps_per_call == 1:
            step(*iterator.get_next())
            return None

        def body(i):
            with tf.control_dependencies([compiled_step(*iterator.get_next())]):
                return i + 1

        return tf.while_loop(lambda i: i < steps_per_call, body, [tf.constant(0)])

    iterator = iter(eager_batches(train, case.batch_size, args.seed))
    return repeat_callable(lambda: steps_in_one_call(iterator), steps_per_call)


def contenders(case, train, args):
    """Returns ``{name: run(steps)}`` for the contenders of ``case``, bfloat16's too."""
    n_in, n_classes = train.images.shape[1], train.labels.shape[1]
    k = args.steps_per_run
    runs = {
        "ours": ours(case, train, args, steps_per_run=k, xla=args.xla),
        "ours_no_xla": ours(case, train, args, steps_per_run=k),
        "ours_one_step": ours(case, train, args),
        "ours_feed_dict": ours(case, train, args, source="feed"),
        "ours_graph_input": ours(case, train, args, source="fixed"),
        "keras": keras_fit(case, train, args),
        "keras_spe": keras_fit(case, train, args, k, jit_compile=False),
        "keras_spe_xla": keras_fit(case, train, args, k, jit_compile=True),
        "tf_function": tf_function(case, train, args),
        "tf_function_loop": tf_function(case, train, args, steps_per_call=k),
        "compute_limit_xla": ours(case, train, args, "fixed", steps_per_run=k, xla=True),
        "compute_limit_no_xla": ours(case, train, args, "fixed", steps_per_run=k),
        "limit": matmul_limit(needed_matmuls(case, n_in, n_classes), args),
    }
    runs.update(
        bf16.contenders(
            functools.partial(ours, case, train, args, steps_per_run=k),
            {"": functools.partial(keras_fit, case, train, args, k)},
            args.quick,
        )
    )
    return runs
