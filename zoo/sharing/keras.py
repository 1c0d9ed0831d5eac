"""Any TF1 ``get_variable`` function as a Keras 3 layer: tracked weights, losses, saving.

Keras 3 tracks only the variables a layer makes with ``add_weight``, ignores
``variable_scope`` reuse and has no ``track_tf1_style_variables``.
:class:`ZooLayer` finds out which variables a function asks ``get_variable`` for
(by calling it once in a scratch graph, its own ``reuse=True`` scopes included),
creates one Keras weight per variable, and on every call hands the function
the weight of each name it asks for through a custom getter. A tower applied
twice asks twice for one name and reads one weight; a tied decoder asks for the
encoder's ``W`` and reads the same weight, before and after a save/load round
trip. A regularizer given to ``get_variable`` (or by a ``variable_scope``), or
by a TF1 layer (``kernel_regularizer``), becomes the weight's regularizer, so
``layer.losses`` holds it once per variable and ``fit`` adds it to the loss;
so does weight decay the function adds to the ``"losses"`` collection.

Usage::

    import keras
    from zoo.sharing.keras import ZooLayer

    model = keras.Sequential([keras.Input((784,)), ZooLayer("autoencoder", tied=True)])
    model.compile(keras.optimizers.Adagrad(0.1), "binary_crossentropy")
    model.fit(images, images, batch_size=128)
    model.save("ae.keras")
    again = keras.saving.load_model("ae.keras")   # still 3 weights, W still tied

    @keras.saving.register_keras_serializable(package="mine")   # to load it again
    def siamese(left, right):                # your TF1 code, unchanged
        ...
    distance = ZooLayer(siamese)([left, right])
"""

import collections.abc
import contextlib
import dataclasses
import threading

import keras
import tensorflow as tf

from layers.errors import ShapeError, ZooError
from layers.variables import mark_cast_read, reading_through
from zoo.constants import PRECISION_POLICIES
from zoo.models import get_model
from zoo.sharing.share import (
    VariableStore,
    call_builder,
    checkpoint_name,
    new_variable_error,
    refuse_new_variables,
    takes_training,
)
from zoo.training import precision


@dataclasses.dataclass(frozen=True)
class VariableSpec:
    """A variable a function asks for: TF1 name, shape, dtype, trainable, init, losses."""

    name: str
    shape: tuple
    dtype: tf.DType
    trainable: bool
    initial_value: object
    regularizers: tuple = ()


def variable_specs(
    owner,
    builder,
    input_shapes,
    scope,
    dtypes=(tf.float32,),
    policy="float32",
    tf1_code=True,
    **builder_kwargs,
):
    """Builds ``builder`` in a scratch graph and lists the variables it creates.

    A loss it adds to the ``"losses"`` collection that only one variable reaches
    (the weight decay ``decay * tf.nn.l2_loss(weight)`` of TF1 tutorials) becomes a
    regularizer of that variable, recomputed from its current value.

    Args:
        owner: the layer's name, for messages.
        builder: a zoo builder or any get_variable function (see
            :func:`zoo.sharing.share.call_builder`).
        input_shapes: one shape per tensor argument, batch first (None or the
            static batch size).
        scope: the scope to build under, or None.
        dtypes: the dtype of each scratch input; one dtype serves every input.
        policy: the precision policy (:func:`zoo.training.precision.policy`) the
            function is built under: a mixed one stores in float32 what it asks
            for in the compute dtype, as Keras' mixed policies do.
        tf1_code: True to run ``builder`` under TF1's shape behaviour
            (:func:`tf1_shapes`), False under TensorFlow 2's (the zoo's builders).
        **builder_kwargs: other arguments of ``builder``.

    Returns:
        ``(specs, recomputed)``: a list of :class:`VariableSpec` in creation
        order (``initial_value`` a callable that returns the initial tensor,
        usable eagerly; ``regularizers`` those of both paths, see
        :class:`zoo.sharing.share.VariableStore`, and the collection's losses of
        the variable); and the positions, among the losses the function adds to
        ``"losses"``, of those that became regularizers.

    Raises:
        ZooError: the function makes a variable without ``get_variable``.
    """
    created = []  # (creator arguments, variable) per variable made

    def record_creation(next_creator, **kwargs):
        variable = next_creator(**kwargs)
        created.append((kwargs, variable))
        return variable

    if len(dtypes) == 1:
        dtypes = dtypes * len(input_shapes)
    store = VariableStore()
    with (
        tf.Graph().as_default() as graph,
        tf.variable_creator_scope(record_creation),
        store.as_default(),
    ):
        inputs = [
            tf.compat.v1.placeholder(dtype, shape)
            for dtype, shape in zip(dtypes, input_shapes, strict=True)
        ]
        with (
            tf1_shapes(tf1_code),
            reading_through(store.recording_getter()),
            precision.policy(policy),
        ):
            call_builder(builder, inputs, builder_kwargs, scope, reuse=False)
        added = graph.get_collection(tf.compat.v1.GraphKeys.LOSSES)
    asked = set(store.asked)
    _refuse_other_variables(owner, [v for kw, v in created if kw["name"] not in asked])
    regularizers = store.regularizers()
    handles = {variable.handle.name: kwargs["name"] for kwargs, variable in created}
    penalties = collection_penalties(added, handles)
    for name, penalty in penalties.values():
        regularizers[name] = (*regularizers.get(name, ()), penalty)
    specs = [
        VariableSpec(
            name=kwargs["name"],
            shape=tuple(kwargs["shape"]),
            dtype=tf.as_dtype(kwargs["dtype"]),
            trainable=kwargs.get("trainable", True) is not False,
            initial_value=kwargs["initial_value"],
            regularizers=regularizers.get(kwargs["name"], ()),
        )
        for kwargs, _ in created
    ]
    return specs, frozenset(penalties)


def collection_penalties(losses, variable_of_handle):
    """The losses that only one variable reaches, each as a function of that variable.

    Args:
        losses: scalar tensors of one graph (what a function added to ``"losses"``).
        variable_of_handle: the name of each variable's handle tensor -> the
            variable's name.

    Returns:
        ``{position in losses: (variable name, penalty)}``; ``penalty(value)``
        computes the loss again from the variable's value (the graph between
        its read and the loss, imported where it is called). A loss that an
        input, a stateful op or several variables reach is left out.
    """
    if not losses:
        return {}
    graph_def = losses[0].graph.as_graph_def()
    penalties = {}
    for position, loss in enumerate(losses):
        found = _reads_and_ops(loss, variable_of_handle)
        if found is not None:
            variable, reads, ops = found
            penalties[position] = (variable, _penalty(graph_def, reads, ops, loss.name))
    return penalties


def _reads_and_ops(loss, variable_of_handle):
    """``(variable name, its read ops, the ops between them and loss)``, the names of
    ops; None when an input, a stateful op or another variable reaches ``loss``."""
    reads, ops, pending = {}, set(), [loss.op]
    while pending:
        op = pending.pop()
        if op.name in ops or op.name in reads:
            continue
        handle = op.inputs[0].name if op.type == "ReadVariableOp" else None
        if handle in variable_of_handle:
            reads[op.name] = variable_of_handle[handle]
            continue
        if op.type.startswith("Placeholder") or op.op_def.is_stateful:
            return None
        ops.add(op.name)
        pending.extend(tensor.op for tensor in op.inputs)
        pending.extend(op.control_inputs)
    variables = set(reads.values())
    return (variables.pop(), set(reads), ops) if len(variables) == 1 else None


def _penalty(graph_def, reads, ops, loss_name):
    """``penalty(value)``: the graph's ``ops`` computing ``loss_name`` from ``value``
    in place of each of ``reads`` (the variable's reads)."""
    piece = tf.compat.v1.GraphDef()
    for node in graph_def.node:
        if node.name in ops:
            copy = piece.node.add()
            copy.CopyFrom(node)
            copy.attr.pop("_class", None)  # colocation with ops left behind
        elif node.name in reads:
            value = piece.node.add(name=node.name, op="Placeholder")
            value.attr["dtype"].CopyFrom(node.attr["dtype"])

    @tf.function(autograph=False)
    def penalty(value):
        (loss,) = tf.graph_util.import_graph_def(
            piece, {f"{read}:0": value for read in reads}, [loss_name], name="penalty"
        )
        return loss

    return penalty


def _refuse_other_variables(owner, variables):
    """Raises ZooError naming the variables made without ``get_variable``, if any."""
    if not variables:
        return
    found = ", ".join(
        f"{checkpoint_name(v)} (shape {v.shape.as_list()})" for v in variables
    )
    first = variables[0]
    example = (
        f"tf.compat.v1.get_variable({checkpoint_name(first).split('/')[-1]!r}, "
        f"{first.shape.as_list()}, initializer=...)"
    )
    raise ZooError(
        f"{owner}: expected every variable to come from tf.compat.v1.get_variable, "
        f"found {found} made another way (tf.Variable, a Keras layer); create each "
        f"with get_variable, e.g. {example}, so that the layer can track and share it"
    )


_SHAPES_LOCK = threading.RLock()  # TF's shape behaviour is one flag per process


@contextlib.contextmanager
def tf1_shapes(enabled=True):
    """Runs the body under TF1's shape behaviour: ``x.shape[-1]`` is a ``Dimension``
    (``.value``), as TF1 code expects; the process's behaviour is restored after.

    The behaviour is process-wide (``tf.compat.v1.disable_v2_tensorshape``): the
    body runs holding a lock, so that two threads never restore each other's state.

    Args:
        enabled: False leaves the behaviour as it is (TensorFlow 2 code).
    """
    if not enabled:
        yield
        return
    with _SHAPES_LOCK:
        v2 = not isinstance(tf.TensorShape([1])[0], tf.compat.v1.Dimension)
        tf.compat.v1.disable_v2_tensorshape()
        try:
            yield
        finally:
            if v2:
                tf.compat.v1.enable_v2_tensorshape()


def _refuse_graph_mode(owner):
    """Raises ZooError unless TensorFlow runs eagerly here, as Keras 3 needs.

    ``tf.compat.v1.disable_v2_behavior()`` (which a module upgraded by TensorFlow's
    ``tf_upgrade_v2`` calls at import) or ``disable_eager_execution()`` turns
    eager execution off for the whole process; Keras 3's ``fit`` then fails.
    """
    if tf.executing_eagerly() or tf.inside_function():
        return
    if not tf.__internal__.tf2.enabled():
        call = "tf.compat.v1.disable_v2_behavior()"
    else:
        call = "tf.compat.v1.disable_eager_execution() (or a tf.Graph().as_default() block)"
    raise ZooError(
        f"{owner}: expected eager execution, as Keras 3 needs, found it off: {call} "
        "ran in this process (a module upgraded by tf_upgrade_v2 calls "
        "disable_v2_behavior() at import); the switch is process-wide: import that "
        "module in another process (run its tests in a subprocess) or drop the call"
    )


@keras.saving.register_keras_serializable(package="zoo")
class ZooLayer(keras.layers.Layer):
    """A registered zoo builder, or any TF1 get_variable function, as a Keras layer.

    Args:
        model: a name in :data:`zoo.models.MODELS` (``"autoencoder"``), or any
            function of tensors that creates its variables with
            ``tf.compat.v1.get_variable`` under ``variable_scope``s. A function
            with ``scope`` and ``reuse`` parameters receives them; any other runs
            under ``variable_scope(scope)``. Called with the layer's input, or
            with the tensors of a list input (``layer([left, right])``). To load
            a saved model again, register the function with
            ``@keras.saving.register_keras_serializable(package=...)`` (or pass it
            in ``custom_objects``); lambdas cannot be loaded in safe mode. A
            function runs under TF1's shape behaviour (``x.shape[-1].value``,
            :func:`tf1_shapes`), each input in its own dtype (token ids as
            ``int32``).
        output: the field (attribute or key) of the function's result the layer
            returns; None when the function returns a tensor (or a list of them).
            For a registered name the default is ``"decoded"``.
        scope: the variable scope the function builds under; default the model's
            name for a registered builder, none for a function: its own names,
            and the default of its own ``scope`` parameter if it has one
            (TF-Slim's ``resnet_v1_50`` builds under ``resnet_v1_50/``). The TF1
            names are in :attr:`variable_names`; Keras's weight names are those
            with ``/`` written ``.``.
        **kwargs: builder arguments, JSON-serializable or registered
            (``tied``, ``n_hidden``), and ``keras.layers.Layer`` arguments
            (``name``, ``trainable``, ``dtype``).

    Raises:
        ZooError: an unknown model name or a model that is neither a name nor
            callable; eager execution off in this process
            (``tf.compat.v1.disable_v2_behavior()``); at the first call,
            ``output`` that names no field of the result, or a variable made
            without ``get_variable``.
        ScopeError: a call that would create a variable the first build did not
            (names that change between calls).
        ShapeError: an input of another width than the layer was built for.
    """

    def __init__(self, model="autoencoder", output=None, scope=None, **kwargs):
        layer_kwargs = {k: kwargs.pop(k) for k in _LAYER_ARGS if k in kwargs}
        super().__init__(**layer_kwargs)
        _refuse_graph_mode(self.name)
        if isinstance(model, str):
            self._builder = get_model(model)
            self.model_name = model
            output = output or "decoded"
            scope = scope or model
        elif callable(model):
            self._builder = model
            self.model_name = getattr(model, "__name__", type(model).__name__)
        else:
            raise ZooError(
                f"{self.name}: expected model to be a registered name or a function, "
                f"found {model!r}; pass e.g. ZooLayer('autoencoder') or ZooLayer(my_fn)"
            )
        self.model = model
        self._tf1_code = not isinstance(model, str)
        self.output_name = output
        self.scope = scope
        self.builder_kwargs = kwargs
        self._by_name = {}  # TF1 name -> its Keras weight
        self._variables = {}  # TF1 name -> the tf.Variable behind its weight
        self._input_shapes = []
        self._input_dtypes = None  # one per input, noted at the first call
        self._recomputed = frozenset()  # positions of "losses" made regularizers

    def __call__(self, inputs, *args, **kwargs):
        """Notes the dtype of each input before the first call builds the layer."""
        if self._input_dtypes is None:
            self._input_dtypes = [self._dtype_of(x) for x in keras.tree.flatten(inputs)]
        return super().__call__(inputs, *args, **kwargs)

    def _dtype_of(self, tensor):
        """The dtype an input reaches the function in: Keras casts floats to the
        compute dtype; ids stay ints."""
        dtype = keras.backend.standardize_dtype(getattr(tensor, "dtype", "float32"))
        return self.compute_dtype if "float" in dtype else dtype

    def build(self, input_shape):
        """Creates one Keras weight per variable the function asks for.

        The function sees the input shapes as Keras gives them, a static batch
        size (``keras.Input(shape, batch_size=4)``) included, and each input in
        its dtype (token ids as ``int32``).
        """
        self._input_shapes = _shapes(input_shape)
        specs, self._recomputed = variable_specs(
            self.name,
            self._builder,
            self._input_shapes,
            self.scope,
            [tf.as_dtype(d) for d in self._input_dtypes or [self.compute_dtype]],
            self._precision_policy(),
            self._tf1_code,
            **self._call_kwargs(training=False),
        )
        self._by_name = {
            spec.name: self.add_weight(
                shape=spec.shape,
                dtype=spec.dtype.name,
                trainable=spec.trainable,
                autocast=spec.trainable,  # mixed policies: moving statistics stay float32
                name=spec.name.replace("/", "."),
                initializer=lambda shape, dtype, init=spec.initial_value: init(),
                regularizer=_on_tensor(spec.regularizers),
            )
            for spec in specs
        }
        # Read outside any autocast: the variables themselves, for checkpoints by
        # name and for the precision policy's mark on a cast read.
        self._variables = {name: weight.value for name, weight in self._by_name.items()}

    def get_build_config(self):
        """Keras' build config with the inputs' dtypes, for ``load_model``."""
        return {**super().get_build_config(), "input_dtypes": self._input_dtypes}

    def build_from_config(self, config):
        """Builds as the saved layer was built: the same shapes and dtypes."""
        self._input_dtypes = config.get("input_dtypes")
        super().build_from_config(config)

    def _precision_policy(self):
        """The zoo's precision policy of the Keras dtype policy (float32 for another)."""
        name = self.dtype_policy.name
        return name if name in PRECISION_POLICIES else "float32"

    @property
    def variable_names(self):
        """The TF1 names (``autoencoder/encoder/W``) of :attr:`weights`, in order.

        Keras lists trainable weights first, so a batch norm's ``moving_mean``
        comes after every trainable weight, wherever the function made it.
        """
        names = {id(weight): name for name, weight in self._by_name.items()}
        return [names[id(weight)] for weight in self.weights]

    @property
    def tf1_variables(self):
        """TF1 name -> the ``tf.Variable`` behind each weight, for checkpoints by name.

        ``zoo.sharing.share.restore_by_name(layer.tf1_variables, "tf1.ckpt")`` loads a TF1
        program's checkpoint into the layer; ``save_by_name`` writes one.
        """
        return dict(self._variables)

    def call(self, inputs, training=None):
        """Runs the function on ``inputs`` with this layer's weights; returns ``output``.

        Each variable the function asks for is the weight of its TF1 name. A
        function with a ``training`` parameter receives Keras' training flag
        (False when Keras passes None): :class:`layers.BatchNorm` then uses the
        batch statistics in ``fit`` and moves the moving ones, which are
        non-trainable weights, and uses them in ``predict`` and ``evaluate``.
        What the function adds to the ``"losses"`` collection
        (``tf.compat.v1.add_to_collection("losses", weight_decay)``) is in
        :attr:`losses`: a loss of one variable alone as that weight's
        regularizer, recomputed from its current value; any other (an input
        reaches it) as this call's :meth:`add_loss`. ``fit`` adds them to the
        loss. A function runs under TF1's shape behaviour (:func:`tf1_shapes`),
        a registered builder under TensorFlow 2's, which it was written for.
        """
        weights = self._by_name
        tensors = list(inputs) if isinstance(inputs, (list, tuple)) else [inputs]
        fix = (
            "make the function ask for the same names on every call (no default_name "
            "scopes, counters or tf.Variable), or build a new layer for new arguments"
        )

        def layer_weight(getter, name, *args, shape=None, **kwargs):
            if name not in weights:
                raise new_variable_error(self.name, name, fix)
            weight = weights[name]
            if shape is not None and list(shape) != list(weight.shape):
                raise ShapeError(
                    f"{self.name}: expected {name} with shape {list(weight.shape)}, "
                    f"as built for inputs {[list(s) for s in self._input_shapes]}, "
                    f"found a request for {list(shape)} on inputs "
                    f"{[t.shape.as_list() for t in tensors]}; feed inputs of the shapes "
                    "the layer was built for, or build a new layer for these"
                )
            # Under a mixed Keras policy a trainable weight reads cast: marked, so a
            # regularizer or a float32 statistic finds the variable behind it.
            read, variable = weight.value, self._variables[name]
            return read if read is variable else mark_cast_read(read, variable)

        losses = tf.compat.v1.get_collection_ref(tf.compat.v1.GraphKeys.LOSSES)
        known = len(losses)
        with (
            VariableStore().as_default(),
            refuse_new_variables(self.name, fix),
            reading_through(layer_weight),
            tf1_shapes(self._tf1_code),
        ):
            result = call_builder(
                self._builder,
                tensors,
                self._call_kwargs(training),
                self.scope,
                tf.compat.v1.AUTO_REUSE,
            )
        for position, loss in enumerate(losses[known:]):
            if position not in self._recomputed:
                self.add_loss(loss)
        del losses[known:]  # the layer's now; eagerly it would pile up in the graph
        return self._pick_output(result)

    def _call_kwargs(self, training):
        """The builder arguments, with ``training`` when the function takes one."""
        if not takes_training(self._builder):
            return self.builder_kwargs
        return {
            **self.builder_kwargs,
            "training": False if training is None else training,
        }

    def _pick_output(self, result):
        """Returns the result itself (a tensor) or its ``output`` field."""
        if self.output_name is None:
            if tf.is_tensor(result) or (
                type(result) in (list, tuple) and all(map(tf.is_tensor, result))
            ):
                return result
            raise ZooError(
                f"{self.name}: expected {self.model_name} to return a tensor, found a "
                f"{type(result).__name__} with fields {_fields(result)}; pass "
                "output='<field>' to pick one"
            )
        if isinstance(result, collections.abc.Mapping):
            value = result.get(self.output_name)
        else:
            value = getattr(result, self.output_name, None)
        if value is None:
            raise ZooError(
                f"{self.name}: expected output to name a field of the "
                f"{self.model_name} result, found {self.output_name!r}; pick one of "
                f"{_fields(result)}"
            )
        return value

    def get_config(self):
        """Returns what ``keras.saving`` needs to rebuild the layer."""
        model = self.model
        if not isinstance(model, str):
            model = keras.saving.serialize_keras_object(model)
        return {
            **super().get_config(),
            "model": model,
            "output": self.output_name,
            "scope": self.scope,
            **self.builder_kwargs,
        }

    @classmethod
    def from_config(cls, config):
        """Rebuilds the layer, finding the saved function among the registered ones.

        Raises:
            ZooError: the function is not registered with Keras.
        """
        config = dict(config)
        model = config.get("model")
        if isinstance(model, dict):
            try:
                config["model"] = keras.saving.deserialize_keras_object(model)
            except (TypeError, ValueError):
                raise ZooError(
                    f"{config.get('name', 'ZooLayer')}: expected the function "
                    f"{model.get('config')!r} (module {model.get('module')!r}) to be "
                    "known to Keras, found it unregistered; decorate it with "
                    "@keras.saving.register_keras_serializable(package=...) and import "
                    "it before load_model, or pass custom_objects={name: function}"
                ) from None
        return cls(**config)


def _shapes(input_shape):
    """One shape per tensor argument: a list input gives several."""
    shapes = list(input_shape)
    if shapes and all(isinstance(s, (list, tuple)) for s in shapes):
        return [tuple(s) for s in shapes]
    return [tuple(shapes)]


def _on_tensor(regularizers):
    """One Keras weight regularizer, the sum of TF1 ones, which take the weight as a
    tensor (Keras passes the variable); None for none."""
    if not regularizers:
        return None

    def regularize(weight):
        tensor = tf.convert_to_tensor(weight)
        return tf.add_n([regularizer(tensor) for regularizer in regularizers])

    return regularize


def _fields(result):
    """The names of a result's fields, for messages."""
    if dataclasses.is_dataclass(result):
        return [field.name for field in dataclasses.fields(result)]
    if isinstance(result, collections.abc.Mapping):
        return sorted(result)
    if hasattr(result, "_fields"):
        return list(result._fields)
    return sorted(k for k in getattr(result, "__dict__", {}) if not k.startswith("_"))


_LAYER_ARGS = ("name", "trainable", "dtype", "autocast", "input_dim", "input_shape")
