"""Figures the ablations draw: training curves, embeddings in 2-D, class bars, image grids.

Usage::

    run.save_figure("loss_curves.png", loss_figure(results, "RNN: shared vs per step"))
    run.save_figure("embedding.png", embedding_figure({"shared": points}, labels, "mnist"))
"""

import numpy as np

from layers.errors import ZooError

CLASS_NAMES = {
    "mnist": tuple(str(digit) for digit in range(10)),
    "fashion_mnist": (
        "T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
        "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot",
    ),
}  # fmt: skip


def class_names(dataset):
    """Returns the names of the ten classes of ``fashion_mnist``; digits for the others."""
    return CLASS_NAMES.get(dataset, CLASS_NAMES["mnist"])


def pyplot():
    """Returns ``matplotlib.pyplot`` on the Agg backend (no display needed).

    Raises:
        ZooError: matplotlib is not installed.
    """
    try:
        import matplotlib
    except ImportError:
        raise ZooError(
            "figures: expected matplotlib, found none installed; the experiments draw "
            "with it: pip install -e '.[experiments]' (make install does)"
        ) from None

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def loss_figure(results, title, ylabel="loss (training batch)"):
    """Returns a figure of each variant's logged training loss.

    Args:
        results: dict variant -> result with ``losses``, a list of ``[step, loss]``.
        title: the axes' title.
        ylabel: the y axis label.
    """
    figure, axes = pyplot().subplots(figsize=(7, 4.5))
    for variant, result in results.items():
        steps, losses = zip(*result["losses"], strict=True)
        axes.plot(steps, losses, marker="o", label=variant)
    axes.set_xlabel("training step")
    axes.set_ylabel(ylabel)
    axes.set_title(title)
    axes.legend()
    axes.grid(alpha=0.3)
    return figure


def grouped_bars(axes, groups, series, value_format=None):
    """Draws ``series`` as bars side by side in each group, one colour per series.

    Args:
        axes: the matplotlib axes; its x ticks become the groups' names.
        groups: the groups' names, along the x axis.
        series: dict name (in the legend) -> one value per group.
        value_format: writes each bar's value above it in this format (``"%.3g"``);
            None writes none.
    """
    width = 0.8 / len(series)
    for i, (name, values) in enumerate(series.items()):
        offset = (i - (len(series) - 1) / 2) * width
        bars = axes.bar([g + offset for g in range(len(groups))], values, width, label=name)
        if value_format:
            axes.bar_label(bars, fmt=value_format, fontsize=8)
    axes.set_xticks(range(len(groups)), groups)


def principal_components(points, n=2):
    """Returns ``points`` [m, d] projected on their first ``n`` principal axes [m, n]."""
    centred = points - points.mean(axis=0)
    _, _, axes = np.linalg.svd(centred, full_matrices=False)
    return centred @ axes[:n].T


def embedding_figure(embeddings, labels, dataset):
    """Returns one scatter plot per embedding of the same images, coloured by class.

    Each embedding is drawn on its first two principal axes
    (:func:`principal_components`).

    Args:
        embeddings: dict title -> embedded images [m, d].
        labels: the images' class ids [m].
        dataset: the data set's name, for the class names and the title.
    """
    panels = {
        name: (principal_components(points), labels) for name, points in embeddings.items()
    }
    plt = pyplot()
    figure, axes = plt.subplots(1, len(panels), figsize=(5 * len(panels), 5), squeeze=False)
    colours = plt.get_cmap("tab10")
    for ax, (name, (points, labels)) in zip(axes[0], panels.items(), strict=True):
        for label, class_name in enumerate(class_names(dataset)):
            chosen = labels == label
            ax.scatter(
                points[chosen, 0],
                points[chosen, 1],
                s=4,
                alpha=0.6,
                color=colours(label),
                label=class_name,
            )
        ax.set_title(name)
        ax.set_xticks([])
        ax.set_yticks([])
    axes[0][-1].legend(
        markerscale=3, fontsize="small", loc="center left", bbox_to_anchor=(1, 0.5)
    )
    figure.suptitle(f"Test embeddings ({dataset}), first two principal axes")
    return figure


def class_bars(bars, class_names, title):
    """Returns a bar chart of fractions per class, one bar per set in each class.

    Args:
        bars: dict label -> the fraction of that set's images in each class.
        class_names: the name of each class, along the x axis.
        title: the axes' title.
    """
    figure, axes = pyplot().subplots(figsize=(10, 4.5))
    width = 0.8 / len(bars)
    for i, (label, fractions) in enumerate(bars.items()):
        positions = np.arange(len(class_names)) + (i - (len(bars) - 1) / 2) * width
        axes.bar(positions, fractions, width, label=label)
    axes.set_xticks(np.arange(len(class_names)), class_names, rotation=30, ha="right")
    axes.set(ylabel="fraction of the images", title=title)
    axes.legend()
    axes.grid(alpha=0.3, axis="y")
    figure.tight_layout()
    return figure


def image_grid(images, title, columns=8):
    """Returns a figure of square images [n, side * side] in a grid, ``columns`` a row."""
    side = int(np.sqrt(images.shape[1]))
    rows = -(-len(images) // columns)
    grid = np.ones((rows, side + 1, columns, side + 1))
    for i, image in enumerate(images):
        grid[i // columns, :side, i % columns, :side] = image.reshape(side, side)
    figure, axes = pyplot().subplots(figsize=(6, 6.3 * rows / columns))
    axes.imshow(grid.reshape(rows * (side + 1), -1), cmap="gray", vmin=0.0, vmax=1.0)
    axes.set_axis_off()
    axes.set_title(title)
    return figure
