"""Where matrices live: the bundled set, the user's matrix directory (`matrix update` fills
it), `--matrix NAME|PATH|DIR`, `NEURON_ENV_MATRIX`.

Precedence: `--matrix` (or `NEURON_ENV_MATRIX`) names one; otherwise the newest release among
`--matrix-dir` directories, the user's directory and the bundled set. A release present in
more than one comes from the first of: `--matrix-dir`, the user's directory, bundled.

Only the selected file is parsed: the release number is read from the file name
(`neuron-<release>.toml`), so choosing the newest release costs one parse.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
from pathlib import Path
from typing import Any

from neuron_env.errors import ConfigurationError, MatrixError, Problem
from neuron_env.matrix.loader import load_file
from neuron_env.matrix.model import RELEASE, Matrix
from neuron_env.util.record import record
from neuron_env.util.versions import Ver

ENV_VAR = "NEURON_ENV_MATRIX"
DIR_ENV_VAR = "NEURON_ENV_MATRIX_DIR"
_FILE = re.compile(rf"neuron-(?P<release>{RELEASE.pattern})\.toml")  # fullmatch only


@record
class Entry:
    release: str
    path: Path
    bundled: bool
    origin: str = ""  # bundled, user (the user's matrix directory) or dir (--matrix-dir)

    @property
    def version(self) -> Ver:
        return _version(self.release)


@functools.cache
def _version(release: str) -> Ver:
    return Ver(release)  # parsed once: scanning sorts ~50 file names more than once


def bundled_dir() -> Path:
    """The matrices inside the installed package, or the checkout's `matrices/` (editable)."""
    here = Path(__file__).resolve().parent.parent
    packaged = here / "_matrices"
    if packaged.is_dir():
        return packaged
    return here.parent / "matrices"


def user_dir() -> Path | None:
    """The user's matrix directory: `$NEURON_ENV_MATRIX_DIR`, else
    `$XDG_DATA_HOME/neuron-env/matrices` (default `~/.local/share/neuron-env/matrices`);
    None when no absolute directory can be named (no HOME)."""
    mine = os.environ.get(DIR_ENV_VAR)
    if mine:
        return Path(mine).expanduser()
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"),
                                                           ".local", "share")
    if not os.path.isabs(base):
        return None
    return Path(base) / "neuron-env" / "matrices"


def untrusted_user_dir(directory: Path) -> str | None:
    """Why the user's matrix directory must be ignored (guards.trust: owned by another user, or
    writable by group or others), or None."""
    from neuron_env.guards.trust import why_untrusted_path

    return why_untrusted_path(directory, kind="dir")


def scan(directory: Path, bundled: bool = False, origin: str = "",
         trust: bool = False) -> list[Entry]:
    """Matrix files in `directory`, newest release first. trust: the directory and each file
    must pass guards.trust (the user's matrix directory, found from the environment); what does
    not is left out with a warning naming it and why."""
    from neuron_env.guards.trust import warn_untrusted, why_untrusted_path

    out = []
    if trust and (why := untrusted_user_dir(directory)):
        warn_untrusted("the user matrix directory", directory, why)
        return []
    try:
        names = os.listdir(directory)
    except OSError:
        return []
    for name in names:
        m = _FILE.fullmatch(name)
        if not m:
            continue
        try:
            _version(m.group("release"))
        except ValueError:
            continue
        if trust and (why := why_untrusted_path(directory / name, kind="file")):
            warn_untrusted("the matrix file", directory / name, why)
            continue
        out.append(Entry(m.group("release"), directory / name, bundled,
                         origin or ("bundled" if bundled else "dir")))
    return sorted(out, key=lambda e: e.version, reverse=True)


def available(extra_dirs: list[Path] | None = None) -> list[Entry]:
    entries = []
    for d in extra_dirs or []:
        if not d.is_dir():
            raise ConfigurationError(f"--matrix-dir {d}: no such directory",
                                     hint="give a directory holding neuron-<release>.toml files")
        found = scan(d)
        if not found:
            raise ConfigurationError(
                f"--matrix-dir {d}: no matrix files (neuron-<release>.toml) in it",
                hint="create one with 'neuron-env matrix import' or copy a bundled one")
        entries += found
    user = user_dir()
    if user is not None:
        entries += scan(user, origin="user", trust=True)
    entries += scan(bundled_dir(), bundled=True)
    seen, out = set(), []
    for e in entries:  # an extra directory shadows a bundled release of the same number
        if e.version not in seen:  # 2.33.0 is 2.33: one of them, the first found
            seen.add(e.version)
            out.append(e)
    return sorted(out, key=lambda e: e.version, reverse=True)


def _by_release(name: str, entries: list[Entry]) -> Entry | None:
    try:
        want = Ver(name)
    except ValueError:
        return None
    # "2.31" means the newest 2.31.x; only without one does it mean 2.31.0. A patch release
    # with no file of its own ("2.33.1") is its minor's file when that is named X.Y ("2.33": the
    # native matrices, whose families admit every patch build of them)
    short = ".".join(name.split(".")[:2])
    for hit in ([e for e in entries if e.release == name],
                [e for e in entries if e.release.startswith(name + ".")],
                [e for e in entries if e.version == want],
                [e for e in entries if e.release == short and short != name]):
        if hit:
            return hit[0]
    return None


def select(spec: str | None = None, extra_dirs: list[Path] | None = None) -> Matrix:
    """Load the matrix named by `spec` (flag), else $NEURON_ENV_MATRIX, else the newest release
    of the user's matrix directory and the bundled set."""
    source = "--matrix"
    if not spec:
        spec = os.environ.get(ENV_VAR) or None
        source = ENV_VAR
    entries = available(extra_dirs)
    if not spec:
        if not entries:
            raise ConfigurationError(f"no bundled matrices found in {bundled_dir()}",
                                     hint="reinstall neuron-env; the wheel ships matrices/")
        return load_file(entries[0].path, bundled=entries[0].bundled)
    if "://" in spec:  # a URL: Path() would collapse "https://" to "https:/" (and the mask miss)
        from neuron_env.guards.redact import mask

        raise ConfigurationError(
            f"{source} {mask(spec)!r}: a URL; neuron-env reads matrices from files only",
            hint="download it first (curl -o m.toml URL), check it, then pass --matrix m.toml")
    path = Path(spec).expanduser()
    looks_like_path = os.sep in spec or spec.endswith(".toml") or path.exists()
    if looks_like_path:
        if path.is_dir():
            found = scan(path)
            if not found:
                raise MatrixError([Problem(str(path), "", "directory holds no matrix files "
                                           "(expected neuron-<release>.toml)")])
            return load_file(found[0].path)
        if not path.exists():
            raise MatrixError([Problem(str(path), "", f"no such matrix file (from {source})")])
        return load_file(path)
    entry = _by_release(spec, entries)
    if entry is None:
        known = ", ".join(e.release for e in entries[:12]) or "none"
        raise ConfigurationError(
            f"{source} {spec!r}: no such release in the known matrices (known: {known}"
            f"{', …' if len(entries) > 12 else ''})",
            hint="run 'neuron-env matrix list', or pass a path to a matrix TOML file")
    return load_file(entry.path, bundled=entry.bundled)


@record
class Known:
    """A known release whose [[pairs]] admit an installed torch-neuronx version."""

    release: str
    backend: str  # native | xla
    torch: str  # the pair's torch, "2.14.0"
    torch_minor: str
    requirement: str  # the pair's torch-neuronx requirement, "torch-neuronx==2.14.3.0.*"


def releases_pairing(version: str, extra_dirs: list[Path] | None = None) -> tuple[Known, ...]:
    """Every known matrix (the user's directory, the bundled set), newest first, whose pairs
    admit torch-neuronx `version`: which release built it, and whether it is the native or the
    XLA-based backend, read from the matrices' rows (never guessed from the version's shape).
    Reads every matrix: doctor asks only when the selected one does not pair the version. A
    matrix that does not load is passed over (`matrix validate` reports it)."""
    out = []
    for e in available(extra_dirs):
        try:
            m = load_file(e.path, bundled=e.bundled)
        except (MatrixError, ConfigurationError, OSError):
            continue
        pair = m.pair_for_neuronx(version)
        if pair is not None:
            out.append(Known(m.release, m.backend, str(pair.torch), pair.torch_minor,
                             pair.neuronx_requirement))
    return tuple(out)


def provenance(m: Matrix) -> dict[str, Any]:
    """Which matrix a report used: `release`, `source` (its path), `bundled`, and `origin`
    (bundled, user: the user's matrix directory, file: a path given), `path`, the file's
    `sha256` and the matrix's `date`."""
    from neuron_env.guards.files import read_bounded
    from neuron_env.util.digest import sha256_hex

    path = Path(m.source)
    origin = "bundled" if m.bundled else "file"
    user = user_dir()
    if not m.bundled and user is not None:
        with contextlib.suppress(OSError):
            if path.resolve().parent == user.resolve():
                origin = "user"
    digest = None
    with contextlib.suppress(OSError):
        from neuron_env.matrix.loader import MAX_MATRIX

        digest = sha256_hex(read_bounded(path, MAX_MATRIX))
    return {"release": m.release, "source": m.source, "bundled": m.bundled, "origin": origin,
            "path": str(path), "sha256": digest, "date": str(m.date) if m.date else None}
