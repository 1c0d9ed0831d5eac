"""Synchronous data-parallel training over processes on TensorFlow's collectives.

Each worker process builds the same TF1 graph (any ``get_variable`` function)
under ``tf.compat.v1.distribute.experimental.MultiWorkerMirroredStrategy``: every
variable is mirrored on every worker, and each step all-reduces the workers'
gradients before any of them applies it, so N workers on ``B / N`` examples each
take the step one process takes on ``B``: bit for bit the step of
:func:`one_process` with the workers' arithmetic (``shards=N``), killed and resumed
too; on whole batches up to float32 round-off. Batch norm (``layers.BatchNorm`` and
what builds on it) normalizes with the whole batch's statistics, all-reduced over
the workers. No parameter server; the all-reduce is TensorFlow's own. A worker that
is gone, or silent past ``operation_timeout``, ends the others with a
:class:`LostWorkerError` naming it.

Usage, in each of N processes (``index`` 0..N-1, the same ``addresses``)::

    result = sync.train(index, addresses, build, optimizer, images, labels,
                        batch_size=64, steps=100)
    result.values["model/w"]   # the same array on every worker

where ``build(x, y)`` returns the loss, the mean over its examples, as TF1 code
writes it. :func:`one_process` trains the same function in one process, from the
chief's initial weights (``<checkpoint_dir>/initial.ckpt``): with ``shards=N`` the
workers' arithmetic, the reference they equal; with ``shards=1`` on whole batches.
"""

import json
import os
import time
from typing import NamedTuple

import numpy as np
import tensorflow as tf

from layers.errors import ZooError
from layers.normalization import batch_statistics
from zoo.parallel.cluster_spec import check_split, split_address
from zoo.parallel.distributed import grpc_answers
from zoo.parallel.towers import largest_difference, split_batch_moments
from zoo.training.checkpoints import latest_tf_checkpoint, tf_checkpoint_step

v1 = tf.compat.v1
INITIAL = "initial.ckpt"  # the chief's weights before its first step, beside the others


class Result(NamedTuple):
    """What :func:`train` returns.

    Attributes:
        losses: the loss of every step this run took, over the whole global
            batch (as one process on ``batch_size`` examples would see it).
        values: ``{variable name: array}`` after the last step.
        seconds: wall time of the steps.
        steps_per_second: the speed of the runs after the first (which holds
            TensorFlow's graph optimization), or of the first alone.
    """

    losses: list
    values: dict
    seconds: float
    steps_per_second: float


def train(index, addresses, build, optimizer, images, labels, batch_size, steps,
          checkpoint_dir=None, checkpoint_every=0, steps_per_run=1,
          operation_timeout=None, startup_timeout=None):  # fmt: skip
    """Trains worker ``index`` of ``len(addresses)`` until ``steps`` synchronous steps.

    Global batch ``s`` is rows ``[s * batch_size, (s + 1) * batch_size)`` of the data
    (wrapping around); every worker feeds it, worker ``i`` trains on its ``i``-th
    slice of ``batch_size / N`` (:func:`replicated_steps`).
    Each ``session.run`` takes up to ``steps_per_run`` steps in a ``tf.while_loop``
    around the strategy's step (:func:`k_steps`). With ``checkpoint_dir``, every
    worker starts from its latest checkpoint (the step it names, optimizer state
    included), and the chief (worker 0) writes one every ``checkpoint_every`` steps
    and at the end: a group killed at any point and started again ends where an
    uninterrupted one would. A chief that starts from step 0 also writes
    :data:`INITIAL`, the weights :func:`one_process` starts from.

    Args:
        index: this worker's index.
        addresses: every worker's ``host:port``, in index order.
        build: ``(x, y) -> loss``, a TF1 function of tensors; its variables
            are made with ``get_variable`` under the strategy.
        optimizer: ``() -> tf.compat.v1.train.Optimizer``.
        images, labels: arrays, the same on every worker.
        batch_size: examples per global step, over all workers.
        steps: the synchronous step to end at.
        checkpoint_dir: where the chief writes ``model.ckpt-<step>``; None: none.
        checkpoint_every: steps between the chief's checkpoints (0: at the end only).
        steps_per_run: steps per ``session.run`` at most (a run ends at a
            checkpoint).
        operation_timeout: seconds a run may take; None: no bound (a worker
            stopped for good then holds the others forever).
        startup_timeout: the same for the initialization (which waits for every
            worker) and the first run (TensorFlow's graph optimization).

    Returns:
        A :class:`Result`.

    Raises:
        ZooError: the batch does not split over the workers.
        LostWorkerError: a collective failed: another worker is gone, or silent
            past the timeout (:func:`lost_worker` names it).
    """
    workers = len(addresses)
    check_split(batch_size, workers)
    os.environ["TF_CONFIG"] = json.dumps(
        {"cluster": {"worker": list(addresses)}, "task": {"type": "worker", "index": index}}
    )
    with tf.Graph().as_default():
        strategy = v1.distribute.experimental.MultiWorkerMirroredStrategy()
        xs, ys, losses = replicated_steps(strategy, build, optimizer, images, labels,
                                          batch_size)  # fmt: skip
        with strategy.scope():
            variables = v1.global_variables()  # the optimizer's slots too
            init = v1.global_variables_initializer()
            saver = v1.train.Saver(variables, max_to_keep=2) if checkpoint_dir else None
        config = v1.ConfigProto()
        config.MergeFrom(strategy.update_config_proto(config))
        server = tf.distribute.Server(
            strategy.cluster_resolver.cluster_spec(), "worker", index, config=config
        )
        with v1.Session(server.target, config=config) as session:
            run = bounded_run(session, index, addresses, operation_timeout, startup_timeout)
            run(init, warm=False)  # the chief's initial values, broadcast
            first = restore(saver, session, checkpoint_dir)
            chief_saver = saver if index == 0 else None
            if chief_saver and first == 0:
                prefix = os.path.join(checkpoint_dir, INITIAL)
                saver.save(session, prefix, write_meta_graph=False, write_state=False)

            def after(done):
                if chief_saver and (done == steps or (
                        checkpoint_every and done % checkpoint_every == 0)):  # fmt: skip
                    prefix = os.path.join(checkpoint_dir, "model.ckpt")
                    saver.save(session, prefix, global_step=done)

            runs = Runs(first, steps, steps_per_run, checkpoint_every, batch_size)
            return runs.train(run, losses, xs, ys, images, labels, variables, after)


def one_process(build, optimizer, images, labels, batch_size, steps, initial=None,
                steps_per_run=1, shards=1):  # fmt: skip
    """Trains ``build`` in this process: what :func:`train`'s workers together must equal.

    Global batch ``s`` is rows ``[s * batch_size, (s + 1) * batch_size)``, as in
    :func:`train`; batch norm's update ops run with each step. With ``shards=1``
    each batch is one ``build`` on the whole batch, as TF1 code trains it. With
    ``shards=N`` it is the workers' arithmetic: N replicas on N logical CPUs
    (``MirroredStrategy``), each computing its slice's gradient, summed as the
    workers' all-reduce sums them, batch norm's moments from the slices' summed
    statistics (:func:`cross_worker_moments`). For N = 2 (a sum of two floats is
    the same in either order) the workers equal it bit for bit; on whole batches
    they differ by float32 round-off that training amplifies (docs/distributed.md).

    Args:
        build, optimizer, images, labels, batch_size, steps, steps_per_run: as
            :func:`train`.
        initial: a checkpoint to start from (the chief's :data:`INITIAL`); None:
            the variables' initializers.
        shards: 1 for the whole batch, or the workers' count.

    Returns:
        A :class:`Result`.

    Raises:
        ZooError: ``shards`` does not split the batch.
    """
    check_split(batch_size, shards)
    with tf.Graph().as_default():
        if shards == 1:
            xs, ys = batches_of(images, labels, batch_size)
            losses = k_steps(lambda x, y: trained(build(x, y), optimizer), xs, ys)
            strategy = tf.distribute.get_strategy()
        else:
            strategy = v1.distribute.MirroredStrategy([f"/cpu:{i}" for i in range(shards)])
            xs, ys, losses = replicated_steps(strategy, build, optimizer, images, labels,
                                              batch_size)  # fmt: skip
        with strategy.scope():
            variables = v1.global_variables()
            init = v1.global_variables_initializer()
            saver = v1.train.Saver(variables)
        config = v1.ConfigProto(device_count={"CPU": shards})
        with v1.Session(config=config) as session:
            session.run(init)
            if initial:
                saver.restore(session, initial)
            runs = Runs(0, steps, steps_per_run, 0, batch_size)
            return runs.train(
                lambda fetches, feed_dict=None, warm=True: session.run(fetches, feed_dict),
                losses, xs, ys, images, labels, variables, after=lambda done: None,
            )  # fmt: skip


def compare_to_one_process(checkpoint_dir, build, optimizer, images, labels, batch_size,
                           steps, workers, steps_per_run=1):  # fmt: skip
    """Trains :func:`one_process` from the chief's :data:`INITIAL` with the workers'
    arithmetic (``shards=workers``), then on whole batches, and compares each with the
    chief's latest checkpoint in ``checkpoint_dir``.

    Args:
        checkpoint_dir: the workers' (:func:`train`).
        build, optimizer, images, labels, batch_size, steps, steps_per_run: as
            :func:`train`.
        workers: the number of workers.

    Returns:
        ``(differences, whole)``: ``{"one_process": ..., "whole_batch": ...}``, the
        largest absolute difference of any variable (optimizer slots and moving
        statistics included) from each reference, and the whole-batch
        :class:`Result`.
    """
    checkpoint = latest_tf_checkpoint(checkpoint_dir)
    reader = tf.train.load_checkpoint(checkpoint)
    differences, references = {}, {}
    for name, shards in (("one_process", workers), ("whole_batch", 1)):
        reference = references[name] = one_process(
            build, optimizer, images, labels, batch_size, steps,
            os.path.join(checkpoint_dir, INITIAL), steps_per_run, shards,
        )  # fmt: skip
        chief = {variable: reader.get_tensor(variable) for variable in reference.values}
        differences[name] = largest_difference(chief, reference.values)
    return differences, references["whole_batch"]


def replicated_steps(strategy, build, optimizer, images, labels, batch_size):
    """Builds the synchronous step of ``strategy``'s replicas, K steps per run.

    Replica ``r`` of N trains on slice ``r`` of ``batch_size / N`` rows of each
    fed batch: ``build`` on it, divided by N (a slice's mean / N), the gradients
    summed over the replicas; batch norm normalizes with every slice's moments
    (:func:`cross_worker_moments`), its moving statistics take replica 0's update.

    Returns:
        ``(xs, ys, losses)``: the placeholders of a run's global batches
        (:func:`batches_of`) and the losses of its steps (:func:`k_steps`), each
        the whole batch's.
    """
    replicas = strategy.num_replicas_in_sync
    share = batch_size // replicas
    with strategy.scope():
        xs, ys = batches_of(images, labels, batch_size)

        def replica_step(x, y):
            start = tf.distribute.get_replica_context().replica_id_in_sync_group * share
            x, y = x[start : start + share], y[start : start + share]
            with batch_statistics(moments=cross_worker_moments), \
                    v1.variable_creator_scope(first_worker_writes):  # fmt: skip
                return trained(build(x, y) / replicas, optimizer)

        def step(x, y):
            loss = strategy.extended.call_for_each_replica(replica_step, (x, y))
            return strategy.reduce(tf.distribute.ReduceOp.SUM, loss, axis=None)

        return xs, ys, k_steps(step, xs, ys)


def batches_of(images, labels, size):
    """Returns placeholders ``xs``, ``ys`` of a run's batches: [steps, size, ...]."""
    return [
        v1.placeholder(tf.as_dtype(a.dtype), [None, size, *a.shape[1:]], name)
        for a, name in ((images, "xs"), (labels, "ys"))
    ]


def trained(loss, optimizer):
    """Returns ``loss`` after one ``optimizer().minimize(loss)`` (batch norm's
    moving statistics, the ``UPDATE_OPS``, updated first)."""
    with tf.control_dependencies(v1.get_collection(v1.GraphKeys.UPDATE_OPS)):
        update = optimizer().minimize(loss)
    with tf.control_dependencies([update]):
        return tf.identity(loss)


def k_steps(step, xs, ys):
    """Returns the losses of ``step(xs[k], ys[k])`` for every ``k``, taken in order in
    one ``tf.while_loop``: K steps per ``session.run``.

    The loop is around the strategy's step, not inside its replica function
    (where the optimizer's ``merge_call`` is refused in control flow); one
    iteration at a time, each after the last one's update.
    """
    count = tf.shape(xs)[0]

    def body(k, losses):
        loss = step(xs[k], ys[k])
        with tf.control_dependencies([loss]):  # the next step reads this one's weights
            return k + 1, losses.write(k, loss)

    _, losses = tf.while_loop(
        lambda k, _: k < count,
        body,
        [tf.constant(0), tf.TensorArray(tf.float32, count)],
        parallel_iterations=1,
    )
    return losses.stack()


class Runs(NamedTuple):
    """The runs from step ``first`` to ``steps``, each of ``steps_per_run`` steps at
    most, none across a multiple of ``checkpoint_every`` (0: none)."""

    first: int
    steps: int
    steps_per_run: int
    checkpoint_every: int
    batch_size: int

    def train(self, run, losses, xs, ys, images, labels, variables, after):
        """Runs them with ``run(fetches, feed_dict, warm)`` (``warm`` False for the
        first): step ``s`` feeds rows ``[s * batch_size, (s + 1) * batch_size)``
        (wrapping around); ``after(step)`` follows each run.

        Returns:
            A :class:`Result`.
        """
        values = []
        start = time.perf_counter()
        step = self.first
        warm = None  # (time, step) after the first run
        while step < self.steps:
            end = min(step + self.steps_per_run, self.steps)
            if self.checkpoint_every:
                end = min(end, (step // self.checkpoint_every + 1) * self.checkpoint_every)
            rows = np.arange(step, end)[:, None] * self.batch_size
            rows = (rows + np.arange(self.batch_size)) % len(images)
            feed = {xs: images[rows], ys: labels[rows]}
            values += run(losses, feed, warm=warm is not None).tolist()
            step = end
            after(step)
            warm = warm or (time.perf_counter(), step)
        now = time.perf_counter()
        since, at = warm if warm and step > warm[1] else (start, self.first)
        names = [v.op.name for v in variables]
        final = dict(zip(names, run(variables), strict=True))
        return Result(values, final, now - start, (step - at) / max(now - since, 1e-9))


class LostWorkerError(ZooError):
    """A synchronous step failed: another worker is gone, or silent past the timeout."""


# What a collective on a lost worker ends with: gone (connection reset or refused), or
# silent past the run's deadline; TensorFlow then aborts the other collectives.
COLLECTIVE_FAILURES = (
    tf.errors.DeadlineExceededError, tf.errors.UnavailableError, tf.errors.AbortedError,
    tf.errors.CancelledError,
)  # fmt: skip
PROBE_S = 2.0  # seconds a lost worker's peers are given to answer the probe


def bounded_run(session, index, addresses, operation_timeout, startup_timeout):
    """Returns ``run(fetches, feed_dict=None, warm=True)``: ``session.run`` within
    ``operation_timeout`` seconds, or ``startup_timeout`` when not ``warm`` (the
    initialization, the first run with TensorFlow's graph optimization); None: no bound.

    Raises (from ``run``):
        LostWorkerError: a collective failed (:func:`lost_worker`).
    """

    def run(fetches, feed_dict=None, warm=True):
        timeout = operation_timeout if warm else startup_timeout
        options = v1.RunOptions(timeout_in_ms=round(timeout * 1000)) if timeout else None
        try:
            return session.run(fetches, feed_dict, options=options)
        except COLLECTIVE_FAILURES as err:
            raise lost_worker(index, addresses, timeout, err) from None

    return run


def lost_worker(index, addresses, timeout, err):
    """Returns the :class:`LostWorkerError` of worker ``index`` whose run failed with
    ``err``, naming the other workers that do not answer now (:func:`grpc_answers`)."""
    lost = []
    for other, address in enumerate(addresses):
        found = other != index and grpc_answers(*split_address(address), PROBE_S)
        if found and found != "answers":
            lost.append(f"worker {other} ({address}, logs/worker-{other}.log) {found}")
    failed = (
        f"no step within the timeout of {timeout:g} s"
        if isinstance(err, tf.errors.DeadlineExceededError)
        else f"the all-reduce failed ({type(err).__name__})"
    )
    whom = ", ".join(lost) or "every other worker answering now"
    return LostWorkerError(
        f"worker:{index}: expected every worker in each synchronous step, found "
        f"{failed}, with {whom}; restart every worker from the last checkpoint "
        "(experiments.ps: --resume RUN_DIR; its launcher restarts them itself)"
    )


def cross_worker_moments(inputs, axes):
    """``tf.nn.moments`` over every worker's share of the batch: batch norm in
    training normalizes with the whole batch's statistics, as one process would.

    The whole batch's count is this share's times the shares (equal:
    :func:`replicated_steps`), not all-reduced: Grappler folds an all-reduced count
    into a constant in one process but not across workers, and the two divisions
    then round apart (1.4e-6 after one step of ``bn_conv``).

    Args:
        inputs: this worker's activations.
        axes: the axes to reduce (all but the features).

    Returns:
        ``(mean, variance)`` of the whole batch, the variance biased, as
        ``tf.nn.moments`` gives them; gradients flow through both all-reduces.
    """
    context = tf.distribute.get_replica_context()
    shares = context.num_replicas_in_sync  # each of the same size (replicated_steps)
    examples = tf.reduce_prod(tf.gather(tf.shape(inputs), axes)) * shares

    def whole_batch_mean(part_sum):
        total = context.all_reduce(tf.distribute.ReduceOp.SUM, part_sum)
        return total / tf.cast(examples, inputs.dtype)

    mean = whole_batch_mean(tf.reduce_sum(inputs, axes, keepdims=True))
    return split_batch_moments(inputs, axes, mean, whole_batch_mean)


def first_worker_writes(next_creator, **kwargs):
    """Variables that are not trained (batch norm's moving statistics) take the
    first worker's update: every worker computes the same one."""
    if not kwargs.get("trainable", True):
        kwargs["aggregation"] = tf.VariableAggregation.ONLY_FIRST_REPLICA
    return next_creator(**kwargs)


def restore(saver, session, checkpoint_dir):
    """Restores the latest checkpoint of ``checkpoint_dir`` into ``session``.

    Returns:
        The step it names (0 without a saver or a checkpoint).
    """
    path = saver and latest_tf_checkpoint(checkpoint_dir)
    if not path:
        return 0
    saver.restore(session, path)
    return tf_checkpoint_step(path)
