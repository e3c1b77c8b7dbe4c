"""Turn AWS's release manifest (n2-manifest.json) into matrix files for XLA-based releases.

The manifest lists, per release, every package with its version, instances and Python versions.
XLA-based torch-neuronx versions read `<torch version>.<neuron version>` (`2.9.0.2.15.32035` is
torch 2.9.0), which gives the pairs. What the manifest does not state per release (OS support,
architecture, dates) is filled from its global tables and said so in the summary.
"""

from __future__ import annotations

import json
import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from neuron_env.errors import MatrixError, Problem
from neuron_env.guards.files import FileProblem, read_bounded
from neuron_env.guards.text import clean
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
    Source,
    StackPackage,
)
from neuron_env.util.versions import Spec, Ver

MAX_MANIFEST = 64 << 20  # the real manifest is ~1 MiB
# a release name becomes a file name (neuron-<release>.toml): digits and dots only, short
RELEASE = re.compile(r"^[0-9]{1,4}(\.[0-9]{1,6}){1,3}$")
MAX_LABEL = 64  # manifest_version, manifest_date

# The instance catalogue: facts that do not depend on the release (devices, cores per device,
# memory, EFA, the logical-core configuration at boot), from AWS's architecture pages (the
# [[sources]] below); the manifest names families only. trn1/inf2 NeuronCore-v2 has no logical
# core grouping: one logical core per physical core (lnc_default 1); Trn2 boots at LNC=2.
_T1, _T2, _I2 = "trn1-arch", "trn2-arch", "inf2-arch"
KNOWN_TYPES: dict[str, tuple[InstanceType, ...]] = {
    "trn1": (InstanceType("trn1.2xlarge", 1, 2, 32, lnc_default=1, source=_T1),
             InstanceType("trn1.32xlarge", 16, 2, 32, lnc_default=1, efa=True, source=_T1)),
    "trn1n": (InstanceType("trn1n.32xlarge", 16, 2, 32, lnc_default=1, efa=True, source=_T1),),
    "trn2": (InstanceType("trn2.48xlarge", 16, 8, 96, lnc_default=2, efa=True, source=_T2),
             InstanceType("trn2.3xlarge", 1, 8, 96, confirmed=False, lnc_default=2,
                          source=_T2)),
    "trn2u": (InstanceType("trn2u.48xlarge", 16, 8, 96, lnc_default=2, efa=True, source=_T2),),
    "inf2": (InstanceType("inf2.48xlarge", 12, 2, 32, lnc_default=1, source=_I2),),
    "inf1": (),
    "trn3": (InstanceType("trn3.48xlarge", None, 8, 144, confirmed=False),),
}
_ARCH = "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/general/arch/neuron-hardware/"
CATALOGUE_SOURCES = (
    Source(_T1, _ARCH + "trn1-arch.html", "AWS Trn1/Trn1n Architecture",
           ("instances.trn1", "instances.trn1n"),
           "devices, memory and EFA bandwidth per size (trn1.32xlarge 800 Gbps, trn1n 1,600)"),
    Source(_T2, _ARCH + "trn2-arch.html", "Amazon EC2 Trn2 Architecture",
           ("instances.trn2", "instances.trn2u"), "16 Trainium2 chips, EFA; LNC=2 at boot"),
    Source(_I2, _ARCH + "inferentia2.html", "Inferentia2 Architecture", ("instances.inf2",),
           "up to 12 Inferentia2 devices of 2 NeuronCore-v2 and 32 GiB each"),
)
INF1_REASON = ("Inf1 runs torch-neuron (AWS's Inf1 stack), which neuron-env does not install or "
               "check: see https://awsdocs-neuron.readthedocs-hosted.com/en/latest/archive/setup/"
               "legacy-inf1/pytorch.html")
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
# the instance families a matrix covers (torch-neuronx's); the manifest's inf1 rows (torch-neuron,
# the Inf1 runtime) are another product's and never pick a version here
COVERED = ("trn1", "trn1n", "inf2", "trn2", "trn2u", "trn3")
# the release's own Python stack ([[stack]]): manifest name -> pip name; required = torch-neuronx
# imports it (torch_xla, and libneuronxla, its PJRT plugin)
STACK_PIP = {"libneuronxla": "libneuronxla", "torch-xla": "torch-xla", "torch_xla": "torch-xla",
             "neuronx-cc": "neuronx-cc", "nki": "nki",
             "neuronx_distributed": "neuronx-distributed",
             "neuronx_distributed_training": "neuronx-distributed-training",
             "neuronx_distributed_inference": "neuronx-distributed-inference",
             "transformers-neuronx": "transformers-neuronx",
             "optimum-neuron": "optimum-neuron"}
REQUIRED = ("libneuronxla", "torch-xla")
PLACEHOLDERS = (("torch-neuronx", "1.0"), ("neuronx-cc", "1.0.post1"), ("nki", "0.0.1"),
                ("libneuronxla", "1.0"), ("torch-neuron", "1.0"), ("neuron-cc", "1.0.post1"),
                ("neuronx-distributed", "0.1"), ("transformers-neuronx", "0.1"),
                ("aws-neuronx-runtime-discovery", "1.0"))


# where AWS keeps the manifest (the docs build runs src/helperscripts/n2-helper.py on it)
MANIFEST_URL = ("https://github.com/aws-neuron/aws-neuron-sdk/blob/master/src/helperscripts/"
                "n2-manifest.json")


def manifest_source(mver: str, mdate: str) -> Source:
    return Source("n2-manifest", MANIFEST_URL, f"AWS Neuron release manifest {mver} ({mdate})",
                  ("*",), "generated by `neuron-env matrix import`; instance sizes come from "
                  "neuron-env's instance catalogue (its own sources), OS support from the "
                  "manifest's global list")


@dataclass(frozen=True)
class ImportResult:
    matrices: tuple[Matrix, ...]
    skipped: tuple[tuple[str, str], ...]  # (release, why)
    manifest_version: str
    manifest_date: str


def _bad(source: str, msg: str) -> MatrixError:
    return MatrixError([Problem(source, "", msg)],
                       hint="pass AWS's n2-manifest.json (releases 2.3 to 2.32)")


def _python_range(versions: list[str]) -> Spec | None:
    vs = sorted({Ver(v) for v in versions})
    if not vs:
        return None
    hi = vs[-1]
    return Spec(f">={vs[0].major}.{vs[0].minor},<{hi.major}.{hi.minor + 1}")


def _torch_of(neuronx: str) -> Ver | None:
    parts = neuronx.split(".")
    try:
        return Ver(".".join(parts[:3])) if len(parts) > 3 else None
    except ValueError:
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


def _unsafe(text: str) -> bool:
    """A control character (ESC, DEL, CR, NUL...), a line or paragraph separator or a BOM."""
    return any(unicodedata.category(c) in ("Cc", "Zl", "Zp") or c == "\ufeff" for c in text)


def _label(data: dict[str, Any], key: str, problems: list[Problem], source: str) -> str:
    value = data.get(key, "?")
    text = str(value) if isinstance(value, str | int | float) else ""
    if not text or len(text) > MAX_LABEL or _unsafe(text):
        problems.append(Problem(source, key, f"{key} must be a short printable text (got "
                                f"{clean(repr(value)[:40], one_line=True)})"))
    return text


def _index_url(data: dict[str, Any], problems: list[Problem], source: str) -> str:
    from neuron_env.errors import ConfigurationError
    from neuron_env.guards.bounded_http import check_url

    raw = next((r.get("repo_url") for r in data.get("repos_n2", [])
                if isinstance(r, dict) and r.get("repo_type") == "whl"),
               "https://pip.repos.neuron.amazonaws.com")
    if not isinstance(raw, str):
        problems.append(Problem(source, "repos_n2", "the whl repo_url must be a string"))
        return ""
    try:
        check_url(raw, schemes=("https",))
    except ConfigurationError as e:
        problems.append(Problem(source, "repos_n2", f"the whl repo_url: {e.message}"))
    return raw.rstrip("/")


def _check_releases(data: dict[str, Any], source: str) -> list[Problem]:
    """Every release name of the WHOLE manifest: a version of digits and dots (it becomes a
    file name), each one once (2.31.1 and 2.31.1.0 are one release)."""
    problems: list[Problem] = []
    seen: dict[Ver, str] = {}
    for i, rel in enumerate(data["neuron_releases"]):
        if not isinstance(rel, dict):
            continue
        name = rel.get("neuron_version")
        where = f"neuron_releases[{i}].neuron_version"
        if not isinstance(name, str) or not RELEASE.match(name):
            problems.append(Problem(source, where, "the release must be a version of digits and "
                                    f"dots (2.31.1), got {clean(repr(name)[:40], one_line=True)}"))
            continue
        ver = Ver(name)
        if ver in seen:
            problems.append(Problem(source, where, f"release {name} is listed twice (as "
                                    f"{seen[ver]} too): which one is meant?"))
        seen[ver] = name
    return problems


def convert(data: dict[str, Any], source: str = "manifest",
            releases: list[str] | None = None) -> ImportResult:
    """The matrices of the manifest's XLA-based releases. The WHOLE manifest is checked first:
    any hostile or ambiguous value (a release name that is no plain version, a release listed
    twice, control characters, a bad index URL) is one MatrixError listing every problem."""
    problems = _check_releases(data, source)
    mver = _label(data, "manifest_version", problems, source)
    mdate = _label(data, "manifest_date", problems, source)
    whl = _index_url(data, problems, source)
    if problems:
        raise MatrixError(problems, hint="this is not AWS's release manifest as published; "
                          "nothing was written")
    pin_major = {p["name"]: p.get("pin_major") == "true"
                 for p in data.get("package_properties", []) if isinstance(p, dict) and "name" in p}
    oses = _oses(data.get("os_properties", []))
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
        except (KeyError, TypeError, ValueError) as e:
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


def header(m: Matrix, res: ImportResult) -> str:
    return (f"Neuron {m.release}: generated by 'neuron-env matrix import' from AWS's release "
            f"manifest\n{res.manifest_version} ({res.manifest_date}). Regenerate rather than "
            "edit by hand.")


def _strings(value: Any, path: str = "") -> list[tuple[str, str]]:
    if isinstance(value, str):
        return [(path, value)]
    if isinstance(value, dict):
        return [x for k, v in value.items() for x in _strings(v, f"{path}.{k}".lstrip("."))]
    if isinstance(value, list | tuple):
        return [x for i, v in enumerate(value) for x in _strings(v, f"{path}[{i}]")]
    return []


def render(res: ImportResult) -> list[tuple[Matrix, str]]:
    """Each matrix with its TOML text, once ALL of them pass: no control character in any
    value, and each text reads back as `matrix validate` reads it. Else one MatrixError with
    every problem (nothing is to be written)."""
    from neuron_env.matrix.loader import parse_text
    from neuron_env.matrix.serialize import to_data, to_toml

    out, problems = [], []
    for m in res.matrices:
        where = f"neuron-{m.release}.toml"
        bad = [p for p, v in _strings(to_data(m)) if _unsafe(v)]
        if bad:
            problems += [Problem(where, p, "holds a control character") for p in bad[:5]]
            continue
        text = to_toml(m, header(m, res))
        try:
            parse_text(text, where)
        except MatrixError as e:
            problems += e.problems
            continue
        out.append((m, text))
    if problems:
        raise MatrixError(problems, hint="the manifest holds values no matrix may carry; "
                          "nothing was written")
    return out


# The manifest's os_properties name each OS once, for all releases together, with its default
# Python: no release says which OSes it supports. Imported entries say exactly that
# ("unstated", doctor warns) instead of claiming support per release.
OS_UNSTATED = ("AWS's release manifest lists this OS for all its releases together and does not "
               "say which releases support it: check the release's notes and setup guide")


def _oses(props: object) -> tuple[OSEntry, ...]:
    out = []
    for o in props if isinstance(props, list) else []:
        if isinstance(o, dict) and o.get("os") in OS_MAP:
            os_id, ver, code = OS_MAP[o["os"]]
            py = o.get("default_python_version")
            py = py if isinstance(py, str) and re.fullmatch(r"3\.\d{1,2}", py) else None
            out.append(OSEntry(id=os_id, version=ver, codename=code, status="unstated",
                               message=OS_UNSTATED, source="n2-manifest", default_python=py))
    return tuple(out)


def _release(version: str, packages: list[dict[str, Any]], whl: str, pin_major: dict[str, bool],
             oses: tuple[OSEntry, ...], mver: str, mdate: str, source: str) -> Matrix | str:
    Ver(version)
    byname: dict[str, list[dict[str, Any]]] = {}
    for p in packages:
        byname.setdefault(p["name"], []).append(p)
    neuronx = byname.get("torch-neuronx", [])
    if not neuronx:
        return "no torch-neuronx in this release (the native backend starts with 2.33)"
    pairs: list[Pair] = []
    families: set[str] = set()
    pythons: list[str] = []
    for p in sorted(neuronx, key=lambda p: Ver(p["version"]), reverse=True):
        torch = _torch_of(p["version"])
        if torch is None or any(x.torch == torch for x in pairs):
            continue
        pairs.append(Pair(torch=torch, torch_neuronx=Spec(f"=={p['version']}"),
                          python=_python_range(p.get("supported_python_versions", []))))
        families |= set(p.get("supported_instances", []))
        pythons += p.get("supported_python_versions", [])
    python = _python_range(pythons)  # None: no Python versions
    if not pairs or python is None:
        return "torch-neuronx entries carry no torch version or Python versions"
    if "trn1" in families:
        families.add("trn1n")
    instances = []
    for fam in ("trn2", "trn2u", "trn3", "trn1", "trn1n", "inf2", "inf1"):
        ok = fam in families or (fam == "trn2u" and "trn2" in families)
        instances.append(InstanceFamily(
            family=fam, supported=ok, accelerator=ACCELERATOR[fam],
            reason=None if ok else INF1_REASON if fam == "inf1" else
            f"torch-neuronx is not listed for {fam} in Neuron {version}",
            types=KNOWN_TYPES[fam]))
    companions = []
    for name in ("neuronx-cc", "nki"):
        if name in byname:
            top = max(Ver(p["version"]) for p in byname[name])
            spec = Spec(f"=={top.major}.*") if pin_major.get(name) else Spec()
            companions.append(Companion(name=name, spec=spec))
    apt = tuple(a for n in APT for a in _apt_rows(n, byname.get(n, [])))
    stack = _stack(byname, pairs, families)
    present = [n for n in NEURON_PIP if n in byname] or ["torch-neuronx"]
    return Matrix(
        release=version, date=None, status="ga", backend="xla",
        summary=(f"XLA-based torch-neuronx (torch_xla, xm.xla_device()); imported from AWS's "
                 f"release manifest {mver} ({mdate}). The manifest states no OS per release: "
                 f"every OS it names is listed as 'unstated'."),
        python=python, architectures=("x86_64",), instances=tuple(instances),
        os=oses, pairs=tuple(pairs), companions=tuple(companions), stack=stack,
        indexes=(Index("neuron", whl, tuple(present), "NEURON_ENV_NEURON_INDEX_URL"),
                 Index("pytorch-cpu", "https://download.pytorch.org/whl/cpu", ("torch",),
                       "NEURON_ENV_PYTORCH_INDEX_URL")),
        placeholders=tuple(Placeholder(n, Ver(v)) for n, v in PLACEHOLDERS),
        driver=Driver(module="neuron", pci_vendor="1d0f", apt=apt),
        docs=(("release_notes",
               "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/release-notes/index.html"),),
        source=source, sources=(manifest_source(mver, mdate), *CATALOGUE_SOURCES),
    )


def _fams(row: dict[str, Any]) -> tuple[str, ...]:
    """The covered families a manifest row names (trn1 brings trn1n, trn2 brings trn2u: the
    manifest names the base family only)."""
    listed = set(row.get("supported_instances", []))
    listed |= {"trn1n"} if "trn1" in listed else set()
    listed |= {"trn2u"} if "trn2" in listed else set()
    return tuple(f for f in COVERED if f in listed)


def _apt_rows(name: str, rows: list[dict[str, Any]]) -> list[AptPackage]:
    """A package's version for the families the matrix covers: Inf1-only rows are left out
    (2.20.0-2.21.1 list the Inf1 runtime first); where covered families get different
    versions, one row per version, each naming its families."""
    mine = [r for r in rows if _fams(r)]
    versions = dict.fromkeys(str(r["version"]) for r in mine)
    if len(versions) == 1:
        return [AptPackage(name=name, version=next(iter(versions)))]
    return [AptPackage(name=name, version=v, families=tuple(
        f for f in COVERED if any(f in _fams(r) for r in mine if str(r["version"]) == v)))
        for v in versions]


def _ties(pip: str, version: str, pairs: list[Pair]) -> list[str | None]:
    """The torch minors a stack row goes with: torch-xla X.Y with torch X.Y (none: the row is
    for another stack, e.g. 2.31's torch-xla 2.10+ beside torch-neuronx 2.9); libneuronxla 0.x
    with torch 1.x and the others with torch 2+; every other package: any pair (None)."""
    v = Ver(version)
    if pip == "torch-xla":
        return [p.torch_minor for p in pairs if (p.torch.major, p.torch.minor) == v.release[:2]]
    if pip == "libneuronxla" and len(pairs) > 1:
        return [p.torch_minor for p in pairs if (p.torch.major < 2) == (v.major == 0)]
    return [None]


def _stack(byname: dict[str, list[dict[str, Any]]], pairs: list[Pair],
           families: set[str]) -> tuple[StackPackage, ...]:
    out: list[StackPackage] = []
    supported = set(_fams({"supported_instances": sorted(families)}))
    for raw, pip in STACK_PIP.items():
        for r in byname.get(raw, []):
            fams = _fams(r)
            if not fams:
                continue
            Ver(str(r["version"]))
            only = () if supported <= set(fams) else fams
            for torch in _ties(pip, str(r["version"]), pairs):
                out.append(StackPackage(pip, str(r["version"]), torch, pip in REQUIRED, only))
    return tuple(sorted(out, key=lambda x: (x.name, x.torch or "", Ver(x.version))))
