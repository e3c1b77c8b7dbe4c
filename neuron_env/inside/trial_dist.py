# Runs inside the TARGET interpreter for `neuron-env trial MODEL --world-size N`: stdlib + torch.
# argv[1] is a JSON object of options; its "role" is either
#   "reference": ONE process (no process group) runs `steps` SGD steps on the whole batch and
#                saves what the ranks must reproduce (initial parameters, per-step loss and
#                output, final parameters) plus its own steady-state step times;
#   "rank":      one rank of the distributed run (neuron-env's launcher or torchrun sets RANK,
#                WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT): DDP or FSDP2 over its shard
#                of the batch, each step's shard output and the global loss compared with the
#                reference, then every (gathered) parameter after the last optimizer step.
# Every rank writes its progress and its verdict to files in the run directory (rank<R>.steps,
# rank<R>.pid, rank<R>.json, rank<R>.error): the same under neuron-env's launcher and under
# torchrun agents, whose workers' output neuron-env does not capture.
import inspect
import json
import os
import sys
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # _shared.py, even under -P
from _shared import step as marker
from _shared import sync
from _trial_common import Usage
from _trial_models import builtin_conv, import_callable  # conv: no targets, one loss

PROTOCOL = ("the callable returns (model, example_inputs[, loss_fn]); under --world-size the "
            "batch is dimension 0 of every input and a loss_fn that needs targets takes "
            "(output, batch_slice) and indexes its targets with the slice")


class Run:
    """This process's files in the run directory."""

    def __init__(self, run_dir, name):
        self.base = os.path.join(run_dir, name)
        self.steps = open(self.base + ".steps", "a", encoding="utf-8")  # noqa: SIM115
        with open(self.base + ".pid", "w") as f:
            f.write(str(os.getpid()))

    def step(self, name, inside=False):
        """Where this process is; inside=True: it is entering a collective (waits for peers)."""
        marker(name)
        self.steps.write(("call " if inside else "step ") + name + "\n")
        self.steps.flush()

    def write(self, suffix, text):
        tmp = self.base + suffix + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, self.base + suffix)


# -- workloads: the small built-ins (loss_fn(out, batch_slice) where targets are needed) --------
def builtin_mlp(torch):
    nn = torch.nn
    model = nn.Sequential(nn.Linear(64, 256), nn.GELU(), nn.Linear(256, 256), nn.ReLU(),
                          nn.Linear(256, 10))
    x, y = torch.randn(32, 64), torch.randint(0, 10, (32,))
    return model, (x,), lambda out, sl: nn.functional.cross_entropy(out, y[sl].to(out.device))


def builtin_transformer_block(torch):
    layer = torch.nn.TransformerEncoderLayer(128, 4, dim_feedforward=256, dropout=0.0,
                                             batch_first=True, norm_first=True)
    return layer, (torch.randn(8, 32, 128),)


def builtin_embedding(torch):
    nn = torch.nn
    model = nn.Sequential(nn.Embedding(1000, 64), nn.LayerNorm(64), nn.Linear(64, 1000))
    ids, target = torch.randint(0, 1000, (8, 32)), torch.randint(0, 1000, (8, 32))
    return model, (ids,), lambda out, sl: nn.functional.cross_entropy(
        out.reshape(-1, 1000), target[sl].to(out.device).reshape(-1))


BUILTINS = {"mlp": builtin_mlp, "conv": builtin_conv,
            "transformer-block": builtin_transformer_block, "embedding": builtin_embedding}


def load(torch, spec, seed):
    """(model, inputs, loss(out, sl)) with torch seeded first, as single-process trial does."""
    if spec.startswith("builtin:"):
        fn = BUILTINS.get(spec.split(":", 1)[1])
        if fn is None:
            raise Usage("MODEL %r: no built-in workload" % spec)
    else:  # the user's module, imported as single-process trial imports it
        fn = import_callable(spec)
    torch.manual_seed(seed)
    got = fn(torch) if spec.startswith("builtin:") else fn()
    if not isinstance(got, tuple) or len(got) not in (2, 3) or \
            not isinstance(got[0], torch.nn.Module):
        raise Usage("MODEL %r: returned %s" % (spec, type(got).__name__), PROTOCOL)
    model, inputs = got[0], tuple(got[1]) if isinstance(got[1], (tuple, list)) else (got[1],)
    return model, inputs, loss_of(got[2] if len(got) == 3 else None)


def loss_of(fn):
    if fn is None:
        return lambda out, sl: first(out).float().pow(2).mean()
    try:
        n = len([p for p in inspect.signature(fn).parameters.values()
                 if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)])
    except (TypeError, ValueError):
        n = 1
    return fn if n >= 2 else (lambda out, sl: fn(out))


def first(out):
    while isinstance(out, (tuple, list)):
        out = out[0]
    if isinstance(out, dict):
        return first(next(iter(out.values())))
    return out


def batch_of(torch, inputs):
    sizes = {t.shape[0] for t in inputs if isinstance(t, torch.Tensor) and t.dim() > 0}
    if not sizes:
        raise Usage("MODEL: no tensor input with a batch dimension", PROTOCOL)
    return max(sizes)


def shard(torch, inputs, batch, sl, device):
    return tuple(t[sl].to(device) if isinstance(t, torch.Tensor) and t.dim() > 0 and
                 t.shape[0] == batch else (t.to(device) if isinstance(t, torch.Tensor) else t)
                 for t in inputs)


# -- the comparison: element-wise |a - b| <= atol + rtol * |b| -----------------------------------
def compare(torch, got, want, rtol, atol):
    """{ok, max_abs, excess, mismatched, numel}; excess = max |a-b| / (atol + rtol |b|)."""
    a, b = got.detach().cpu().double(), want.detach().cpu().double()
    if a.shape != b.shape:
        return dict(ok=False, max_abs=None, excess=float("inf"), mismatched=b.numel(),
                    numel=b.numel(), why="shape %s, expected %s" % (list(a.shape),
                                                                     list(b.shape)))
    diff = (a - b).abs()
    bound = atol + rtol * b.abs()
    nan = torch.isnan(a) != torch.isnan(b)
    bad = (diff > bound) | nan
    finite = diff.masked_fill(torch.isnan(diff), 0.0)
    excess = float((finite / bound.clamp_min(1e-300)).max()) if diff.numel() else 0.0
    n_bad = int(bad.sum())
    return dict(ok=n_bad == 0, max_abs=float(finite.max()) if diff.numel() else 0.0,
                excess=float("inf") if bool(nan.any()) else excess, mismatched=n_bad,
                numel=b.numel())


def full(p):
    return p.full_tensor() if hasattr(p, "full_tensor") else p


# -- the device --------------------------------------------------------------------------------
def pick_device(torch, want, local_rank):
    if want == "cpu":
        return torch.device("cpu")
    mod = getattr(torch, want, None)
    count = mod.device_count() if mod is not None and hasattr(mod, "device_count") else 0
    if count < 1:
        raise Usage("--device %s: no %s device visible to this process" % (want, want))
    index = local_rank % count
    if hasattr(mod, "set_device"):
        mod.set_device(index)
    return torch.device(want, index)


def emulated(torch, device):
    mod = getattr(torch, device.type, None)
    return bool(device.type == "neuron" and mod is not None and
                getattr(mod, "is_emulated", lambda: False)())


def train_step(torch, model, opt, inputs, loss, sl):
    out = model(*inputs)
    value = loss(out, sl)
    value.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
    return out, value


def timed_steps(torch, device, model, opt, inputs, loss, sl, n):
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        train_step(torch, model, opt, inputs, loss, sl)
        sync(torch, device)
        times.append(time.perf_counter() - t0)
    times.sort()
    return times[len(times) // 2]


# -- the two roles ------------------------------------------------------------------------------
def reference(torch, opts, run):
    run.step("model")
    device = pick_device(torch, opts["device"], 0)
    model, inputs, loss = load(torch, opts["model"], opts["seed"])
    batch = batch_of(torch, inputs)
    world = opts["world_size"]
    if batch % world:
        raise Usage("the batch (%d samples) does not split into %d equal shards" % (batch, world),
                    "give --world-size a divisor of the batch, or a batch that divides")
    init = {n: p.detach().cpu().clone() for n, p in model.named_parameters()}
    model.to(device).train()
    opt = torch.optim.SGD(model.parameters(), lr=opts["lr"])
    whole, steps = slice(0, batch), []
    data = shard(torch, inputs, batch, whole, device)
    for s in range(opts["steps"]):
        run.step("reference step %d" % (s + 1))
        torch.manual_seed(opts["seed"] + 1 + s)
        out, value = train_step(torch, model, opt, data, loss, whole)
        steps.append(dict(loss=float(value.detach().float().cpu()),
                          out=first(out).detach().cpu().clone()))
    final = {n: p.detach().cpu().clone() for n, p in model.named_parameters()}
    torch.save(dict(init=init, steps=steps, final=final), run.base + ".pt")
    run.step("reference timing")
    per = batch // world
    it = opts["iterations"]
    one_rank = timed_steps(torch, device, model, opt, shard(torch, inputs, batch,
                           slice(0, per), device), loss, slice(0, per), it + 1)
    whole_s = timed_steps(torch, device, model, opt, data, loss, whole, it + 1)
    return dict(batch=batch, per_rank_batch=per, one_rank_step_s=one_rank,
                whole_batch_step_s=whole_s, tensors=len(final), device=device.type,
                torch=torch.__version__, emulated=emulated(torch, device))


def fault(rank, where):
    """Test hook NEURON_ENV_TRIAL_DIST_FAULT=crash:R|hang:R: rank R dies or hangs at `where`."""
    kind, _, who = os.environ.get("NEURON_ENV_TRIAL_DIST_FAULT", "").partition(":")
    if who.strip() != str(rank):
        return
    if kind == "hang" and where == "wrap":
        time.sleep(3600)
    if kind == "crash" and where == "step 1":
        os._exit(17)


def wrap(torch, model, strategy, device, world):
    if strategy == "ddp":
        from torch.nn.parallel import DistributedDataParallel as DDP
        return DDP(model)
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard
    mesh = init_device_mesh(device.type, (world,))
    for sub in model.children():  # one FSDP group per direct child that holds parameters
        if any(True for _ in sub.parameters()):
            fully_shard(sub, mesh=mesh)
    return fully_shard(model, mesh=mesh)


def worst_of(rows):
    bad = [r for r in rows if not r["ok"]] or rows
    return max(bad, key=lambda r: r["excess"]) if bad else None


def rank_main(torch, opts, run, rank, world, local_rank):
    import torch.distributed as dist

    ref = torch.load(opts["reference"], weights_only=False)
    device = pick_device(torch, opts["device"], local_rank)
    run.step("init", inside=True)
    dist.init_process_group(opts["backend"], rank=rank, world_size=world)
    run.step("model")
    model, inputs, loss = load(torch, opts["model"], opts["seed"])
    batch = batch_of(torch, inputs)
    per = batch // world
    sl = slice(rank * per, (rank + 1) * per)
    rtol, atol = opts["rtol"], opts["atol"]
    init = [dict(compare(torch, p, ref["init"][n], 0.0, 0.0), tensor=n, phase="initial")
            for n, p in model.named_parameters() if n in ref["init"]]
    model.to(device).train()
    fault(rank, "wrap")
    run.step("wrap %s" % opts["strategy"], inside=True)
    wrapped = wrap(torch, model, opts["strategy"], device, world)
    opt = torch.optim.SGD(wrapped.parameters(), lr=opts["lr"])
    data = shard(torch, inputs, batch, sl, device)
    outs, losses, t_first = [], [], None
    for s in range(opts["steps"]):
        run.step("step %d" % (s + 1), inside=True)
        fault(rank, "step %d" % (s + 1))
        torch.manual_seed(opts["seed"] + 1 + s)
        t0 = time.perf_counter()
        out, value = train_step(torch, wrapped, opt, data, loss, sl)
        sync(torch, device)
        t_first = t_first if t_first is not None else time.perf_counter() - t0
        want = ref["steps"][s]
        outs.append(dict(compare(torch, first(out), want["out"][sl], rtol, atol),
                         tensor="output", phase="step %d" % (s + 1)))
        g = value.detach().float().reshape(1).clone()
        dist.all_reduce(g)
        got = g.cpu() / world
        losses.append(dict(compare(torch, got, torch.tensor([want["loss"]]), rtol, atol),
                           tensor="loss", phase="step %d" % (s + 1), value=float(got[0]),
                           reference=want["loss"]))
    run.step("gather parameters", inside=True)
    params = [dict(compare(torch, full(p), ref["final"][n], rtol, atol), tensor=n,
                   phase="after step %d" % opts["steps"])
              for n, p in model.named_parameters() if n in ref["final"]]
    run.step("timing", inside=True)
    train_step(torch, wrapped, opt, data, loss, sl)  # warm (a compile, a new buffer)
    sync(torch, device)
    median = timed_steps(torch, device, wrapped, opt, data, loss, sl, opts["iterations"])
    run.step("finish", inside=True)
    doc = dict(rank=rank, world_size=world, pid=os.getpid(), host=os.uname()[1],
               device=str(device), emulated=emulated(torch, device), torch=torch.__version__,
               initial=[r for r in init if not r["ok"]], outputs=outs, losses=losses,
               params_checked=len(params), worst_param=worst_of(params),
               bad_params=[r["tensor"] for r in params if not r["ok"]],
               first_step_s=t_first, step_s=median, shard=[sl.start, sl.stop])
    run.write(".json", json.dumps(doc, default=str))
    dist.barrier()
    dist.destroy_process_group()


def main():
    opts = json.loads(sys.argv[1])
    role = opts["role"]
    if role == "reference":
        rank, world, local = 0, 1, 0
        run = Run(opts["run_dir"], "reference")
    else:
        env = os.environ
        if "RANK" not in env and "SLURM_PROCID" in env:  # srun
            env.update(RANK=env["SLURM_PROCID"], WORLD_SIZE=env.get("SLURM_NTASKS", "1"),
                       LOCAL_RANK=env.get("SLURM_LOCALID", "0"))
        rank, world = int(env["RANK"]), int(env["WORLD_SIZE"])
        local = int(os.environ.get("LOCAL_RANK", "0"))
        run = Run(opts["run_dir"], "rank%d" % rank)
    try:
        run.step("import")
        import torch
        if role == "reference":
            run.write(".json", json.dumps(reference(torch, opts, run)))
        else:
            rank_main(torch, opts, run, rank, world, local)
    except Usage as u:
        run.write(".usage", json.dumps(dict(message=u.message, hint=u.hint)))
        sys.exit(2)
    except BaseException:
        run.write(".error", traceback.format_exc()[-3000:])
        sys.stderr.write("@@ERROR@@" + traceback.format_exc()[-3000:] + "\n")
        sys.exit(3)


if __name__ == "__main__":
    main()
