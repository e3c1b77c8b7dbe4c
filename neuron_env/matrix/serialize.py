"""Matrix -> plain data (the JSON `neuron-env.matrix/1` content) and -> TOML text (for import)."""

from __future__ import annotations

import json
from typing import Any

from neuron_env.matrix.model import FORMAT_VERSION, Matrix, fmt_spec


def to_data(m: Matrix) -> dict[str, Any]:
    """The matrix as TOML-shaped data: `parse_text(to_toml(m))` gives an equal matrix."""

    def drop_none(d: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in d.items() if v is not None}

    data: dict[str, Any] = {
        "format": FORMAT_VERSION, "release": m.release, "date": m.date, "status": m.status,
        "backend": m.backend, "summary": m.summary, "architectures": list(m.architectures),
        "python": {"requires": fmt_spec(m.python)},
        "instances": [drop_none({
            "family": f.family, "supported": f.supported, "accelerator": f.accelerator,
            "reason": f.reason,
            "types": [drop_none({
                "name": t.name, "devices": t.devices, "cores_per_device": t.cores_per_device,
                "memory_per_device_gib": t.memory_per_device_gib,
                "confirmed": None if t.confirmed else False, "lnc_default": t.lnc_default,
                "efa": t.efa, "source": t.source}) for t in f.types] or None,
        }) for f in m.instances],
        "os": [drop_none({"id": o.id, "version": o.version, "codename": o.codename,
                          "status": o.status, "wheels": o.wheels, "message": o.message,
                          "build_from_source": o.build_from_source,
                          "new_dlamis": o.new_dlamis, "source": o.source,
                          "disputed_status": o.disputed_status,
                          "disputed_source": o.disputed_source,
                          "default_python": o.default_python})
               for o in m.os],
        "pairs": [drop_none({"torch": str(p.torch), "torch_neuronx": fmt_spec(p.torch_neuronx),
                             "python": fmt_spec(p.python) or None, "note": p.note})
                  for p in m.pairs],
        "companions": [drop_none({"name": c.name, "spec": fmt_spec(c.spec), "purpose": c.purpose})
                       for c in m.companions],
        "torch_companions": [drop_none({"name": c.name, "torch": c.torch,
                                         "spec": fmt_spec(c.spec), "source": c.source,
                                         "assumed": c.assumed,
                                         "families": list(c.families) or None,
                                         "torch_neuronx": fmt_spec(c.torch_neuronx) or None,
                                         "conflicts": list(c.conflicts) or None,
                                         "provides": c.provides}) for c in m.torch_companions],
        "indexes": [drop_none({"name": i.name, "url": i.url, "env": i.env,
                               "packages": list(i.packages)}) for i in m.indexes],
        "placeholders": [{"name": p.name, "version": str(p.version)} for p in m.placeholders],
        "limitations": [{"id": x.id, "summary": x.summary} for x in m.limitations],
        "driver": drop_none({
            "module": m.driver.module, "min_version": m.driver.min_version,
            "pci_vendor": m.driver.pci_vendor,
            "apt": [drop_none({"name": a.name, "version": a.version, "purpose": a.purpose,
                               "confirmed": None if a.confirmed else False,
                               "source": a.source, "families": list(a.families) or None})
                    for a in m.driver.apt]}),
        "stack": [drop_none({"name": x.name, "version": x.version, "torch": x.torch,
                             "required": x.required or None,
                             "families": list(x.families) or None, "purpose": x.purpose})
                  for x in m.stack],
        "docs": dict(m.docs),
        "dlami": dict(m.dlami),
        "sources": [drop_none({"id": x.id, "url": x.url, "title": x.title,
                               "covers": list(x.covers), "note": x.note}) for x in m.sources],
    }
    return {k: v for k, v in data.items() if v not in ([], {}, None)}


def _value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False)  # a JSON string is a valid TOML basic string
    if isinstance(v, list) and all(isinstance(x, dict) for x in v) and v:
        return "[\n" + "".join(f"  {_value(x)},\n" for x in v) + "]"
    if isinstance(v, list):
        return "[" + ", ".join(_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{k} = {_value(x)}" for k, x in v.items()) + " }"
    raise TypeError(f"cannot write {type(v).__name__} to TOML")


def to_toml(m: Matrix, header: str = "") -> str:
    data = to_data(m)
    out = [f"# {line}".rstrip() for line in header.splitlines()] if header else []
    tables = []
    for k, v in data.items():
        if isinstance(v, dict) or (isinstance(v, list) and v and isinstance(v[0], dict)):
            tables.append((k, v))
        else:
            out.append(f"{k} = {_value(v)}")

    def emit_table(name: str, d: dict[str, Any]) -> None:
        subarrays = {k: v for k, v in d.items()
                     if isinstance(v, list) and v and isinstance(v[0], dict) and k != "types"}
        out.append("")
        out.append(f"[{name}]" if not name.endswith("]]") else name)
        for k, v in d.items():
            if k not in subarrays:
                out.append(f"{k} = {_value(v)}")
        for k, items in subarrays.items():
            base = name.strip("[]")
            for item in items:
                emit_table(f"[[{base}.{k}]]", item)

    for k, v in tables:
        if isinstance(v, dict):
            emit_table(k, v)
        else:
            for item in v:
                emit_table(f"[[{k}]]", item)
    return "\n".join(out) + "\n"
