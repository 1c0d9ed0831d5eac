"""What every layer with variables exposes: its tensors and variables, read-only.

Subclasses build in ``__init__`` and set ``_inputs``, ``_logits``, ``_output``,
``_w``, ``_b``, ``_params`` and ``_scope_name``.
"""


class Layer:
    """Read-only access to a built layer's tensors and variables."""

    @property
    def input(self):
        """The input tensor."""
        return self._inputs

    @property
    def logits(self):
        """The pre-activation tensor (weights applied, bias added)."""
        return self._logits

    @property
    def output(self):
        """``activation(logits)``; the same tensor on every read."""
        return self._output

    @property
    def w(self):
        """The weight: a variable, or a transpose op for a tied decoder."""
        return self._w

    @property
    def b(self):
        """The bias variable [n_out]."""
        return self._b

    @property
    def params(self):
        """The variables this layer created (a tied decoder does not own ``W``)."""
        return list(self._params)

    @property
    def scope_name(self):
        """The full variable scope the layer's variables live in."""
        return self._scope_name
