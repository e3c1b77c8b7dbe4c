"""Build the emulated backend's wheel from the source shipped inside neuron-env, offline.

A pure-Python wheel is a zip with a dist-info (PEP 427); writing it here means `neuron-env
install --backend emulated` needs no build backend, no index and no network.
"""

from __future__ import annotations

import re
from pathlib import Path

# doctor reads REQUIRES_PYTHON from here on every run (checks/rehearsal.py): what only building
# a wheel needs (hashlib loads OpenSSL; zipfile, base64, guards.atomic) is imported by build()

DIST = "neuron_emulator"
NAME = "neuron-emulator"


REQUIRES_PYTHON = ">=3.10"  # the emulator's own rules (doctor judges an emulated env by them)
REQUIRES_TORCH = "<2.15,>=2.13"


def source_dir() -> Path:
    """The emulator's package: inside the installed wheel, or the checkout's backend/src."""
    here = Path(__file__).resolve().parent.parent  # neuron_env/
    packaged = here / "_backend" / DIST
    if packaged.is_dir():
        return packaged
    return here.parent / "backend" / "src" / DIST


def version(src: Path | None = None) -> str:
    text = ((src or source_dir()) / "_version.py").read_text(encoding="utf-8")
    m = re.search(r'^__version__ = "([^"]+)"', text, re.M)
    if not m:
        raise RuntimeError(f"no __version__ in {src}/_version.py")
    return m.group(1)


def _record_line(name: str, data: bytes) -> str:
    import base64
    import hashlib

    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def build(out_dir: Path, src: Path | None = None) -> Path:
    """Write neuron_emulator-<version>-py3-none-any.whl into out_dir; return its path."""
    import io
    import zipfile

    from neuron_env.guards.atomic import write_atomic

    src = src or source_dir()
    ver = version(src)
    info = f"{DIST}-{ver}.dist-info"
    files: list[tuple[str, bytes]] = []
    # the code and its data (the op-support sets, ops_<release>.json)
    for p in sorted([*src.rglob("*.py"), *src.rglob("*.json")]):
        files.append((f"{DIST}/{p.relative_to(src).as_posix()}", p.read_bytes()))
    metadata = (f"Metadata-Version: 2.1\nName: {NAME}\nVersion: {ver}\n"
                "Summary: An EMULATED 'neuron' PyTorch device (PrivateUse1, CPU memory); not "
                f"AWS's torch-neuronx\nRequires-Python: {REQUIRES_PYTHON}\n"
                f"Requires-Dist: torch{REQUIRES_TORCH}\n").encode()
    files.append((f"{info}/METADATA", metadata))
    files.append((f"{info}/WHEEL", b"Wheel-Version: 1.0\nGenerator: neuron-env\n"
                  b"Root-Is-Purelib: true\nTag: py3-none-any\n"))
    files.append((f"{info}/entry_points.txt",
                  b"[torch.backends]\nneuron_emulator = neuron_emulator:_autoload\n\n"
                  b"[torch_dynamo_backends]\nneuron = neuron_emulator._compile:neuron_backend\n"))
    record = [_record_line(n, d) for n, d in files] + [f"{info}/RECORD,,"]
    files.append((f"{info}/RECORD", ("\n".join(record) + "\n").encode()))
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{DIST}-{ver}-py3-none-any.whl"
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in files:
            zi = zipfile.ZipInfo(name, date_time=(2026, 1, 1, 0, 0, 0))
            zi.compress_type = zipfile.ZIP_DEFLATED
            zi.external_attr = 0o644 << 16
            z.writestr(zi, data)
    write_atomic(path, buf.getvalue())
    return path
