"""MNIST and Fashion-MNIST as numpy arrays, from local IDX files or tfds.

Sources, in order: the ``data_dir`` argument, the ``ZOO_DATA_DIR`` environment
variable (a directory of the four standard IDX files, gzipped or not), then
tensorflow-datasets. Offline, tfds would retry for minutes; we check the
network first and fail within seconds with an error that says how to give
local files.

Local files are identified by content (:func:`identify`): the published MNIST and
Fashion-MNIST label files have known md5s, so a run records what its files are
(``fashion_mnist``, or ``idx:<dir>`` for valid files of no known dataset), and
asking for one dataset with the files of the other is a :class:`DataError`.

Usage::

    data = load_mnist("fashion_mnist", data_dir="/usr/share/datasets/fashion-mnist")
    data.name, data.md5                           # "fashion_mnist", content hash
    images, labels = data.train.next_batch(128)   # [128, 784] float32, [128, 10]
    data.test.images.shape                        # (10000, 784)
"""

import dataclasses
import gzip
import hashlib
import math
import os
import socket
import zlib

import numpy as np

from layers.checks import choice_problem, int_problem, require
from layers.errors import DataError

DATASETS = ("mnist", "fashion_mnist")
N_CLASSES = 10
IMAGE_SIDE = 28
N_PIXELS = IMAGE_SIDE * IMAGE_SIDE  # an image flattened, as every loader returns it
FILES = {
    "train": ("train-images-idx3-ubyte", "train-labels-idx1-ubyte"),
    "test": ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"),
}
_MAGIC = {3: 0x00000803, 1: 0x00000801}  # unsigned bytes, 3 or 1 dimensions
# md5 of the decompressed label files as published (MNIST: yann.lecun.com; Fashion-MNIST:
# zalandoresearch). The image files' md5s, for reference: MNIST train
# 6bbc9ace898e44ae57da46a324031adb, test 2646ac647ad5339dbf082846283269ea; Fashion-MNIST
# train f4a8712d7a061bf5bd6d2ca38dc4d50a, test 8181f5470baa50b63fa0f6fddb340f0a.
KNOWN_LABELS = {
    "mnist": {
        "train-labels-idx1-ubyte": "a25bea736e30d166cdddb491f175f624",
        "t10k-labels-idx1-ubyte": "27ae3e4e09519cfbb04c329615203637",
    },
    "fashion_mnist": {
        "train-labels-idx1-ubyte": "9018921c3c673c538a1fc5bad174d6f9",
        "t10k-labels-idx1-ubyte": "15d484375f8d13e6eb1aabb0c3f46965",
    },
}
MAX_EXAMPLES = 1_000_000  # per IDX file: 784 MB of images at most
_SAMPLE = 1 << 16  # image bytes hashed into a directory's identity
_CHUNK = 1 << 20
_TFDS_HOST = ("storage.googleapis.com", 443)


def read_idx(path, ndim, shape=None):
    """Reads an IDX file of unsigned bytes, gzipped (``.gz``) or raw.

    The header is checked before any data is read: its dimensions against
    ``shape`` and :data:`MAX_EXAMPLES`, a raw file's declared size against its
    length, and a gzipped file is read in chunks up to the declared size, so a
    hostile file can neither make us allocate more than it really holds nor be
    half-loaded. Corrupt gzip streams raise DataError too.

    Args:
        path: the file.
        ndim: expected number of dimensions (3 for images, 1 for labels).
        shape: optional expected shape, None for a dimension that may be anything.

    Returns:
        A uint8 array of the declared shape.

    Raises:
        DataError: the file is missing, not IDX, of another type, rank or shape,
            truncated, or longer than its header declares.
    """
    gz = str(path).endswith(".gz")
    try:
        with (gzip.open if gz else open)(path, "rb") as stream:
            shape = _check_shape(path, _read_header(path, stream, ndim), shape)
            size = math.prod(shape)
            if not gz:  # a raw file's length is known: check the shape before reading
                held = os.fstat(stream.fileno()).st_size - stream.tell()
                if held < size:
                    raise _truncated(path, size, shape, held)
            payload = _read_exactly(stream, size)
            if len(payload) < size:
                raise _truncated(path, size, shape, len(payload))
            if stream.read(1):
                raise DataError(
                    f"{path}: expected {size} data bytes for shape {shape}, found more; "
                    "the file is corrupt or not the one its name says"
                )
    except (OSError, EOFError, zlib.error) as err:
        raise DataError(f"{path}: expected a readable IDX file, found {err}") from None
    return np.frombuffer(bytes(payload), dtype=np.uint8).reshape(shape)


def read_idx_header(path, ndim):
    """Returns the shape an IDX file's header declares, reading nothing more.

    Raises:
        DataError: as :func:`read_idx`, for the header.
    """
    try:
        with (gzip.open if str(path).endswith(".gz") else open)(path, "rb") as stream:
            return _check_shape(path, _read_header(path, stream, ndim), None)
    except (OSError, EOFError, zlib.error) as err:
        raise DataError(f"{path}: expected a readable IDX file, found {err}") from None


def _check_shape(path, declared, expected):
    """Returns ``declared`` after checking it against ``expected`` and the size cap."""
    if declared[0] > MAX_EXAMPLES:
        raise DataError(
            f"{path}: expected at most {MAX_EXAMPLES} examples, found a header declaring "
            f"{declared[0]}; the file is corrupt or not MNIST-format"
        )
    pairs = zip(expected or declared, declared, strict=True)
    if any(want is not None and want != got for want, got in pairs):
        wanted = tuple("any" if want is None else want for want in expected)
        raise DataError(
            f"{path}: expected shape {wanted}, found a header declaring {declared}; "
            "use MNIST-format files (28x28 images, one label per image)"
        )
    return declared


def _truncated(path, size, shape, found):
    return DataError(
        f"{path}: expected {size} data bytes for shape {shape}, found {found}; the file "
        "is truncated, download it again"
    )


def _read_header(path, stream, ndim):
    """Reads and checks magic number and dimensions; returns the shape."""
    magic = int.from_bytes(stream.read(4), "big")
    if magic != _MAGIC[ndim]:
        raise DataError(
            f"{path}: expected IDX magic number {_MAGIC[ndim]:#010x} (unsigned bytes, "
            f"{ndim} dimensions), found {magic:#010x}; this is not an MNIST "
            f"{'image' if ndim == 3 else 'label'} file"
        )
    dims = stream.read(4 * ndim)
    if len(dims) < 4 * ndim:
        raise DataError(
            f"{path}: expected a {4 + 4 * ndim}-byte IDX header, found {4 + len(dims)} "
            "bytes; the file is truncated"
        )
    return tuple(int.from_bytes(dims[4 * i : 4 * i + 4], "big") for i in range(ndim))


def _read_exactly(stream, size):
    payload = bytearray()
    while len(payload) < size:
        chunk = stream.read(min(_CHUNK, size - len(payload)))
        if not chunk:
            break
        payload += chunk
    return payload


@dataclasses.dataclass
class DataSet:
    """Images and labels with a seeded batch iterator.

    Each epoch visits every example once in an order drawn from
    ``(seed, epoch)``, so the iterator's whole state is ``(epoch, position)``.

    Attributes:
        images: float32 [n, 784] in [0, 1].
        labels: float32 one-hot [n, 10], or int64 [n].
        seed: seed of the shuffling.
        epoch: epochs completed.
        position: examples consumed in the current epoch.
    """

    images: np.ndarray
    labels: np.ndarray
    seed: int = 0
    epoch: int = 0
    position: int = 0
    _order_cache: tuple = dataclasses.field(
        default=(None, None), init=False, repr=False, compare=False
    )

    @property
    def num_examples(self):
        """Number of examples."""
        return len(self.images)

    def next_batch(self, batch_size):
        """Returns the next ``(images, labels)``, reshuffling at each new epoch.

        Args:
            batch_size: a positive int, at most ``num_examples``.

        Raises:
            DataError: the split is empty or ``batch_size`` is out of range.
        """
        index = self.next_indices(batch_size)
        return self.images[index], self.labels[index]

    def next_indices(self, batch_size):
        """Advances like :meth:`next_batch` and returns the batch's row indices (int32).

        Raises:
            DataError: the split is empty or ``batch_size`` is out of range.
        """
        check_batch_size("next_batch", batch_size, self.num_examples)
        parts = []
        needed = batch_size
        while needed:
            order = self._order()
            take = order[self.position : self.position + needed]
            parts.append(take)
            needed -= len(take)
            self.position += len(take)
            if self.position == self.num_examples:
                self.epoch, self.position = self.epoch + 1, 0
        return np.concatenate(parts).astype(np.int32, copy=False)

    def _order(self):
        """Returns the epoch's permutation, drawn once per (seed, epoch, size)."""
        key = (self.seed, self.epoch, self.num_examples)
        if self._order_cache[0] != key:
            order = np.random.default_rng([self.seed, self.epoch]).permutation(
                self.num_examples
            )
            self._order_cache = (key, order)
        return self._order_cache[1]

    def state(self):
        """Returns the iterator state ``{"epoch": int, "position": int}``."""
        return {"epoch": self.epoch, "position": self.position}

    def restore(self, state):
        """Continues from a state returned by :meth:`state`.

        Raises:
            DataError: ``state`` is not ``{"epoch": int >= 0, "position": int in
                [0, num_examples)}`` (a corrupt or foreign checkpoint).
        """
        epoch = state.get("epoch") if isinstance(state, dict) else None
        position = state.get("position") if isinstance(state, dict) else None
        if int_problem(epoch, 0) or int_problem(position, 0, max(self.num_examples, 1) - 1):
            raise DataError(
                f"DataSet.restore: expected {{'epoch': int >= 0, 'position': 0..."
                f"{self.num_examples - 1}}}, found {state!r:.200}; the checkpoint is "
                "corrupt or of other data"
            )
        self.epoch, self.position = epoch, position


def check_batch_size(owner, batch_size, num_examples):
    """Raises DataError naming ``owner`` unless ``batch_size`` is an int in
    ``[1, num_examples]``."""
    require(
        owner,
        int_problem(batch_size, 1, num_examples, name="batch_size"),
        f"the split has {num_examples} examples: load a split with data or use a "
        "smaller batch",
        DataError,
    )


@dataclasses.dataclass
class DataSets:
    """The three splits, as the seeds' ``input_data.read_data_sets`` returns them.

    Attributes:
        name: what the data is (see :class:`DataIdentity`).
        source: the directory or ``tfds:<name>``.
        md5: content hash of the files (see :func:`identify`), None for tfds.
    """

    train: DataSet
    validation: DataSet
    test: DataSet
    name: str
    source: str
    md5: str = None


@dataclasses.dataclass(frozen=True)
class DataIdentity:
    """What a data source is.

    Attributes:
        name: ``"mnist"`` or ``"fashion_mnist"`` for the published files (or
            tfds), ``"idx:<dir>"`` for valid IDX files of no known dataset.
        source: the directory, or ``tfds:<name>``.
        md5: hash of the label files and of the image files' headers and first
            64 KiB; None for tfds.
    """

    name: str
    source: str
    md5: str = None

    def as_dict(self):
        """Returns ``{"name", "source", "md5"}`` (for run.json)."""
        return dataclasses.asdict(self)


def identify(dataset=None, data_dir=None):
    """Returns the :class:`DataIdentity` of the files :func:`load_mnist` would load.

    Cheap: reads the label files (70 KB for MNIST) and the images' headers and
    first 64 KiB; the label files' md5s name the dataset (:data:`KNOWN_LABELS`).

    Args:
        dataset: the dataset asked for, or None for whatever the files are.
        data_dir: as :func:`load_mnist` (None: ``$ZOO_DATA_DIR``, then tfds).

    Raises:
        DataError: an unknown ``dataset``, missing or corrupt files, or files of
            the other known dataset than ``dataset``.
    """
    _check_dataset_name(dataset)
    directory = data_dir or os.environ.get("ZOO_DATA_DIR")
    if not directory:
        name = dataset or DATASETS[0]
        return DataIdentity(name, f"tfds:{name}")
    _check_directory(directory)
    digest, matches = hashlib.md5(usedforsecurity=False), set(KNOWN_LABELS)
    for split, (images_name, labels_name) in FILES.items():
        paths = _split_paths(directory, images_name, labels_name)
        if paths is None:
            continue
        sample = _image_sample(paths)
        labels = read_idx(paths[1], 1)
        label_file = _MAGIC[1].to_bytes(4, "big") + len(labels).to_bytes(4, "big")
        label_md5 = hashlib.md5(label_file + labels.tobytes(), usedforsecurity=False)
        digest.update(f"{split}:".encode() + label_md5.digest())
        digest.update(sample)
        matches = {
            name
            for name in matches
            if KNOWN_LABELS[name][labels_name] == label_md5.hexdigest()
        }
    known = matches.pop() if len(matches) == 1 else None
    if dataset and known and known != dataset:
        raise DataError(
            f"{directory}: expected {dataset} files (--dataset {dataset}), found "
            f"{known} files (their label files' md5s are {known}'s); pass --dataset "
            f"{known}, or --data-dir a directory of {dataset}"
        )
    return DataIdentity(known or f"idx:{directory}", directory, digest.hexdigest())


def _image_sample(paths):
    """Returns the header and first 64 KiB of a split's image file, headers checked."""
    _check_image_header(paths)
    path = paths[0]
    try:
        with (gzip.open if str(path).endswith(".gz") else open)(path, "rb") as stream:
            return stream.read(4 + 4 * 3 + _SAMPLE)
    except (OSError, EOFError, zlib.error) as err:
        raise DataError(f"{path}: expected a readable IDX file, found {err}") from None


def load_mnist(dataset=None, data_dir=None, validation=5000, one_hot=True, seed=0):
    """Loads MNIST or Fashion-MNIST.

    Args:
        dataset: ``"mnist"``, ``"fashion_mnist"`` or None: whatever the local
            files are (:func:`identify`), MNIST from tfds.
        data_dir: directory of the standard IDX files (``.gz`` or raw); None
            tries ``$ZOO_DATA_DIR``, then tensorflow-datasets. A directory with
            only the ``t10k-*`` files gives empty train and validation splits.
        validation: examples taken from the start of the training split.
        one_hot: labels as float32 one-hot [n, 10] (else int64 [n]).
        seed: seed of the training batch order.

    Returns:
        :class:`DataSets` with float32 images in [0, 1], flattened to 784, named
        by what the files are (``idx:<dir>`` for files of no known dataset).

    Raises:
        DataError: unknown dataset, missing or corrupt files, the files of the
            other dataset, too large a validation split, or no local files and
            no network for tfds.
    """
    identity, splits = load_splits(dataset, data_dir)
    source = identity.source
    train_images, train_labels = splits["train"]
    if validation > len(train_images) and len(train_images):
        raise DataError(
            f"{source}: expected at most {len(train_images)} validation examples, "
            f"found validation={validation}; pass a smaller validation size"
        )
    validation = min(validation, len(train_images))

    def split(images, labels, split_seed):
        images = (
            images.reshape(len(images), IMAGE_SIDE * IMAGE_SIDE).astype(np.float32) / 255.0
        )
        labels = labels.astype(np.int64)
        if one_hot:
            labels = np.eye(N_CLASSES, dtype=np.float32)[labels]
        return DataSet(images, labels, seed=split_seed)

    test_images, test_labels = splits["test"]
    return DataSets(
        train=split(train_images[validation:], train_labels[validation:], seed),
        validation=split(train_images[:validation], train_labels[:validation], seed),
        test=split(test_images, test_labels, seed),
        name=identity.name,
        source=source,
        md5=identity.md5,
    )


def load_splits(dataset=None, data_dir=None):
    """The train and test splits as their files hold them, from the sources of
    :func:`load_mnist`.

    Args:
        dataset, data_dir: as :func:`load_mnist`.

    Returns:
        ``(identity, splits)``: the :class:`DataIdentity`, and ``{"train": (images,
        labels), "test": (images, labels)}`` of uint8 arrays, images ``[n, 28, 28]``
        (empty train arrays for a directory of test files only).

    Raises:
        DataError: as :func:`load_mnist`.
    """
    identity = identify(dataset, data_dir)
    if identity.md5 is None:
        return identity, _load_tfds(identity.name)
    return identity, _load_idx_dir(identity.source)


def _check_dataset_name(dataset):
    if dataset is not None:
        problem = choice_problem(dataset, DATASETS, name="dataset")
        require("load_mnist", problem, "pick one of those", DataError)


def _check_directory(directory):
    if not os.path.isdir(directory):
        raise DataError(
            f"{directory}: expected a directory of MNIST IDX files, found no such "
            "directory; pass --data-dir/data_dir or set ZOO_DATA_DIR to one"
        )
    if _split_paths(directory, *FILES["test"]) is None:
        raise DataError(
            f"{directory}: expected at least {FILES['test'][0]}[.gz] and "
            f"{FILES['test'][1]}[.gz], found neither; copy the IDX files there"
        )


def _load_idx_dir(directory):
    splits = {name: _load_idx_split(directory, *files) for name, files in FILES.items()}
    if splits["train"] is None:
        empty = (np.zeros((0, IMAGE_SIDE, IMAGE_SIDE), np.uint8), np.zeros(0, np.uint8))
        splits["train"] = empty
    return splits


def _split_paths(directory, images_name, labels_name):
    """Returns the paths of one split's two files, or None when both are absent."""
    paths = [_find(directory, name) for name in (images_name, labels_name)]
    if paths == [None, None]:
        return None
    if None in paths:
        missing = images_name if paths[0] is None else labels_name
        raise DataError(
            f"{directory}: expected {missing}[.gz] beside its partner file, found "
            "none; copy both files of the split"
        )
    return paths


def _load_idx_split(directory, images_name, labels_name):
    """Returns (images, labels) of one split, or None when both files are absent.

    Both headers are checked (28x28 images, one label per image) before either
    body is read.
    """
    paths = _split_paths(directory, images_name, labels_name)
    if paths is None:
        return None
    shape = _check_image_header(paths)
    images = read_idx(paths[0], 3, shape)
    labels = read_idx(paths[1], 1, shape[:1])
    if len(labels) and labels.max() >= N_CLASSES:
        raise DataError(
            f"{paths[1]}: expected labels 0..{N_CLASSES - 1}, found {labels.max()}; "
            "the file is corrupt"
        )
    return images, labels


def _check_image_header(paths):
    """Returns the images' shape after checking both headers fit together.

    Raises:
        DataError: images that are not 28x28, or not one label per image.
    """
    images_path, labels_path = paths
    shape = read_idx_header(images_path, 3)
    if shape[1:] != (IMAGE_SIDE, IMAGE_SIDE):
        raise DataError(
            f"{images_path}: expected {IMAGE_SIDE}x{IMAGE_SIDE} images, found "
            f"{shape[1]}x{shape[2]}; use MNIST-format files"
        )
    (count,) = read_idx_header(labels_path, 1)
    if count != shape[0]:
        raise DataError(
            f"{labels_path}: expected {shape[0]} labels (one per image), found "
            f"{count}; the two files are not of the same split"
        )
    return shape


def _find(directory, name):
    for candidate in (name, name + ".gz"):
        path = os.path.join(directory, candidate)
        if os.path.isfile(path):
            return path
    return None


def network_reachable(address=_TFDS_HOST, timeout=3.0):
    """Tells within ``timeout`` seconds whether ``address`` accepts a TCP connection."""
    try:
        socket.create_connection(address, timeout=timeout).close()
        return True
    except OSError:
        return False


def _load_tfds(dataset):
    hint = (
        "pass data_dir (--data-dir) or set ZOO_DATA_DIR to a directory of the four "
        "IDX files, e.g. /usr/share/datasets/fashion-mnist after "
        "`apt-get install dataset-fashion-mnist`"
    )
    try:
        import tensorflow_datasets as tfds
    except ImportError as err:
        raise DataError(
            f"tfds:{dataset}: expected tensorflow-datasets, found {err}; {hint}"
        ) from None
    builder = tfds.builder(dataset)
    if not builder.is_prepared():
        if not network_reachable():
            raise DataError(
                f"tfds:{dataset}: expected prepared files in {builder.data_dir} or a "
                f"network to download them, found neither; {hint}"
            )
        builder.download_and_prepare()
    arrays = tfds.as_numpy(builder.as_dataset(batch_size=-1))
    return {
        name: (arrays[name]["image"][..., 0], arrays[name]["label"])
        for name in ("train", "test")
    }


def write_idx(path, array):
    """Writes a uint8 array as an IDX file (gzipped when ``path`` ends in .gz).

    Args:
        path: destination file.
        array: uint8 array of 1 or 3 dimensions.

    Raises:
        DataError: the array is not uint8 of 1 or 3 dimensions.
    """
    array = np.asarray(array)
    if array.dtype != np.uint8 or array.ndim not in _MAGIC:
        raise DataError(
            f"{path}: expected a uint8 array of 1 or 3 dimensions, found "
            f"{array.dtype} with {array.ndim}; convert with .astype(np.uint8)"
        )
    header = _MAGIC[array.ndim].to_bytes(4, "big") + b"".join(
        n.to_bytes(4, "big") for n in array.shape
    )
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "wb") as stream:
        stream.write(header + array.tobytes())
