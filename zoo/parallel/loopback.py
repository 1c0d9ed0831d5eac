"""A private network namespace with only the loopback interface, for a local cluster.

TensorFlow's gRPC server binds ``[::]:<port>`` (every interface) whatever host
the cluster spec names, with no ServerDef, ConfigProto or environment setting to
change that. On one machine the launcher of ``experiments.ps`` therefore runs
its tasks in a network namespace of their own (Linux, no root needed where
unprivileged user namespaces are allowed): inside, ``lo`` is the only interface,
so nothing outside the cluster can connect.

This file runs as a script in a fresh interpreter (``python -I loopback.py``),
which is single-threaded as ``unshare``/``setns`` of a user namespace require;
it imports only the standard library::

    python -I zoo/parallel/loopback.py hold PARENT_PID        # make the namespace, keep it
    python -I zoo/parallel/loopback.py join HOLDER_PID -- CMD # run CMD inside it

``hold`` prints ``ready`` once the namespace is up, then waits until process
``PARENT_PID`` is gone (or is no longer its parent) and exits.
"""

import ctypes
import fcntl
import os
import select
import socket
import struct
import subprocess
import sys
import time

CLONE_NEWUSER = 0x10000000
CLONE_NEWNET = 0x40000000
SIOCGIFFLAGS = 0x8913
SIOCSIFFLAGS = 0x8914
IFF_UP = 0x1
PARENT_POLL_S = 0.5
READY_TIMEOUT_S = 30.0


class PrivateNetwork:
    """A private network namespace (loopback only) held open by a child process.

    The holder exits when this process does (see ``hold``); :meth:`command`
    wraps a command line so that it runs inside the namespace.

    Raises:
        OSError: the namespace could not be made (not Linux, or unprivileged
            user namespaces disabled); the message says why.
    """

    def __init__(self):
        self.holder = subprocess.Popen(
            [sys.executable, "-I", __file__, "hold", str(os.getpid())],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        ready, _, _ = select.select([self.holder.stdout], [], [], READY_TIMEOUT_S)
        if not ready or self.holder.stdout.readline().strip() != "ready":
            self.close()
            reason = self.holder.stderr.read().strip().splitlines()
            raise OSError(reason[-1] if reason else "no answer from the holder process")

    @property
    def pid(self):
        """The holder's process id."""
        return self.holder.pid

    def command(self, argv):
        """Returns the command line that runs ``argv`` inside the namespace."""
        return [sys.executable, "-I", __file__, "join", str(self.pid), "--", *argv]

    def close(self):
        """Ends the holder (the namespace goes once no task is left in it)."""
        if self.holder.poll() is None:
            self.holder.kill()
        self.holder.wait()


def _libc_call(name, *args):
    libc = ctypes.CDLL(None, use_errno=True)
    if getattr(libc, name)(*args) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{name}: {os.strerror(err)}")


def _write(path, text):
    with open(path, "w") as f:
        f.write(text)


def make_namespace():
    """Moves this process into a new user + network namespace with ``lo`` up."""
    uid, gid = os.geteuid(), os.getegid()
    _libc_call("unshare", CLONE_NEWUSER | CLONE_NEWNET)
    _write("/proc/self/setgroups", "deny")
    _write("/proc/self/uid_map", f"{uid} {uid} 1")  # the same user inside and out
    _write("/proc/self/gid_map", f"{gid} {gid} 1")
    with socket.socket() as sock:
        request = struct.pack("16sH", b"lo", 0)
        flags = struct.unpack("16sH", fcntl.ioctl(sock, SIOCGIFFLAGS, request))[1]
        fcntl.ioctl(sock, SIOCSIFFLAGS, struct.pack("16sH", b"lo", flags | IFF_UP))


def join_namespace(pid):
    """Moves this process into the user and network namespaces of process ``pid``."""
    for kind, flag in (("user", CLONE_NEWUSER), ("net", CLONE_NEWNET)):
        fd = os.open(f"/proc/{pid}/ns/{kind}", os.O_RDONLY)
        try:
            _libc_call("setns", fd, flag)
        finally:
            os.close(fd)


def hold(parent):
    """Makes the namespace, says ``ready``, and lives as long as ``parent`` does."""
    make_namespace()
    print("ready", flush=True)
    while os.getppid() == parent:
        time.sleep(PARENT_POLL_S)


def main(argv):
    """``hold PARENT_PID`` or ``join HOLDER_PID -- CMD...``; see the module doc."""
    try:
        if argv[:1] == ["hold"]:
            hold(int(argv[1]))
        elif argv[:1] == ["join"] and argv[2:3] == ["--"]:
            join_namespace(int(argv[1]))
            os.execvp(argv[3], argv[3:])
        else:
            print(f"usage: {__doc__}", file=sys.stderr)
            return 2
    except OSError as err:
        print(f"private network namespace: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
