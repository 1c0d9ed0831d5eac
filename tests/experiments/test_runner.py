"""The runner under faults: crashes mid-write, SIGINT/SIGTERM, NaN, foreign checkpoints.

Most tests drive ``TOY``, a tiny experiment written the way real ones are (runner
flags, RunDir, Checkpointer, train_loop), in-process; one kills it as a subprocess.
"""

import dataclasses
import errno
import fcntl
import importlib.util
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
import tensorflow as tf

from experiments.harness import entry, flags, record, rundir
from layers.errors import ZooError
from tests import forkserver
from tests.conftest import edit_run_record, make_idx_dir
from zoo import training
from zoo.data import DataSet
from zoo.data.batches import GraphBatches
from zoo.models import autoencoder
from zoo.training import files

TOY = '''
"""A toy experiment: an MLP on 64 random examples, trained in --loops loops."""

import hashlib
import os
import signal
import time

import numpy as np
import tensorflow as tf

from experiments.harness import entry, flags, record, rundir
from zoo import training
from zoo.data import DataSet
from zoo.models.mlp import mlp_classifier


def main(argv=None):
    p = flags.parser("Toy classifier.", steps=40, batch_size=8)
    p.add_argument("--loops", type=int, default=1)
    p.add_argument("--scope", default="mlp")
    p.add_argument("--hidden", type=int, default=16)
    p.add_argument("--interrupt-at", type=int, default=-1, help="SIGINT at this step")
    p.add_argument("--interrupts", type=int, default=1, help="SIGINTs sent there")
    p.add_argument("--nan-at", type=int, default=-1, help="a NaN loss at this step")
    p.add_argument("--marker", default=None, help="file written at step 5")
    p.add_argument("--sleep", type=float, default=0.0, help="seconds per step")
    flags.may_differ_on_resume(p, "interrupt_at", "interrupts", "marker", "sleep")
    args = flags.parse_args(p, argv)
    run = rundir.run_dir(args, "toy")
    np.random.seed(args.seed)
    rng = np.random.default_rng(123)
    images = rng.random((64, 784), dtype=np.float32)
    labels = np.eye(10, dtype=np.float32)[rng.integers(0, 10, 64)]
    batches = DataSet(images, labels, seed=args.seed)
    steps_run = []
    with tf.Graph().as_default():
        tf.compat.v1.set_random_seed(args.seed)
        x = tf.compat.v1.placeholder(tf.float32, [None, 784])
        y = tf.compat.v1.placeholder(tf.float32, [None, 10])
        scale = tf.compat.v1.placeholder_with_default(1.0, [])
        model = mlp_classifier(x, y, scope=args.scope, hidden=(args.hidden,), l2=0.001)
        loss = model.loss * scale
        train_op = tf.compat.v1.train.AdamOptimizer(0.01).minimize(loss)
        with tf.compat.v1.Session() as session:
            session.run(tf.compat.v1.global_variables_initializer())
            session.graph.finalize()

            def feed(batch_images, batch_labels):
                steps_run.append(len(steps_run))
                noise = np.random.normal(0.0, 0.1, batch_images.shape)
                nan = np.nan if len(steps_run) - 1 == args.nan_at else 1.0
                return {x: batch_images + noise, y: batch_labels, scale: nan}

            logged = []
            for index in range(args.loops):

                def on_log(step, value, index=index):
                    if args.marker and step == 5:
                        open(args.marker, "w").close()
                    if args.sleep and not args.resume:
                        time.sleep(args.sleep)
                    if index * args.steps + step == args.interrupt_at:
                        for _ in range(args.interrupts):
                            signal.raise_signal(signal.SIGINT)

                pairs, _ = training.train_loop(
                    session, train_op, loss, batches, args.steps, args.batch_size, feed,
                    log_every=1, desc=f"net{index}", on_log=on_log,
                    checkpointer=run.checkpointer,
                )
                logged.append(pairs)
            weights = session.run(tf.compat.v1.trainable_variables())
            final = session.run(model.loss, {x: images, y: labels})
    digest = hashlib.sha256(b"".join(w.tobytes() for w in weights)).hexdigest()
    run.write_json(
        "results.json",
        {"logged": logged, "loss": final, "weights": digest, "steps_run": len(steps_run)},
    )


if __name__ == "__main__":
    entry.entry_point(main)
'''


@pytest.fixture
def toy(tmp_path):
    """The toy experiment as a module, its source in ``tmp_path/toy.py``."""
    path = tmp_path / "toy.py"
    path.write_text(TOY)
    spec = importlib.util.spec_from_file_location("toy", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def results(run_dir):
    with open(os.path.join(run_dir, "results.json")) as f:
        return json.load(f)


def checkpoint(run_dir, loop="00-net0"):
    """Returns ``(arrays by key, state)`` of a loop's checkpoint file."""
    with np.load(os.path.join(run_dir, "checkpoints", f"{loop}.npz")) as archive:
        arrays = {key: archive[key] for key in archive.files}
    return arrays, json.loads(str(arrays.pop("__state__")))


def test_atomic_write_crash_between_write_and_rename_keeps_old_file(tmp_path, monkeypatch):
    path = tmp_path / "results.json"
    files.atomic_write(str(path), '{"accuracy": 0.9}\n')

    def crash(src, dst):
        raise OSError("simulated crash before the rename")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(OSError, match="simulated crash"):
        files.atomic_write(str(path), '{"accuracy": 0.1, "trunc')
    assert path.read_text() == '{"accuracy": 0.9}\n'
    assert os.listdir(tmp_path) == ["results.json"]


def test_run_dir_refuses_existing_files_unless_overwrite_or_resume(tmp_path):
    (tmp_path / "results.json").write_text("{}")
    with pytest.raises(
        ZooError, match=r"found existing files; pass --resume .* --overwrite"
    ):
        rundir.RunDir(str(tmp_path))
    with pytest.raises(ZooError, match=r"expected a run directory \(with run.json\) to ov"):
        rundir.RunDir(str(tmp_path), overwrite=True)  # not a run's: never cleared
    assert (tmp_path / "results.json").exists()
    (tmp_path / "run.json").write_text("{}")
    assert rundir.RunDir(str(tmp_path), overwrite=True).path == str(tmp_path)
    assert rundir.RunDir(str(tmp_path), resume=True).path == str(tmp_path)
    with pytest.raises(ZooError, match="expected an existing run directory to resume"):
        rundir.RunDir(str(tmp_path / "absent"), resume=True)


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--checkpoint-every", "0"], r"--checkpoint-every: expected an int in \[1, \d+\]"),
        (["--resume", "{tmp}", "--overwrite"], "expected either --resume or --overwrite"),
        (["--resume", "{tmp}", "--out", "{tmp}/other"], "expected --out to be absent"),
        (["--resume", "{tmp}/absent"], "expected an existing run directory, found none"),
    ],
)
def test_bad_resume_flags(tmp_path, argv, message):
    p = flags.parser("test", steps=10, batch_size=4)
    with pytest.raises(ZooError, match=message):
        flags.parse_args(p, [a.format(tmp=tmp_path) for a in argv])


@pytest.mark.parametrize(
    "flag", ["--steps", "--batch-size", "--seed", "--checkpoint-every"]
)
def test_non_numeric_flag_exits_2_with_one_line(capsys, flag):
    p = flags.parser("test", steps=10, batch_size=4)
    with pytest.raises(SystemExit) as exit_info:
        flags.parse_args(p, [flag, "ten"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert f"argument {flag}: invalid int value: 'ten'; see --help" in err


def test_sigint_then_resume_gives_the_uninterrupted_numbers(toy, tmp_path):
    flags = ["--steps", "30", "--checkpoint-every", "7", "--loops", "2"]
    straight, broken = str(tmp_path / "straight"), str(tmp_path / "broken")
    toy.main([*flags, "--out", straight])
    with pytest.raises(training.RunInterrupted, match="interrupted by SIGINT") as info:
        toy.main([*flags, "--out", broken, "--interrupt-at", "40"])
    assert info.value.command.endswith(f"--resume {broken}")
    assert "--out" not in info.value.command
    partial = json.loads(open(os.path.join(broken, "partial.json")).read())
    assert (partial["loop"], partial["step"]) == ("net1", 11)
    assert partial["checkpoint"] == os.path.join(broken, "checkpoints", "01-net1.npz")
    assert checkpoint(broken, "00-net0")[1]["step"] == 30
    assert checkpoint(broken, "01-net1")[1]["step"] == 11
    toy.main([*flags, "--resume", broken])
    expected, resumed = results(straight), results(broken)
    assert resumed["steps_run"] == 60 - (30 + 11)
    assert resumed["weights"] == expected["weights"]
    assert resumed["logged"] == expected["logged"]
    assert resumed["loss"] == expected["loss"]
    assert not os.path.exists(os.path.join(broken, "partial.json"))


def test_crash_while_saving_leaves_the_previous_checkpoint(toy, tmp_path, monkeypatch):
    flags = ["--steps", "20", "--checkpoint-every", "5"]
    straight, crashed = str(tmp_path / "straight"), str(tmp_path / "crashed")
    toy.main([*flags, "--out", straight])
    real_replace, renames = os.replace, []

    def crash_on_second_checkpoint(src, dst):
        if dst.endswith(".npz"):
            renames.append(dst)
            if len(renames) == 2:
                raise OSError("simulated crash between write and rename")
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", crash_on_second_checkpoint)
    with pytest.raises(
        ZooError,
        match=r"00-net0.npz: expected to write the checkpoint, found simulated crash .*; "
        r"checkpoint .*00-net0.npz kept; free disk space, then resume with: .*--resume ",
    ):
        toy.main([*flags, "--out", crashed])
    monkeypatch.undo()
    assert checkpoint(crashed)[1]["step"] == 5
    assert os.listdir(os.path.join(crashed, "checkpoints")) == ["00-net0.npz"]
    toy.main([*flags, "--resume", crashed])
    assert results(crashed)["steps_run"] == 15
    assert results(crashed)["weights"] == results(straight)["weights"]


def test_nan_loss_stops_at_once_and_keeps_the_last_checkpoint(toy, tmp_path):
    out = str(tmp_path / "run")
    with pytest.raises(
        training.NonFiniteLossError,
        match=r"net0: expected a finite loss, found nan at step 12; last finite loss "
        r"[0-9.]+ at step 11; last good checkpoint .*00-net0.npz left intact",
    ) as info:
        toy.main(
            ["--steps", "30", "--checkpoint-every", "5", "--out", out, "--nan-at", "12"]
        )
    assert (info.value.step, info.value.last_finite[0]) == (12, 11)
    arrays, saved = checkpoint(out)
    assert saved["step"] == 10
    assert "var:mlp/W_hid_1/Adam" in arrays
    for name, value in arrays.items():
        assert np.all(np.isfinite(value)), name
    assert not os.path.exists(os.path.join(out, "results.json"))


def test_resume_with_another_model_names_the_missing_variables(toy, tmp_path):
    out = str(tmp_path / "run")
    toy.main(["--steps", "10", "--checkpoint-every", "5", "--out", out])
    with pytest.raises(
        ZooError, match=r"expected --scope 'mlp' as the run was started with \(run.json\)"
    ):
        toy.main(["--resume", out, "--scope", "other"])
    edit_run_record(out, scope="other")  # run.json and checkpoint disagree: still refused
    with pytest.raises(
        ZooError,
        match=r"00-net0.npz: expected a checkpoint of this model, .*missing other/",
    ):
        toy.main(["--resume", out])
    edit_run_record(out, scope="mlp", hidden=8)
    with pytest.raises(ZooError, match=r"other shapes mlp/W_hid_1 \[784, 16\] \(model: "):
        toy.main(["--resume", out])


def test_resume_with_other_flags_or_a_corrupt_checkpoint_is_refused(toy, tmp_path):
    out = str(tmp_path / "run")
    toy.main(["--steps", "10", "--out", out])
    refusals = [
        (["--batch-size", "4"], "expected --batch-size 8 as the run was started with"),
        (["--seed", "3"], "expected --seed 0 as the run was started with"),
        (["--loops", "2"], "expected --loops 1 as the run was started with"),
        (["--steps", "4"], "expected --steps of at least 10"),
    ]
    for argv, message in refusals:
        with pytest.raises(ZooError, match=message):
            toy.main([*argv, "--resume", out])
    for flag, value, message in (
        ("batch_size", 4, "expected --batch-size 8 as when the checkpoint"),
        ("seed", 3, "expected --seed 0 as when the checkpoint"),
    ):
        edit_run_record(out, **{flag: value})  # run.json lies: the checkpoint refuses
        with pytest.raises(ZooError, match=message):
            toy.main(["--resume", out])
        edit_run_record(out, batch_size=8, seed=0)
    for content in (b"", b"PK\x03\x04 truncated zip"):
        with open(os.path.join(out, "checkpoints", "00-net0.npz"), "wb") as f:
            f.write(content)
        with pytest.raises(
            ZooError, match=r"00-net0.npz: expected a checkpoint written by"
        ):
            toy.main(["--resume", out])


def test_overwrite_starts_afresh(toy, tmp_path):
    out = str(tmp_path / "run")
    toy.main(["--steps", "10", "--loops", "2", "--out", out])
    for stale in ("old.png", os.path.join("tensorboard", "old", "events")):
        os.makedirs(os.path.dirname(os.path.join(out, stale)), exist_ok=True)
        open(os.path.join(out, stale), "w").close()
    with pytest.raises(ZooError, match="found existing files"):
        toy.main(["--steps", "6", "--out", out])
    toy.main(["--steps", "6", "--out", out, "--overwrite"])
    assert sorted(os.listdir(out)) == [".lock", "checkpoints", "results.json", "run.json"]
    assert os.listdir(os.path.join(out, "checkpoints")) == ["00-net0.npz"]
    assert checkpoint(out)[1]["step"] == 6
    assert results(out)["steps_run"] == 6
    with open(os.path.join(out, "run.json")) as f:
        assert json.load(f)["flags"]["loops"] == 1


def test_a_larger_steps_extends_the_run(toy, tmp_path):
    straight, extended = str(tmp_path / "straight"), str(tmp_path / "extended")
    toy.main(["--steps", "20", "--checkpoint-every", "5", "--out", straight])
    toy.main(["--steps", "12", "--checkpoint-every", "5", "--out", extended])
    toy.main(["--steps", "20", "--resume", extended])
    assert results(extended)["steps_run"] == 8
    assert results(extended)["weights"] == results(straight)["weights"]
    assert results(extended)["logged"] == results(straight)["logged"]
    with open(os.path.join(extended, "run.json")) as f:
        saved = json.load(f)
    assert saved["flags"]["steps"] == 20
    assert "--steps 12 " in saved["started"]["command"]
    assert saved["resumes"][0]["command"].endswith(f"--steps 20 --resume {extended}")


def test_ctrl_c_exits_130_with_the_resume_command(toy, tmp_path, capsys):
    out = str(tmp_path / "run")
    with pytest.raises(SystemExit) as exit_info:
        entry.entry_point(toy.main, ["--steps", "20", "--out", out, "--interrupt-at", "7"])
    assert exit_info.value.code == 130
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert "net0: interrupted by SIGINT at step 8 of 20" in last
    assert last.endswith(f"resume with: {record.resume_command(out)}")
    assert checkpoint(out)[1]["step"] == 8


def test_a_second_ctrl_c_stops_at_once(toy, tmp_path):
    """Two SIGINTs in one step: no checkpoint or partial.json is written for it, the
    last periodic checkpoint stays, and resuming from it gives the straight numbers."""
    flags = ["--steps", "20", "--checkpoint-every", "5"]
    straight, stopped = str(tmp_path / "straight"), str(tmp_path / "stopped")
    toy.main([*flags, "--out", straight])
    with pytest.raises(KeyboardInterrupt):
        toy.main([*flags, "--out", stopped, "--interrupt-at", "12", "--interrupts", "2"])
    assert checkpoint(stopped)[1]["step"] == 10
    assert not os.path.exists(os.path.join(stopped, "partial.json"))
    toy.main(["--resume", stopped, "--interrupt-at", "-1"])
    assert results(stopped)["steps_run"] == 10
    assert results(stopped)["weights"] == results(straight)["weights"]


def idx_dir(path, seed=0):
    """A new directory holding a 20-example IDX test split."""
    path.mkdir()
    return make_idx_dir(path, 0, 20, seed=seed)


def test_another_dataset_is_refused_on_resume(toy, tmp_path):
    first, other = (
        idx_dir(tmp_path / name, seed) for name, seed in (("first", 0), ("other", 1))
    )
    out = str(tmp_path / "run")
    toy.main(["--steps", "6", "--out", out, "--data-dir", first])
    with pytest.raises(
        ZooError,
        match=rf"{out}: expected the data the run was started with \(idx:{first} from "
        rf"{first}, md5 [0-9a-f]+\), found idx:{other} from {other}",
    ):
        toy.main(["--resume", out, "--data-dir", other])
    with pytest.raises(ZooError, match=r"expected --dataset None as the run was started"):
        toy.main(["--resume", out, "--dataset", "mnist"])
    moved = shutil.copytree(first, tmp_path / "moved")  # same files elsewhere: accepted
    toy.main(["--resume", out, "--data-dir", str(moved), "--steps", "8"])
    assert results(out)["steps_run"] == 2


def test_resume_refuses_another_experiments_directory(toy, tmp_path):
    out = str(tmp_path / "run")
    toy.main(["--steps", "4", "--out", out])
    before = results(out)
    other = flags.parser("Another experiment.", steps=4, batch_size=8)
    with pytest.raises(
        ZooError, match=rf"{out}: expected a run of {__name__}, found a run of toy "
    ):
        flags.parse_args(other, ["--resume", out])
    os.remove(os.path.join(out, "run.json"))
    with pytest.raises(ZooError, match=r"run.json: expected the run.json a run writes"):
        toy.main(["--resume", out])
    assert results(out) == before


def test_run_json_records_experiment_flags_data_code_and_machine(toy, tmp_path):
    data_dir = idx_dir(tmp_path / "data")
    out = str(tmp_path / "run")
    toy.main(["--steps", "4", "--out", out, "--data-dir", data_dir, "--hidden", "8"])
    with open(os.path.join(out, "run.json")) as f:
        saved = json.load(f)
    assert saved["experiment"] == "toy"
    assert {"steps": 4, "hidden": 8, "batch_size": 8, "seed": 0}.items() <= saved[
        "flags"
    ].items()
    assert "resume" not in saved["flags"] and "argv" not in saved["flags"]
    assert saved["data"]["name"] == f"idx:{data_dir}"
    assert len(saved["data"]["md5"]) == 32
    assert saved["started"]["code_version"].startswith(("git ", "scope-zoo "))
    assert saved["started"]["machine"]["cpus"] == os.cpu_count()
    assert saved["resumes"] == []


def test_a_run_directory_in_use_is_refused(tmp_path):
    out = tmp_path / "run"
    out.mkdir()
    (out / "run.json").write_text("{}")
    with open(out / ".lock", "w") as held:  # another process's lock (another open file)
        held.write("pid 4242 on elsewhere\n")
        held.flush()
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        for kwargs in ({"resume": True}, {"overwrite": True}):
            with pytest.raises(ZooError, match=r"found it locked by pid 4242 on elsewhere"):
                rundir.RunDir(str(out), **kwargs)
    assert (out / "run.json").exists()
    assert rundir.RunDir(str(out), overwrite=True).path == str(out)
    assert os.listdir(out) == [".lock"]


def test_default_run_directories_are_unique(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    p = flags.parser("test", steps=4, batch_size=2)
    paths = {rundir.run_dir(flags.parse_args(p, []), "same").path for _ in range(3)}
    assert len(paths) == 3
    assert all(os.path.isfile(os.path.join(path, "run.json")) for path in paths)


@pytest.mark.parametrize("umask, mode", [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_files_are_created_with_the_users_umask(tmp_path, umask, mode):
    previous = os.umask(umask)
    try:
        files.atomic_write(str(tmp_path / "results.json"), "{}\n")
    finally:
        os.umask(previous)
    assert os.stat(tmp_path / "results.json").st_mode & 0o777 == mode


def test_the_directory_is_synced_after_the_rename(tmp_path, monkeypatch):
    calls, real_replace = [], os.replace
    monkeypatch.setattr(
        os, "replace", lambda a, b: (calls.append("rename"), real_replace(a, b))
    )
    monkeypatch.setattr(files, "sync_directory", lambda d: calls.append(("sync", d)))
    files.atomic_write(str(tmp_path / "a.json"), "{}")
    assert calls == ["rename", ("sync", str(tmp_path))]


def test_a_full_disk_is_one_line_naming_the_file_and_how_to_resume(
    toy, tmp_path, monkeypatch, capsys
):
    out = str(tmp_path / "run")

    def full(path, obj):
        if path.endswith("results.json"):
            raise OSError(errno.ENOSPC, "No space left on device", path)
        files.write_json(path, obj)

    monkeypatch.setattr(rundir, "write_json", full)
    with pytest.raises(SystemExit) as exit_info:
        entry.entry_point(toy.main, ["--steps", "4", "--out", out])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err == (
        f"error: {out}/results.json: expected to write it, found No space left on "
        f"device; free disk space or fix permissions, then resume with: "
        f"{record.resume_command(out)}\n"
    )
    monkeypatch.undo()
    toy.main(["--resume", out])  # the finished checkpoints make it a rewrite
    assert results(out)["steps_run"] == 0

    def broken(argv):
        raise OSError(errno.EACCES, "Permission denied", "/somewhere/file")

    with pytest.raises(SystemExit) as exit_info:
        entry.entry_point(broken)
    assert exit_info.value.code == 1
    assert capsys.readouterr().err.startswith("error: /somewhere/file: Permission denied;")


def test_without_checkpointer_nan_passes_as_before(graph):
    x = tf.compat.v1.placeholder(tf.float32, [])
    w = tf.compat.v1.get_variable("w", initializer=1.0)
    loss = w * x
    train_op = tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(loss)
    values = iter([1.0, np.nan, 1.0])
    batches = DataSet(np.zeros((4, 784), np.float32), np.zeros((4, 10), np.float32))
    with tf.compat.v1.Session() as session:
        session.run(tf.compat.v1.global_variables_initializer())
        logged, _ = training.train_loop(
            session,
            train_op,
            loss,
            batches,
            3,
            2,
            lambda images, labels: {x: next(values)},
            log_every=1,
        )
    assert [step for step, _ in logged] == [0, 1, 2]
    assert np.isnan(logged[1][1])


def train_graph_batches(source, steps, run=None, interrupt_at=None, window=4):
    """Trains a small autoencoder for ``steps`` batches of 8 read from ``source``.

    Args:
        source: "graph" (GraphBatches, window ``window``) or "feed" (feed_dict).
        run: a RunDir whose checkpointer is used (every 5 steps), or None.
        interrupt_at: step at which SIGINT arrives.

    Returns:
        ``(logged losses, final weights)``.
    """
    rng = np.random.default_rng(7)
    dataset = DataSet(rng.random((36, 784), dtype=np.float32), np.zeros((36, 10)), seed=2)
    with tf.Graph().as_default():
        tf.compat.v1.set_random_seed(0)
        if source == "graph":
            batches = GraphBatches(dataset, 8, window=window)
            x, feed = batches.images, None
        else:
            batches, x = dataset, tf.compat.v1.placeholder(tf.float32, [None, 784])

            def feed(images, _labels):
                return {x: images}

        model = autoencoder(x, n_hidden=16)
        train_op = tf.compat.v1.train.AdagradOptimizer(0.1).minimize(model.loss)
        with tf.compat.v1.Session() as session:
            session.run(tf.compat.v1.global_variables_initializer())
            if source == "graph":
                batches.initialize(session)

            def on_log(step, _value):
                if step == interrupt_at:
                    signal.raise_signal(signal.SIGINT)

            logged, _ = training.train_loop(
                session,
                train_op,
                model.loss,
                batches,
                steps,
                8,
                feed,
                log_every=1,
                on_log=on_log,
                checkpointer=run.checkpointer if run else None,
            )
            return logged, session.run(tf.compat.v1.trainable_variables())


def test_graph_batches_train_exactly_as_feed_dict_and_resume_mid_window(tmp_path):
    fed = train_graph_batches("feed", steps=14)  # 14 batches of 8 from 36: 3+ epochs
    in_graph = train_graph_batches("graph", steps=14)
    p, out = flags.parser("t", 14, 8, data=False), str(tmp_path / "run")
    args = flags.parse_args(p, ["--checkpoint-every", "5", "--out", out])
    with pytest.raises(training.RunInterrupted, match="at step 7 of 14"):
        train_graph_batches("graph", 14, rundir.run_dir(args, "t"), interrupt_at=6)
    args = flags.parse_args(p, ["--resume", out])
    resumed = train_graph_batches("graph", 14, rundir.run_dir(args, "t"))

    for logged, weights in (in_graph, resumed):
        assert logged == fed[0]
        for a, b in zip(weights, fed[1], strict=True):
            np.testing.assert_array_equal(a, b)


def test_graph_batches_with_an_extra_feed_of_values(graph):
    dataset = DataSet(np.ones((8, 784), np.float32), np.zeros((8, 10), np.float32))
    batches = GraphBatches(dataset, 4)
    scale = tf.compat.v1.placeholder_with_default(1.0, [])
    model = autoencoder(batches.images, n_hidden=3)
    train_op = tf.compat.v1.train.GradientDescentOptimizer(1.0).minimize(model.loss * scale)
    with tf.compat.v1.Session() as session:
        session.run(tf.compat.v1.global_variables_initializer())
        batches.initialize(session)
        before = session.run(tf.compat.v1.trainable_variables())
        logged, _ = training.train_loop(
            session, train_op, model.loss, batches, 5, 4, lambda: {scale: 0.0}, log_every=1
        )
        after = session.run(tf.compat.v1.trainable_variables())

    assert [step for step, _ in logged] == [0, 1, 2, 3, 4]
    for a, b in zip(before, after, strict=True):
        np.testing.assert_array_equal(a, b)  # the fed scale 0 reached every step


def test_graph_batches_with_another_batch_size_or_a_dataset_without_feed(graph):
    dataset = DataSet(np.zeros((8, 784), np.float32), np.zeros((8, 10), np.float32))
    batches = GraphBatches(dataset, 4)
    with tf.compat.v1.Session() as session:
        with pytest.raises(ZooError, match=r"train: expected batch_size 4 as the Graph"):
            training.train_loop(session, None, None, batches, 3, 2)
        with pytest.raises(ZooError, match=r"train: expected feed\(images, labels\)"):
            training.train_loop(session, None, None, dataset, 3, 2)


@pytest.mark.slow
def test_sigterm_kill_and_resume_subprocess(toy, tmp_path):
    out, straight, marker = tmp_path / "killed", tmp_path / "straight", tmp_path / "marker"
    flags = ["--steps", "100", "--checkpoint-every", "20"]
    command = [sys.executable, str(tmp_path / "toy.py"), *flags, "--out", str(out)]
    process = forkserver.popen(
        [*command, "--sleep", "0.05", "--marker", str(marker)],
        stderr=subprocess.PIPE,
        text=True,
        cwd=runner_root(),
    )
    deadline = time.monotonic() + 180
    while not marker.exists() and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)
    process.send_signal(signal.SIGTERM)
    _, err = process.communicate(timeout=120)
    assert process.returncode == 128 + signal.SIGTERM, err
    step = checkpoint(str(out))[1]["step"]
    assert 5 < step < 100
    resume = err.strip().splitlines()[-1].split("resume with: ", 1)[1]
    assert resume.endswith(f"--resume {out}")
    toy.main(shlex.split(resume)[2:])
    toy.main([*flags, "--out", str(straight)])
    assert results(out)["steps_run"] == 100 - step
    assert results(out)["weights"] == results(straight)["weights"]
    assert results(out)["logged"] == results(straight)["logged"]


def runner_root():
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_a_list_an_older_run_json_recorded_reads_as_the_comma_separated_flag():
    assert flags.int_list()(128) is None and flags.int_list()(0) is not None
    assert flags.integers([128, 64]) == flags.integers("128,64") == (128, 64)


def test_a_default_the_parser_sets_is_not_taken_for_a_flag_given(tmp_path):
    p = flags.parser("toy", steps=10, batch_size=8, data=False)
    p.set_defaults(checkpoint_every=5000)  # as dqn does
    out = str(tmp_path / "run")
    args = flags.parse_args(p, ["--checkpoint-every", "10", "--out", out])
    rundir.run_dir(args, "toy")
    resumed = flags.parse_args(p, ["--resume", out])
    assert "checkpoint_every" not in resumed.given and resumed.checkpoint_every == 10


def test_a_resume_removes_the_temporary_files_a_killed_run_left(toy, tmp_path):
    out = tmp_path / "run"
    toy.main(["--steps", "10", "--checkpoint-every", "5", "--out", str(out)])
    left = [out / ".tmp-99999-results.json", out / "checkpoints" / ".tmp-99999-00-net0.npz"]
    for path in left:
        path.write_text("half written")
    toy.main(["--steps", "10", "--resume", str(out)])
    assert not any(path.exists() for path in left)
    assert (out / "results.json").exists()


def test_settings_are_frozen_and_read_flags_as_attributes():
    p = flags.parser("toy", steps=10, batch_size=8, data=False)
    p.add_argument("--samples", type=int, default=500, quick=50)
    settings = flags.parse_args(p, ["--samples", "70"])
    assert (settings.samples, settings.flags["samples"], settings.steps) == (70, 70, 10)
    with pytest.raises(dataclasses.FrozenInstanceError):
        settings.samples = 1
    with pytest.raises(AttributeError, match="no flag or field 'sample'"):
        _ = settings.sample
    assert settings.with_flags(steps=3).steps == 3 and settings.steps == 10
    quick = flags.parse_args(p, ["--samples", "70", "--quick"])
    assert (quick.samples, quick.steps) == (50, 10)  # quick= caps: at most 50 samples
    assert flags.parse_args(p, ["--samples", "20", "--quick"]).samples == 20


def test_argv_of_gives_flags_back_as_a_command_line():
    p = flags.parser("toy", steps=10, batch_size=8, data=False)
    p.add_argument("--name", default=None)
    p.add_argument("--expose", action="store_true")
    settings = flags.parse_args(p, ["--steps", "7"])
    assert flags.argv_of(settings, ("steps", "name", "expose")) == ["--steps", "7"]
    exposed = settings.with_flags(expose=True, name="a")
    assert flags.argv_of(exposed, ("name", "expose")) == ["--name", "a", "--expose"]


def test_parsing_the_flags_starts_no_tensorflow(tmp_path):
    code = (
        "import sys; from experiments import autoencoder; "
        "from experiments.harness import flags; "
        f"flags.parse_args(autoencoder.build_parser(), ['--data-dir', {str(tmp_path)!r}]); "
        "print('tensorflow' in sys.modules)"
    )
    make_idx_dir(tmp_path, 20, 10)
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=runner_root()
    )
    assert done.stdout.strip() == "False", done.stderr
