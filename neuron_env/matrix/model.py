"""The typed, immutable model of one release's version matrix (no I/O here)."""

from __future__ import annotations

import re

from neuron_env.util.names import canonicalize_name
from neuron_env.util.record import factory, record
from neuron_env.util.versions import Spec, Ver

FORMAT_VERSION = 1
OS_STATUSES = ("supported", "unstated", "end-of-support", "unsupported")
RELEASE_STATUSES = ("ga", "beta", "preview", "deprecated")
BACKEND_KINDS = ("native", "xla")


@record
class InstanceType:
    name: str
    devices: int | None = None
    cores_per_device: int | None = None
    memory_per_device_gib: int | None = None
    confirmed: bool = True
    lnc_default: int | None = None  # logical NeuronCore config at boot (NEURON_LOGICAL_NC_CONFIG)
    efa: bool | None = None  # the type has EFA interfaces; None = not stated
    source: str | None = None  # id of the [[sources]] entry that states these figures


@record
class InstanceFamily:
    family: str
    supported: bool
    accelerator: str | None = None
    reason: str | None = None
    types: tuple[InstanceType, ...] = ()

    def type(self, name: str) -> InstanceType | None:
        return next((t for t in self.types if t.name == name), None)


@record
class OSEntry:
    id: str
    version: str
    status: str
    codename: str | None = None
    wheels: bool | None = None  # prebuilt wheels available; None = not stated
    message: str | None = None
    build_from_source: bool | None = None  # the backend must be built from source here
    new_dlamis: bool | None = None  # DLAMIs are still published for this OS in the release
    source: str | None = None  # id of the [[sources]] entry behind `status`
    disputed_status: str | None = None  # what another source says (e.g. end-of-support)
    disputed_source: str | None = None
    default_python: str | None = None  # the OS's default Python, where a source states it

    @property
    def label(self) -> str:
        name = {"ubuntu": "Ubuntu", "amzn": "Amazon Linux", "rocky": "Rocky Linux"}.get(
            self.id, self.id
        )
        return f"{name} {self.version}"


@record
class Pair:
    """One supported torch-neuronx family and the exact torch release it is built against."""

    torch: Ver
    torch_neuronx: Spec
    python: Spec | None = None  # narrower than the release's Python range, if set
    note: str | None = None

    @property
    def torch_minor(self) -> str:
        return f"{self.torch.major}.{self.torch.minor}"

    @property
    def torch_requirement(self) -> str:
        return f"torch=={self.torch}"

    @property
    def neuronx_requirement(self) -> str:
        return f"torch-neuronx{self.torch_neuronx}"

    def supports_python(self, version: str) -> bool:
        return self.python is None or self.python.contains(version, prereleases=True)


@record
class Companion:
    name: str
    spec: Spec
    purpose: str | None = None

    @property
    def requirement(self) -> str:
        return f"{self.name}{self.spec}"


@record
class TorchCompanion:
    """A package built against one torch release (torchvision, torchaudio, torchao): the
    versions that match a torch minor. `source` names the [[sources]] entry (PyTorch's
    published compatibility table); `assumed` says why a pairing no page states is assumed."""

    name: str
    torch: str  # the torch minor, "2.14"
    spec: Spec
    source: str | None = None
    assumed: str | None = None
    # A Neuron-built companion (TorchAO Neuron): the instance families it supports (empty: all),
    # the torch-neuronx it needs, the distributions it must not sit beside (it provides their
    # module) and the module it provides (for the import probe; default: the name's module).
    families: tuple[str, ...] = ()
    torch_neuronx: Spec | None = None
    conflicts: tuple[str, ...] = ()
    provides: str | None = None

    @property
    def requirement(self) -> str:
        return f"{self.name}{fmt_spec(self.spec)}"


@record
class Index:
    name: str
    url: str
    packages: tuple[str, ...]
    env: str | None = None  # environment variable that overrides the URL


@record
class Placeholder:
    name: str
    version: Ver


@record
class Limitation:
    id: str
    summary: str


@record
class AptPackage:
    name: str
    version: str | None = None
    purpose: str | None = None
    confirmed: bool = True  # False: the version is known from a source that is not a pin
    source: str | None = None
    # the instance families this row is for (empty: all); a release whose families ship
    # different versions of one package has one row per version (AWS's manifest: inf1 rows)
    families: tuple[str, ...] = ()


@record
class StackPackage:
    """One Python package of the release's own stack (libneuronxla, torch-xla,
    neuronx-distributed, ...): the exact version the release ships. A package with several
    versions in one release has one row each; `torch` ties a row to the torch minor of one
    [[pairs]] entry (torch-xla 2.1.6 goes with torch 2.1). `required`: torch-neuronx does not
    work without it (it imports it)."""

    name: str
    version: str
    torch: str | None = None
    required: bool = False
    families: tuple[str, ...] = ()
    purpose: str | None = None


@record
class Source:
    """Where the matrix's facts come from: a page, a release note, a manifest."""

    id: str
    url: str
    title: str | None = None
    covers: tuple[str, ...] = ()  # sections or facts ("instances.trn2n", "os", "*")
    note: str | None = None


@record
class Driver:
    module: str = "neuron"
    min_version: str | None = None
    pci_vendor: str | None = None
    apt: tuple[AptPackage, ...] = ()


@record
class Matrix:
    release: str
    date: str | None
    status: str
    backend: str
    summary: str
    python: Spec
    architectures: tuple[str, ...]
    instances: tuple[InstanceFamily, ...]
    os: tuple[OSEntry, ...]
    pairs: tuple[Pair, ...]
    companions: tuple[Companion, ...]
    indexes: tuple[Index, ...]
    placeholders: tuple[Placeholder, ...] = ()
    limitations: tuple[Limitation, ...] = ()
    driver: Driver = factory(Driver)
    docs: tuple[tuple[str, str], ...] = ()
    dlami: tuple[tuple[str, str], ...] = ()
    source: str = "<memory>"
    bundled: bool = False
    sources: tuple[Source, ...] = ()
    torch_companions: tuple[TorchCompanion, ...] = ()
    stack: tuple[StackPackage, ...] = ()

    @property
    def version(self) -> Ver:
        return Ver(self.release)

    def family(self, name: str) -> InstanceFamily | None:
        return next((f for f in self.instances if f.family == name), None)

    def instance_type(self, name: str) -> tuple[InstanceFamily | None, InstanceType | None]:
        fam = self.family(family_of(name))
        return fam, fam.type(name) if fam else None

    def os_entry(self, os_id: str | None, version: str) -> OSEntry | None:
        return next((o for o in self.os if o.id == os_id and o.version == version), None)

    def index_for(self, package: str) -> Index | None:
        key = canonicalize_name(package)
        return next(
            (i for i in self.indexes if key in {canonicalize_name(p) for p in i.packages}), None
        )

    def doc(self, key: str) -> str | None:
        return dict(self.docs).get(key)

    def placeholder(self, name: str, version: str) -> Placeholder | None:
        key = canonicalize_name(name)
        try:
            v = Ver(version)
        except Exception:
            return None
        return next(
            (p for p in self.placeholders if canonicalize_name(p.name) == key and p.version == v),
            None,
        )

    def pair_for_neuronx(self, neuronx_version: str) -> Pair | None:
        return next(
            (p for p in self.pairs if p.torch_neuronx.contains(neuronx_version, prereleases=True)),
            None,
        )

    def source_by_id(self, id_: str | None) -> Source | None:
        return next((s for s in self.sources if s.id == id_), None) if id_ else None

    def sources_for(self, fact: str) -> list[Source]:
        """The sources that cover `fact` ("os.ubuntu-22.04" is covered by "os" and "*")."""
        return [s for s in self.sources
                if any(c == "*" or fact == c or fact.startswith(c + ".") for c in s.covers)]

    def apt(self, name: str) -> AptPackage | None:
        return next((a for a in self.driver.apt if a.name == name), None)

    def for_family(self, family: str | None) -> Matrix:
        """The matrix as one instance family sees it: of a package's per-family [[driver.apt]]
        rows, the one for `family` (a row without `families` serves every family); with no
        family known, the first row of each package."""
        if not any(a.families for a in self.driver.apt):
            return self
        from neuron_env.util.record import replace

        out: dict[str, AptPackage] = {}
        for name in dict.fromkeys(a.name for a in self.driver.apt):
            rows = [a for a in self.driver.apt if a.name == name]
            out[name] = (next((a for a in rows if family and family in a.families), None)
                         or next((a for a in rows if not a.families), None) or rows[0])
        narrowed: Matrix = replace(self, driver=replace(self.driver, apt=tuple(out.values())))
        return narrowed

    def stack_rows(self, name: str) -> list[StackPackage]:
        key = canonicalize_name(name)
        return [s for s in self.stack if canonicalize_name(s.name) == key]

    def torch_companion(self, name: str, torch_minor: str) -> TorchCompanion | None:
        """The pairing of companion `name` for torch X.Y (None: the matrix does not say)."""
        key = canonicalize_name(name)
        return next((c for c in self.torch_companions
                     if canonicalize_name(c.name) == key and c.torch == torch_minor), None)

    def torch_companion_names(self) -> tuple[str, ...]:
        out: list[str] = []
        for c in self.torch_companions:
            if c.name not in out:
                out.append(c.name)
        return tuple(out)

    def pairs_newest_first(self) -> list[Pair]:
        return sorted(self.pairs, key=lambda p: p.torch, reverse=True)


# THE release grammar (#45, finding 12): what the loader accepts in `release = "..."`, what
# `matrix import`/`matrix update` write as `neuron-<release>.toml` and what the catalog reads
# back from that file name are the same strings: digits first, then digits, letters and dots.
RELEASE = re.compile(r"[0-9][0-9A-Za-z.]*")


def release_ok(release: str) -> bool:
    """A release string the catalog's file-name pattern reads back as itself."""
    return RELEASE.fullmatch(release) is not None


def family_of(instance_type: str) -> str:
    """`trn2u.48xlarge` -> `trn2u`; the family is the part before the first dot."""
    return instance_type.split(".", 1)[0].strip().lower()


def fmt_spec(spec: Spec | None) -> str:
    """A specifier as people write it: lower bounds first (`>=3.12,<3.15`, not `<3.15,>=3.12`)."""
    if spec is None:
        return ""
    order = {">=": 0, ">": 0, "==": 1, "===": 1, "~=": 1, "!=": 2, "<=": 3, "<": 3}
    return ",".join(str(s) for s in sorted(spec, key=lambda s: (order.get(s.operator, 9),
                                                                 str(s))))


def python_range(m: Matrix) -> str:
    """The matrix's Python range as people say it: `>=3.12,<3.15` -> `3.12-3.14`."""
    lo = next((s.version for s in m.python if s.operator == ">="), None)
    hi = next((s.version for s in m.python if s.operator == "<"), None)
    if lo and hi and hi.count(".") == 1 and int(hi.split(".")[1]) > 0:
        major, minor = hi.split(".")
        return f"{lo}-{major}.{int(minor) - 1}"
    return fmt_spec(m.python)
