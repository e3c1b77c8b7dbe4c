"""Fix lines people paste: each is a whole, runnable shell sequence (bash -n clean, no prose in
it), or None with the reason said in prose. Pure: facts + matrix -> text."""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING

from neuron_env.matrix.model import fmt_spec
from neuron_env.report.model import REHEARSE
from neuron_env.util.template import sh

if TYPE_CHECKING:
    from neuron_env.checks.registry import Context
    from neuron_env.matrix.model import Matrix, OSEntry
    from neuron_env.probes.facts import HostFacts

APT_REPO = "https://apt.repos.neuron.amazonaws.com"
APT_KEY = f"{APT_REPO}/GPG-PUB-KEY-AMAZON-AWS-NEURON.PUB"
KEYRING = "/etc/apt/keyrings/neuron.gpg"
DEFAULT_VENV = "~/neuron-venv"
APT_FAMILY = ("ubuntu",)


def apt_packages(m: Matrix, names: list[str] | None = None) -> list[str]:
    """The release's apt packages, pinned (`name=VERSION*`) where the matrix pins them."""
    out = []
    for a in m.driver.apt:
        if names is not None and a.name not in names:
            continue
        out.append(f"{a.name}={a.version}*" if getattr(a, "version", None) else a.name)
    return out


def apt_get_install(m: Matrix, names: list[str], flags: str = "-y") -> str:
    """`sudo apt-get install -y 'name=VERSION*' ...`: `names` at the release's pins, quoted
    (an unquoted `name=1.2*` is a shell glob); a name the matrix does not list, as is."""
    listed = {a.name for a in m.driver.apt}
    pinned = dict(zip([n for n in names if n in listed], apt_packages(
        m, [n for n in names if n in listed]), strict=False))
    by_name = {p.split("=")[0]: p for p in pinned.values()}
    return f"sudo apt-get install {flags} " + " ".join(
        shlex.quote(by_name.get(n, n)) for n in names)


def apt_install(facts: HostFacts, m: Matrix, names: list[str] | None = None) -> str | None:
    """Set up the Neuron apt repository for the host's codename, then install; None where the
    host is not apt-based (the prose then says what to do by hand)."""
    o = facts.os
    if o.id not in APT_FAMILY or m.os_entry(o.id or "", o.version_id or "") is None:
        return None  # the Neuron apt repository has no suite for it
    # the codename is the image's text (os-release): one shell word, quoted by util/template
    # (#45, finding 6); only the fallback expression is neuron-env's own
    codename = sh(o.codename) if o.codename else \
        '$(. /etc/os-release && echo "$VERSION_CODENAME")'
    headers = names is None or "aws-neuronx-dkms" in names  # dkms builds against them
    pkgs = ['"linux-headers-$(uname -r)"'] if headers else []
    pkgs += [shlex.quote(p) for p in apt_packages(m, names)]
    return " && ".join([
        "sudo install -d -m 0755 /etc/apt/keyrings",
        f"curl -fsSL {APT_KEY} | sudo gpg --dearmor --yes -o {KEYRING}",
        # echo joins its words with one space: the same line, in words a terminal can hold
        f'echo "deb [signed-by={KEYRING}]" {APT_REPO} {codename} main '
        "| sudo tee /etc/apt/sources.list.d/neuron.list >/dev/null",
        "sudo apt-get update",
        "sudo apt-get install -y " + " ".join(pkgs),
    ])


def in_image(facts: HostFacts) -> bool:
    return bool(facts.root.explicit)


def chroot_note(facts: HostFacts) -> str:
    return (f" (inside the image: run it under `sudo chroot {facts.root.path}`, or in the image "
            "build's install step)") if in_image(facts) else ""


def fitting_pythons(facts: HostFacts, m: Matrix) -> list[tuple[str, str]]:
    """(path, X.Y) of the interpreters found on this host that the matrix accepts, newest first."""
    found = getattr(facts, "pythons", ()) or ()
    ok = [(p, v) for p, v in found if m.python.contains(v + ".0", prereleases=True)]
    return sorted(ok, key=lambda pv: tuple(int(x) for x in pv[1].split(".")), reverse=True)


def wanted_minor(m: Matrix) -> str:
    """The oldest X.Y the matrix accepts (the widest wheel coverage; for 'get one' advice)."""
    for minor in range(8, 30):
        if m.python.contains(f"3.{minor}.0", prereleases=True):
            return f"3.{minor}"
    return "3.12"


def new_venv_cmd(ctx: Context, python: str, venv: str = DEFAULT_VENV, quoted: bool = False) -> str:
    """`neuron-env install --venv DIR --python PY`; `quoted`: PY is already shell text."""
    parts = ["neuron-env", "install"]
    if ctx.matrix_flag:
        parts += ["--matrix", ctx.matrix_flag]
    return " ".join([*(shlex.quote(p) for p in parts), "--venv", venv, "--python",
                     python if quoted else shlex.quote(python)])


def install_refusal(facts: HostFacts, m: Matrix, python_version: str,
                    torch: str | None = None) -> str | None:
    """Why `neuron-env install` would refuse this host for a Python of `python_version` (its
    own planner asked: the OS, the architecture, the pair), or None: a fix line never offers an
    install that install itself refuses."""
    from neuron_env.errors import ResolutionError
    from neuron_env.install.plan import Inputs, make_plan

    try:
        make_plan(m, Inputs(python="python", python_version=python_version, prefix="",
                            os_id=facts.os.id, os_version=facts.os.version_id, arch=facts.arch,
                            torch=torch))
    except ResolutionError as e:
        return e.message
    return None




def get_python(facts: HostFacts, m: Matrix, ctx: Context) -> tuple[str, str | None]:
    """(prose, command) that gives the user a venv on a Python the matrix accepts; prose
    alone where install would refuse this host whatever the Python (see os.release)."""
    expected = fmt_spec(m.python)
    refused = install_refusal(facts, m, wanted_minor(m) + ".0")
    if refused:
        return (f"neuron-env cannot install the Neuron backend on this host ({refused}; see "
                f"os.release); to rehearse here, `{REHEARSE}`", None)
    fit = fitting_pythons(facts, m)
    if fit:
        path, v = fit[0]
        where = "in the image" if getattr(facts.root, "explicit", False) else "on this host"
        return (f"create a venv on Python {v} ({path}, found {where})",
                new_venv_cmd(ctx, path))
    want = wanted_minor(m)
    if getattr(facts, "uv", None):
        uv = "uv"  # found on PATH
        return (f"no Python {expected} on this host: let uv fetch one",
                f"{uv} python install {want} && "
                + new_venv_cmd(ctx, f'"$({uv} python find {want})"', quoted=True))
    if facts.os.id == "ubuntu":
        return (f"no Python {expected} on this host: install {want} from the deadsnakes PPA",
                "sudo add-apt-repository -y ppa:deadsnakes/ppa && sudo apt-get update && "
                f"sudo apt-get install -y python{want} python{want}-venv && "
                + new_venv_cmd(ctx, f"/usr/bin/python{want}"))
    return (f"no Python {expected} on this host: install Python {want} (your OS packages, "
            f"pyenv or `uv python install {want}`), then `neuron-env install --venv "
            f"{DEFAULT_VENV} --python PATH`", None)


def _newest_first(version: str) -> tuple[int, ...]:
    return tuple(-int(x) for x in version.split(".") if x.isdigit())


def os_targets(m: Matrix) -> list[OSEntry]:
    """The releases worth moving to: supported with no source saying otherwise (never one the
    matrix marks disputed or end of support), those with prebuilt wheels first, newest first."""
    ok = [e for e in m.os if e.status == "supported" and not e.disputed_status]
    return sorted(ok, key=lambda e: (e.wheels is not True, _newest_first(e.version)))


def dlami(m: Matrix) -> tuple[str, str | None]:
    """(prose, command) for "move to a supported OS": the releases with prebuilt wheels first,
    then the image id of the Neuron DLAMI for the first of them the matrix states one for."""
    from neuron_env.matrix import dlami as dl

    targets = os_targets(m)
    said = [e.label + (" (prebuilt wheels)" if e.wheels is True else
                       " (no prebuilt wheels: the DLAMI or a source build)" if e.wheels is False
                       else "") for e in targets]
    text = (f"move to {', else '.join(said)}: this host's OS cannot be changed in place"
            if said else f"no OS is plainly supported by Neuron {m.release}: see its notes")
    name = next((n for n in (f"{e.id}-{e.version}" for e in targets) if dl.stated_for(m, n)),
                None)
    if name is None:
        return text, None
    param, _ = dl.dlami_choice(m, name)
    return (f"{text}; or launch the Neuron {dl.label(param)}, whose image id this prints",
            f"aws ssm get-parameter --name {shlex.quote(param)} --query Parameter.Value "
            "--output text")
