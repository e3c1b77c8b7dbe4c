"""The install step: the manifest says `incomplete` first, then the installer runs on a
hash-pinned lock file (no dependencies, no index: exactly the resolved set)."""

from __future__ import annotations

import contextlib
import os
from typing import TYPE_CHECKING

from neuron_env.errors import ConfigurationError, InstallFailed
from neuron_env.install import installers, mirrors

if TYPE_CHECKING:
    from neuron_env.install.run_state import InstallRun


def install(run: InstallRun, work: str) -> None:
    """Manifest `incomplete` first, then the installer on a hash-pinned lock file."""
    items = run.items
    try:
        run.manifest("incomplete", "install started; not finished")
    except OSError as e:
        raise ConfigurationError(
            f"cannot write the install manifest in {run.plan.prefix}: {e.strerror or e}; "
            "nothing was installed",
            hint="free disk space in the environment, or choose a writable --venv DIR") from None
    lock_file = os.path.join(work, "lock.txt")
    with open(lock_file, "w", encoding="utf-8") as f:  # no credentials: mirrors.auth_env
        f.write("".join(it.lock_line() + "\n" for it in items))
    hashes = all(it.sha256 for it in items)
    res = run.step(f"install ({run.inst.name})",
                   installers.install_cmd(run.inst, run.plan.python, lock_file, hashes,
                                          run.repair),
                   run.opts.timeout,
                   f"Installing {len(items)} package(s): "
                   + ", ".join(f"{i.name} {i.version}" for i in items[:6])
                   + (" ..." if len(items) > 6 else ""), env=mirrors.auth_env(run.plan),
                   parallel=run.inst.name == "uv")
    if res.returncode != 0:
        what, fix = installers.diagnose(res.output)
        with contextlib.suppress(OSError):
            run.manifest("incomplete", f"install failed: {what}")
        raise InstallFailed(what, fix, run.log_path, run.plan.prefix)
