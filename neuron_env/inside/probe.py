# Runs inside the TARGET interpreter, stdlib only, never imports torch. Plain Python 3.6+
# syntax ON PURPOSE (unlike smoke.py, 3.10+): it must report on targets too old for the
# matrix, so that python.version can say so.
# Prints one JSON document between markers, so whatever else lands on stdout cannot confuse it.
# No `json` (nor `re`, which it imports): ~17 ms of the target's start-up. The document is
# written by `dumps` below; files that hold JSON go back as text, parsed by neuron-env.
import os
import sys

MARKER = "@@NEURON_ENV_JSON@@"
NEURON_MODULES = {
    "torch-neuronx": "torch_neuronx", "neuronx-cc": "neuronxcc", "nki": "nki",
    "libneuronxla": "libneuronxla", "torch-neuron": "torch_neuron", "neuron-cc": "neuroncc",
}
MANIFEST = os.path.join(".neuron-env", "install-manifest.json")


_ESCAPE = dict((i, "\\u%04x" % i) for i in range(32))
_ESCAPE.update({ord('"'): '\\"', ord("\\"): "\\\\"})


def _string(text):
    text = text.translate(_ESCAPE)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate (an undecodable file name): escape it
        text = "".join("\\u%04x" % ord(c) if 0xD800 <= ord(c) < 0xE000 else c for c in text)
    return '"' + text + '"'


def dumps(value):
    """JSON for None, bools, ints, strings, lists and dicts (all the document holds)."""
    if value is None:
        return "null"
    if value is True or value is False:
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, dict):
        return "{" + ",".join(_string(str(k)) + ":" + dumps(v) for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(dumps(v) for v in value) + "]"
    return _string(str(value))


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


def _header_lines(path, limit):
    """The lines of a METADATA/PKG-INFO file up to its first blank line (the header block),
    read in growing pieces: the long description after it (often most of the file) is never
    read or split. None when the file cannot be read."""
    size, data = 8192, b""
    try:
        with open(path, "rb") as f:
            while True:
                chunk = f.read(min(size, limit - len(data)))
                data += chunk
                done = not chunk or len(data) >= limit
                lines = data.decode("utf-8", "replace").splitlines()
                if not done:
                    lines = lines[:-1]  # the last line may be cut (or a character in it)
                for i, line in enumerate(lines):
                    if not line.strip():
                        return lines[:i]
                if done:
                    return lines
                size *= 2
    except OSError:
        return None


def _headers(path):
    """Name, Version and the requirements on third-party packages a Neuron release pins
    (`Requires-Dist: numpy...`: a compiled package's numpy range; `optimum...`) from a
    METADATA/PKG-INFO header block (RFC 822 style)."""
    lines = _header_lines(path, 256 * 1024)
    if lines is None:
        return None, None, "cannot read %s" % path, []
    name = version = None
    pinned = []
    for line in lines:
        key, sep, value = line.partition(":")
        if not sep:
            continue
        key = key.strip().lower()
        if key == "name" and name is None:
            name = value.strip()
        elif key == "version" and version is None:
            version = value.strip()
        elif key == "requires-dist" and _pinned(value.strip()):
            pinned.append(value.strip())
    return name, version, None, pinned


PINNED = ("numpy", "optimum")


def _pinned(req):
    for name in PINNED:
        n = len(name)
        if req[:n].lower() == name and (len(req) == n or req[n] in " (<>=!~;["):
            return True
    return False


def distributions():
    # The same sources importlib.metadata reads (every sys.path directory's *.dist-info and
    # *.egg-info, the first of a name winning), parsed by hand: importing importlib.metadata
    # costs ~40 ms in the target (email, zipfile, csv), a third of doctor's run.
    seen, out = set(), []
    for entry in sys.path:
        base = entry or "."
        try:
            names = os.listdir(base)
        except OSError:
            continue  # zip files and missing directories hold nothing we look for
        for fn in names:
            if fn.endswith(".dist-info"):
                info = os.path.join(base, fn)
                meta = os.path.join(info, "METADATA")
            elif fn.endswith(".egg-info"):
                info = os.path.join(base, fn)
                meta = os.path.join(info, "PKG-INFO") if os.path.isdir(info) else info
            else:
                continue
            name, version, err, pinned = _headers(meta)
            entry_doc = {"name": name, "version": version, "location": info}
            if pinned:
                entry_doc["requires_pinned"] = pinned
            if err or not name or not version:
                entry_doc["broken"] = err or "missing Name or Version in metadata"
                out.append(entry_doc)
                continue
            key = canon(name)
            if key in seen:  # the first one on sys.path is the one that imports
                continue
            seen.add(key)
            entry_doc["direct_url_text"] = read_text(os.path.join(info, "direct_url.json"))
            module = NEURON_MODULES.get(key)
            if module is not None:
                init = read_text(os.path.join(base, module, "__init__.py"), 8192)
                entry_doc["wrong_package_marker"] = bool(init and "WRONG PACKAGE" in init)
            out.append(entry_doc)
    return out


def manifest_unreadable(path):
    """Why a manifest that is there cannot be read (its mode, say), or None."""
    try:
        with open(path, "rb"):
            return None
    except FileNotFoundError:
        return None
    except OSError as e:
        return e.strerror or str(e)


def main():
    dists = distributions()
    manifest_path = os.path.join(sys.prefix, MANIFEST)
    doc = {
        "python": {
            "version": "%d.%d.%d" % sys.version_info[:3],
            "release_level": sys.version_info[3],
            "implementation": sys.implementation.name,
            "executable": sys.executable,
            "prefix": sys.prefix,
            "base_prefix": getattr(sys, "base_prefix", sys.prefix),
            "venv": getattr(sys, "base_prefix", sys.prefix) != sys.prefix,
            "platform": sys.platform,
            "machine": os.uname().machine,
        },
        "distributions": dists,
        "manifest_text": read_text(manifest_path, 4 << 20),
        "manifest_path": manifest_path,
        "manifest_unreadable": manifest_unreadable(manifest_path),
    }
    sys.stdout.write("\n" + MARKER + dumps(doc) + MARKER + "\n")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
