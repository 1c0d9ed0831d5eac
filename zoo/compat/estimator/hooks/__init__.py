"""Hooks of ``tf.estimator.experimental`` laid out as tensorflow_estimator's
``hooks/hooks.py``: :class:`~zoo.compat.estimator.hooks.hooks.InMemoryEvaluatorHook`."""
