"""TF 1.15's ``tf.contrib.seq2seq`` on TensorFlow 2.21: dynamic decoding with helpers,
beam search and attention, on ``tf.compat.v1`` (``while_loop``, ``get_variable``).

Laid out as TF 1.15's ``tensorflow/contrib/seq2seq/python/ops/``: :mod:`.helper`,
:mod:`.decoder`, :mod:`.basic_decoder`, :mod:`.attention_wrapper`,
:mod:`.beam_search_decoder`, :mod:`.beam_search_ops` (``gather_tree``), :mod:`.loss`;
every TF 1.15 name is exported here. ``zoo.compat.install()`` makes this
``tf.contrib.seq2seq``. A cell is :mod:`layers.tf1.rnn_cell`'s, or anything with TF
1.15's cell protocol (``state_size``, ``output_size``, ``zero_state``, a call
``(inputs, state) -> (output, state)`` that makes its variables in its own scope).

Usage::

    from layers.tf1 import seq2seq
    helper = seq2seq.TrainingHelper(decoder_inputs, target_lengths)
    decoder = seq2seq.BasicDecoder(cell, helper, initial_state, output_layer=projection)
    outputs, _, _ = seq2seq.dynamic_decode(decoder)            # scope "decoder"
    loss = seq2seq.sequence_loss(outputs.rnn_output, targets, weights)
"""

from layers.tf1.seq2seq.attention_wrapper import (
    AttentionMechanism,
    AttentionWrapper,
    AttentionWrapperState,
    BahdanauAttention,
    BahdanauMonotonicAttention,
    LuongAttention,
    LuongMonotonicAttention,
    hardmax,
    monotonic_attention,
    safe_cumprod,
)
from layers.tf1.seq2seq.basic_decoder import BasicDecoder, BasicDecoderOutput
from layers.tf1.seq2seq.beam_search_decoder import (
    BeamSearchDecoder,
    BeamSearchDecoderOutput,
    BeamSearchDecoderState,
    FinalBeamSearchDecoderOutput,
    tile_batch,
)
from layers.tf1.seq2seq.beam_search_ops import gather_tree
from layers.tf1.seq2seq.decoder import Decoder, dynamic_decode
from layers.tf1.seq2seq.helper import (
    CustomHelper,
    GreedyEmbeddingHelper,
    Helper,
    InferenceHelper,
    SampleEmbeddingHelper,
    ScheduledEmbeddingTrainingHelper,
    ScheduledOutputTrainingHelper,
    TrainingHelper,
)
from layers.tf1.seq2seq.loss import sequence_loss

__all__ = [
    "AttentionMechanism", "AttentionWrapper", "AttentionWrapperState", "BahdanauAttention",
    "BahdanauMonotonicAttention", "BasicDecoder", "BasicDecoderOutput", "BeamSearchDecoder",
    "BeamSearchDecoderOutput", "BeamSearchDecoderState", "CustomHelper", "Decoder",
    "FinalBeamSearchDecoderOutput", "GreedyEmbeddingHelper", "Helper", "InferenceHelper",
    "LuongAttention", "LuongMonotonicAttention", "SampleEmbeddingHelper",
    "ScheduledEmbeddingTrainingHelper", "ScheduledOutputTrainingHelper", "TrainingHelper",
    "dynamic_decode", "gather_tree", "hardmax", "monotonic_attention", "safe_cumprod",
    "sequence_loss", "tile_batch",
]  # fmt: skip
