# Runs inside the TARGET interpreter (plain Python 3.6+ syntax, stdlib + torch): doctor's
# backend.companions import probe. Started only when a torch companion (torchvision,
# torchaudio, torchao or torchao-neuron) is installed, because importing torch costs seconds:
# argv[1:] are the modules to import after torch. Prints one JSON document between markers:
# {"torch": {"version", "error"}, "modules": {name: null | {"error", "cause"}}, "seconds"}.
# A failure keeps the outermost message and the innermost cause of its chain (a companion
# whose C++ ops do not load often raises "operator torchvision::nms does not exist").
import json
import sys
import time

MARKER = "@@NEURON_ENV_JSON@@"


def _line(e):
    text = str(e).strip().splitlines()
    return type(e).__name__ + (": " + text[0] if text else "")


def why(e):
    root, seen = e, set()
    while id(root) not in seen:
        seen.add(id(root))
        nxt = root.__cause__ or root.__context__
        if nxt is None:
            break
        root = nxt
    return {"error": _line(e)[:500], "cause": None if root is e else _line(root)[:500]}


def main():
    t0 = time.time()
    doc = {"torch": None, "modules": {}}
    try:
        import torch
        doc["torch"] = {"version": getattr(torch, "__version__", None), "error": None}
    except BaseException as e:  # a SystemExit from a hostile package counts too
        doc["torch"] = {"version": None, "error": why(e)["error"]}
    if doc["torch"]["error"] is None:
        for name in sys.argv[1:]:
            try:
                __import__(name)
                doc["modules"][name] = None
            except BaseException as e:
                doc["modules"][name] = why(e)
    doc["seconds"] = round(time.time() - t0, 3)
    sys.stdout.write("\n" + MARKER + json.dumps(doc) + MARKER + "\n")


if __name__ == "__main__":
    main()
