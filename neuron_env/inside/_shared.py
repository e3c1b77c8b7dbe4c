# Shared by the scripts that run INSIDE the target interpreter (smoke.py, trial.py,
# collectives.py): stdlib only, Python 3.10+. Each script puts its own folder on sys.path first
# (see `import_shared` there), so this loads even under PYTHONSAFEPATH.
import contextlib
import json
import os
import stat
import sys

MARKER = "@@NEURON_ENV_JSON@@"  # the JSON document travels between two of these on stdout


def step(name):
    """Say which step runs now: a runner that kills us at a timeout can tell where we hung."""
    sys.stderr.write("@@STEP %s@@\n" % name)
    sys.stderr.flush()


def emit(doc, **dumps):
    """The one JSON document, between markers, on stdout."""
    sys.stdout.write("\n" + MARKER + json.dumps(doc, **dumps) + MARKER + "\n")
    sys.stdout.flush()


def sync(torch, device):
    """Wait for the device: cuda's own call, or the PrivateUse1 module's (torch.neuron)."""
    if device.type == "cuda":
        torch.cuda.synchronize()
    elif device.type != "cpu":
        mod = getattr(torch, device.type, None)
        if mod is not None and hasattr(mod, "synchronize"):
            mod.synchronize()


# -- THE opener and writer of the inside scripts (docs/security.md, "Shared directories") -----
# They run in the target interpreter and cannot import neuron_env: these are guards/trust,
# guards/files.read_at and guards/atomic's temp-and-rename in a few stdlib lines. A directory
# another user can write (RUN_DIR on shared storage) is judged first (ours or root's, no group
# or other write unless root's sticky /tmp); every file in it is opened relative to its
# descriptor with O_NOFOLLOW; every file written is created O_CREAT|O_EXCL|O_NOFOLLOW under a
# random name, then renamed over the name: a planted link is replaced, never written through.
# tests/unit/test_one_writer.py holds every other inside/ script to these.


class Untrusted(Exception):
    """A directory or file that must not be used: str() says which and why."""


def why_untrusted(st):
    """guards/trust.why_untrusted: why a file or directory with this fstat is not to be trusted."""
    me = os.geteuid()
    if st.st_uid not in (me, 0):
        return "owned by uid %d, not by this user (uid %d) or root" % (st.st_uid, me)
    mode = stat.S_IMODE(st.st_mode)
    if stat.S_ISDIR(st.st_mode) and mode & stat.S_ISVTX and st.st_uid == 0:
        return None
    if mode & 0o022:
        return "writable by group or others (mode %o)" % mode
    return None


def open_dir(path):
    """A descriptor on the directory `path` (never through a link), trusted, or Untrusted."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as e:
        raise Untrusted("%s: cannot be opened as a directory (%s; a symbolic link is not "
                        "followed)" % (path, e.strerror or e)) from None
    why = why_untrusted(os.fstat(fd))
    if why:
        os.close(fd)
        raise Untrusted("%s is not trusted: %s (chmod go-w it, or use a directory of your "
                        "own)" % (path, why))
    return fd


def open_read(dir_fd, name):
    """A binary file object on `name` in dir_fd: a regular file of this user or root, never a
    link (a link, a FIFO or another user's file is Untrusted)."""
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC,
                     dir_fd=dir_fd)
    except OSError as e:
        raise Untrusted("%s: cannot be opened (%s; a symbolic link is not followed)"
                        % (name, e.strerror or e)) from None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode) or st.st_uid not in (os.geteuid(), 0):
        os.close(fd)
        raise Untrusted("%s: not a regular file of this user" % name)
    os.set_blocking(fd, True)
    return os.fdopen(fd, "rb")


def _temp(dir_fd, name, mode):
    for _ in range(100):
        tmp = ".%s.%s.tmp" % (name, os.urandom(8).hex())
        try:
            return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
                           | os.O_CLOEXEC, mode, dir_fd=dir_fd), tmp
        except FileExistsError:
            continue
    raise FileExistsError("no free temporary name for %s" % name)


def create(dir_fd, name, mode=0o644):
    """A new, empty file at `name` in dir_fd (whatever was there, a planted link included, is
    replaced, never written through): a binary file object open for writing."""
    fd, tmp = _temp(dir_fd, name, mode)
    try:
        os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        os.close(fd)
        os.unlink(tmp, dir_fd=dir_fd)
        raise
    return os.fdopen(fd, "wb")


def write_file(dir_fd, name, data, mode=0o644):
    """`data` (str or bytes) at `name` in dir_fd, whole or not at all: temp-and-rename."""
    fd, tmp = _temp(dir_fd, name, mode)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data.encode("utf-8") if isinstance(data, str) else data)
        os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=dir_fd)
        raise


def open_pending(path):
    """A file neuron-env made for us (guards/atomic.PendingOutput: random name, exclusive, 0600),
    reopened by name for writing: never created here, never through a link, a regular file
    only. Binary file object."""
    fd = os.open(path, os.O_WRONLY | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise OSError("%s is not a regular file" % path)
    return os.fdopen(fd, "wb")
def pick_device(torch, want, local_rank, unseen=RuntimeError):
    """The device a rank runs on: `want` ("cpu", "neuron", "cuda", ...) at local_rank modulo
    the visible count, made current; `unseen(message)` is raised when none is visible (each
    script passes its own error class). One copy for collectives.py and trial_dist.py."""
    if want == "cpu":
        return torch.device("cpu")
    mod = getattr(torch, want, None)
    count = mod.device_count() if mod is not None and hasattr(mod, "device_count") else 0
    if count < 1:
        raise unseen("no %s device visible to this process" % want)
    index = local_rank % count
    if hasattr(mod, "set_device"):
        mod.set_device(index)
    return torch.device(want, index)
