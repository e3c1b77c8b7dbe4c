"""`fleet doctor`, `fleet report`, `slurm-healthcheck`, `k8s-manifests`: each returns a
Document (the fleet ones also speak JUnit, one testcase per instance)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from neuron_env.fleet import views
from neuron_env.fleet.aggregate import aggregate, stream
from neuron_env.report.model import Document


def FleetDocument(body: dict[str, Any], text_view) -> Document:
    """A Document that also speaks JUnit (one testcase per instance) and HTML."""
    return Document(body, text_view, junit=views.junit, html=views.html, json=views.json_pieces)


def fleet_doctor(opts) -> Document:
    from neuron_env.fleet import ssm

    entries, source = ssm.run(opts)
    return FleetDocument(aggregate(entries, source), views.text)


def fleet_report(args: list[str], region: str | None = None,
                 timeout: float | None = None) -> Document:
    from neuron_env.fleet import sources

    body = stream(sources.entries(args, region, timeout), {"engine": "files", "inputs": args})
    return FleetDocument(body, views.text)


def _text_of(key: str) -> Callable[[dict[str, Any]], str]:
    return lambda body: body[key]


def slurm_healthcheck(neuron_env: str, timeout: int, doctor_args: list[str], conf: bool,
                      path: str, interval: int, prolog: bool, python: str) -> Document:
    from neuron_env.fleet import slurm

    body = {"script": slurm.render_script(neuron_env, timeout, doctor_args, python),
            "slurm_conf": slurm.render_conf(path, interval, prolog)}
    return Document(body, _text_of("slurm_conf" if conf else "script"))


def k8s_manifests(**kw) -> Document:
    """JSON: a v1 List (kubectl apply -f - takes it); text: multi-document YAML."""
    from neuron_env.fleet import k8s

    items = k8s.manifests(**kw)
    return Document({"apiVersion": "v1", "kind": "List", "items": items},
                    lambda body: k8s.to_yaml(body["items"]))
