"""Turn AWS's release manifest (n2-manifest.json) into matrix files for XLA-based releases.

The manifest lists, per release, every package with its version, instances and Python versions.
XLA-based torch-neuronx versions read `<torch version>.<neuron version>` (`2.9.0.2.15.32035` is
torch 2.9.0), which gives the pairs. What the manifest does not state per release (OS support,
architecture, dates) is filled from its global tables and said so in the summary.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version

from neuron_env.errors import MatrixError, Problem
from neuron_env.matrix.model import (
    AptPackage,
    Companion,
    Driver,
    Index,
    InstanceFamily,
    InstanceType,
    Matrix,
    OSEntry,
    Pair,
    Placeholder,
)
from neuron_env.util.files import FileProblem, read_bounded

MAX_MANIFEST = 64 << 20  # the real manifest is ~1 MiB

# Static instance facts (neuron-facts.md); the manifest names families only.
KNOWN_TYPES: dict[str, tuple[InstanceType, ...]] = {
    "trn1": (InstanceType("trn1.2xlarge", 1, 2, 32), InstanceType("trn1.32xlarge", 16, 2, 32)),
    "trn1n": (InstanceType("trn1n.32xlarge", 16, 2, 32),),
    "trn2": (InstanceType("trn2.48xlarge", 16, 8, 96),
             InstanceType("trn2.3xlarge", 1, 8, 96, confirmed=False)),
    "trn2u": (InstanceType("trn2u.48xlarge", 16, 8, 96),),
    "inf2": (),
    "inf1": (),
    "trn3": (InstanceType("trn3.48xlarge", None, 8, 144, confirmed=False),),
}
ACCELERATOR = {"trn1": "Trainium", "trn1n": "Trainium", "trn2": "Trainium2",
               "trn2u": "Trainium2", "trn3": "Trainium3", "inf2": "Inferentia2",
               "inf1": "Inferentia"}
OS_MAP = {"ubuntu18": ("ubuntu", "18.04", "bionic"), "ubuntu20": ("ubuntu", "20.04", "focal"),
          "ubuntu22": ("ubuntu", "22.04", "jammy"), "ubuntu24": ("ubuntu", "24.04", "noble"),
          "amazonlinux2": ("amzn", "2", None), "amazonlinux2023": ("amzn", "2023", None),
          "rockylinux9": ("rocky", "9", None)}
NEURON_PIP = ("torch-neuronx", "neuronx-cc", "nki", "libneuronxla", "neuronx-distributed",
              "aws-neuronx-runtime-discovery")
APT = ("aws-neuronx-dkms", "aws-neuronx-runtime-lib", "aws-neuronx-collectives",
       "aws-neuronx-tools")
PLACEHOLDERS = (("torch-neuronx", "1.0"), ("neuronx-cc", "1.0.post1"), ("nki", "0.0.1"),
                ("libneuronxla", "1.0"), ("torch-neuron", "1.0"), ("neuron-cc", "1.0.post1"),
                ("neuronx-distributed", "0.1"), ("transformers-neuronx", "0.1"),
                ("aws-neuronx-runtime-discovery", "1.0"))


@dataclass(frozen=True)
class ImportResult:
    matrices: tuple[Matrix, ...]
    skipped: tuple[tuple[str, str], ...]  # (release, why)
    manifest_version: str
    manifest_date: str


def _bad(source: str, msg: str) -> MatrixError:
    return MatrixError([Problem(source, "", msg)],
                       hint="pass AWS's n2-manifest.json (releases 2.3 to 2.32)")


def _python_range(versions: list[str]) -> SpecifierSet | None:
    vs = sorted({Version(v) for v in versions})
    if not vs:
        return None
    hi = vs[-1]
    return SpecifierSet(f">={vs[0].major}.{vs[0].minor},<{hi.major}.{hi.minor + 1}")


def _torch_of(neuronx: str) -> Version | None:
    parts = neuronx.split(".")
    try:
        return Version(".".join(parts[:3])) if len(parts) > 3 else None
    except InvalidVersion:
        return None


def load_manifest(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(read_bounded(path, MAX_MANIFEST).decode("utf-8"))
    except FileProblem as e:
        raise _bad(str(path), e.why) from None
    except OSError as e:
        raise _bad(str(path), f"cannot be read: {e.strerror or e}") from None
    except RecursionError:
        raise _bad(str(path), "is nested too deeply to be a release manifest") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise _bad(str(path), f"is not valid JSON: {e}") from None
    if not isinstance(data, dict) or not isinstance(data.get("neuron_releases"), list):
        raise _bad(str(path), "has no 'neuron_releases' list: not a Neuron release manifest")
    return data


def convert(data: dict[str, Any], source: str = "manifest",
            releases: list[str] | None = None) -> ImportResult:
    mver = str(data.get("manifest_version", "?"))
    mdate = str(data.get("manifest_date", "?"))
    whl = next((r.get("repo_url", "").rstrip("/") for r in data.get("repos_n2", [])
                if isinstance(r, dict) and r.get("repo_type") == "whl"),
               "https://pip.repos.neuron.amazonaws.com")
    pin_major = {p["name"]: p.get("pin_major") == "true"
                 for p in data.get("package_properties", []) if isinstance(p, dict) and "name" in p}
    oses = []
    for o in data.get("os_properties", []):
        if isinstance(o, dict) and o.get("os") in OS_MAP:
            os_id, ver, code = OS_MAP[o["os"]]
            oses.append(OSEntry(id=os_id, version=ver, codename=code, status="supported"))
    out, skipped = [], []
    wanted = set(releases or [])
    for rel in data["neuron_releases"]:
        if not isinstance(rel, dict) or not isinstance(rel.get("packages"), list):
            continue
        version = str(rel.get("neuron_version", ""))
        if wanted and version not in wanted and version.rsplit(".", 1)[0] not in wanted:
            continue
        try:
            m = _release(version, rel["packages"], whl, pin_major, tuple(oses), mver, mdate,
                         source)
        except (KeyError, TypeError, ValueError, InvalidVersion) as e:
            skipped.append((version, f"malformed entry: {e}"))
            continue
        if isinstance(m, str):
            skipped.append((version, m))
        else:
            out.append(m)
    if wanted and not out:
        raise _bad(source, f"none of the releases {', '.join(sorted(wanted))} could be imported"
                   + (f": {skipped[0][1]}" if skipped else " (not in the manifest)"))
    return ImportResult(tuple(out), tuple(skipped), mver, mdate)


def _release(version, packages, whl, pin_major, oses, mver, mdate, source) -> Matrix | str:
    Version(version)
    byname: dict[str, list[dict]] = {}
    for p in packages:
        byname.setdefault(p["name"], []).append(p)
    neuronx = byname.get("torch-neuronx", [])
    if not neuronx:
        return "no torch-neuronx in this release (the native backend starts with 2.33)"
    pairs, families, pythons = [], set(), []
    for p in sorted(neuronx, key=lambda p: Version(p["version"]), reverse=True):
        torch = _torch_of(p["version"])
        if torch is None or any(x.torch == torch for x in pairs):
            continue
        pairs.append(Pair(torch=torch, torch_neuronx=SpecifierSet(f"=={p['version']}"),
                          python=_python_range(p.get("supported_python_versions", []))))
        families |= set(p.get("supported_instances", []))
        pythons += p.get("supported_python_versions", [])
    if not pairs or not pythons:
        return "torch-neuronx entries carry no torch version or Python versions"
    if "trn1" in families:
        families.add("trn1n")
    instances = []
    for fam in ("trn2", "trn2u", "trn3", "trn1", "trn1n", "inf2", "inf1"):
        ok = fam in families or (fam == "trn2u" and "trn2" in families)
        instances.append(InstanceFamily(
            family=fam, supported=ok, accelerator=ACCELERATOR[fam],
            reason=None if ok else f"torch-neuronx is not listed for {fam} in Neuron {version}",
            types=KNOWN_TYPES[fam]))
    companions = []
    for name in ("neuronx-cc", "nki"):
        if name in byname:
            top = max(Version(p["version"]) for p in byname[name])
            spec = SpecifierSet(f"=={top.major}.*") if pin_major.get(name) else SpecifierSet()
            companions.append(Companion(name=name, spec=spec))
    apt = tuple(AptPackage(name=n, version=byname[n][0]["version"]) for n in APT if n in byname)
    present = [n for n in NEURON_PIP if n in byname] or ["torch-neuronx"]
    return Matrix(
        release=version, date=None, status="ga", backend="xla",
        summary=(f"XLA-based torch-neuronx (torch_xla, xm.xla_device()); imported from AWS's "
                 f"release manifest {mver} ({mdate}). The manifest states no OS per release: "
                 f"every OS it names is listed."),
        python=_python_range(pythons), architectures=("x86_64",), instances=tuple(instances),
        os=oses, pairs=tuple(pairs), companions=tuple(companions),
        indexes=(Index("neuron", whl, tuple(present), "NEURON_ENV_NEURON_INDEX_URL"),
                 Index("pytorch-cpu", "https://download.pytorch.org/whl/cpu", ("torch",),
                       "NEURON_ENV_PYTORCH_INDEX_URL")),
        placeholders=tuple(Placeholder(n, Version(v)) for n, v in PLACEHOLDERS),
        driver=Driver(module="neuron", pci_vendor="1d0f", apt=apt),
        docs=(("release_notes",
               "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/release-notes/index.html"),),
        source=source,
    )
