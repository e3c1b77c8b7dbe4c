# Part of the trial script (inside/trial.py), run INSIDE the target interpreter: stdlib +
# torch. The MODEL: built-in workloads, importing the user's callable, checking its protocol.
import importlib
import importlib.util
import inspect
import os
import sys
import traceback

from _trial_common import Usage, environment_hint, root_cause, short, tb_text

PROTOCOL = ("MODEL must name a callable that takes no arguments and returns (model, "
            "example_inputs) or (model, example_inputs, loss_fn): model a torch.nn.Module, "
            "example_inputs a tuple of tensors (model(*inputs)) or a dict of keyword inputs "
            "(model(**inputs), as a tokenizer gives), loss_fn(output) or "
            "loss_fn(output, batch_slice) -> scalar tensor")
LOSS_SIGNATURES = ("loss_fn(output) -> scalar tensor, or loss_fn(output, batch_slice) -> scalar "
                   "tensor, where batch_slice is the slice of dimension 0 of the inputs this "
                   "process runs (the whole batch in one process, the rank's shard under "
                   "--world-size)")


def loss_arity(fn, spec="MODEL"):
    """1 (loss_fn(output)) or 2 (loss_fn(output, batch_slice)): how many positional arguments
    the user's loss_fn takes. Any other signature is bad input, said before anything runs."""
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return 1  # a builtin or C callable without a signature: called as loss_fn(output)
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    required = [p for p in positional if p.default is p.empty]
    varargs = any(p.kind == p.VAR_POSITIONAL for p in params)
    kw_required = [p.name for p in params if p.kind == p.KEYWORD_ONLY and p.default is p.empty]
    if len(required) in (1, 2) and not kw_required:
        return len(required)
    if not required and (positional or varargs) and not kw_required:
        return 1
    got = "(%s)" % ", ".join(str(p) for p in params)
    raise Usage("MODEL %r returned a loss_fn%s that takes %s: trial calls %s" % (
        spec, got, "no argument" if not positional and not varargs else
        "keyword-only argument(s) %s" % ", ".join(kw_required) if kw_required else
        "%d required arguments" % len(required), LOSS_SIGNATURES),
        "give the loss_fn one parameter (the model's output), or two (output, batch_slice) "
        "and index its targets with the slice")


# -- built-in workloads ---------------------------------------------------------------------------
def builtin_mlp(torch):
    nn = torch.nn
    model = nn.Sequential(nn.Linear(64, 256), nn.GELU(), nn.Linear(256, 256), nn.ReLU(),
                          nn.Linear(256, 10))
    x, y = torch.randn(32, 64), torch.randint(0, 10, (32,))
    return model, (x,), lambda out: nn.functional.cross_entropy(out, y.to(out.device))


def builtin_conv(torch):
    nn = torch.nn
    model = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.Conv2d(16, 32, 3,
                          stride=2, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
                          nn.Flatten(), nn.Linear(32, 10))
    return model, (torch.randn(8, 3, 32, 32),)


class _Block:
    """A pre-norm transformer block (attention written out: softmax, bmm, layer norm)."""

    @staticmethod
    def build(torch, dim=128, heads=4):
        nn = torch.nn

        class Block(nn.Module):
            def __init__(self):
                super().__init__()
                self.ln1, self.ln2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
                self.qkv, self.proj = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
                self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(),
                                         nn.Linear(4 * dim, dim))

            def forward(self, x):
                b, t, d = x.shape
                q, k, v = self.qkv(self.ln1(x)).chunk(3, dim=-1)
                q, k, v = (z.reshape(b, t, heads, d // heads).transpose(1, 2) for z in (q, k, v))
                att = torch.softmax(q @ k.transpose(-2, -1) / (d // heads) ** 0.5, dim=-1)
                x = x + self.proj((att @ v).transpose(1, 2).reshape(b, t, d))
                return x + self.mlp(self.ln2(x))
        return Block()


def builtin_transformer_block(torch):
    return _Block.build(torch), (torch.randn(4, 64, 128),)


def builtin_embedding(torch):
    nn = torch.nn
    model = nn.Sequential(nn.Embedding(1000, 64), nn.LayerNorm(64), nn.Linear(64, 1000))
    ids, target = torch.randint(0, 1000, (8, 32)), torch.randint(0, 1000, (8, 32))
    return model, (ids,), lambda out: nn.functional.cross_entropy(
        out.reshape(-1, 1000), target.to(out.device).reshape(-1))


BUILTINS = {"mlp": builtin_mlp, "conv": builtin_conv,
            "transformer-block": builtin_transformer_block, "embedding": builtin_embedding}


# -- MODEL: import and protocol -------------------------------------------------------------------
def import_callable(spec):
    target, sep, attr = spec.rpartition(":")
    if not sep or not target or not attr:
        raise Usage("MODEL %r: expected module:callable, path/to/file.py:callable or "
                    "builtin:NAME" % spec)
    try:
        if target.endswith(".py"):
            path = os.path.abspath(target)
            if not os.path.isfile(path):
                raise Usage("MODEL %r: no such file %s" % (spec, path))
            sys.path.insert(0, os.path.dirname(path))
            s = importlib.util.spec_from_file_location("neuron_env_trial_model", path)
            mod = importlib.util.module_from_spec(s)
            # registered before it runs, as an import would: torch.compile resolves a
            # torch.library op or a dataclass of the file through sys.modules
            sys.modules[s.name] = mod
            s.loader.exec_module(mod)
        else:
            sys.path.insert(0, os.getcwd())
            mod = importlib.import_module(target)
    except Usage:
        raise
    except BaseException as e:  # the user's module: anything it raises is bad input
        tb = traceback.extract_tb(e.__traceback__)
        where = ("%s:%d" % (tb[-1].filename, tb[-1].lineno)) if tb else target
        root = root_cause(e)
        cause = "; caused by %s" % short(root) if root is not e else ""
        env = environment_hint("%s\n%s" % (short(e), short(root)), sys.executable)
        raise Usage("MODEL %r: importing %s raised %s (at %s)%s" % (spec, target, short(e),
                                                                     where, cause),
                    env or "fix the module so that it imports in the target interpreter, or "
                    "check the name (module:callable is imported from the current directory "
                    "too)") from None
    fn = getattr(mod, attr, None)
    if fn is None or not callable(fn):
        raise Usage("MODEL %r: %s has no callable named %r" % (spec, target, attr), PROTOCOL)
    return fn


def load_model(torch, spec, seed):
    if spec.startswith("builtin:"):
        name = spec.split(":", 1)[1]
        if name not in BUILTINS:
            raise Usage("MODEL %r: no built-in workload %r" % (spec, name),
                        "built-ins: " + ", ".join("builtin:" + b for b in BUILTINS))
        fn = BUILTINS[name]
        torch.manual_seed(seed)
        return check_protocol(torch, fn(torch), spec)
    fn = import_callable(spec)
    torch.manual_seed(seed)
    try:
        got = fn()
    except BaseException as e:
        raise Usage("MODEL %r: calling it raised %s" % (spec, short(e)),
                    PROTOCOL + "\n" + tb_text(e)) from None
    return check_protocol(torch, got, spec)


def check_protocol(torch, got, spec):
    def bad(why):
        return Usage("MODEL %r returned %s: %s" % (spec, why, PROTOCOL))
    if not isinstance(got, (tuple, list)) or len(got) not in (2, 3):
        raise bad("a value of type %s" % type(got).__name__ if not isinstance(
            got, (tuple, list)) else "%d values" % len(got))
    model, inputs = got[0], got[1]
    loss_fn = got[2] if len(got) == 3 else None
    if not isinstance(model, torch.nn.Module):
        raise bad("a %s as the model" % type(model).__name__)
    if isinstance(inputs, torch.Tensor):
        inputs = (inputs,)
    if isinstance(inputs, dict):
        if not inputs or not all(isinstance(k, str) for k in inputs):
            raise bad("a dict of example_inputs without string keys")
        if not any(isinstance(v, torch.Tensor) for v in inputs.values()):
            raise bad("a dict of example_inputs without a tensor")
        args, kwargs = (), dict(inputs)
    elif isinstance(inputs, (tuple, list)) and all(isinstance(t, torch.Tensor) for t in inputs):
        args, kwargs = tuple(inputs), {}
    else:
        raise bad("example_inputs of type %s" % type(inputs).__name__)
    if loss_fn is not None and not callable(loss_fn):
        raise bad("a loss_fn of type %s" % type(loss_fn).__name__)
    if loss_fn is not None:
        loss_arity(loss_fn, spec)
    return model, (args, kwargs), loss_fn


