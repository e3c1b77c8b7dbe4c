"""Pure: matrix + target facts + options -> the install plan (or a refusal that says why)."""

from __future__ import annotations

import json

from neuron_env.errors import ResolutionError
from neuron_env.matrix.model import Matrix, Pair, fmt_spec
from neuron_env.matrix.resolver import resolve
from neuron_env.util.record import factory, record
from neuron_env.util.versions import Ver

BACKENDS = ("neuron", "emulated")
EMULATOR = "neuron-emulator"


@record
class Requirement:
    name: str
    spec: str  # the PEP 508 requirement text, e.g. "torch==2.14.0"
    index: str | None  # the matrix index it must come from; None: any (dependencies)
    source: str = "index"  # index | bundled (a wheel shipped with neuron-env) | present

    def serialize(self) -> dict:
        return {"name": self.name, "requirement": self.spec, "index": self.index,
                "source": self.source}


@record
class IndexUse:
    name: str
    url: str
    packages: tuple[str, ...]
    overridden_by: str | None = None  # "--neuron-index-url", "NEURON_ENV_NEURON_INDEX_URL"
    matrix_url: str | None = None
    files: str | None = None  # where a shared mirror serves its files (provenance.attribute)

    def serialize(self) -> dict:
        return {"name": self.name, "url": self.url, "packages": list(self.packages),
                "overridden_by": self.overridden_by, "matrix_url": self.matrix_url}


@record
class Plan:
    backend: str
    release: str
    python: str
    python_version: str
    prefix: str
    pair: Pair
    requirements: tuple[Requirement, ...]
    indexes: tuple[IndexUse, ...]
    find_links: tuple[str, ...] = ()
    offline: bool = False
    forced: tuple[str, ...] = ()  # what --force let through
    warnings: tuple[str, ...] = ()
    keep: tuple[str, ...] = ()  # packages already right that the plan leaves alone
    public: tuple[str, ...] = ()  # pip's own configured indexes (install/mirrors.py)

    def index(self, name: str | None) -> IndexUse | None:
        return next((i for i in self.indexes if i.name == name), None)

    @property
    def key(self) -> str:
        """Same key, same plan: the no-op fast path compares it with the install manifest."""
        import hashlib  # here: doctor imports this module for its fix lines, never the key

        doc = {"backend": self.backend, "release": self.release,
               "requirements": [r.spec for r in self.requirements],
               "indexes": {i.name: i.url for i in self.indexes}}
        return hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()[:16]

    def serialize(self) -> dict:
        return {"backend": self.backend, "release": self.release, "key": self.key,
                "python": {"path": self.python, "version": self.python_version,
                           "prefix": self.prefix},
                "pair": {"torch": str(self.pair.torch),
                         "torch_neuronx": fmt_spec(self.pair.torch_neuronx)},
                "requirements": [r.serialize() for r in self.requirements],
                "indexes": [i.serialize() for i in self.indexes],
                "find_links": list(self.find_links), "offline": self.offline,
                "forced": list(self.forced), "warnings": list(self.warnings),
                "keep": list(self.keep)}


@record
class Inputs:
    """What the plan is computed from (facts already probed; no I/O here)."""

    python: str
    python_version: str
    prefix: str
    os_id: str | None
    os_version: str | None
    arch: str | None
    installed: dict[str, str] = factory(dict)  # canonical name -> version
    torch: str | None = None  # --torch
    backend: str = "neuron"
    force: bool = False
    overrides: dict[str, tuple[str, str]] = factory(dict)  # index -> (url, by)
    find_links: tuple[str, ...] = ()
    offline: bool = False
    companions: tuple[str, ...] = ()  # --with torchvision,torchaudio: builds for the pair's torch


def _host_problems(m: Matrix, i: Inputs) -> list[str]:
    out = []
    entry = m.os_entry(i.os_id or "", i.os_version or "")
    label = f"{i.os_id or 'unknown OS'} {i.os_version or ''}".strip()
    if entry is None:
        supported = ", ".join(o.label for o in m.os
                              if o.status == "supported" and not o.disputed_status)
        out.append(f"{label} is not in Neuron {m.release}'s matrix (supported: {supported})")
    elif entry.status not in ("supported", "unstated") or entry.disputed_status:
        # disputed: refused unforced; unstated (no source says either way): a warning
        status = (f"{entry.status} per one source and {entry.disputed_status} per another"
                  if entry.disputed_status else entry.status)
        out.append(f"{entry.label} is {status} in Neuron {m.release}"
                   + (f": {entry.message}" if entry.message else ""))
    if i.arch and m.architectures and i.arch not in m.architectures:
        out.append(f"architecture {i.arch} is not in Neuron {m.release}'s matrix "
                   f"({', '.join(m.architectures)})")
    return out


def _pick_pair(m: Matrix, i: Inputs, forced: list[str], warnings: list[str]) -> Pair:
    try:
        return resolve(m, i.python_version, i.torch).pair
    except ResolutionError as e:
        if i.torch is not None and "has no backend pair" in e.message:
            raise  # an unknown --torch is never forced
        if "not a version" in e.message:
            raise
        if i.backend == "emulated":
            warnings.append(f"{e.message} (the emulated backend does not need it)")
        elif i.force:
            forced.append(e.message)
        else:
            raise ResolutionError(e.message, hint=(e.hint or "") +
                                  "; or --force to install anyway (unsupported)") from None
    pairs = m.pairs_newest_first()
    if i.torch is not None:
        want = Ver(i.torch)
        pairs = [p for p in pairs if (p.torch.major, p.torch.minor) == (want.major, want.minor)]
    return pairs[0]


def _present_torch_pair(m: Matrix, installed: dict[str, str]) -> Pair | None:
    v = installed.get("torch")
    try:
        pub = Ver(Ver(v).public) if v else None
    except ValueError:
        return None
    return next((p for p in m.pairs if p.torch == pub), None)


def make_plan(m: Matrix, i: Inputs) -> Plan:
    if i.backend not in BACKENDS:
        raise ResolutionError(f"--backend {i.backend!r} is not one of {', '.join(BACKENDS)}",
                              hint="use --backend neuron (Trainium) or --backend emulated")
    forced: list[str] = []
    warnings: list[str] = []
    host = _host_problems(m, i)
    if host and i.backend == "emulated":
        warnings += [f"{p} (fine for the emulated backend)" for p in host]
    elif host and i.force:
        forced += host
    elif host:
        raise ResolutionError(host[0] + (f" (+{len(host) - 1} more)" if len(host) > 1 else ""),
                              hint="run on a supported host (see `neuron-env matrix show`), "
                                   "or --force to install anyway (unsupported)")
    entry = m.os_entry(i.os_id or "", i.os_version or "")
    if i.backend == "neuron" and entry is not None and entry.wheels is False and \
            entry.status == "supported":
        warnings.append(entry.message or f"{entry.label}: no prebuilt wheels stated")
    if entry is not None and entry.status == "unstated":
        warnings.append(f"{entry.label}: Neuron {m.release}'s sources do not say whether it "
                        f"supports this OS" + (f" ({entry.message})" if entry.message else ""))
    present = _present_torch_pair(m, i.installed) if i.backend == "emulated" else None
    if present is not None and (i.torch is None or present.torch_minor == _minor(i.torch)):
        pair = present
    else:
        pair = _pick_pair(m, i, forced, warnings)

    indexes = []
    for idx in m.indexes:
        url, by = i.overrides.get(idx.name, (idx.url, None))
        indexes.append(IndexUse(idx.name, url, idx.packages, by, idx.url if by else None))
    torch_idx = m.index_for("torch")
    reqs = [Requirement("torch", pair.torch_requirement, torch_idx.name if torch_idx else None)]
    if i.backend == "neuron":
        nx = m.index_for("torch-neuronx")
        reqs.append(Requirement("torch-neuronx", pair.neuronx_requirement,
                                nx.name if nx else None))
        for c in m.companions:
            ci = m.index_for(c.name)
            reqs.append(Requirement(c.name, c.requirement, ci.name if ci else None))
    else:
        reqs.append(Requirement(EMULATOR, EMULATOR, None, source="bundled"))
    reqs += companion_requirements(m, pair, i.companions, torch_idx.name if torch_idx else None)
    warnings += companion_warnings(m, pair, i.companions)
    keep = [f"{n} {i.installed[n]}" for n in ("torch",) if n in i.installed and present]
    return Plan(backend=i.backend, release=m.release, python=i.python,
                python_version=i.python_version, prefix=i.prefix, pair=pair,
                requirements=tuple(reqs), indexes=tuple(indexes),
                find_links=i.find_links, offline=i.offline, forced=tuple(forced),
                warnings=tuple(warnings), keep=tuple(keep))


def companion_requirements(m: Matrix, pair: Pair, names: tuple[str, ...],
                           index: str | None) -> list[Requirement]:
    """--with NAME: the companion build the matrix pairs with the plan's torch, from the index
    torch comes from (a +cpu torch needs the +cpu torchvision, not PyPI's CUDA build)."""
    out = []
    for name in names:
        row = m.torch_companion(name, pair.torch_minor)
        if row is None:
            known = ", ".join(m.torch_companion_names()) or "none"
            raise ResolutionError(f"--with {name}: Neuron {m.release}'s matrix has no {name} "
                                  f"pairing for torch {pair.torch_minor}",
                                  hint=f"companions the matrix pairs: {known}")
        own = m.index_for(row.name)  # a Neuron-built companion names its index (torchao-neuron)
        out.append(Requirement(row.name, row.requirement, own.name if own else index))
    return out


def companion_warnings(m: Matrix, pair: Pair, names: tuple[str, ...]) -> list[str]:
    """What --with cannot check at plan time: an assumed pairing, and a Neuron-built
    companion's instance families (the plan does not know the host; doctor checks it)."""
    out = []
    for n in names:
        tc = m.torch_companion(n, pair.torch_minor)
        if tc is None:
            continue
        if tc.assumed:
            out.append(f"{tc.name}: assumed pairing for torch {pair.torch_minor} ({tc.assumed})")
        if tc.families:
            out.append(f"{tc.name} runs on {', '.join(tc.families)} instances only "
                       "(neuron-env doctor checks the host)")
    return out


def _minor(text: str) -> str:
    v = Ver(text)
    return f"{v.major}.{v.minor}"
