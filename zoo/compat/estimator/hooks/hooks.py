"""``tf.estimator.experimental.InMemoryEvaluatorHook``: evaluates the variables of
the training session as they are, without a checkpoint, every ``every_n_iter``
training runs, once after the session is made and once at the end (as TF 1.15).

Usage::

    evaluator = tf.estimator.experimental.InMemoryEvaluatorHook(
        estimator, eval_input_fn, every_n_iter=100)
    estimator.train(train_input_fn, hooks=[evaluator])
"""

import tensorflow as tf

from layers.errors import ZooError
from zoo.compat.estimator.estimator import _new_graph
from zoo.compat.estimator.extenders import check_estimator

v1 = tf.compat.v1


class InMemoryEvaluatorHook(v1.train.SessionRunHook):
    """Evaluates ``estimator`` on ``input_fn`` with the training variables'
    current values; writes the metrics to ``eval_dir(name)``, as ``evaluate``.

    Args:
        estimator: the ``tf.estimator.Estimator`` being trained.
        input_fn, steps, hooks, name: as ``Estimator.evaluate``'s.
        every_n_iter: evaluate every this many training runs (an int > 0).

    Raises:
        ZooError: not an Estimator; every_n_iter not > 0; a distributed config;
            (at begin) a model_fn whose EVAL scaffold has its own saver or init_fn.
    """

    def __init__(self, estimator, input_fn, steps=None, hooks=None, name=None,
                 every_n_iter=100):  # fmt: skip
        check_estimator("InMemoryEvaluatorHook", estimator)
        if not (isinstance(every_n_iter, int) and every_n_iter > 0):
            raise ZooError(
                f"InMemoryEvaluatorHook: expected every_n_iter an int > 0, found "
                f"{every_n_iter!r}; pass e.g. every_n_iter=100"
            )
        config = estimator.config
        if config.num_ps_replicas > 0 or config.num_worker_replicas > 1:
            raise ZooError(
                "InMemoryEvaluatorHook: expected a single machine (local) config, found "
                f"{config.num_ps_replicas} ps and {config.num_worker_replicas} workers; "
                "evaluate with train_and_evaluate instead"
            )
        self._estimator, self._input_fn, self._steps = estimator, input_fn, steps
        self._hooks, self._eval_dir = list(hooks or ()), estimator.eval_dir(name)
        self._timer = v1.train.SecondOrStepTimer(every_steps=every_n_iter)

    def begin(self):
        """Builds the EVAL graph (a graph of its own) and, per variable, a
        placeholder to load it from the training session."""
        self._timer.reset()
        self._runs = 0
        with _new_graph():
            self._graph = v1.get_default_graph()
            self._evaluation = self._estimator._evaluation(  # noqa: SLF001
                self._input_fn, self._steps, self._hooks
            )
            scaffold = self._evaluation.spec.scaffold
            if scaffold.saver is not None or scaffold.init_fn is not None:
                raise ZooError(
                    "InMemoryEvaluatorHook: expected the EVAL spec's scaffold without a "
                    "saver or init_fn, found one; evaluate from checkpoints "
                    "(train_and_evaluate) instead"
                )
            self._eval_variables = {v.op.name: v for v in v1.global_variables()}
            self._placeholders = {
                name: v1.placeholder(v.dtype.base_dtype, v.shape)
                for name, v in self._eval_variables.items()
            }  # fmt: skip

    def after_create_session(self, session, coord):
        """Pairs the training variables with the EVAL graph's by name, then
        evaluates the variables as the session starts."""
        trained = {v.op.name: v for v in v1.global_variables()}
        shared = sorted(set(trained) & set(self._eval_variables))
        self._train_variables = {name: trained[name] for name in shared}
        with self._graph.as_default():
            self._load = tf.group(*(
                v1.assign(self._eval_variables[name], self._placeholders[name])
                for name in shared
            ))  # fmt: skip
        self._evaluate(session)

    def after_run(self, run_context, run_values):
        self._runs += 1
        if self._timer.should_trigger_for_step(self._runs):
            self._evaluate(run_context.session)

    def end(self, session):
        self._evaluate(session)

    def _evaluate(self, train_session):
        values = train_session.run(self._train_variables)
        feed = {self._placeholders[name]: value for name, value in values.items()}

        def load(scaffold, session):
            del scaffold
            session.run(self._load, feed_dict=feed)

        with self._graph.as_default():
            scaffold = v1.train.Scaffold(
                init_fn=load, copy_from_scaffold=self._evaluation.spec.scaffold
            )
            self._evaluation.run(None, scaffold, self._eval_dir)
        self._timer.update_last_triggered_step(self._runs)
