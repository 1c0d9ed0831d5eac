"""What every layer with variables exposes: its tensors and variables, read-only.

Subclasses build in ``__init__`` and set ``_inputs``, ``_logits``, ``_output``,
``_w``, ``_b``, ``_params``, ``_scope_name`` and ``_regularization_loss``.
"""

import operator


def read_only(attribute, doc):
    """Returns a property that reads ``self.<attribute>``, documented by ``doc``."""
    return property(operator.attrgetter(attribute), doc=doc)


class Layer:
    """Read-only access to a built layer's tensors and variables."""

    input = read_only("_inputs", "The input tensor.")
    logits = read_only(
        "_logits", "The pre-activation tensor (weights applied, bias added)."
    )
    output = read_only("_output", "``activation(logits)``; the same tensor on every read.")
    w = read_only("_w", "The weight: a variable, or a transpose op for a tied decoder.")
    b = read_only("_b", "The bias variable [n_out], or None for a layer without one.")
    regularization_loss = read_only(
        "_regularization_loss",
        "``regularizer(W)`` of this build (a scalar tensor), or None without one.",
    )
    scope_name = read_only(
        "_scope_name", "The full variable scope of the layer's variables."
    )

    @property
    def params(self):
        """The variables this layer created (a tied decoder does not own ``W``)."""
        return list(self._params)
