"""Data: loaders (IDX files, tensorflow-datasets) and batches drawn in the graph.

- ``loaders``: :func:`load_mnist`, :class:`DataSet`, IDX reading and writing,
  the data set constants (``N_PIXELS``, ``N_CLASSES``, ``DATASETS``). No
  TensorFlow; tensorflow-datasets only when its data is asked for.
- ``batches``: :class:`GraphBatches`, a shuffled batch iterator in the graph.

The loaders' names are exported here, imported on first use.
"""

from layers import lazy

__getattr__, __dir__, __all__ = lazy.exports(
    __name__,
    {
        "zoo.data.loaders": (
            "DATASETS", "FILES", "IMAGE_SIDE", "KNOWN_LABELS", "MAX_EXAMPLES", "N_CLASSES",
            "N_PIXELS", "DataIdentity", "DataSet", "DataSets", "identify", "load_mnist",
            "load_splits", "network_reachable", "read_idx", "read_idx_header", "write_idx",
        ),
    },
)  # fmt: skip
