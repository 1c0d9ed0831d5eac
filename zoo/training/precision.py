"""Mixed precision by scope: float32 variables read in bfloat16 or float16.

Under ``policy("mixed_bfloat16")`` every variable made or reused through
``tf.compat.v1.get_variable`` (the zoo's builders, :mod:`layers`, your own TF1
function) is stored in float32 and each trainable one is read through a cast to
bfloat16, by the scope's custom getter, the TF1 recipe. Checkpoints therefore
hold float32 values under the usual names, and a float32 graph restores them.
The layers cast their inputs to their weights' dtype on entry, so the matrix
products run in the compute dtype; batch-norm statistics, softmax, the
cross-entropies and the loss reductions stay float32 (:mod:`layers` and
:mod:`zoo.models` cast to float32 there). Non-trainable variables (moving
statistics, counters, optimizer slots) and integer or boolean ones are never
cast. A nested policy overrides the outer one for what is built inside it.

A variable read twice in one step (the tied autoencoder's ``W``, a shared
tower's weights) is cast once: reads in the same graph, control-flow context
and control dependencies return the same cast tensor, so the step casts the
weight once and its gradients meet in the compute dtype before the one cast
back (eagerly every read casts anew).

Usage::

    with precision.policy("mixed_bfloat16"):
        ae = zoo.autoencoder(x, scope="ae")      # ae/encoder/W float32, products bf16
        with precision.policy("float32"):
            head = ReadOut(ae.encoded, 625, 10)  # a head in float32
    optimizer.minimize(ae.loss)                  # float32 loss, float32 updates

For float16, whose gradients underflow without it, wrap the optimizer in
:class:`zoo.training.loss_scale.LossScaleOptimizer`. :func:`emulated` says
whether this machine runs a policy's products in hardware (a run records it).
"""

import contextlib
import contextvars
import dataclasses
import weakref

import tensorflow as tf

from layers.checks import choice_problem, require
from layers.errors import ScopeError
from layers.variables import mark_cast_read, reading_through
from zoo.constants import PRECISION_POLICIES


@dataclasses.dataclass(frozen=True)
class Policy:
    """A precision policy: its name and the dtype the products run in.

    Attributes:
        name: ``float32``, ``mixed_bfloat16`` or ``mixed_float16``.
        compute_dtype: ``tf.float32``, ``tf.bfloat16`` or ``tf.float16``.
    """

    name: str
    compute_dtype: tf.DType


FLOAT32 = Policy("float32", tf.float32)
CPU_BF16_FLAGS = ("avx512_bf16", "amx_bf16")
"""The CPU flags (``/proc/cpuinfo``) of bfloat16 products in hardware."""
CPUINFO = "/proc/cpuinfo"
EMULATED = {
    "mixed_float16": "mixed_float16 without a GPU: this CPU has no float16 products "
    "(oneDNN has no float16 kernels here), TensorFlow emulates them: correct, slow",
    "mixed_bfloat16": "mixed_bfloat16 without a GPU on a CPU without avx512_bf16 or "
    "amx_bf16: TensorFlow emulates the bfloat16 products: correct, slow",
}
"""Why a policy is emulated, by name: :func:`emulated` returns these."""

_current = contextvars.ContextVar("precision_policy", default=FLOAT32)
# True while an inner policy's getter asks the outer ones for the variable: they
# then return it uncast, so the innermost policy alone decides how it is read.
_inner_read = contextvars.ContextVar("precision_inner_read", default=False)


def get_policy(name):
    """Returns the :class:`Policy` called ``name``.

    Raises:
        ZooError: ``name`` is not one of the three policies.
    """
    require(
        "precision.policy",
        choice_problem(name, tuple(PRECISION_POLICIES), name="the policy"),
        "pick one of the three",
    )
    return Policy(name, tf.as_dtype(PRECISION_POLICIES[name]))


@contextlib.contextmanager
def policy(name):
    """Builds what runs inside in the policy ``name``, keyed by the variable scope.

    Re-enters the current variable scope with a custom getter: variables are
    created float32 (a request for the compute dtype makes a float32 one too),
    and trainable float32 ones are read cast to the compute dtype. The scopes
    opened inside keep the getter; a ``zoo.share`` model or a template reads
    under the policy open where it is called, not where it was made.

    Args:
        name: ``"float32"``, ``"mixed_bfloat16"`` or ``"mixed_float16"``.

    Yields:
        The :class:`Policy`.

    Raises:
        ZooError: an unknown policy name (the message lists the three).
        ScopeError: (while building inside) ``reuse`` finds a variable stored
            in another dtype than float32; the message names it.
    """
    chosen = get_policy(name)
    token = _current.set(chosen)
    try:
        with reading_through(_getter(chosen)):
            yield chosen
    finally:
        _current.reset(token)


def current_policy():
    """The :class:`Policy` of the innermost open :func:`policy` (float32 outside)."""
    return _current.get()


def cpu_bf16_flags(cpuinfo=None):
    """The flags of :data:`CPU_BF16_FLAGS` this CPU has (none where unreadable).

    Args:
        cpuinfo: the file to read; None reads :data:`CPUINFO` (``/proc/cpuinfo``).
    """
    try:
        with open(cpuinfo or CPUINFO) as lines:
            words = {
                word for line in lines if line.startswith("flags") for word in line.split()
            }
    except OSError:
        return []
    return [flag for flag in CPU_BF16_FLAGS if flag in words]


def emulated(name, cpuinfo=None):
    """Returns why policy ``name`` is emulated on this machine, or None.

    ``mixed_float16`` is emulated without a GPU; ``mixed_bfloat16`` without a
    GPU on a CPU without :data:`CPU_BF16_FLAGS`; ``float32`` never.

    Args:
        name: a policy name (see :func:`get_policy`).
        cpuinfo: as :func:`cpu_bf16_flags`.

    Returns:
        The sentence of :data:`EMULATED`, or None where the products run in
        hardware.

    Raises:
        ZooError: an unknown policy name.
    """
    get_policy(name)
    if name not in EMULATED or tf.config.list_physical_devices("GPU"):
        return None
    if name == "mixed_bfloat16" and cpu_bf16_flags(cpuinfo):
        return None
    return EMULATED[name]


def read_in_compute_dtype(variable):
    """Returns ``variable`` read as the current policy reads a trainable variable.

    A float32 variable is cast to the compute dtype of the innermost open
    :func:`policy`; any other (and every variable outside a policy) is
    returned as it is. For a copy of trainable weights made non-trainable (a
    :func:`zoo.sharing.state.frozen_copy`), which must compute like its source.
    """
    return _read(variable, current_policy())


def cast_to_compute(tensor):
    """Casts a floating ``tensor`` to the current policy's compute dtype.

    What your own TF1 function does with its inputs on entry under a policy
    (the zoo's layers do it themselves); integer and boolean tensors pass.
    """
    tensor = tf.convert_to_tensor(tensor)
    if not tensor.dtype.is_floating:
        return tensor
    return tf.cast(tensor, current_policy().compute_dtype)


def _getter(chosen):
    """The custom getter of ``chosen``: float32 variables, cast reads."""
    # graph -> {read context: the cast tensor's name}: names, not tensors, which
    # would hold their graph (a tf.function trace's) alive as long as the getter.
    casts = weakref.WeakKeyDictionary()

    def read(getter, name, *args, **kwargs):
        read_by_inner = _inner_read.get()
        dtype = tf.as_dtype(kwargs.get("dtype") or tf.float32)
        if dtype in (chosen.compute_dtype, tf.float32):
            kwargs["dtype"] = tf.float32
        token = _inner_read.set(True)
        try:
            variable = getter(name, *args, **kwargs)
        except ValueError as err:
            raise _dtype_error(chosen, name, err) from None
        finally:
            _inner_read.reset(token)
        if read_by_inner or not getattr(variable, "trainable", False):
            return variable
        return _read(variable, chosen, casts)

    return read


def _read(variable, chosen, casts=None):
    """``variable`` cast to ``chosen``'s compute dtype when it is float32.

    The cast read is marked with the variable it reads (for a regularizer). With
    ``casts``, a getter's cache, a graph read is cast once per read context.
    """
    if chosen.compute_dtype == tf.float32 or variable.dtype.base_dtype != tf.float32:
        return variable

    def cast():
        return mark_cast_read(tf.cast(variable, chosen.compute_dtype), variable)

    if casts is None or tf.executing_eagerly():
        return cast()
    graph = tf.compat.v1.get_default_graph()
    in_graph = casts.setdefault(graph, {})
    key = _read_context(graph, variable)
    if key in in_graph:
        return graph.get_tensor_by_name(in_graph[key])
    read = cast()
    in_graph[key] = read.name
    return read


def _read_context(graph, variable):
    """What makes two reads of ``variable`` in ``graph`` interchangeable.

    The same control-flow context (a ``tf.while_loop`` body reads anew each
    iteration) and the same control dependencies (a read after an assign).
    """
    control_inputs = tuple(sorted(op.name for op in graph._current_control_dependencies()))
    return variable.name, id(graph._get_control_flow_context()), control_inputs


def _dtype_error(chosen, name, err):
    """TensorFlow's "specified dtype ... found dtype" as a ScopeError naming ``name``."""
    text = str(err)
    if "but specified dtype" not in text:
        return err
    found = text.rsplit("found dtype ", 1)[-1].rstrip(".")
    return ScopeError(
        f"precision.policy({chosen.name!r}): expected variable {name} stored in float32 "
        f"(the policies keep variables in float32), found {found}; build that scope "
        "under the policy from its first build, or read it outside the policy"
    )
