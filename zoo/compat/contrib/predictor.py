"""TF 1.15's ``tf.contrib.predictor``: a callable that feeds a dict of numpy arrays
to a SavedModel's (or an Estimator's) signature and returns its outputs, on
``tf.compat.v1``'s SavedModel loader and ``MonitoredSession``.

Usage (after ``zoo.compat.install()``)::

    predict_fn = tf.contrib.predictor.from_saved_model(export_dir)
    outputs = predict_fn({"x": batch})       # {"probabilities": array, ...}
    predict_fn.feed_tensors, predict_fn.fetch_tensors
"""

import os

import tensorflow as tf

from layers.errors import ZooError

v1 = tf.compat.v1
DEFAULT_TAGS = "serve"
_DEFAULT_INPUT_ALTERNATIVE_FORMAT = "default_input_alternative:{}"


class Predictor:
    """A session and the tensors it feeds and fetches: ``predictor(input_dict)``.

    Attributes:
        graph, session: where the model runs.
        feed_tensors, fetch_tensors: dicts of key -> tensor.
    """

    def __init__(self, graph, session, feed_tensors, fetch_tensors):
        self._graph, self._session = graph, session
        self._feed_tensors, self._fetch_tensors = feed_tensors, fetch_tensors

    @property
    def graph(self):
        return self._graph

    @property
    def session(self):
        return self._session

    @property
    def feed_tensors(self):
        return self._feed_tensors

    @property
    def fetch_tensors(self):
        return self._fetch_tensors

    def __repr__(self):
        return (f"{type(self).__name__} with feed tensors {self._feed_tensors} and "
                f"fetch_tensors {self._fetch_tensors}")  # fmt: skip

    def __call__(self, input_dict):
        """The fetch tensors' values for ``input_dict``.

        Args:
            input_dict: feed key -> numpy array (or list); a key left out is not fed.

        Returns:
            A dict of fetch key -> numpy array.

        Raises:
            ZooError: a key that is no feed tensor's; a placeholder left unfed.
        """
        unexpected = sorted(set(input_dict) - set(self._feed_tensors))
        if unexpected:
            raise ZooError(
                f"Predictor: expected input keys among {sorted(self._feed_tensors)}, "
                f"found {unexpected}; feed the signature's inputs"
            )
        unfed = sorted(
            key for key, tensor in self._feed_tensors.items()
            if input_dict.get(key) is None and tensor.op.type == "Placeholder"
        )  # fmt: skip
        if unfed:
            raise ZooError(
                f"Predictor: expected a value for each input without a default, found "
                f"none for {unfed}; add them to the input dict"
            )
        feed_dict = {
            tensor: input_dict[key]
            for key, tensor in self._feed_tensors.items()
            if input_dict.get(key) is not None
        }
        return self._session.run(self._fetch_tensors, feed_dict=feed_dict)


def from_saved_model(export_dir, signature_def_key=None, signature_def=None,
                     input_names=None, output_names=None, tags=None, graph=None,
                     config=None):  # fmt: skip
    """A :class:`Predictor` of a SavedModel's signature.

    Args:
        export_dir: the SavedModel directory.
        signature_def_key: the signature (None: ``serving_default``).
        signature_def: a ``SignatureDef`` to use instead.
        input_names, output_names: dicts of key -> tensor name, instead of a
            signature (both or neither).
        tags: comma-separated tags of the MetaGraphDef (None: ``"serve"``).
        graph: the graph to load into (None: a new one).
        config: the session's ``ConfigProto``.

    Returns:
        A :class:`Predictor`.

    Raises:
        ZooError: more than one way to choose the signature; one of
            input_names/output_names; no SavedModel or no such tags or
            signature there.
    """
    if (input_names is None) != (output_names is None):
        raise ZooError(
            "from_saved_model: expected input_names and output_names both or neither, "
            f"found only {'input_names' if output_names is None else 'output_names'}; "
            "pass both dicts of key -> tensor name"
        )
    given = [name for name, value in (("signature_def_key", signature_def_key),
             ("signature_def", signature_def), ("input_names", input_names))
             if value is not None]  # fmt: skip
    if len(given) > 1:
        raise ZooError(
            f"from_saved_model: expected at most one of signature_def_key, signature_def "
            f"or (input_names and output_names), found {given}; pass one of them"
        )
    export_dir = os.fspath(export_dir)
    if isinstance(export_dir, bytes):
        export_dir = export_dir.decode()
    if not v1.saved_model.contains_saved_model(export_dir):
        raise ZooError(
            f"from_saved_model: expected a SavedModel (saved_model.pb) in {export_dir}, "
            "found none; pass the directory export_saved_model returned"
        )
    tags = tags or DEFAULT_TAGS
    tag_list = [tag.strip() for tag in tags.split(",")] if isinstance(tags, str) else tags
    graph = graph or tf.Graph()
    with graph.as_default():
        session = v1.Session(config=config)
        try:
            meta_graph = v1.saved_model.loader.load(session, tag_list, export_dir)
        except RuntimeError as err:
            session.close()
            raise ZooError(
                f"from_saved_model: expected a MetaGraphDef of tags {tag_list} in "
                f"{export_dir}, found none ({err}); pass the tags it was saved with"
            ) from None
    if input_names is None:
        if signature_def is None:
            signature_def = _signature_def(meta_graph, signature_def_key, export_dir)
        input_names = {key: info.name for key, info in signature_def.inputs.items()}
        output_names = {key: info.name for key, info in signature_def.outputs.items()}
    return Predictor(graph, session, _tensors(graph, input_names),
                     _tensors(graph, output_names))  # fmt: skip


def _signature_def(meta_graph, key, export_dir):
    """The signature ``key`` (None: the default), or its default input
    alternative, as TF 1.15 looked it up."""
    key = key or v1.saved_model.signature_constants.DEFAULT_SERVING_SIGNATURE_DEF_KEY
    signatures = meta_graph.signature_def
    for name in (key, _DEFAULT_INPUT_ALTERNATIVE_FORMAT.format(key)):
        if name in signatures:
            return signatures[name]
    raise ZooError(
        f"from_saved_model: expected signature_def_key among {sorted(signatures)} of "
        f"{export_dir}, found {key!r}; pass one of them"
    )


def _tensors(graph, names):
    return {key: graph.get_tensor_by_name(name) for key, name in names.items()}


def from_estimator(estimator, serving_input_receiver_fn, output_key=None, graph=None,
                   config=None):  # fmt: skip
    """A :class:`Predictor` of an Estimator's latest checkpoint (of fresh
    variables without one, as TF 1.15), through the serving signature
    ``output_key`` of its PREDICT spec.

    Args:
        estimator: a ``tf.estimator.Estimator``.
        serving_input_receiver_fn: returns a ``ServingInputReceiver``.
        output_key: the export output (None: ``serving_default``).
        graph: the graph to build in (None: a new one).
        config: the session's ``ConfigProto``.

    Returns:
        A :class:`Predictor`.

    Raises:
        ZooError: not an Estimator; output_key not among the export outputs;
            a checkpoint of another model.
    """
    from zoo.compat.estimator.estimator import check_compatible
    from zoo.compat.estimator.extenders import check_estimator
    from zoo.compat.estimator.mode_keys import ModeKeys
    from zoo.compat.estimator.model_fn import export_outputs_with_default

    check_estimator("from_estimator", estimator)
    key = output_key or v1.saved_model.signature_constants.DEFAULT_SERVING_SIGNATURE_DEF_KEY
    graph = graph or tf.Graph()
    with graph.as_default():
        v1.train.get_or_create_global_step()
        receiver = serving_input_receiver_fn()
        spec = estimator.model_fn(receiver.features, None, ModeKeys.PREDICT,
                                  estimator.config)  # fmt: skip
        outputs = export_outputs_with_default(
            spec.export_outputs, spec.predictions, "from_estimator"
        )
        if key not in outputs:
            raise ZooError(
                f"from_estimator: expected output_key among {sorted(outputs)}, found "
                f"{key!r}; pass one of the model_fn's export_outputs"
            )
        signature_def = outputs[key].as_signature_def(receiver.receiver_tensors)
        checkpoint = estimator.latest_checkpoint()
        if checkpoint:
            check_compatible(checkpoint, "from_estimator", spec.scaffold)
        creator = v1.train.ChiefSessionCreator(
            scaffold=spec.scaffold, checkpoint_dir=estimator.model_dir, config=config
        )
        session = v1.train.MonitoredSession(session_creator=creator)
    feeds = {key: info.name for key, info in signature_def.inputs.items()}
    fetches = {key: info.name for key, info in signature_def.outputs.items()}
    return Predictor(graph, session, _tensors(graph, feeds), _tensors(graph, fetches))
