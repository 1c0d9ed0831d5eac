"""TF 1.15's ``tf.contrib.rnn.LSTMBlockCell`` on :class:`layers.tf1.rnn_cell.LSTMCell`.

TF 1.15's block cell ran one fused kernel (``LSTMBlockCell``, still in
``tf.raw_ops``) for the math of ``LSTMCell``: the same gates in the same order
(``i, j, f, o``), the same peepholes and cell clipping, the same variables
(``lstm_cell/kernel``, ``lstm_cell/bias``, ``w_i_diag``, ``w_f_diag``,
``w_o_diag``), so its checkpoints restore into this cell and back.
"""

from layers.tf1.rnn_cell import LSTMCell

__all__ = ["LSTMBlockCell"]


class LSTMBlockCell(LSTMCell):
    """TF 1.15's ``LSTMBlockCell``: an ``LSTMCell`` without projection.

    Args:
        num_units: the cell's width.
        forget_bias: added to the forget gate.
        cell_clip: None (or TF 1.15's ``-1``): no clipping; else ``c`` is clipped
            to ``[-cell_clip, cell_clip]``.
        use_peephole: diagonal peephole connections.
        dtype: of the variables.
        reuse: reuse the cell's variables.
        name: its scope, ``"lstm_cell"`` as TF 1.15's (LSTMCell's checkpoints).
    """

    def __init__(self, num_units, forget_bias=1.0, cell_clip=None, use_peephole=False,
                 dtype=None, reuse=None, name="lstm_cell"):  # fmt: skip
        clip = None if cell_clip is None or cell_clip < 0 else cell_clip
        super().__init__(
            num_units, use_peepholes=use_peephole, cell_clip=clip, forget_bias=forget_bias,
            reuse=reuse, name=name, dtype=dtype,
        )  # fmt: skip
