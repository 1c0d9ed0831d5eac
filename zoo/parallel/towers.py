"""Data-parallel towers on shared variables: the ``cifar10_multi_gpu_train`` pattern.

A batch is split into N equal shards; the model function is built once per
device, tower 0 under ``variable_scope(scope)`` (it creates the variables, on
``variables_device``) and every other tower under the same scope with
``reuse=True`` (it makes nothing new); the towers' losses are combined into one
loss, whose gradient is the average of the towers' gradients (summed where each
variable lives), and one optimizer step applies it. Without GPUs the towers run
on N logical CPU devices of one session (:func:`session_config`), so all of it
runs and is tested on a laptop.

Batch norm (:class:`layers.BatchNorm`) across towers, two modes:

* ``"per-tower"``: each tower normalizes with its own shard's statistics; the
  moving statistics are updated once per step, from tower 0 (as the Inception
  and Slim multi-GPU code does);
* ``"sync"``: the towers' sums are added before normalizing, so N towers compute
  what one tower computes on the whole batch (up to float round-off). The towers
  are then built in lockstep, one Python thread each, one thread building at a
  time.

Usage::

    config = towers.session_config(2)           # 2 logical CPUs (GPUs when present)
    with tf.Graph().as_default():
        batches = GraphBatches(data.train, 128)
        loss_fn = towers.data_parallel(model_loss, 2, scope="net", batch_norm="sync")
        step = training.repeat_step(loss_fn, optimizer, batches, 32)
        ...
    with tf.compat.v1.Session(config=config) as session:
        towers.check_devices(session, 2)
        ...

To check N towers against one tower, train both from the same start and compare the
weights: :func:`scope_weights` fetches them, :func:`weight_differences`,
:func:`largest_difference` and :func:`statistics_differences` compare two fetches.
"""

import contextlib
import contextvars
import threading

import numpy as np
import tensorflow as tf
from tensorflow.python.ops import control_flow_util  # no public XLA-context test

from layers.checks import choice_problem, int_problem, require
from layers.errors import ScopeError, ShapeError, ZooError
from layers.normalization import batch_statistics
from zoo.training.steps import loss_and_metrics

BATCH_NORM_MODES = ("per-tower", "sync")
LOSS_REDUCTIONS = ("mean", "sum")
VARIABLES_DEVICE = "/cpu:0"
"""Where the towers' variables live: the CPU, as ``cifar10_multi_gpu_train`` does
(``_variable_on_cpu``), so that no GPU holds them for the others."""


def session_config(towers):
    """Returns the session config that gives ``towers`` devices to the towers.

    Args:
        towers: the number of towers.

    Returns:
        A ``tf.compat.v1.ConfigProto`` with ``towers`` logical CPU devices
        (harmless with GPUs, where the towers use those).

    Raises:
        ZooError: ``towers`` is not a positive int.
    """
    _check_count(towers)
    return tf.compat.v1.ConfigProto(device_count={"CPU": towers})


def tower_devices(towers):
    """Returns the devices of ``towers`` towers: GPUs when present, else logical CPUs.

    Raises:
        ZooError: ``towers`` is not a positive int, or exceeds the GPUs present.
    """
    _check_count(towers)
    gpus = tf.config.list_physical_devices("GPU")
    if gpus and towers > len(gpus):
        raise ZooError(
            f"towers: expected at most {len(gpus)} towers (one per GPU), found "
            f"{towers}; pass towers <= {len(gpus)}"
        )
    kind = "gpu" if gpus else "cpu"
    return [f"/{kind}:{i}" for i in range(towers)]


def check_devices(session, towers):
    """Raises unless ``session`` has the devices that ``towers`` towers are placed on.

    Raises:
        ZooError: a tower's device is missing (a session made without
            :func:`session_config`).
    """
    present = {d.name.split("device:")[-1].lower() for d in session.list_devices()}
    wanted = [device.strip("/") for device in tower_devices(towers)]
    missing = [device for device in wanted if device not in present]
    if missing:
        raise ZooError(
            f"towers: expected the devices {', '.join(wanted)} for {towers} towers, found "
            f"the session without {', '.join(missing)}; make the session with "
            f"config=zoo.parallel.towers.session_config({towers})"
        )


def data_parallel(
    model_fn,
    towers,
    *,
    scope,
    batch_norm="per-tower",
    loss_reduction="mean",
    variables_device=VARIABLES_DEVICE,
):
    """Returns ``loss_fn(*inputs)`` that builds ``model_fn`` as ``towers`` towers.

    ``loss_fn`` splits every input along its first dimension into ``towers``
    equal shards and builds ``model_fn(*shards)`` once per tower, on its device
    (:func:`tower_devices`), under ``tf.name_scope("tower_<i>")`` and
    ``variable_scope(scope)``: tower 0 with the caller's reuse (it creates the
    variables, on ``variables_device``), the others with ``reuse=True``. Pass it
    to :func:`zoo.training.repeat_step` or minimize its loss yourself: the
    gradient of the combined loss is the average of the towers' gradients
    (``loss_reduction="mean"``), summed on each variable's device.

    Args:
        model_fn: ``model_fn(*shards) -> loss`` or ``(loss, {name: scalar})``;
            it creates its variables with ``tf.compat.v1.get_variable`` (any zoo
            layer or builder) under the current scope, the same in every tower.
        towers: the number of towers N >= 1.
        scope: the variable scope the towers share.
        batch_norm: ``"per-tower"`` or ``"sync"`` (see the module's docstring);
            without batch norm in the model both compute the same.
        loss_reduction: ``"mean"`` for losses that are means over examples (the
            towers' losses and gradients are averaged: N towers equal one tower
            on the whole batch); ``"sum"`` for losses summed over examples, like
            the zoo's classifiers (the towers' losses are added).
        variables_device: where the variables are created.

    Returns:
        ``loss_fn(*inputs) -> (loss, {name: scalar})``: the combined loss and
        each metric averaged over the towers.

    Raises:
        ZooError: a bad ``towers``, ``batch_norm``, ``loss_reduction`` or
            ``scope`` (here); from ``loss_fn``: more towers than GPUs, inputs
            whose batch does not split into ``towers`` equal shards, a
            ``model_fn`` result that is no scalar loss (and metrics), a tower
            that builds other batch-norm layers than tower 0.
        ScopeError: from ``loss_fn``: a tower after the first creates a
            variable; every error of a tower names the tower.
    """
    _check_count(towers)
    for name, value, allowed in (
        ("batch_norm", batch_norm, BATCH_NORM_MODES),
        ("loss_reduction", loss_reduction, LOSS_REDUCTIONS),
    ):
        require("towers", choice_problem(value, allowed, name=name), "pass one of those")
    if not isinstance(scope, str) or not scope.strip("/"):
        raise ZooError(
            f"towers: expected scope a non-empty string, found {scope!r}; pass the "
            "scope the towers share, e.g. scope='net'"
        )

    def loss_fn(*inputs):
        # One XLA computation runs on one device: inside one (repeat_step's
        # jit_compile loop) the towers are built without devices.
        graph = tf.compat.v1.get_default_graph()
        devices = (
            [None] * towers
            if control_flow_util.GraphOrParentsInXlaContext(graph)
            else tower_devices(towers)
        )
        shards = list(zip(*(_split(x, towers) for x in inputs), strict=True))
        caller = (tf.compat.v1.get_variable_scope(), graph.get_name_scope())

        def build(tower, moments=None):
            try:
                return _build_tower(
                    model_fn, shards[tower], tower, devices[tower], scope, caller,
                    variables_device, moments,
                )  # fmt: skip
            except _Aborted:
                raise
            except Exception as err:
                raise _with_tower(err, tower) from None

        if batch_norm == "sync" and towers > 1:
            built = _Lockstep(towers).build(build)
        else:
            built = [build(tower) for tower in range(towers)]
        losses = [loss for loss, _ in built]
        loss = tf.add_n(losses) if loss_reduction == "sum" else _mean(losses)
        names = sorted(built[0][1])
        metrics = {name: _mean([m[name] for _, m in built]) for name in names}
        return tf.identity(loss, name="towers_loss"), metrics

    return loss_fn


def scope_weights(scope, slots=()):
    """Returns ``{name: variable}`` of the global variables under ``scope``.

    Args:
        scope: the towers' variable scope (``data_parallel``'s ``scope=``).
        slots: names of optimizer slots to leave out, e.g. ``("Momentum",)``: a
            variable whose name ends in ``/<slot>`` is not a weight of the model.

    Returns:
        The dict, for ``session.run``: ``{name: array}`` of the model's weights.
    """
    return {
        v.op.name: v
        for v in tf.compat.v1.global_variables(f"{scope}/")
        if not any(v.op.name.endswith(f"/{slot}") for slot in slots)
    }


def weight_differences(a, b):
    """Returns ``{name: largest absolute difference}`` of two ``{name: array}``.

    Raises:
        ZooError: ``a`` and ``b`` name different variables.
    """
    if set(a) != set(b):
        raise ZooError(
            f"weight_differences: expected the same names in both, found "
            f"{sorted(set(a) ^ set(b))} in one only; fetch both from the same model"
        )
    return {name: float(np.abs(a[name] - b[name]).max()) for name in a}


def largest_difference(a, b):
    """Returns the largest absolute difference between two ``{name: array}``.

    Raises:
        ZooError: as :func:`weight_differences`.
    """
    return max(weight_differences(a, b).values())


def statistics_differences(a, b):
    """Returns the largest absolute differences of batch norm's moving statistics.

    Args:
        a, b: ``{name: array}`` of two models' weights (:func:`scope_weights`).

    Returns:
        ``{"moving_mean": float, "moving_variance": float}`` (None where there is
        no such variable).

    Raises:
        ZooError: as :func:`weight_differences`.
    """
    diffs = weight_differences(a, b)
    return {
        kind: max((d for name, d in diffs.items() if name.endswith(kind)), default=None)
        for kind in ("moving_mean", "moving_variance")
    }


def _check_count(towers):
    require(
        "towers", int_problem(towers, name="the number of towers"), "pass towers=1 or more"
    )


def _mean(tensors):
    return tf.add_n(tensors) / len(tensors) if len(tensors) > 1 else tensors[0]


def _split(inputs, towers):
    """Returns ``inputs`` split along its first dimension into ``towers`` shards."""
    inputs = tf.convert_to_tensor(inputs)
    batch = inputs.shape[0] if inputs.shape.rank else None
    if batch is not None and batch % towers:
        raise ShapeError(
            f"towers: expected a batch divisible by {towers} towers, found {batch} "
            f"examples ({inputs.name}); pass a batch size that is a multiple of {towers}"
        )
    return tf.split(inputs, towers, axis=0, name="shards")


def _build_tower(model_fn, shards, tower, device, scope, caller, variables_device, moments):
    """Builds tower ``tower``; returns ``(loss, metrics)`` (see :func:`data_parallel`).

    ``caller`` is the caller's variable scope and name scope, entered again (a
    tower's thread starts without them).
    """
    outer, name_scope = caller

    def on_variables_device(getter, *args, **kwargs):
        with tf.device(variables_device):
            return getter(*args, **kwargs)

    with contextlib.ExitStack() as stack:
        stack.enter_context(tf.compat.v1.variable_scope(outer, auxiliary_name_scope=False))
        if name_scope:
            stack.enter_context(tf.compat.v1.name_scope(name_scope + "/"))
        if device:
            stack.enter_context(tf.device(device))
        stack.enter_context(tf.name_scope(f"tower_{tower}"))
        stack.enter_context(
            tf.compat.v1.variable_scope(
                scope,
                reuse=True if tower else None,
                custom_getter=on_variables_device,
            )
        )
        if tower:
            stack.enter_context(tf.compat.v1.variable_creator_scope(_refuse_new(tower)))
        stack.enter_context(batch_statistics(moments=moments, update=tower == 0))
        built = model_fn(*shards)
    return loss_and_metrics(built, "towers", "model_fn")


def _refuse_new(tower):
    def creator(next_creator, **kwargs):
        raise ScopeError(
            f"towers: expected tower {tower} to reuse tower 0's variables, found it "
            f"creating {kwargs.get('name')!r}; build the same variables with "
            "tf.compat.v1.get_variable in every tower (no tf.Variable, no new scope)"
        )

    return creator


class _Aborted(Exception):
    """Another tower failed; this one stops building."""


class _Lockstep:
    """Builds the towers in threads that take turns: one thread builds at a time.

    Graph construction is not thread-safe, so a turn token goes round the towers
    (0, 1, ..., N-1, 0, ...): a tower builds until it reaches :meth:`all_sum`,
    registers its partial sums there and hands the turn on; when the turn comes
    back, every tower has registered that call, and it reads their sum. Each
    thread enters the caller's graph (every level, outermost first), context
    variables and variable scope: TensorFlow keeps the name, device and
    variable-scope stacks per thread.
    """

    def __init__(self, towers):
        self._towers = towers
        self._condition = threading.Condition()
        self._turn = 0
        self._done = [False] * towers
        self._calls = [0] * towers
        self._rounds = []
        self._failure = None

    def build(self, build_tower):
        """Runs ``build_tower(tower, moments)`` for every tower; returns the results.

        Raises:
            The first error a tower raised.
        """
        graphs = [tf.compat.v1.get_default_graph()]
        while hasattr(graphs[-1], "outer_graph"):
            graphs.append(graphs[-1].outer_graph)
        results = [None] * self._towers

        def run(tower):
            with contextlib.ExitStack() as stack:
                for graph in reversed(graphs):
                    stack.enter_context(graph.as_default())
                results[tower] = build_tower(tower, self._moments(tower))

        threads = [
            threading.Thread(
                target=contextvars.copy_context().run,
                args=(self._take_turns, tower, run),
                name=f"tower_{tower}",
            )
            for tower in range(self._towers)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        if self._failure is not None:
            raise self._failure
        return results

    def _take_turns(self, tower, run):
        try:
            self._wait_for_turn(tower)
            run(tower)
        except _Aborted:
            pass
        except BaseException as err:  # noqa: BLE001 - re-raised in the caller
            with self._condition:
                if self._failure is None:
                    self._failure = err
                self._condition.notify_all()
        finally:
            with self._condition:
                self._done[tower] = True
                self._pass_turn(tower)

    def _wait_for_turn(self, tower):
        with self._condition:
            self._condition.wait_for(
                lambda: self._turn == tower or self._failure is not None
            )
            if self._failure is not None:
                raise _Aborted

    def _pass_turn(self, tower):
        """Hands the turn to the next tower still building (called holding the lock)."""
        for step in range(1, self._towers + 1):
            following = (tower + step) % self._towers
            if not self._done[following]:
                self._turn = following
                break
        self._condition.notify_all()

    def all_sum(self, tower, tensors):
        """Returns, to every tower, the sums over all towers of their ``tensors``.

        Called by each tower in turn, the same number of times in every tower.

        Raises:
            ZooError: another tower finished, or made fewer calls, before
                registering this call (the towers build different layers).
        """
        call = self._calls[tower]
        self._calls[tower] += 1
        with self._condition:
            if len(self._rounds) <= call:
                self._rounds.append({})
            self._rounds[call][tower] = list(tensors)
            self._pass_turn(tower)
        self._wait_for_turn(tower)
        registered = self._rounds[call]
        graph = tf.compat.v1.get_default_graph()
        if any(t.graph is not graph for parts in registered.values() for t in parts):
            raise ZooError(
                "towers: expected synchronized batch norm built in training mode "
                "(training=True), found a training tensor (each tower's statistics "
                "inside a tf.cond of its own); pass training=True in the towers and "
                "build the evaluation graph apart, with reuse=True"
            )
        if len(registered) < self._towers:
            missing = sorted(set(range(self._towers)) - set(registered))
            raise ZooError(
                f"towers: expected every tower to reach synchronized batch norm call "
                f"{call + 1}, found tower {missing[0]} finished after "
                f"{self._calls[missing[0]]}; build the same batch-norm layers in "
                "every tower"
            )
        parts = [registered[t] for t in range(self._towers)]
        return [tf.add_n(list(same)) for same in zip(*parts, strict=True)]

    def _moments(self, tower):
        """Returns tower ``tower``'s ``moments(inputs, axes)`` over all towers' inputs
        (:func:`split_batch_moments`; the towers' counts summed, towers may differ)."""

        def moments(inputs, axes):
            count = tf.reduce_prod(tf.gather(tf.shape(inputs), axes))
            total, n = self.all_sum(tower, [tf.reduce_sum(inputs, axes, keepdims=True),
                                            tf.cast(count, inputs.dtype)])  # fmt: skip
            return split_batch_moments(
                inputs, axes, total / n, lambda part: self.all_sum(tower, [part])[0] / n
            )

        return moments


def split_batch_moments(inputs, axes, mean, whole_batch_mean):
    """``tf.nn.moments`` of a batch built in parts (towers, synchronous workers), as
    ``tf.nn.moments`` computes it: the mean of every part's inputs, then the mean
    squared difference from it (the mean under ``stop_gradient``).

    Args:
        inputs: this part's activations.
        axes: the axes to reduce (all but the features).
        mean: the whole batch's mean, ``keepdims`` shaped.
        whole_batch_mean: ``part_sum -> the whole batch's mean``: this part's sum
            over ``axes`` (``keepdims``) summed over every part, divided by the
            whole batch's count.

    Returns:
        ``(mean, variance)``, the variance biased; gradients flow through both sums.
    """
    deviations = tf.math.squared_difference(inputs, tf.stop_gradient(mean))
    variance = whole_batch_mean(tf.reduce_sum(deviations, axes, keepdims=True))
    return tf.squeeze(mean, axes), tf.squeeze(variance, axes)


def _with_tower(err, tower):
    """Returns ``err`` with its tower named: a zoo error is rewritten, others noted."""
    if isinstance(err, ZooError) and type(err).__init__ is ZooError.__init__:
        return type(err)(f"tower {tower}: {err}").with_traceback(err.__traceback__)
    err.add_note(f"(raised while building tower {tower})")
    return err
