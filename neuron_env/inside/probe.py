# Runs inside the TARGET interpreter (Python 3.6+ syntax, stdlib only, never imports torch).
# Prints one JSON document between markers, so whatever else lands on stdout cannot confuse it.
import json
import os
import platform
import sys

MARKER = "@@NEURON_ENV_JSON@@"
NEURON_MODULES = {
    "torch-neuronx": "torch_neuronx", "neuronx-cc": "neuronxcc", "nki": "nki",
    "libneuronxla": "libneuronxla", "torch-neuron": "torch_neuron", "neuron-cc": "neuroncc",
}
MANIFEST = os.path.join(".neuron-env", "install-manifest.json")


def canon(name):
    out = []
    for ch in name.lower():
        out.append("-" if ch in "._-" else ch)
    s = "".join(out)
    while "--" in s:
        s = s.replace("--", "-")
    return s


def read_text(path, limit=65536):
    try:
        with open(path, "rb") as f:
            return f.read(limit).decode("utf-8", "replace")
    except OSError:
        return None


def distributions():
    try:
        from importlib import metadata
    except ImportError:
        return None, "importlib.metadata needs Python 3.8+"
    seen, out = set(), []
    for dist in metadata.distributions():
        entry = {"name": None, "version": None}
        try:
            md = dist.metadata
            name = md["Name"] if md is not None else None
            version = md["Version"] if md is not None else None
        except Exception as e:  # broken METADATA must not stop the probe
            name, version = None, None
            entry["broken"] = f"{type(e).__name__}: {e}"
        path = getattr(dist, "_path", None)
        entry["location"] = str(path) if path is not None else None
        if not name or not version:
            entry.setdefault("broken", "missing Name or Version in metadata")
            entry["name"], entry["version"] = name, version
            out.append(entry)
            continue
        key = canon(name)
        if key in seen:  # the first one on sys.path is the one that imports
            continue
        seen.add(key)
        entry["name"], entry["version"] = name, version
        try:
            installer = dist.read_text("INSTALLER")
            entry["installer"] = installer.strip() if installer else None
            direct = dist.read_text("direct_url.json")
            entry["direct_url"] = json.loads(direct) if direct else None
        except Exception as e:
            entry["broken"] = f"{type(e).__name__}: {e}"
        module = NEURON_MODULES.get(key)
        if module is not None:
            init = read_text(str(dist.locate_file(os.path.join(module, "__init__.py"))), 8192)
            entry["wrong_package_marker"] = bool(init and "WRONG PACKAGE" in init)
        out.append(entry)
    return out, None


def main():
    dists, dist_error = distributions()
    manifest_path = os.path.join(sys.prefix, MANIFEST)
    manifest, manifest_error = None, None
    text = read_text(manifest_path, 4 << 20)
    if text is not None:
        try:
            manifest = json.loads(text)
        except ValueError as e:
            manifest_error = f"{manifest_path} is not valid JSON: {e}"
    doc = {
        "python": {
            "version": "%d.%d.%d" % sys.version_info[:3],
            "release_level": sys.version_info[3],
            "implementation": platform.python_implementation(),
            "executable": sys.executable,
            "prefix": sys.prefix,
            "base_prefix": getattr(sys, "base_prefix", sys.prefix),
            "venv": getattr(sys, "base_prefix", sys.prefix) != sys.prefix,
            "platform": sys.platform,
            "machine": platform.machine(),
        },
        "distributions": dists,
        "distributions_error": dist_error,
        "manifest": manifest,
        "manifest_path": manifest_path,
        "manifest_error": manifest_error,
    }
    sys.stdout.write("\n" + MARKER + json.dumps(doc) + MARKER + "\n")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
