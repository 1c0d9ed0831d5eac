"""The same scope-based builders in eager mode, in ``tf.function`` and in a graph.

In eager mode ``tf.compat.v1.get_variable`` silently makes a new variable on
every call. :func:`share` wraps a zoo builder in a scope-keyed variable store:
the first call creates the variables, with the names graph mode gives them
(``ae/encoder/W:0``), and every later call reuses them; a later call that would
create a variable raises instead. ``reuse`` keeps its TF1 meaning across
``share`` objects of one scope: False claims a new scope, True shares one that
exists, ``tf.compat.v1.AUTO_REUSE`` does either.

:func:`save_by_name` and :func:`restore_by_name` move variables between graph
mode and eager mode through TF1-format checkpoints, matched by variable name.

Usage::

    model = share(autoencoder, "ae", tied=True)
    loss = model(x).loss                      # creates ae/encoder/W, ...

    @tf.function
    def step(x):
        with tf.GradientTape() as tape:
            loss = model(x).loss              # the same variables
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))

    evaluation = share(autoencoder, "ae", reuse=True, tied=True)  # shares them too
    restore_by_name(model.variables, "runs/autoencoder/model.ckpt")
"""

import contextlib
import gc
import inspect
import weakref

import tensorflow as tf
from tensorflow.python.ops import variable_scope as _vs

from layers.base import read_only
from layers.errors import ScopeError
from layers.variables import full_name, reading_through, stored_variable
from zoo.models.parts import AUTO_REUSE, check_scope_args
from zoo.sharing.restore import checkpoint_slots, plan_restore
from zoo.sharing.state import variable_slot
from zoo.training.checkpoints import open_tf_checkpoint

# Full scope name -> the store holding its eager variables, while a share() uses it.
_STORES = weakref.WeakValueDictionary()
# Graph collection (with the scope name) of the regularization losses share() calls add.
_CALLS_LOSSES = "zoo_share_regularization_losses"
# Graph collection (with the scope name) of what the latest call added to "losses".
_LATEST_LOSSES = "zoo_share_latest_losses"


class VariableStore(_vs.EagerVariableStore):
    """A variable store that shares variables by name and keeps their regularizers.

    Under ``with store.as_default():`` the zoo's layers and any TF1 code may run
    eagerly: ``get_variable`` returns the stored variable of a name if there is
    one, and creates and stores it otherwise.

    TF1 code gives a variable a regularizer by two paths, and the store keeps
    each once per variable, however often later calls reuse it:
    ``get_variable(regularizer=)`` (or the ``variable_scope``'s), noted by
    :meth:`recording_getter`; and a TF1 layer's (``kernel_regularizer`` of
    ``tf.compat.v1.layers``, TF-Slim's ``weights_regularizer``), which never
    reaches ``get_variable``: the layer hands it to the default store's
    ``add_regularizer`` after creating the weight.
    """

    def __init__(self):
        super().__init__(_RegularizerStore())

    def recording_getter(self):
        """Returns a custom getter that notes every variable name asked for here.

        Use it as the root ``variable_scope``'s ``custom_getter``: it sees each
        name after the function's own custom getters, and the regularizer
        ``get_variable`` was given (or the scope's).
        """
        asked = self._store.asked

        def record(getter, name, *args, regularizer=None, **kwargs):
            variable = getter(name, *args, regularizer=regularizer, **kwargs)
            if asked.get(name) is None:
                asked[name] = _giving_a_loss(regularizer, variable)
            return variable

        return record

    @property
    def asked(self):
        """The names :meth:`recording_getter` saw, in the order first asked."""
        return list(self._store.asked)

    def regularizers(self):
        """Variable name -> its regularizers, one per path (``get_variable``'s first).

        Only variables with a regularizer that gives a loss (not
        ``tf.compat.v1.no_regularizer``) are listed.
        """
        regularizers = {}
        for table in (self._store.asked, self._store.layer_regularizers):
            for name, regularizer in table.items():
                if regularizer is not None:
                    regularizers[name] = (*regularizers.get(name, ()), regularizer)
        return regularizers


class _RegularizerStore(_vs._VariableStore):
    """TensorFlow's eager variable store with the ``add_regularizer`` TF1 layers call."""

    def __init__(self):
        super().__init__()
        self._store_eager_variables = True
        self.asked = {}  # name -> its get_variable regularizer, or None
        self.layer_regularizers = {}  # name -> the regularizer a TF1 layer added

    def add_regularizer(self, variable, regularizer):
        """Keeps a TF1 layer's regularizer of ``variable`` (or of the variable behind
        a precision policy's cast read): the first one per name."""
        name = checkpoint_name(stored_variable(variable))
        if self.layer_regularizers.get(name) is None:
            self.layer_regularizers[name] = _giving_a_loss(regularizer, variable)


def _giving_a_loss(regularizer, variable):
    """``regularizer``, or None when it is None or gives no loss (``no_regularizer``)."""
    if regularizer is None or regularizer(variable) is None:
        return None
    return regularizer


def share(builder, scope, reuse=False, **builder_kwargs):
    """Wraps ``builder`` so that its variables are created once and then reused.

    Args:
        builder: a zoo builder ``builder(*tensors, scope=, reuse=, **kwargs)``,
            e.g. :func:`zoo.autoencoder`; or any function of tensors that makes
            its variables with ``tf.compat.v1.get_variable`` under
            ``variable_scope``s (reuse inside it included), which runs under
            ``variable_scope(scope)`` (see :func:`call_builder`).
        scope: the builder's variable scope, relative to the scope current at
            the first call.
        reuse: False to create the scope's variables (raises if another
            ``share`` of the scope made them), True to use the variables another
            ``share`` of the scope made (raises if there are none),
            ``tf.compat.v1.AUTO_REUSE`` for either.
        **builder_kwargs: passed to every call of the builder (``tied``, sizes).

    Returns:
        A :class:`Shared` callable.

    Raises:
        ScopeError: an empty scope or an invalid reuse value.
    """
    return Shared(builder, scope, reuse, builder_kwargs)


class Shared:
    """A builder bound to one scope and one set of variables (see :func:`share`)."""

    def __init__(self, builder, scope, reuse, builder_kwargs):
        check_scope_args(scope, reuse)
        self._builder = builder
        self._scope = scope
        self._reuse = reuse
        self._builder_kwargs = builder_kwargs
        self._scope_name = None
        self._store = None
        self._graphs = weakref.WeakSet()
        self._latest_losses = []  # eagerly or traced: what the latest call added

    def __call__(self, *args, **kwargs):
        """Builds the model on ``args``; returns what the builder returns.

        Raises:
            ScopeError: the first call breaks the ``reuse`` rule, or a later call
                would create a variable the first call did not (other arguments).
            Others: what the builder raises.
        """
        kwargs = {**self._builder_kwargs, **kwargs}
        if not (tf.executing_eagerly() or tf.inside_function()):
            return self._call_in_graph(args, kwargs)
        store = self._bind_store()
        guard = contextlib.nullcontext()
        if self.variables:
            guard = refuse_new_variables(
                self._scope_name,
                "call with the arguments of the first call (sizes, tied=...), or share "
                "another scope",
            )
        collection = tf.compat.v1.get_collection_ref(tf.compat.v1.GraphKeys.LOSSES)
        known = len(collection)
        with store.as_default(), guard, reading_through(store.recording_getter()):
            result = call_builder(self._builder, args, kwargs, self._scope, AUTO_REUSE)
        self._latest_losses = collection[known:]
        if tf.executing_eagerly():
            del collection[known:]  # eagerly they would pile up in the global graph
        return result

    def _call_in_graph(self, args, kwargs):
        """Graph mode: the graph is the store; later calls in a graph pass reuse=True.

        The regularization losses a call adds are noted in the graph too: a TF1
        layer names its loss by the name scope (``tower_0/net/...``), which
        need not start with the variable scope. So is what the latest call
        added to the ``"losses"`` collection.
        """
        graph = tf.compat.v1.get_default_graph()
        reuse = True if graph in self._graphs else self._reuse
        keys = (tf.compat.v1.GraphKeys.REGULARIZATION_LOSSES, tf.compat.v1.GraphKeys.LOSSES)
        known = {key: len(graph.get_collection(key)) for key in keys}
        result = call_builder(self._builder, args, kwargs, self._scope, reuse)
        self._scope_name = name = self._scope_name or full_name(self._scope)
        added = {key: graph.get_collection(key)[known[key] :] for key in keys}
        for loss in added[tf.compat.v1.GraphKeys.REGULARIZATION_LOSSES]:
            graph.add_to_collection((_CALLS_LOSSES, name), loss)
        graph.clear_collection((_LATEST_LOSSES, name))
        for loss in added[tf.compat.v1.GraphKeys.LOSSES]:
            graph.add_to_collection((_LATEST_LOSSES, name), loss)
        self._graphs.add(graph)
        return result

    def _bind_store(self):
        """Returns this object's store, choosing it at the first call by ``reuse``."""
        if self._store is not None:
            return self._store
        name = full_name(self._scope)
        if _STORES.get(name) is not None and self._reuse in (False, None):
            gc.collect()  # a share() nobody references, held only by a cycle, lets go
        existing = _STORES.get(name)
        if existing is not None and existing.variables() and self._reuse in (False, None):
            raise ScopeError(
                f"{name}: expected no variables under {name} yet (reuse=False), found "
                f"{len(existing.variables())} made by another zoo.share of this scope; "
                "pass reuse=True or tf.compat.v1.AUTO_REUSE to share them, or use "
                "another scope"
            )
        if (existing is None or not existing.variables()) and self._reuse is True:
            raise ScopeError(
                f"{name}: expected variables under {name} to exist (reuse=True), found "
                "none; call a zoo.share of this scope with reuse=False first, or pass "
                "reuse=tf.compat.v1.AUTO_REUSE"
            )
        self._store = existing if existing is not None else VariableStore()
        _STORES[name] = self._store
        self._scope_name = name
        return self._store

    scope_name = read_only(
        "_scope_name", "The full variable scope, known after the first call (None before)."
    )

    @property
    def variables(self):
        """The scope's variables by name: the store's; in graph mode the graph's."""
        if self._scope_name is None:
            return []
        prefix = self._scope_name + "/"
        if tf.executing_eagerly() or tf.inside_function():
            candidates = self._store.variables() if self._store is not None else []
        else:
            candidates = tf.compat.v1.global_variables()
        inside = (v for v in candidates if v.name.startswith(prefix))
        return sorted(inside, key=checkpoint_name)

    @property
    def trainable_variables(self):
        """The trainable ones among :attr:`variables`."""
        return [v for v in self.variables if v.trainable]

    @property
    def regularization_losses(self):
        """The losses of the variables' regularizers, once per variable and path,
        then what the latest call added to the ``"losses"`` collection.

        Both regularizer paths count: ``get_variable(regularizer=)`` and a TF1
        layer's regularizer (see :class:`VariableStore`). Eagerly and in
        ``tf.function``, ``regularizer(variable)`` evaluated now (read it inside
        the ``GradientTape`` or the traced function), sorted by variable name;
        in graph mode the entries of ``GraphKeys.REGULARIZATION_LOSSES``, where
        TensorFlow puts both, named under the scope or added by a call of a
        ``share`` of the scope. The ``"losses"`` entries (a weight decay
        ``tf.compat.v1.add_to_collection("losses", decay * tf.nn.l2_loss(w))``)
        are those of the latest call in this mode: eagerly its values (eager
        mode takes them out of the global graph's collection), in a traced
        function or a graph its tensors. Add their sum to the loss, as TF1 code
        adds ``tf.compat.v1.losses.get_regularization_loss()`` and the
        collection.
        """
        if self._scope_name is None:
            return []
        if not (tf.executing_eagerly() or tf.inside_function()):
            named = tf.compat.v1.get_collection(
                tf.compat.v1.GraphKeys.REGULARIZATION_LOSSES, self._scope_name + "/"
            )
            added = tf.compat.v1.get_collection((_CALLS_LOSSES, self._scope_name))
            latest = tf.compat.v1.get_collection((_LATEST_LOSSES, self._scope_name))
            return named + [t for t in added if all(t is not n for n in named)] + latest
        by_name = {checkpoint_name(v): v for v in self.variables}
        regularizers = self._store.regularizers()
        return [
            regularizer(by_name[name])
            for name in sorted(regularizers.keys() & by_name.keys())
            for regularizer in regularizers[name]
        ] + self._latest_losses


def call_builder(builder, args, kwargs, scope, reuse):
    """Calls a zoo builder, or any get_variable function, under ``scope`` with ``reuse``.

    Args:
        builder: a function whose parameters include ``scope`` and ``reuse`` (a zoo
            builder, TF-Slim's nets), which receives them (``scope`` only when
            given, so that its own default scope stays); or any other function,
            which runs inside ``variable_scope(scope, reuse=reuse)`` (under the
            current scope when ``scope`` is None).
        args: positional arguments (the tensors).
        kwargs: keyword arguments.
        scope: the variable scope, or None.
        reuse: False, True or ``tf.compat.v1.AUTO_REUSE``.

    Returns:
        What ``builder`` returns.
    """
    if takes_scope(builder):
        named = {} if scope is None else {"scope": scope}
        return builder(*args, reuse=reuse, **named, **kwargs)
    current = tf.compat.v1.get_variable_scope()
    with tf.compat.v1.variable_scope(
        scope or current, reuse=reuse or None, auxiliary_name_scope=scope is not None
    ):
        if scope is None:
            fresh_default_names(current.name)
        return builder(*args, **kwargs)


def fresh_default_names(scope_name):
    """Default names under ``scope_name`` (``dense``, ``dense_1`` ...) count from zero
    again for the rest of the scope, as in the graph where a function was first built.

    Eagerly the counts live as long as the process, so an earlier unnamed ``tf.layers``
    object made elsewhere would shift every later default name (TensorFlow puts the
    counts back on leaving a scope entered as an object, as :func:`call_builder`
    enters it). Reads TensorFlow's variable-scope store from its graph collection
    ``("__varscope",)``, which has no public name (tests/zoo/test_share.py names it).
    """
    for store in tf.compat.v1.get_collection(("__varscope",)):
        store.close_variable_subscopes(scope_name or None)


def takes_scope(builder):
    """Tells whether ``builder`` has ``scope`` and ``reuse`` parameters (zoo builders)."""
    return {"scope", "reuse"} <= parameter_names(builder)


def takes_training(builder):
    """Tells whether ``builder`` has a ``training`` parameter (batch norm's mode)."""
    return "training" in parameter_names(builder)


def parameter_names(builder):
    """The names of ``builder``'s parameters; empty when they cannot be read."""
    try:
        return set(inspect.signature(builder).parameters)
    except (TypeError, ValueError):
        return set()


def refuse_new_variables(owner, fix):
    """Returns a context in which creating any variable raises ScopeError.

    Args:
        owner: the scope or layer name the message starts with.
        fix: what to change, the end of the message.
    """

    def refuse(next_creator, **kwargs):
        raise new_variable_error(owner, kwargs.get("name"), fix)

    return tf.variable_creator_scope(refuse)


def new_variable_error(owner, name, fix):
    """The ScopeError of a call after the first that would create variable ``name``."""
    return ScopeError(
        f"{owner}: expected this call to reuse the variables of the first call, found "
        f"it would create {name}; {fix}"
    )


def checkpoint_name(variable):
    """Returns the checkpoint name of a variable: its name without ``:0``."""
    return variable.name.split(":")[0]


def save_by_name(variables, path, session=None):
    """Writes a TF1-format checkpoint that ``tf.compat.v1.train.Saver`` can restore.

    Args:
        variables: the variables; each is stored under its name without ``:0``;
            or a dict entry name -> variable (such as ``ZooLayer.tf1_variables``).
        path: checkpoint prefix.
        session: the session in graph mode; None in eager mode.

    Returns:
        The checkpoint prefix written.
    """
    return _saver(variables, session).save(session, path, write_meta_graph=False)


def restore_by_name(
    variables, path, session=None, *, exclude=(), rename=None, report=False
):
    """Loads every variable from the checkpoint entry of the same name.

    Works for checkpoints written by ``tf.compat.v1.train.Saver`` in graph mode
    and by :func:`save_by_name`, in graph mode (pass ``session``) and eagerly.

    Args:
        variables: the variables to load, each from the entry of its name; or a
            dict entry name -> variable (such as ``ZooLayer.tf1_variables``).
            Entries not asked for are ignored.
        path: checkpoint prefix or the directory holding a ``checkpoint`` file.
        session: the session in graph mode; None in eager mode.
        exclude: regular expressions of full names to leave alone on both sides.
        rename: ``{"old/": "new/"}``: entries whose full names start with a key
            (whole path components) load into the variables named with its value.
        report: False raises on a variable without an entry (strict); True loads
            what matches and leaves the rest, listed in the returned report.

    Returns:
        The :class:`zoo.sharing.restore.RestoreReport` (``print`` it to see it).

    Raises:
        DataError: no readable checkpoint at ``path``; ZooError: a directory whose
            ``checkpoint`` file leads outside it (both from
            :func:`zoo.training.checkpoints.open_tf_checkpoint`).
        ScopeError: strict, a variable has no entry of its name in the checkpoint;
            a renaming map that gives two entries one name or matches nothing.
        ShapeError: strict, an entry has another shape than its variable.
        ZooError: an exclude pattern that matches nothing.
    """
    path, reader = open_tf_checkpoint(path)
    owner = f"restore_by_name({path!r})"
    saved = {slot.name: slot for slot in checkpoint_slots(reader)}
    targets = {
        name: variable_slot(variable, name) for name, variable in by_name(variables).items()
    }
    pairs, restore_report = plan_restore(
        owner,
        saved,
        targets,
        f"checkpoint {path}",
        "the list passed",
        exclude=exclude,
        rename=rename,
        report=report,
    )
    if pairs:
        entries = {slot.name: variable for slot, variable in pairs}
        _saver(entries, session).restore(session, path)
    return restore_report


def _saver(variables, session):
    """A Saver of ``variables`` (a list, or a dict name -> variable) by name, built in
    the session's graph when there is one."""
    graph = session.graph.as_default() if session else contextlib.nullcontext()
    with graph:
        return tf.compat.v1.train.Saver(var_list=by_name(variables))


def by_name(variables):
    """Returns checkpoint name -> variable for a list of variables or such a dict."""
    if isinstance(variables, dict):
        return dict(variables)
    return {checkpoint_name(v): v for v in variables}
