"""Kubernetes: the node-problem-detector custom-plugin monitor config (in a ConfigMap, with the
plugin script) and a DaemonSet running NPD on Neuron nodes, plus the RBAC NPD needs to set node
conditions. Pure: returns the manifests; `to_yaml` renders them."""

from __future__ import annotations

import json
from typing import Any

from neuron_env.errors import UsageError
from neuron_env.fleet.slurm import TEMPLATES
from neuron_env.util import template

NAME = "neuron-env-npd"
LABEL = "neuron.amazonaws.com/present"
TAINT = "aws.amazon.com/neuron"
CONDITION = "NeuronEnvProblem"
NPD_IMAGE = "registry.k8s.io/node-problem-detector/node-problem-detector:v0.8.20"
# the node-level profile: what a node brings (architecture, instance, driver and devices, the
# tools, EFA), each correct on the read-only host root NPD sees and on the EKS Neuron AMI
# (Amazon Linux 2023). os.release judges the OS for Neuron's prebuilt PyTorch wheels, and the
# Python side (torch, torch-neuronx, the compile cache) lives in pod images: docs/fleet.md
# shows the pod-level check for them.
NODE_CHECKS = "os.arch,instance.type,driver,tools.path,net.efa,container.hook"


def monitor_config(interval: int, timeout: int) -> dict[str, Any]:
    return {
        "plugin": "custom",
        "pluginConfig": {"invoke_interval": f"{interval}s", "timeout": f"{timeout}s",
                         "max_output_length": 80, "concurrency": 1,
                         "enable_message_change_based_condition_update": False},
        "source": "neuron-env-custom-plugin-monitor",
        "metricsReporting": True,
        "conditions": [{"type": CONDITION, "reason": "NeuronEnvHealthy",
                        "message": "neuron-env doctor passes"}],
        "rules": [{"type": "permanent", "condition": CONDITION, "reason": "NeuronEnvCheckFailed",
                   "path": "/config/neuron-env-check.sh", "timeout": f"{timeout}s"}],
    }


def _rbac(ns: str) -> list[dict[str, Any]]:
    meta = {"name": NAME, "labels": {"app.kubernetes.io/name": NAME}}
    return [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {**meta, "namespace": ns}},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": meta,
         "rules": [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get"]},
                   {"apiGroups": [""], "resources": ["nodes/status"], "verbs": ["patch"]},
                   {"apiGroups": ["", "events.k8s.io"], "resources": ["events"],
                    "verbs": ["create", "patch", "update"]}]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
         "metadata": meta,
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                     "name": NAME},
         "subjects": [{"kind": "ServiceAccount", "name": NAME, "namespace": ns}]},
    ]


def _pod(image: str) -> dict[str, Any]:
    return {
        "serviceAccountName": NAME,
        "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [{"key": LABEL,
                                                         "operator": "Exists"}]}]}}},
        "tolerations": [{"key": TAINT, "operator": "Exists", "effect": "NoSchedule"}],
        "containers": [{
            "name": "node-problem-detector", "image": image,
            "command": ["/node-problem-detector", "--logtostderr",
                        "--config.custom-plugin-monitor=/config/neuron-env-monitor.json"],
            "env": [{"name": "NODE_NAME",
                     "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}],
            "securityContext": {"privileged": True},
            "resources": {"requests": {"cpu": "20m", "memory": "64Mi"},
                          "limits": {"cpu": "500m", "memory": "512Mi"}},
            "volumeMounts": [{"name": "config", "mountPath": "/config", "readOnly": True},
                             {"name": "host", "mountPath": "/host", "readOnly": True,
                              "mountPropagation": "HostToContainer"}]}],
        "volumes": [{"name": "config", "configMap": {"name": NAME, "defaultMode": 0o755}},
                    {"name": "host", "hostPath": {"path": "/", "type": "Directory"}}],
    }


def manifests(namespace: str = "kube-system", image: str = NPD_IMAGE,
              neuron_env: str = "/opt/neuron-env/bin/neuron-env", interval: int = 300,
              timeout: int = 60, doctor_args: list[str] | None = None) -> list[dict[str, Any]]:
    template.values((("--namespace", namespace), ("--image", image), ("--neuron-env", neuron_env),
                   *(("--doctor-args", a) for a in doctor_args or [])))
    if not neuron_env.startswith("/") or any(c.isspace() for c in neuron_env):
        raise UsageError(f"--neuron-env {neuron_env!r}: an absolute path on the node",
                         hint="e.g. /opt/neuron-env/bin/neuron-env")
    if interval < 10 or not 5 <= timeout <= interval:
        raise UsageError("--interval must be >= 10 s and --timeout 5..interval s")
    args = "".join(" " + template.sh(a) for a in doctor_args or [])
    script = template.fill(TEMPLATES / "npd-check.sh", {"NEURON_ENV": template.sh(neuron_env),
                                                      "ONLY": NODE_CHECKS,
                                                      "DOCTOR_ARGS": args})
    labels = {"app.kubernetes.io/name": NAME}
    config = {"apiVersion": "v1", "kind": "ConfigMap",
              "metadata": {"name": NAME, "namespace": namespace, "labels": labels},
              "data": {"neuron-env-monitor.json": json.dumps(
                  monitor_config(interval, timeout), indent=2) + "\n",
                  "neuron-env-check.sh": script}}
    ds = {"apiVersion": "apps/v1", "kind": "DaemonSet",
          "metadata": {"name": NAME, "namespace": namespace, "labels": labels},
          "spec": {"selector": {"matchLabels": labels},
                   "template": {"metadata": {"labels": labels}, "spec": _pod(image)}}}
    return [*_rbac(namespace), config, ds]


def to_yaml(docs: list[dict[str, Any]]) -> str:
    return "".join("---\n" + "\n".join(_lines(d, 0)) + "\n" for d in docs)


# what YAML takes for a line break (besides LF) or cannot hold raw in a block scalar
_YAML_BREAKS = ("\r", "\x85", "\u2028", "\u2029", "\ufeff")


def _scalar(v: Any) -> str:
    """A YAML scalar: JSON for numbers, booleans and null; strings double-quoted with every
    character that is not plainly printable escaped (\\xNN, \\uNNNN, \\UNNNNNNNN), so no
    input can end the scalar, the line or the document."""
    if not isinstance(v, str):
        return json.dumps(v)
    out = []
    for c in v:
        if c in '"\\':
            out.append("\\" + c)
        elif c.isprintable() and c not in _YAML_BREAKS and c != "\x7f":
            out.append(c)
        else:
            o = ord(c)
            out.append(f"\\x{o:02x}" if o < 0x100 else f"\\u{o:04x}" if o < 0x10000
                       else f"\\U{o:08x}")
    return '"' + "".join(out) + '"'


def _block_ok(x: str) -> bool:
    """x round-trips as a `|` block scalar: one final newline (clip), every line printable,
    no leading blank on the first line (it would set the indentation)."""
    return (x.endswith("\n") and not x.endswith("\n\n") and x[:1] not in (" ", "\n", "\t")
            and all(ln.isprintable() and not any(b in ln for b in _YAML_BREAKS)
                    for ln in x[:-1].split("\n")))


def _lines(v: Any, ind: int) -> list[str]:
    pad = " " * ind
    out: list[str] = []
    if isinstance(v, dict):
        for k, x in v.items():
            if isinstance(x, str) and "\n" in x and _block_ok(x):
                out.append(f"{pad}{k}: |")
                out += [f"{pad}  {line}" if line else "" for line in x.rstrip("\n").split("\n")]
            elif isinstance(x, dict | list) and x:
                out.append(f"{pad}{k}:")
                out += _lines(x, ind + 2)
            else:
                out.append(f"{pad}{k}: {_scalar(x)}")
    else:
        for x in v:
            sub = _lines(x, ind + 2) if isinstance(x, dict | list) and x else \
                [f"{pad}  {_scalar(x)}"]
            out.append(f"{pad}- {sub[0].lstrip()}")
            out += sub[1:]
    return out
