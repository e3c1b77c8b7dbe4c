"""Render the user-data bootstrap and the EC2 Image Builder component from their templates."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from neuron_env import __version__
from neuron_env.errors import UsageError
from neuron_env.util import template

TEMPLATES = Path(__file__).parent / "templates"


@dataclass(frozen=True)
class BootstrapOptions:
    # how neuron-env itself is installed: no default (neuron-env is not published on the public
    # index, and a default name there is a dependency confusion waiting to happen): a wheelhouse
    # directory, a wheel (path, file://, https:// or s3:// URL) with its sha256, or a pip spec
    # from the team's own index (source_index_url)
    source: str = ""
    source_sha256: str = ""
    source_index_url: str | None = None
    tool_venv: str = "/opt/neuron-env"
    venv: str = "/opt/neuron-venv"
    torch: str = ""
    backend: str = "neuron"
    python: str = "python3"
    log_dir: str = "/var/log/neuron-env"
    state_dir: str = "/var/lib/neuron-env"
    smoke: bool = True
    retries: int = 5
    doctor_args: str = ""
    install_args: str = ""
    wait: int = 120  # first-boot doctor: failing checks retried this long while the driver loads
    neuron_index_url: str | None = None
    pytorch_index_url: str | None = None
    neuron_index_from: str | None = None  # ssm:/NAME or env:VAR: the URL read at boot
    pytorch_index_from: str | None = None
    instance_type: str | None = None  # image builder: the type the image targets


def _check(o: BootstrapOptions) -> None:
    if o.backend not in ("neuron", "emulated"):
        raise UsageError(f"--backend {o.backend!r} is not neuron or emulated",
                         hint="use --backend neuron or --backend emulated")
    if o.torch and o.torch not in ("2.13", "2.14"):
        raise UsageError(f"--torch {o.torch!r}: use 2.14 or 2.13", hint="or leave it out")
    if o.retries < 1 or o.retries > 20:
        raise UsageError("--retries must be 1..20", hint="e.g. --retries 5")
    # every value rendered, checked once (util/template.py): no control character, no line or
    # paragraph separator (U+0085, U+2028, U+2029: line breaks to a YAML parser), no BOM
    template.values((("--source", o.source), ("--tool-venv", o.tool_venv), ("--venv", o.venv),
                   ("--python", o.python), ("--log-dir", o.log_dir),
                   ("--state-dir", o.state_dir), ("--doctor-args", o.doctor_args),
                   ("--install-args", o.install_args),
                   ("--neuron-index-url", o.neuron_index_url),
                   ("--pytorch-index-url", o.pytorch_index_url),
                   ("--neuron-index-url-from", o.neuron_index_from),
                   ("--pytorch-index-url-from", o.pytorch_index_from),
                   ("--instance-type", o.instance_type), ("--source-sha256", o.source_sha256),
                   ("--source-index-url", o.source_index_url)))
    if not 0 <= o.wait <= 1800:
        raise UsageError(f"--wait {o.wait}: 0..1800 seconds", hint="e.g. --wait 120")
    for name, v in (("--venv", o.venv), ("--tool-venv", o.tool_venv), ("--log-dir", o.log_dir),
                    ("--state-dir", o.state_dir)):
        if not v.startswith("/"):
            raise UsageError(f"{name} {v!r} must be an absolute path", hint="e.g. /opt/venv")


PUBLISH_DOCS = "docs/bootstrap.md, \"Where neuron-env comes from\""
_SHA256 = re.compile(r"[0-9a-f]{64}")


def source_kind(source: str) -> str:
    """wheelhouse (a directory), wheel (a .whl by path or URL) or spec (a pip requirement)."""
    if source.endswith(".whl"):
        return "wheel"
    return "wheelhouse" if source.startswith("/") else "spec"


def check_source(o: BootstrapOptions) -> None:
    """An explicit, verifiable source for neuron-env itself, or a UsageError (exit 2)."""
    if not o.source:
        raise UsageError(
            "--source is required: neuron-env is not published on the public index, and "
            "installing an unpublished name from it runs whatever someone registers under it",
            hint="pass --source /path/wheelhouse, or --source URL-or-s3://.../neuron_env-"
                 f"{__version__}-py3-none-any.whl --source-sha256 HEX, or --source "
                 f"neuron-env=={__version__} --source-index-url https://your-index/simple "
                 f"(see {PUBLISH_DOCS})")
    kind = source_kind(o.source)
    if kind == "wheel" and not _SHA256.fullmatch(o.source_sha256):
        raise UsageError(f"--source {o.source!r} is a wheel: give its --source-sha256 (64 "
                         "lowercase hex digits), checked before pip installs it",
                         hint="sha256sum neuron_env-*.whl")
    if kind != "wheel" and o.source_sha256:
        raise UsageError("--source-sha256 is for a wheel (--source ending in .whl)")
    if kind == "spec" and not o.source_index_url:
        raise UsageError(
            f"--source {o.source!r} is a pip spec: name the index that serves it with "
            "--source-index-url (neuron-env is not on the public index)",
            hint=f"publish the wheel to your own index or bucket ({PUBLISH_DOCS})")
    if o.source_index_url and _has_userinfo(o.source_index_url):
        raise UsageError("--source-index-url holds credentials (user:password@): neuron-env "
                         "does not write them into a script",
                         hint="serve neuron-env from an index the instance reaches without "
                              "credentials in the URL, or a wheel on S3 (s3://...)")


_SOURCE = re.compile(r"(ssm:/?[A-Za-z0-9_.\-/]{1,1011}|env:[A-Za-z_][A-Za-z0-9_]{0,127})")
_INDEXES = (("--neuron-index-url", "NEURON_ENV_NEURON_INDEX_URL"),
            ("--pytorch-index-url", "NEURON_ENV_PYTORCH_INDEX_URL"))


def refuse_credentials(o: BootstrapOptions) -> None:
    """Index URLs with credentials are refused (UsageError, exit 2): user data and a component
    document are readable by anyone who may describe the instance or the component, and every
    output of neuron-env is masked, so writing them would leave either a secret in plain text
    or a broken `https://***@...` URL. The safer way is named: `--*-index-url-from ssm:/NAME`
    (a SecureString read at boot) or `env:VAR`."""
    for (flag, _), v in zip(_INDEXES, (o.neuron_index_url, o.pytorch_index_url), strict=True):
        if v and _has_userinfo(v):
            raise UsageError(
                f"{flag} holds credentials (user:password@): neuron-env does not write them "
                "into a script (user data is readable by anyone allowed to describe the "
                "instance, and the script would get a masked, broken URL)",
                hint=f"store the URL in SSM Parameter Store as a SecureString and pass "
                     f"{flag}-from ssm:/PARAMETER (read at boot), or {flag}-from env:VAR")


def _has_userinfo(url: str) -> bool:
    from neuron_env.guards.redact import text

    try:
        netloc = urlsplit(url).netloc
    except ValueError as e:  # "http://[::1" and the like
        raise UsageError(f"index URL {url!r} is not a URL ({e})",
                         hint="e.g. https://mirror.example.com/simple") from None
    return text(url) != url or "@" in netloc


def _index_sources(o: BootstrapOptions) -> list[tuple[str, str | None, str | None]]:
    """(variable, literal URL, run-time source) per index."""
    out = []
    for (flag, var), url, src in zip(_INDEXES, (o.neuron_index_url, o.pytorch_index_url),
                                     (o.neuron_index_from, o.pytorch_index_from), strict=True):
        if url and src:
            raise UsageError(f"{flag} and {flag}-from both given", hint="give one of them")
        if src and not _SOURCE.fullmatch(src):
            raise UsageError(f"{flag}-from {src!r} is not ssm:/NAME or env:VAR",
                             hint=f"e.g. {flag}-from ssm:/neuron/index-url")
        out.append((var, url or None, src))
    return out


def userdata(o: BootstrapOptions) -> str:
    _check(o)
    refuse_credentials(o)
    check_source(o)
    q = template.sh
    settings, lookups = [], []
    for var, url, src in _index_sources(o):
        if url:
            settings.append(f"setting {var} {q(url)}\nexport {var}")
        elif src:
            lookups.append(f"retry index-url index_from {var} {q(src)} || exit $?")
    subs = {"SOURCE": o.source, "SOURCE_HASH": o.source_sha256,
            "SOURCE_INDEX_URL": o.source_index_url or "", "WAIT": str(o.wait),
            "TOOL_VENV": o.tool_venv, "TARGET_VENV": o.venv,
            "TORCH": o.torch, "BACKEND": o.backend, "PYTHON": o.python, "LOG_DIR": o.log_dir,
            "STATE_DIR": o.state_dir, "SMOKE": "1" if o.smoke else "0",
            "RETRIES": str(o.retries)}
    subs = {k: q(v) for k, v in subs.items()}
    subs["DOCTOR_ARGS"] = template.sh_join(template.words("--doctor-args", o.doctor_args))
    subs["INSTALL_ARGS"] = template.sh_join(template.words("--install-args", o.install_args))
    subs["INDEX_SETTINGS"] = "\n".join(settings)
    subs["INDEX_LOOKUPS"] = "\n".join(lookups)
    subs["KEY_LOOKUPS"] = "".join(q(src) + " " for _, url, src in _index_sources(o)
                                  if src and not url)
    return template.fill(TEMPLATES / "user-data.sh", subs)


def component(o: BootstrapOptions) -> str:
    """The EC2 Image Builder component: build installs, validate runs doctor (assuming the
    target instance type: the build instance is often another), test runs doctor (--smoke
    unless smoke=False) on an instance launched from the image."""
    _check(o)
    refuse_credentials(o)
    check_source(o)
    q = template.sh
    pad = "\n              "
    env = "".join(_component_export(var, url, src) + pad
                  for var, url, src in _index_sources(o) if url or src)
    torch = f" --torch {q(o.torch)}" if o.torch else ""
    assume = f" --instance-type {q(o.instance_type)}" if o.instance_type else ""
    ne = f"{o.tool_venv}/bin/neuron-env"
    py = f"{o.venv}/bin/python"
    extra_install = template.sh_join(template.words("--install-args", o.install_args))
    extra_doctor = template.sh_join(template.words("--doctor-args", o.doctor_args))
    subs = {"VERSION": __version__, "ENV": env, "PYTHON": q(o.python),
            "TOOL_VENV": q(o.tool_venv), "SELF_INSTALL": pad.join(self_install_lines(o)),
            "NE": q(ne), "VENV": q(o.venv), "BACKEND": q(o.backend), "TORCH": torch,
            "TARGET_PY": q(py), "ASSUME": assume, "LOG_DIR": q(o.log_dir),
            "INSTALL_ARGS": " " + extra_install if extra_install else "",
            "DOCTOR_ARGS": " " + extra_doctor if extra_doctor else "",
            "SMOKE": " --smoke" if o.smoke else ""}
    return template.fill(TEMPLATES / "imagebuilder.yaml", subs)


def self_install_lines(o: BootstrapOptions) -> list[str]:
    """Shell lines that install neuron-env into the tool venv from the checked source: a
    wheelhouse with no index, a wheel whose sha256 is checked first, or a spec from the team's
    index (options end with --: a source is never taken for an option)."""
    q = template.sh
    pip = f"{q(o.tool_venv + '/bin/python')} -m pip install --quiet --disable-pip-version-check"
    if o.source_index_url:
        pip += f" --index-url {q(o.source_index_url)}"
    kind = source_kind(o.source)
    if kind == "wheelhouse":
        return [f"{pip} --no-index --find-links {q(o.source)} -- neuron-env"]
    if kind == "spec":
        return [f"{pip} -- {q(o.source)}"]
    path = "/tmp/" + o.source.rsplit("/", 1)[-1]
    whl, src = q(path), q(o.source)
    fetch = (f"aws s3 cp --only-show-errors {src} {whl}" if o.source.startswith("s3://") else
             f"curl -fsSL --retry 2 -o {whl} {src}" if o.source.startswith(("http://", "https://"))
             else f"cp -- {q(o.source.removeprefix('file://'))} {whl}")
    return [fetch, f"echo {q(o.source_sha256 + '  ' + path)} | sha256sum -c --quiet -",
            f"{pip} -- {whl}"]


def _component_export(var: str, url: str | None, src: str | None) -> str:
    q = template.sh
    if url or not src:  # the caller passes a URL or a source
        return f"export {var}={q(url or '')}"
    if src.startswith("ssm:"):
        return (f"export {var}=\"$(aws ssm get-parameter --name {q(src[4:])} "
                "--with-decryption --query Parameter.Value --output text)\"")
    return f"export {var}=\"${{{src[4:]}:?{src[4:]} is not set}}\""
