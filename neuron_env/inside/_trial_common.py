# Part of the trial script (inside/trial.py), run INSIDE the target interpreter: stdlib only.
# The results list every step appends to, the bad-input exception, and error text.
import os
import re
import traceback

RESULTS: list = []  # of result dicts
_HERE = os.path.dirname(os.path.abspath(__file__))


class Usage(Exception):
    def __init__(self, message, hint=None):
        super().__init__(message)
        self.message, self.hint = message, hint


def add(name, status, summary, **data):
    RESULTS.append(dict(name=name, status=status, summary=summary, **data))


# an import that fails for one of these is the environment's fault, not the module's: a
# companion built for another torch (torchvision's "operator torchvision::nms does not exist"),
# a native library missing or from another build
_ENVIRONMENT = (re.compile(r"operator \w+::\w+ does not exist"),
                re.compile(r"undefined symbol"), re.compile(r"cannot open shared object file"),
                re.compile(r"compiled (?:against|with) a different version"),
                re.compile(r"GLIBC\w*_[\d.]+' not found"))


def environment_hint(text, python):
    """The fix for an import that failed because of the environment (see _ENVIRONMENT), else
    None: point at doctor, which diagnoses it, never 'fix the module'."""
    hit = next((ln for ln in text.splitlines() if any(rx.search(ln) for rx in _ENVIRONMENT)),
               None)
    if hit is None:
        return None
    return ("the environment, not your module: a package it imports does not match this "
            "interpreter's torch or libraries (%s); run `neuron-env doctor --python %s`, which "
            "checks torchvision/torchaudio against torch and names the fix" % (
                hit.strip()[:200], python))


def short(e):
    """Type: first line of the message; a first line that ends with ':' ("backend='neuron'
    raised:") is joined with the next one, which holds what it announces."""
    text = [x.strip() for x in str(e).strip().splitlines() if x.strip()]
    line = text[0] if text else ""
    if line.endswith(":") and len(text) > 1:
        line = "%s %s" % (line, text[1])
    return "%s: %s" % (type(e).__name__, cut(line, 400))


def cut(text, limit):
    """At most `limit` characters, cut at a word boundary with "..." (never mid-word)."""
    if len(text) <= limit:
        return text
    head = text[:limit - 3]
    space = head.rfind(" ")
    return (head[:space] if space >= limit // 2 else head).rstrip(" ,;:") + "..."


# torch's wrappers fold the real error into their message: "... got RuntimeError('expand: ...')"
_GOT = re.compile(r": got (\w+)\((['\"])(.+?)\2\)")
# wrapper messages that say that something failed, not what
_WRAPPERS = ("when making fake tensor call", "backend='", "while executing", "Dynamo failed")


def cause_of(e):
    """The real error under torch's wrappers, as 'Type: message': the innermost exception of the
    __cause__/__context__ chain whose message says something, else the `got Error('...')` a
    wrapper folds into its message, else the message's first line (joined as short() does)."""
    chain, x = [], e
    while x is not None and all(x is not c for c in chain):
        chain.append(x)
        x = x.__cause__ or (None if x.__suppress_context__ else x.__context__)
    for x in reversed(chain):
        text = str(x).strip()
        got = _GOT.search(text)
        if got:
            return "%s: %s" % (got.group(1), cut(got.group(3), 400))
        if text and not any(w in text.splitlines()[0] for w in _WRAPPERS):
            return short(x)
    return short(e)


def root_cause(e):
    """The innermost exception of the __cause__/__context__ chain (torch wraps the real one)."""
    seen = set()
    while id(e) not in seen:
        seen.add(id(e))
        nxt = e.__cause__ or (None if e.__suppress_context__ else e.__context__)
        if nxt is None:
            return e
        e = nxt
    return e


def is_library(filename):
    """A frame of torch, of this script, or of the stdlib: not the user's code."""
    f = filename.replace("\\", "/")
    return (f.startswith(_HERE.replace("\\", "/")) or "/torch/" in f or "/torch_neuronx/" in f
            or "/neuron_emulator/" in f or ("/lib/python3" in f and "site-packages" not in f)
            or f.startswith("<"))


def where(f):
    """file:line `code` of a frame, the file shortened to its package path (site-packages/...)
    or to the current directory."""
    name = f.filename.replace("\\", "/")
    if "site-packages/" in name:
        name = name.rsplit("site-packages/", 1)[1]
    elif name.startswith(os.getcwd().replace("\\", "/") + "/"):
        name = name[len(os.getcwd()) + 1:]
    return "%s:%s `%s`" % (name, f.lineno, (f.line or "").strip())


def user_frames(tb_frames):
    """The frames of the user's code (their file, their package, or a library such as
    transformers that holds the model): everything but torch, the stdlib and this script."""
    return [f for f in tb_frames if not is_library(f.filename)]


def tb_text(e, limit=8):
    """The innermost `limit` frames of e (where it was raised), plus every frame of the user's
    code above them, plus the chained root cause: trial's own outer frames add nothing."""
    frames = traceback.extract_tb(e.__traceback__)
    keep = set(range(max(len(frames) - limit, 0), len(frames)))
    keep |= {i for i, f in enumerate(frames) if not is_library(f.filename)}
    lines, last = ["Traceback (innermost frames, and the user's code):"], -1
    for i in sorted(keep):
        if i != last + 1:
            lines.append("  ... %d frame(s) left out ..." % (i - last - 1))
        f = frames[i]
        lines.append('  File "%s", line %s, in %s' % (f.filename, f.lineno, f.name))
        if f.line:
            lines.append("    " + f.line.strip())
        last = i
    lines.append(short(e))
    root = root_cause(e)
    if root is not e:
        rf = traceback.extract_tb(root.__traceback__)
        where = ' (File "%s", line %s)' % (rf[-1].filename, rf[-1].lineno) if rf else ""
        lines.append("caused by %s%s" % (short(root), where))
    return "\n".join(lines)[-4000:]


def user_frame(e):
    """'file:line `code`' of the innermost user frame of e (or its root cause), else None."""
    for ex in (e, root_cause(e)):
        frames = user_frames(traceback.extract_tb(ex.__traceback__))
        if frames:
            return where(frames[-1])
    return None
