"""Command line of the zoo: ``python -m zoo inspect MODEL [--tied] [--checkpoint PATH]``.

Prints the variables of a registered model (or of a checkpoint of it) by scope,
with the ops that read each variable, and writes the model's graph for
TensorBoard. Exits 2 with one line on a zoo error.

Usage::

    python -m zoo inspect autoencoder --tied
    python -m zoo inspect autoencoder --checkpoint runs/autoencoder/run1/tied.ckpt
    python -m zoo inspect mlp_classifier --logdir /tmp/mlp-graph
    python -m zoo inspect mypackage.model:siamese --input left=784 --input right=784
"""

import argparse
import os
import sys

from layers.errors import ZooError
from zoo.models import MODELS
from zoo.sharing.inspect import (
    format_table,
    inspect_checkpoint,
    inspect_model,
    parse_input,
    write_graph,
)


def build_parser():
    """Returns the parser of ``python -m zoo``."""
    p = argparse.ArgumentParser(
        prog="python -m zoo", description="Tools around the zoo's models."
    )
    commands = p.add_subparsers(dest="command", required=True)
    inspect = commands.add_parser(
        "inspect",
        help="list a model's variables by scope and the ops reading each",
        description="List the variables of a registered model, or of a checkpoint "
        "of it, by scope (name, shape, dtype, parameters, trainable, readers), and "
        "write the model's graph for TensorBoard.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    inspect.add_argument(
        "model",
        help=f"registered model ({', '.join(sorted(MODELS))}), or package.module:function "
        "naming your own TF1 code",
    )
    inspect.add_argument(
        "--input",
        action="append",
        default=[],
        metavar="NAME=WIDTH[:DTYPE]",
        help="width (and dtype, default float32) of a tensor argument of the function, "
        "e.g. --input left=784 --input ids=20:int32; x=784 and y=10 are known",
    )
    inspect.add_argument(
        "--tied",
        action="store_true",
        help="for models with a tied argument (autoencoder): build the tied variant; "
        "without the flag the untied one",
    )
    inspect.add_argument(
        "--checkpoint",
        default=None,
        help="list this checkpoint's entries (prefix, or directory with a "
        "'checkpoint' file) instead of a fresh build's variables",
    )
    inspect.add_argument(
        "--logdir",
        default=None,
        help="where the TensorBoard graph goes (default runs/inspect/<model>)",
    )
    return p


def inspect_command(args):
    """Prints the table and writes the graph; returns the exit code."""
    inputs = dict(parse_input(text) for text in args.input)
    rows, graph = inspect_model(args.model, tied=args.tied, inputs=inputs)
    if args.checkpoint:
        rows = inspect_checkpoint(args.checkpoint, rows)
    print(format_table(rows))
    logdir = args.logdir or os.path.join("runs", "inspect", args.model.replace(":", "."))
    print(f"graph for TensorBoard: tensorboard --logdir {write_graph(graph, logdir)}")
    return 0


def main(argv=None):
    """Runs ``python -m zoo``; exits 2 with one line on a zoo error."""
    args = build_parser().parse_args(argv)
    try:
        code = inspect_command(args)
    except ZooError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    return code


if __name__ == "__main__":
    sys.exit(main())
