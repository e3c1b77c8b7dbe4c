"""The manifest step: what was installed (and what was already there), as records, and the
install manifest document written from them (install/manifest.py writes the file)."""

from __future__ import annotations

import datetime as dt

from neuron_env import __version__
from neuron_env.install import manifest as install_manifest
from neuron_env.install import provenance
from neuron_env.util.names import canonicalize_name


def now() -> str:
    return dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def records(items, plan, m, target, bundled) -> list[dict]:
    recs = []
    for it in items:
        idx, url = provenance.origin_of(it, plan, m)
        origin = "bundled" if it.key in {canonicalize_name(k) for k in bundled} else (
            "wheelhouse" if idx == "wheelhouse" else "index" if idx else "dependency")
        recs.append({"name": it.name, "version": it.version,
                     "index": idx if idx != "wheelhouse" else None, "index_url": url,
                     "url": it.url, "sha256": it.sha256, "origin": origin})
    done = {it.key for it in items}
    for r in plan.requirements:  # already in place: record what is there, not installed by us
        key = canonicalize_name(r.name)
        d = target.dist(r.name)
        if key in done or d is None:
            continue
        old = next((p for p in (target.manifest or {}).get("packages") or []
                    if canonicalize_name(str(p.get("name"))) == key
                    and str(p.get("version")) == d.version), None)
        recs.append(old or {"name": d.name, "version": d.version, "index": None,
                            "index_url": None, "url": None, "sha256": None,
                            "origin": "present"})
    return recs


def write_manifest(plan, m, inst, records, status, log_path, error=None, previous=None) -> str:
    doc = {"schema": install_manifest.SCHEMA, "tool": {"name": "neuron-env",
                                                       "version": __version__},
           "created": now(), "matrix": {"release": m.release, "source": m.source},
           "backend": plan.backend, "status": status, "installer": inst.name,
           "plan": {"key": plan.key, "requirements": [r.spec for r in plan.requirements],
                    "pair": {"torch": str(plan.pair.torch)}, "forced": list(plan.forced)},
           "packages": records, "log": log_path}
    if error:
        doc["error"] = error
        doc["fix"] = "re-run neuron-env install"
    return install_manifest.write(plan.prefix, doc)
