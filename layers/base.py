"""What every layer with variables exposes: its tensors and variables, read-only.

Subclasses build in ``__init__`` and set ``_inputs``, ``_logits``, ``_output``,
``_w``, ``_b``, ``_params``, ``_scope_name`` and ``_regularization_loss``.
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
    def regularization_loss(self):
        """``regularizer(W)`` of this build (a scalar tensor), or None without one."""
        return self._regularization_loss

    @property
    def scope_name(self):
        """The full variable scope the layer's variables live in."""
        return self._scope_name
