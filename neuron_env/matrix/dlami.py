"""Which Neuron DLAMI to point a user at, from the matrix's [dlami] SSM parameters."""

from __future__ import annotations

import re

from neuron_env.errors import UsageError
from neuron_env.matrix.model import Matrix

DLAMI_PARAM = "/aws/service/neuron/dlami/multi-framework/{os}/latest/image_id"


def dlami_choice(m: Matrix, os_name: str) -> tuple[str, str | None]:
    """(SSM parameter, warning). The single-framework DLAMI when the matrix states its parameter
    (`ssm_single_framework_<os>`); otherwise the multi-framework one, said plainly."""
    if not re.fullmatch(r"[a-z]+-\d+\.\d+", os_name):
        raise UsageError(f"--dlami {os_name!r}: expected an OS such as ubuntu-24.04",
                         hint="e.g. --dlami ubuntu-24.04")
    suffix = os_name.replace("-", "_").replace(".", "_")
    d = dict(m.dlami)
    if d.get(f"ssm_single_framework_{suffix}"):
        return d[f"ssm_single_framework_{suffix}"], None
    param = (d.get(f"ssm_{suffix}") or d.get(f"ssm_multi_framework_{suffix}")
             or DLAMI_PARAM.format(os=os_name))
    if m.backend != "native" or "name" not in d:
        return param, None
    return param, (f"this is the multi-framework DLAMI: AWS points TorchNeuron users at the "
                   f"single-framework '{d['name']}', whose SSM parameter no AWS page read for "
                   f"this matrix states (list them: aws ssm get-parameters-by-path --path "
                   f"/aws/service/neuron/dlami --recursive); the multi-framework DLAMI has no "
                   f"PyTorch pre-installed since Neuron 2.32")


def stated_for(m: Matrix, os_name: str) -> bool:
    """The matrix states an SSM parameter for this OS (e.g. ubuntu-24.04)."""
    suffix = os_name.replace("-", "_").replace(".", "_")
    return any(k.startswith("ssm_") and k.endswith(suffix) for k, _ in (m.dlami or ()))


def label(param: str) -> str:
    """'/aws/service/neuron/dlami/multi-framework/ubuntu-24.04/latest/image_id' ->
    'multi-framework DLAMI on Ubuntu 24.04'."""
    parts = param.strip("/").split("/")
    if "dlami" in parts and len(parts) > parts.index("dlami") + 2:
        kind, os_ = parts[parts.index("dlami") + 1:parts.index("dlami") + 3]
        name, _, ver = os_.partition("-")
        return f"{kind} DLAMI on {name.capitalize()} {ver}".strip()
    return param
