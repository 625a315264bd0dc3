"""Training data (wick::data): IDX files (the MNIST format, raw or gzip'd), datasets with a seeded
shuffle that gives the same order on every machine, and batches built on the host and copied once
to their device.

    train = wick.data.fashion_mnist(train=True)
    for images, labels in wick.data.batches(train, batch_size=128, shuffle_seed=1):
        ...
"""
from ._wick import data as _data

Dataset = _data.Dataset
read_idx = _data.read_idx
find_fashion_mnist = _data.find_fashion_mnist

__all__ = ["Dataset", "read_idx", "find_fashion_mnist", "fashion_mnist", "batches"]


def fashion_mnist(train=True, root=None):
    """Fashion-MNIST's training (60000) or test (10000) images [N, 28, 28] u8 and labels as a
    Dataset. ``root``: the directory of the four .gz files, else $WICK_FASHION_MNIST_DIR, else
    /usr/share/datasets/fashion-mnist (Debian's dataset-fashion-mnist); an error lists what was
    tried."""
    f = find_fashion_mnist(root or "")
    kind = "train" if train else "test"
    return Dataset.from_idx(f[kind + "_images"], f[kind + "_labels"])


def batches(dataset, batch_size=64, shuffle_seed=None, drop_last=False, image_shape=None, device=None,
            limit=None):
    """Yields (images, labels) of ``dataset`` batch by batch: images f32 scaled to [0, 1] (reshaped
    per sample to ``image_shape`` when given, e.g. (784,)), labels int64. ``shuffle_seed``: a seeded
    order first (None: the stored order). ``limit``: at most that many samples."""
    if shuffle_seed is None:
        dataset.unshuffle()
    else:
        dataset.shuffle(shuffle_seed)
    n = dataset.num_batches(batch_size, drop_last)
    if limit is not None:
        n = min(n, (limit + batch_size - 1) // batch_size)
    shape = tuple(image_shape) if image_shape is not None else None
    for i in range(n):
        yield dataset.batch(i, batch_size, drop_last, shape, device)
