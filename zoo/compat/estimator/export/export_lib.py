"""Writing an Estimator's SavedModel with ``tf.compat.v1.saved_model.Builder``: the
signatures of its export outputs, the variables of a checkpoint, a timestamped
directory written whole or not at all."""

import os
import shutil
import time

import tensorflow as tf

from layers.errors import ZooError
from zoo.compat.estimator.model_fn import export_outputs_with_default

v1 = tf.compat.v1


def signature_defs(receiver, export_outputs, owner):
    """Every signature the export outputs make with the receiver's tensors (and its
    alternatives, as ``"<alternative>:<output>"``); outputs that cannot read an
    input (a classification of a non-string input) are left out, as in TF 1.15.

    Raises:
        ZooError: no output makes a signature.
    """
    inputs = {None: receiver.receiver_tensors, **receiver.receiver_tensors_alternatives}
    signatures, problems = {}, []
    for input_name, tensors in inputs.items():
        for output_name, output in export_outputs.items():
            name = output_name if input_name is None else f"{input_name}:{output_name}"
            try:
                signatures[name] = output.as_signature_def(tensors)
            except ZooError as err:
                problems.append(f"{name}: {err}")
    if not signatures:
        raise ZooError(
            f"{owner}: expected an export output that makes a signature, found none "
            f"({problems}); export a PredictOutput, or feed serialized tf.Examples"
        )
    return signatures


def save(export_dir_base, receiver, spec, checkpoint_path, session_config,
         assets_extra=None, as_text=False):  # fmt: skip
    """Writes the default graph (``spec`` built from ``receiver``) with the
    variables of ``checkpoint_path`` to ``export_dir_base/<timestamp>``.

    Returns:
        The export directory, as bytes.
    """
    owner = "Estimator.export_saved_model"
    outputs = export_outputs_with_default(
        spec.export_outputs, spec.predictions, f"{owner} (mode {spec.mode!r})"
    )
    signatures = signature_defs(receiver, outputs, owner)
    export_dir = timestamped_dir(export_dir_base)
    temp_dir = os.path.join(
        os.path.dirname(export_dir), "temp-" + os.path.basename(export_dir)
    )
    builder = v1.saved_model.Builder(temp_dir)
    saver = spec.scaffold.saver or v1.train.Saver(sharded=True)
    local_init = spec.scaffold.local_init_op or v1.train.Scaffold.default_local_init_op()
    with v1.Session(config=session_config) as session:
        saver.restore(session, checkpoint_path)
        session.run(local_init)
        builder.add_meta_graph_and_variables(
            session,
            [v1.saved_model.tag_constants.SERVING],
            signature_def_map=signatures,
            assets_collection=v1.get_collection(v1.GraphKeys.ASSET_FILEPATHS),
            main_op=local_init,
            strip_default_attrs=True,
            saver=saver,
        )
    builder.save(as_text)
    for destination, source in (assets_extra or {}).items():
        target = os.path.join(temp_dir, "assets.extra", destination)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copyfile(source, target)
    os.rename(temp_dir, export_dir)
    return export_dir.encode()


def timestamped_dir(export_dir_base):
    """``export_dir_base/<seconds since the epoch>``, one that does not exist yet."""
    while True:
        path = os.path.join(os.fspath(export_dir_base), str(int(time.time())))
        if not os.path.exists(path):
            return path
        time.sleep(1)
