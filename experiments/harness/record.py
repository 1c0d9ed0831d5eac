"""The run record: ``run.json`` read and written here, and the one :func:`machine`.

A run writes ``run.json`` when it starts (:func:`write`): the experiment, every
flag, the data's identity, the code version, the machine and the command. A
resume reads it back (:func:`read`) and takes the run's flags (:func:`merge`);
every ``results.json`` and every benchmark describes its machine with
:func:`machine`. Nothing here imports TensorFlow at import time.
"""

import contextlib
import datetime
import importlib.metadata
import json
import os
import platform
import shlex
import socket
import subprocess
import sys

from layers.errors import ZooError

RECORD = "run.json"
# Flags that say where and how to (re)start, not what the run is: never recorded.
UNRECORDED = frozenset({"help", "resume", "out", "overwrite", "quick"})


def jsonable(value):
    """Returns ``value`` as it reads back from run.json (tuples become lists)."""
    return json.loads(json.dumps(value))


def read(run_path, experiment):
    """Returns the run.json of ``run_path``, checked to be a run of ``experiment``.

    Raises:
        ZooError: no readable run.json, or one of another experiment.
    """
    path = os.path.join(run_path, RECORD)
    try:
        with open(path) as f:
            record = json.load(f)
        found = record.get("experiment") if isinstance(record, dict) else None
    except (OSError, ValueError) as err:
        raise ZooError(
            f"{path}: expected the run.json a run writes when it starts, found "
            f"{type(err).__name__}: {err}; pass a run directory of this version, or "
            "start a new run with --out"
        ) from None
    if found != experiment:
        raise ZooError(
            f"{run_path}: expected a run of {experiment}, found a run of {found} "
            f"({path}); resume it with python -m {found}, or pass a run directory of "
            f"{experiment}"
        )
    return record


def merge(values, record, where, recorded, given, may_differ):
    """Takes the run's recorded flags not passed; refuses a passed flag that differs.

    Args:
        values: the flags' values by dest, updated in place.
        record: the run's run.json.
        where: names the run in messages (``--resume DIR``).
        recorded: dest -> flag of the flags run.json records.
        given: the dests of the flags passed on the command line.
        may_differ: the dests of the flags that may differ from the run's.

    Raises:
        ZooError: a flag passed with another value than the run's (flags that
            may differ on resume excepted).
    """
    flags = record.get("flags", {})
    for dest, flag in recorded.items():
        if dest not in flags:
            continue
        saved, now = flags[dest], values[dest]
        if dest not in given:
            values[dest] = saved
        elif jsonable(now) != saved and dest not in may_differ:
            raise ZooError(
                f"{where}: expected {flag} {saved!r} as the run was started with "
                f"(run.json), found {flag} {now!r}; drop {flag} to continue that run, "
                "or start a new run with --out"
            )


def check_same_data(record, identity, run_path):
    """Raises ZooError unless ``identity`` is the data the run was started with.

    Files are compared by content (md5), wherever they are now; tfds by name.
    """
    saved = record.get("data") or {}
    same_files = identity.md5 is not None and saved.get("md5") == identity.md5
    same_tfds = identity.md5 is None and saved.get("name") == identity.name
    if not (same_files or same_tfds):
        raise ZooError(
            f"{run_path}: expected the data the run was started with ({saved.get('name')} "
            f"from {saved.get('source')}, md5 {saved.get('md5')}), found "
            f"{identity.name} from {identity.source} (md5 {identity.md5}); pass the "
            "run's --dataset and --data-dir"
        )


def write(run, settings, resume):
    """Writes (or, resuming, updates) ``run.json`` in the run directory; returns it.

    Args:
        run: the :class:`experiments.harness.rundir.RunDir`.
        settings: the run's :class:`experiments.harness.flags.Settings` (every
            flag it ``recorded`` is written).
        resume: append to the run's ``resumes`` instead of starting a record.
    """
    this = {
        "time": now(),
        "command": command(settings.argv),
        "code_version": code_version(),
        "machine": machine(),
    }
    if "precision" in settings.flags:
        this["precision"] = precision(settings.flags["precision"])
    flags = {dest: settings.flags[dest] for dest in settings.recorded}
    if resume and settings.record:
        record = {**settings.record, "flags": jsonable(flags)}
        record["resumes"] = [*record.get("resumes", []), this]
    else:
        data = settings.data
        record = {
            "experiment": settings.experiment,
            "flags": jsonable(flags),
            "data": data.as_dict() if data else None,
            "started": this,
            "resumes": [],
        }
    run.write_json(RECORD, record)
    return record


def precision(policy):
    """Returns what run.json says of the run's ``--precision`` on this machine.

    Args:
        policy: the flag's value, a name of ``zoo.constants.PRECISION_POLICIES``.

    Returns:
        ``{"policy": policy, "emulated": ...}``: ``emulated`` says why this
        machine emulates the policy's products (``mixed_float16`` without a GPU,
        ``mixed_bfloat16`` without a GPU on a CPU without ``avx512_bf16`` or
        ``amx_bf16``: :func:`zoo.training.precision.emulated`), else None.
    """
    from zoo.training.precision import emulated  # imports TensorFlow, started by now

    return {"policy": policy, "emulated": emulated(policy)}


def now():
    """Returns the UTC time in ISO format, to the second."""
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")


def code_version():
    """Returns ``git describe --always --dirty`` of the code, else the package version."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    described = _output(["git", "describe", "--always", "--dirty", "--tags"], 10, root)
    if described:
        return f"git {described}"
    version = _version("scope-zoo")
    return f"scope-zoo {version}" if version else "unknown"


# The CPU's flags that decide which kernels run: AVX2 and AVX-512 (oneDNN's float32
# kernels), VNNI, AVX512_BF16 and AMX (its bfloat16 and int8 ones).
CPU_FLAGS = (
    "avx2",
    "avx512f",
    "avx512_vnni",
    "avx512_bf16",
    "amx_tile",
    "amx_bf16",
    "amx_int8",
)
# One MatMul in a session, printing the kernel the session ran it with: oneDNN's
# rewrite names it _MklMatMul (RunMetadata.partition_graphs, a public record).
ONEDNN_PROBE = """
import tensorflow as tf
v1 = tf.compat.v1
with tf.Graph().as_default():
    x = v1.placeholder(tf.float32, [8, 8])
    y = tf.matmul(x, x, name="probe")
    metadata = v1.RunMetadata()
    with v1.Session() as session:
        session.run(y, {x: [[1.0] * 8] * 8}, run_metadata=metadata,
                    options=v1.RunOptions(output_partition_graphs=True))
print(*[n.op for g in metadata.partition_graphs for n in g.node if n.name == "probe"])
"""
ONEDNN_KERNEL = "ZOO_ONEDNN_KERNEL"  # the probe's answer, for child processes


def machine(probe_onednn=False):
    """Returns what ran the code: host, CPU, cores, load, devices and library versions.

    The one description of a machine that run.json, every results.json and the
    benchmarks carry. Devices are listed only once TensorFlow is imported (a
    record is written after the flags, when it is).

    Args:
        probe_onednn: find out whether TensorFlow runs oneDNN's kernels here unless
            this process or its parent did (:func:`onednn`: a process of its own, a
            few seconds); else ``onednn`` says only what a parent found.
    """
    tf = sys.modules.get("tensorflow")
    found = cpu()
    return {
        "host": socket.gethostname(),
        "platform": platform.platform(),
        "processor": found["name"],
        "cpu": found,
        "cpus": os.cpu_count(),
        "cores": len(os.sched_getaffinity(0)),
        "load_average": list(os.getloadavg()),
        "devices": (
            ", ".join(d.device_type for d in tf.config.list_physical_devices())
            if tf
            else None
        ),
        "python": platform.python_version(),
        "tensorflow": _version("tensorflow"),
        "keras": _version("keras"),
        "numpy": _version("numpy"),
        "onednn_opts": os.environ.get("TF_ENABLE_ONEDNN_OPTS", "default"),
        "onednn": onednn(probe_onednn),
    }


def cpu(cpuinfo="/proc/cpuinfo"):
    """Returns the CPU: its name, vendor, family and model, and which of
    :data:`CPU_FLAGS` it shows (as ``lscpu``: those this machine, or its VM, exposes).

    Args:
        cpuinfo: the file to read (its first processor's entry); where unreadable,
            the name is Python's, the rest None or empty.
    """
    fields = {}
    with contextlib.suppress(OSError), open(cpuinfo) as f:
        for line in f:
            key, colon, value = line.partition(":")
            if not colon and fields:
                break  # a blank line ends the first processor's entry
            fields.setdefault(key.strip(), value.strip())
    shown = set(fields.get("flags", "").split())
    return {
        "name": fields.get("model name") or platform.processor() or platform.machine(),
        "vendor": fields.get("vendor_id"),
        "family": fields.get("cpu family"),
        "model": fields.get("model"),
        "flags": [flag for flag in CPU_FLAGS if flag in shown],
    }


def onednn(probe=True):
    """Returns whether TensorFlow runs oneDNN's kernels on this machine.

    TensorFlow's switch is ``TF_ENABLE_ONEDNN_OPTS`` (unset: its default for this
    CPU, logged at import as "oneDNN custom operations are on"); what counts is the
    kernel a session picks, so a process of its own (this environment; a session in
    this process would fix its thread pools' sizes) runs one MatMul and names it,
    once: the kernel is kept in the environment (:data:`ONEDNN_KERNEL`) for the
    processes this one starts (the bench's rows).

    Args:
        probe: run the probe unless the environment holds its answer; False: only
            read the environment.

    Returns:
        ``{"on": True, "kernel": "_MklMatMul"}`` (``False, "MatMul"`` without
        oneDNN), or ``{"on": None, "kernel": None}`` where not probed or it failed.
    """
    kernel = os.environ.get(ONEDNN_KERNEL)
    if probe and not kernel:
        kernel = _output([sys.executable, "-c", ONEDNN_PROBE], 300)
    if kernel:
        os.environ[ONEDNN_KERNEL] = kernel  # for this process's children
        return {"on": kernel.startswith("_Mkl"), "kernel": kernel}
    return {"on": None, "kernel": None}


def describe_cpu(facts):
    """Returns the line naming the CPU of ``facts`` (:func:`machine`'s), its flags and
    oneDNN, that a benchmark prints first."""
    found, engine = facts["cpu"], facts["onednn"]
    missing = [flag for flag in CPU_FLAGS if flag not in found["flags"]]
    state = {True: "on", False: "off", None: "unknown"}[engine["on"]]
    return (
        f"CPU: {found['name']} ({found['vendor']} family {found['family']} model "
        f"{found['model']}), {facts['cores']} cores; flags: {' '.join(found['flags'])}"
        f"{'; not shown: ' + ' '.join(missing) if missing else ''}; oneDNN {state} "
        f"(TF_ENABLE_ONEDNN_OPTS {facts['onednn_opts']}; a MatMul runs as "
        f"{engine['kernel']})"
    )


def _output(command, timeout, cwd=None):
    """Returns what ``command`` prints, stripped, or None where it fails."""
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        return subprocess.run(
            command, cwd=cwd, capture_output=True, text=True, timeout=timeout, check=True
        ).stdout.strip()
    return None


def _version(package):
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None


def program():
    """Returns how this process was started: ``["-m", module]`` or the script's path."""
    spec = getattr(sys.modules["__main__"], "__spec__", None)
    return ["-m", spec.name] if spec else [sys.argv[0]]


def command(argv):
    """Returns the shell command that ran this process with ``argv``."""
    return shlex.join(["python", *program(), *argv])


def resume_command(run_path):
    """Returns the shell command that resumes the run: ``--resume run_path`` alone.

    The run's flags come back from its run.json; a larger ``--steps`` may be added.
    """
    return shlex.join(["python", *program(), "--resume", run_path])
