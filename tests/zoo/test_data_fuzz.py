"""Hostile IDX files: random and mutated, raw and gzipped, through read_idx and load_mnist.

Whatever the bytes, the reader returns an array that is exactly what the file
holds, or raises DataError; it never raises anything else and never allocates
by what the header declares. Budget: fixed, derandomized examples.
"""

import gzip
import os
import tracemalloc

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from layers.errors import DataError
from tests.conftest import make_idx_dir
from zoo.data import FILES, load_mnist, read_idx, write_idx
from zoo.data import loaders as data


def fuzz(examples):
    """Settings of a fixed, reproducible budget of ``examples`` cases."""
    return settings(
        max_examples=examples,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )


# Bytes the reader may hold at once, whatever the header declares: a chunk, the
# gzip reader's buffers, and the (tiny) file itself.
MEMORY_CAP = 2 * data._CHUNK + (1 << 16)

huge = st.sampled_from([0, 1, 2, 27, 28, 255, 256, 60000, 2**31 - 1, 2**32 - 1])
dims_bytes = st.lists(huge, min_size=0, max_size=4).map(
    lambda dims: b"".join(d.to_bytes(4, "big") for d in dims)
)
magic = st.sampled_from([b"\x00\x00\x08\x03", b"\x00\x00\x08\x01", b"\x00\x00\x0d\x03"])
headed = st.tuples(magic, dims_bytes, st.binary(max_size=64)).map(b"".join)
random_files = st.one_of(st.binary(max_size=96), headed)


@st.composite
def mutated_files(draw):
    """A valid IDX file of a small random array, its bytes then mutated; and its rank."""
    ndim = draw(st.sampled_from([1, 3]))
    shape = draw(st.tuples(*[st.integers(0, 4)] * ndim))
    array = np.arange(int(np.prod(shape)), dtype=np.uint8).reshape(shape)
    header = data._MAGIC[ndim].to_bytes(4, "big") + b"".join(
        n.to_bytes(4, "big") for n in shape
    )
    content = bytearray(header + array.tobytes())
    if draw(st.booleans()):
        content = bytearray(gzip.compress(bytes(content), mtime=0))
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["flip", "truncate", "insert", "delete", "dim"]))
        at = draw(st.integers(0, max(len(content) - 1, 0)))
        if kind == "flip" and content:
            content[at] ^= draw(st.integers(1, 255))
        elif kind == "truncate":
            del content[at:]
        elif kind == "insert":
            content[at:at] = draw(st.binary(min_size=1, max_size=8))
        elif kind == "delete":
            del content[at : at + draw(st.integers(1, 8))]
        elif kind == "dim" and len(content) >= 8:
            at = 4 + 4 * draw(st.integers(0, ndim - 1))
            content[at : at + 4] = draw(huge).to_bytes(4, "big")
    return bytes(content), ndim


def read_checked(path, ndim):
    """read_idx, asserting: DataError or the file's exact content; bounded memory."""
    tracemalloc.start()
    try:
        array = read_idx(path, ndim)
    except DataError:
        return None
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        assert peak < MEMORY_CAP, f"read_idx held {peak} bytes"
    with open(path, "rb") as f:
        content = f.read()
    if path.endswith(".gz"):
        content = gzip.decompress(content)
    header = 4 + 4 * ndim
    assert array.dtype == np.uint8 and array.ndim == ndim
    assert content[:4] == data._MAGIC[ndim].to_bytes(4, "big")
    assert content[4:header] == b"".join(n.to_bytes(4, "big") for n in array.shape)
    assert content[header:] == array.tobytes()
    return array


@fuzz(800)
@given(content=random_files, ndim=st.sampled_from([1, 3]), gz=st.booleans())
def test_random_bytes(tmp_path, content, ndim, gz):
    path = str(tmp_path / ("f.gz" if gz else "f.idx"))
    with open(path, "wb") as f:
        f.write(gzip.compress(content, mtime=0) if gz else content)
    read_checked(path, ndim)


@fuzz(1200)
@given(case=mutated_files())
def test_mutated_valid_files(tmp_path, case):
    content, ndim = case
    gz = content[:2] == b"\x1f\x8b"
    path = str(tmp_path / ("f.gz" if gz else "f.idx"))
    with open(path, "wb") as f:
        f.write(content)
    read_checked(path, ndim)


@pytest.mark.parametrize("name", ["huge.idx", "huge.idx.gz"])
def test_huge_declared_shape_is_refused_without_allocating(tmp_path, name):
    path = str(tmp_path / name)
    content = idx_bytes((1, 2**32 - 1, 2**32 - 1), b"")
    with open(path, "wb") as f:
        f.write(gzip.compress(content + b"\x07" * 100) if name.endswith(".gz") else content)
    with pytest.raises(
        DataError, match=r"expected \d+ data bytes .*found (0|100); .*truncated"
    ):
        read_idx(path, 3)
    assert read_checked(path, 3) is None
    content = idx_bytes((2**32 - 1,) * 3, b"")
    with open(path, "wb") as f:
        f.write(gzip.compress(content) if name.endswith(".gz") else content)
    with pytest.raises(DataError, match=r"expected at most 1000000 examples, found a h"):
        read_idx(path, 3)


def idx_bytes(dims, body):
    """An image IDX file (magic 0x803) declaring ``dims`` over ``body``."""
    header = b"".join(d.to_bytes(4, "big") for d in dims)
    return data._MAGIC[3].to_bytes(4, "big") + header + body


def test_gzip_bomb_of_other_shape_is_refused_before_its_body_is_read(tmp_path):
    """10 MB of zeros (10 KB gzipped) declared as 10 images of 1000x1000: refused by
    the header, within the memory cap (it used to be read whole, then refused)."""
    make_idx_dir(tmp_path, 0, 10)
    bomb = gzip.compress(idx_bytes((10, 1000, 1000), bytes(10 * 1000 * 1000)), mtime=0)
    with open(tmp_path / "t10k-images-idx3-ubyte.gz", "wb") as f:
        f.write(bomb)
    tracemalloc.start()
    try:
        with pytest.raises(DataError, match=r"expected 28x28 images, found 1000x1000"):
            load_mnist(data_dir=str(tmp_path))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < MEMORY_CAP, peak


@fuzz(300)
@given(
    dims=st.tuples(
        st.integers(0, 2**32 - 1) | st.sampled_from([0, 1, 2, 10]),
        st.integers(0, 2**32 - 1) | st.just(28),
        st.integers(0, 2**32 - 1) | st.just(28),
    ),
    body=st.binary(max_size=4096).map(lambda b: b * 8),
    gz=st.booleans(),
)
def test_image_headers_are_checked_before_the_body(tmp_path, dims, body, gz):
    """Up to 32 KiB of body under any header: a (n, 28, 28) array equal to the file,
    or DataError, always within the memory cap."""
    content = idx_bytes(dims, body)
    path = str(tmp_path / ("f.gz" if gz else "f.idx"))
    with open(path, "wb") as f:
        f.write(gzip.compress(content, mtime=0) if gz else content)
    tracemalloc.start()
    try:
        try:
            array = read_idx(path, 3, (None, 28, 28))
        except DataError:
            array = None
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < MEMORY_CAP + len(content), peak
    if array is not None:
        assert array.shape == dims and dims[1:] == (28, 28)
        assert array.tobytes() == body


@pytest.fixture(scope="module")
def valid_dirs(tmp_path_factory):
    """Small valid IDX directories, gzipped and raw."""
    return {
        gz: make_idx_dir(tmp_path_factory.mktemp(f"valid-{gz}"), 12, 6, gz=gz)
        for gz in (True, False)
    }


@fuzz(300)
@given(
    gz=st.booleans(),
    target=st.sampled_from([name for pair in FILES.values() for name in pair]),
    flips=st.lists(st.tuples(st.integers(0, 10_000), st.integers(1, 255)), max_size=3),
    cut=st.one_of(st.none(), st.integers(0, 10_000)),
)
def test_load_mnist_on_a_mutated_directory(tmp_path, valid_dirs, gz, target, flips, cut):
    suffix = ".gz" if gz else ""
    for name in os.listdir(valid_dirs[gz]):
        with open(os.path.join(valid_dirs[gz], name), "rb") as f:
            content = bytearray(f.read())
        if name == target + suffix:
            for at, mask in flips:
                content[at % len(content)] ^= mask
            if cut is not None:
                del content[cut % len(content) :]
        with open(tmp_path / name, "wb") as f:
            f.write(content)
    try:
        sets = load_mnist(data_dir=str(tmp_path), validation=2)
    except DataError:
        return
    for split in (sets.train, sets.validation, sets.test):
        assert split.images.shape == (split.num_examples, 784)
        assert split.images.dtype == np.float32
        assert 0.0 <= split.images.min() and split.images.max() <= 1.0
        np.testing.assert_array_equal(split.labels.sum(axis=1), 1.0)
    assert sets.train.num_examples + sets.validation.num_examples == 12
    assert sets.test.num_examples == 6


def test_oracle_accepts_an_unmutated_file(tmp_path):
    """The fuzz oracle itself: an unmutated file reads back as written."""
    path = str(tmp_path / "ok.idx.gz")
    write_idx(path, np.arange(24, dtype=np.uint8).reshape(2, 3, 4))
    np.testing.assert_array_equal(
        read_checked(path, 3), np.arange(24, dtype=np.uint8).reshape(2, 3, 4)
    )
