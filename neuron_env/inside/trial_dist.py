# Runs inside the TARGET interpreter for `neuron-env trial MODEL --world-size N`: stdlib + torch.
# argv[1] is a JSON object of options; its "role" is either
#   "reference": ONE process (no process group) runs `steps` SGD steps on the whole batch and
#                saves what the ranks must reproduce (initial parameters, per-step loss and
#                outputs, final parameters, the mode and the parameters the loss leaves unused)
#                plus its own steady-state step times;
#   "rank":      one rank of the distributed run (neuron-env's launcher or torchrun sets RANK,
#                WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT): DDP or FSDP2 over its shard
#                of the batch, each step's shard outputs and the global loss compared with the
#                reference, then every (gathered) parameter after the last optimizer step.
# The MODEL, its inputs (a tuple, or a dict of keyword inputs), the default loss, the eval/train
# decision for stochastic modules and the element-wise comparison are the one-process trial's
# (trial.py, _trial_models.py, _trial_compare.py): one input/compare path, two launchers.
# Every process writes its progress and its verdict to files in the run directory
# (<name>.steps, .pid, .json, .error; the reference also reference.pt): the same under
# neuron-env's launcher and under torchrun agents, whose workers' output neuron-env does not
# capture. Tensors travel as data only: torch.save of plain containers, read back with
# torch.load(weights_only=True), never an unpickled object.
import inspect
import json
import os
import sys
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # _shared.py, even under -P
from _shared import Untrusted, create, open_dir, open_read, sync, write_file
from _shared import pick_device as _pick_device
from _shared import step as marker
from _trial_common import Usage
from _trial_compare import compare_one, flatten, host
from _trial_device import MAX_SAMPLES, timed
from _trial_models import check_protocol, load_model
from trial import Trial, choose_mode, default_loss

PROTOCOL = ("the callable returns (model, example_inputs[, loss_fn]) as for the one-process "
            "trial; under --world-size the batch is dimension 0 of every batched input and a "
            "loss_fn that needs targets takes (output, batch_slice) and indexes its targets "
            "with the slice")
TOKEN = "NEURON_ENV_TRIAL_RUN"  # set by neuron-env's launcher (trial/distributed.py)


class Run:
    """This process's files in the run directory, by _shared's opener and writer: the
    directory judged first (ours or root's, no group/other write: RUN_DIR may be shared
    storage), every file created under a random name and renamed into place (a planted
    `reference.pid -> ~/.ssh/authorized_keys` is replaced, never truncated: #45, finding 3)."""

    def __init__(self, run_dir, name):
        self.dir_fd = open_dir(run_dir)
        self.name = name
        self.base = os.path.join(run_dir, name)  # for messages only
        self.steps = create(self.dir_fd, name + ".steps")
        write_file(self.dir_fd, name + ".pid", str(os.getpid()))

    def step(self, name, inside=False):
        """Where this process is; inside=True: it is entering a collective (waits for peers)."""
        marker(name)
        self.steps.write((("call " if inside else "step ") + name + "\n").encode("utf-8"))
        self.steps.flush()

    def write(self, suffix, text):
        write_file(self.dir_fd, self.name + suffix, text)

    def save(self, torch, obj, suffix):
        """torch.save into a file of the run directory (created by the one writer)."""
        import io

        buf = io.BytesIO()
        torch.save(obj, buf)
        write_file(self.dir_fd, self.name + suffix, buf.getvalue())

    def open_read(self, name):
        return open_read(self.dir_fd, name)


def die_with_parent():
    """Under neuron-env's launcher: this process dies with the one that started it. A torchrun
    agent runs its workers in sessions of their own, so when the agent (or neuron-env above
    it) is killed, nothing else would stop a rank that waits for its peers."""
    if TOKEN not in os.environ or not sys.platform.startswith("linux"):
        return
    parent = os.getppid()  # not 1 as a test: neuron-env may be a container's init
    try:
        import ctypes
        import signal
        ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL))  # PR_SET_PDEATHSIG
    except Exception:
        return
    if os.getppid() != parent:  # the parent died before the call took effect
        os._exit(1)


# -- workloads: the built-ins whose loss needs targets take the batch slice ------------------
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


BUILTINS = {"mlp": builtin_mlp, "transformer-block": builtin_transformer_block,
            "embedding": builtin_embedding}


def load(torch, spec, seed):
    """(model, (args, kwargs), loss(out, sl)): the one-process trial's loader and protocol
    (a tuple or a dict of keyword inputs), torch seeded first; the built-ins whose loss takes
    targets are this script's (their loss indexes the targets with the batch slice)."""
    name = spec.split(":", 1)[1] if spec.startswith("builtin:") else None
    if name in BUILTINS:
        torch.manual_seed(seed)
        model, inputs, fn = check_protocol(torch, BUILTINS[name](torch), spec)
    else:
        model, inputs, fn = load_model(torch, spec, seed)
    return model, inputs, fn, loss_of(fn)


def loss_of(fn):
    """loss(out, sl): the user's loss_fn(out, batch_slice) or loss_fn(out), else the one-process
    trial's default loss (every floating output's mean square)."""
    if fn is None:
        return lambda out, sl: default_loss(out)
    try:
        n = len([p for p in inspect.signature(fn).parameters.values()
                 if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)])
    except (TypeError, ValueError):
        n = 1
    return fn if n >= 2 else (lambda out, sl: fn(out))


def tensors(torch, inputs):
    args, kwargs = inputs
    return [t for t in list(args) + list(kwargs.values()) if isinstance(t, torch.Tensor)]


def batch_of(torch, inputs):
    sizes = {t.shape[0] for t in tensors(torch, inputs) if t.dim() > 0}
    if not sizes:
        raise Usage("MODEL: no tensor input with a batch dimension", PROTOCOL)
    return max(sizes)


def shard(torch, inputs, batch, sl, device):
    """(args, kwargs) on the device, every tensor whose dimension 0 is the batch cut to sl."""
    def one(t):
        if not isinstance(t, torch.Tensor):
            return t
        return (t[sl] if t.dim() > 0 and t.shape[0] == batch else t).to(device)
    args, kwargs = inputs
    return tuple(one(t) for t in args), {k: one(v) for k, v in kwargs.items()}


def batched_outputs(torch, out, batch):
    """{name: tensor} of the outputs whose dimension 0 is the batch (a rank holds its rows),
    and the names of the others (compared through the loss and the parameters only)."""
    rows, other = {}, []
    for name, t in flatten(out):
        if t.dim() > 0 and t.shape[0] == batch:
            rows[name] = t
        else:
            other.append(name)
    return rows, other


# -- the comparison: the one-process trial's element-wise allclose --------------------------
def check(torch, got, want, rtol, atol, **label):
    """compare_one's verdict in the trial.distributed row's words (max_abs, numel: the
    report's schema): {ok, max_abs, max_rel_error, excess, mismatched, numel, ...}."""
    c = compare_one(torch, host(got) if got is not None else None, want, rtol, atol)
    row = dict(label, ok=c["ok"], max_abs=c.get("max_abs_error"),
               max_rel_error=c.get("max_rel_error"), excess=min(float(c["excess"]), 1e30),
               mismatched=c.get("mismatched", want.numel()), numel=want.numel())
    for k in ("missing", "shape", "nonfinite"):
        if c.get(k):
            row[k] = c[k]
    return row


def full(p):
    return p.full_tensor() if hasattr(p, "full_tensor") else p


# -- the device --------------------------------------------------------------------------------
def pick_device(torch, want, local_rank):
    """_shared.pick_device, a missing device being a usage error (--device)."""
    return _pick_device(torch, want, local_rank,
                        lambda why: Usage("--device %s: %s" % (want, why)))


def emulated(torch, device):
    mod = getattr(torch, device.type, None)
    return bool(device.type == "neuron" and mod is not None and
                getattr(mod, "is_emulated", lambda: False)())


def train_step(model, opt, data, loss, sl, unused=None):
    """One SGD step; `unused` (a set) gets the parameters left without a gradient."""
    args, kwargs = data
    out = model(*args, **kwargs)
    value = loss(out, sl)
    value.backward()
    if unused is not None:
        unused.update(n for n, p in model.named_parameters() if p.requires_grad and
                      p.grad is None)
    opt.step()
    opt.zero_grad(set_to_none=True)
    return out, value


def median_step(torch, device, model, opt, data, loss, sl, n):
    return step_times(torch, device, model, opt, data, loss, sl, n)[0]


def step_times(torch, device, model, opt, data, loss, sl, n):
    """(median step s, every timed step s in order, at most MAX_SAMPLES: the host judges
    the spread and the outliers, #49 section 4)."""
    times = timed(torch, device, lambda: train_step(model, opt, data, loss, sl), n)
    return sorted(times)[len(times) // 2], [float(t) for t in times[:MAX_SAMPLES]]


def decide_mode(torch, seed, device, model, inputs, fn):
    """The one-process trial's rule: a train-mode model that draws random numbers (dropout)
    cannot match another run (here: whole batch vs shards draw other masks), so both sides
    run in eval mode and the report says so. -> (mode, stochastic)."""
    t = Trial(torch, {"seed": seed}, device, model, inputs, fn)
    choose_mode(t)
    return t.mode, list(t.stochastic)


# -- the two roles ------------------------------------------------------------------------------
def reference(torch, opts, run):
    run.step("model")
    device = pick_device(torch, opts["device"], 0)
    model, inputs, fn, loss = load(torch, opts["model"], opts["seed"])
    batch = batch_of(torch, inputs)
    world = opts["world_size"]
    if batch % world:
        raise Usage("the batch (%d samples) does not split into %d equal shards" % (batch, world),
                    "give --world-size a divisor of the batch, or a batch that divides")
    run.step("mode")
    mode, stochastic = decide_mode(torch, opts["seed"], device, model, inputs, fn)
    if mode == "eval":
        model.eval()
    coupled = coupling(torch, model, inputs, batch, batch // world, opts)
    init = {n: p.detach().cpu().clone() for n, p in model.named_parameters()}
    model.to(device)
    opt = torch.optim.SGD(model.parameters(), lr=opts["lr"])
    whole, steps, unused, other = slice(0, batch), [], set(), []
    data = shard(torch, inputs, batch, whole, device)
    for s in range(opts["steps"]):
        run.step("reference step %d" % (s + 1))
        fault("reference", "reference step %d" % (s + 1))
        torch.manual_seed(opts["seed"] + 1 + s)
        out, value = train_step(model, opt, data, loss, whole, unused if s == 0 else None)
        rows, other = batched_outputs(torch, out, batch)
        steps.append(dict(loss=float(value.detach().float().cpu()),
                          out={k: host(v).clone() for k, v in rows.items()}))
    final = {n: p.detach().cpu().clone() for n, p in model.named_parameters()}
    run.save(torch, dict(init=init, steps=steps, final=final, mode=mode,
                         unused=sorted(unused)), ".pt")
    run.step("reference timing")
    per = batch // world
    it = opts["iterations"]
    one_rank = median_step(torch, device, model, opt, shard(torch, inputs, batch, slice(0, per),
                                                           device), loss, slice(0, per), it + 1)
    whole_s = median_step(torch, device, model, opt, data, loss, whole, it + 1)
    return dict(batch=batch, per_rank_batch=per, one_rank_step_s=one_rank,
                whole_batch_step_s=whole_s, tensors=len(final), device=device.type,
                torch=torch.__version__, emulated=emulated(torch, device), mode=mode,
                stochastic=stochastic, unused=sorted(unused), not_sharded=other,
                batch_coupled=coupled,
                losses=[x["loss"] for x in steps])


def coupling(torch, model, inputs, batch, per, opts):
    """What couples the samples of a batch, found in ONE process before any rank runs (#48.4):
    the BatchNorm modules (in train mode they normalise with the statistics of the batch they
    see: a rank sees its shard), and the outputs whose first shard, run alone, differs from
    the whole batch's first rows (CLIP's logits over every pair, an in-batch loss). Run on a
    copy on the CPU (running statistics of the model itself untouched) in the mode compared."""
    import copy

    norm = torch.nn.modules.batchnorm._BatchNorm
    bns = [(n, m) for n, m in model.named_modules() if isinstance(m, norm)]
    doc = dict(batchnorm=[n for n, _ in bns], batchnorm_train=any(m.training for _, m in bns),
               outputs={})
    try:
        probe = copy.deepcopy(model)
        outs = []
        with torch.no_grad():
            for sl in (slice(0, batch), slice(0, per)):
                torch.manual_seed(opts["seed"] + 1)
                args, kwargs = shard(torch, inputs, batch, sl, torch.device("cpu"))
                outs.append(dict(flatten(probe(*args, **kwargs))))
    except Exception as e:  # the probe is evidence only: the comparison itself still runs
        doc["probe_error"] = "%s: %s" % (type(e).__name__, str(e)[:200])
        return doc
    whole, part = outs
    for name, t in whole.items():
        if t.dim() == 0 or t.shape[0] != batch or not t.is_floating_point():
            continue
        c = check(torch, part.get(name), host(t)[:per], opts["rtol"], opts["atol"])
        if not c["ok"]:
            doc["outputs"][name] = {k: c[k] for k in ("max_abs", "shape", "missing") if c.get(k)}
    return doc


def fault(who, where):
    """Test hook NEURON_ENV_TRIAL_DIST_FAULT=crash:R|hang:R (R: a rank, or `reference`): rank R
    exits hard at step 1 or hangs before wrapping; the reference hangs at its step 1."""
    kind, _, target = os.environ.get("NEURON_ENV_TRIAL_DIST_FAULT", "").partition(":")
    if target.strip() != str(who):
        return
    if kind == "hang" and where in ("wrap", "reference step 1"):
        time.sleep(3600)
    if kind == "crash" and where == "step 1":
        os._exit(17)


def wrap(torch, model, strategy, device, world, unused):
    """The model under DDP or FSDP2 -> (wrapped, how DDP treats `unused`: the parameters the
    loss leaves without a gradient, which DDP would otherwise wait for forever)."""
    if strategy == "ddp":
        from torch.nn.parallel import DistributedDataParallel as DDP
        if unused and emulated(torch, device):
            # find_unused_parameters pins host memory through the backend's C++ hooks, which
            # the emulated device (a Python backend) cannot register: leave the parameters out
            # of the reduction instead (they have no gradient on any rank: the same result)
            DDP._set_params_and_buffers_to_ignore_for_model(model, list(unused))
            return DDP(model), "ignored"
        return DDP(model, find_unused_parameters=bool(unused)), (
            "find_unused_parameters" if unused else None)
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard
    mesh = init_device_mesh(device.type, (world,))
    for sub in fsdp_groups(model):
        fully_shard(sub, mesh=mesh)
    return fully_shard(model, mesh=mesh), None  # the root last: it takes what is left


def fsdp_groups(model):
    """The submodules that get an FSDP group of their own, innermost first (#48.5): each
    direct child that holds parameters, unless it holds a parameter tied to one outside it
    (GPT-2's lm_head.weight is transformer.wte.weight; T5's shared embedding is in the encoder
    and the decoder): FSDP2 refuses a tensor in two groups, so such a child is not wrapped,
    its own children are considered the same way, and the root's group holds the tied ones.
    A container without forward (ModuleList, ModuleDict: FSDP2 refuses them) is looked into."""
    import torch

    base_forward = torch.nn.Module.forward
    names = {}
    for n, p in model.named_parameters(remove_duplicate=False):
        names.setdefault(id(p), []).append(n)

    def walk(module, prefix):
        out = []
        for name, sub in module.named_children():
            path = prefix + name
            params = list(sub.parameters())
            if not params:
                continue
            own = all(n.startswith(path + ".") for p in params for n in names[id(p)])
            if own and type(sub).forward is not base_forward:
                out.append(sub)
            else:
                out += walk(sub, path + ".")
        return out
    return walk(model, "")


def worst_of(rows):
    bad = [r for r in rows if not r["ok"]] or rows
    return max(bad, key=lambda r: r["excess"]) if bad else None


def load_reference(torch, path, run):
    """The reference's tensors, as data: torch.load(weights_only=True) unpickles plain
    containers, numbers, strings and tensors only (a planted pickle is refused, never run);
    opened by _shared's opener in the run directory (a link is not followed)."""
    try:
        with run.open_read(os.path.basename(path)) as f:
            return torch.load(f, weights_only=True, map_location="cpu")
    except Exception as e:
        raise RuntimeError("%s is not a reference saved by `neuron-env trial` (read as data "
                           "only, weights_only=True): %s" % (path, str(e).splitlines()[0]
                                                            if str(e) else type(e).__name__)
                           ) from None


def compare_step(torch, dist, out, value, want, sl, world, tol, phase):
    """(the shard's output rows: those out of tolerance, else the closest one; the loss row:
    the mean of the ranks' losses, all-reduced, against the reference's)."""
    got = dict(flatten(out))
    rows = [check(torch, got.get(k), w[sl], *tol, tensor=k, phase=phase)
            for k, w in want["out"].items()]
    g = value.detach().float().reshape(1).clone()
    dist.all_reduce(g)
    mean = g.cpu() / world
    loss = check(torch, mean, torch.tensor([want["loss"]]), *tol, tensor="loss", phase=phase,
                 value=float(mean[0]), reference=want["loss"])
    return [r for r in rows if not r["ok"]][:20] or ([worst_of(rows)] if rows else []), loss


def rank_main(torch, opts, run, rank, world, local_rank):
    import torch.distributed as dist

    run.step("reference")
    ref = load_reference(torch, opts["reference"], run)
    device = pick_device(torch, opts["device"], local_rank)
    run.step("init", inside=True)
    dist.init_process_group(opts["backend"], rank=rank, world_size=world)
    run.step("model")
    model, inputs, _fn, loss = load(torch, opts["model"], opts["seed"])
    batch = batch_of(torch, inputs)
    per = batch // world
    sl = slice(rank * per, (rank + 1) * per)
    rtol, atol = opts["rtol"], opts["atol"]
    if ref.get("mode") == "eval":
        model.eval()
    init = [check(torch, p, ref["init"][n], 0.0, 0.0, tensor=n, phase="initial")
            for n, p in model.named_parameters() if n in ref["init"]]
    model.to(device)
    fault(rank, "wrap")
    run.step("wrap %s" % opts["strategy"], inside=True)
    wrapped, unused_how = wrap(torch, model, opts["strategy"], device, world, ref.get("unused"))
    opt = torch.optim.SGD(wrapped.parameters(), lr=opts["lr"])
    data = shard(torch, inputs, batch, sl, device)
    outs, losses, t_first = [], [], None
    for s in range(opts["steps"]):
        run.step("step %d" % (s + 1), inside=True)
        fault(rank, "step %d" % (s + 1))
        torch.manual_seed(opts["seed"] + 1 + s)
        t0 = time.perf_counter()
        out, value = train_step(wrapped, opt, data, loss, sl)
        sync(torch, device)
        t_first = t_first if t_first is not None else time.perf_counter() - t0
        rows, row = compare_step(torch, dist, out, value, ref["steps"][s], sl, world,
                                 (rtol, atol), "step %d" % (s + 1))
        outs += rows
        losses.append(row)
    run.step("gather parameters", inside=True)
    params = [check(torch, full(p), ref["final"][n], rtol, atol, tensor=n,
                    phase="after step %d" % opts["steps"])
              for n, p in model.named_parameters() if n in ref["final"]]
    run.step("timing", inside=True)
    train_step(wrapped, opt, data, loss, sl)  # warm (a compile, a new buffer)
    sync(torch, device)
    median, samples = step_times(torch, device, wrapped, opt, data, loss, sl,
                                 opts["iterations"])
    run.step("finish", inside=True)
    doc = dict(rank=rank, world_size=world, pid=os.getpid(), host=os.uname()[1],
               device=str(device), emulated=emulated(torch, device), torch=torch.__version__,
               initial=[r for r in init if not r["ok"]], outputs=outs, losses=losses,
               params_checked=len(params), worst_param=worst_of(params),
               bad_params=[r["tensor"] for r in params if not r["ok"]],
               first_step_s=t_first, step_s=median, step_samples_s=samples,
               shard=[sl.start, sl.stop],
               unused=unused_how)
    run.write(".json", json.dumps(doc, default=str))
    dist.barrier()
    dist.destroy_process_group()


def open_run(run_dir, name):
    """This process's Run, or exit 2 with the reason on stderr: a run directory another user
    can write, or one that is a link, gets no file of ours."""
    try:
        return Run(run_dir, name)
    except (Untrusted, OSError) as e:
        sys.stderr.write("@@ERROR@@neuron-env trial: the run directory %s: %s\n" % (run_dir, e))
        sys.exit(2)


def main():
    opts = json.loads(sys.argv[1])
    role = opts["role"]
    die_with_parent()
    if role == "reference":
        rank, world, local = 0, 1, 0
        run = open_run(opts["run_dir"], "reference")
    else:
        env = os.environ
        if "RANK" not in env and "SLURM_PROCID" in env:  # srun
            env.update(RANK=env["SLURM_PROCID"], WORLD_SIZE=env.get("SLURM_NTASKS", "1"),
                       LOCAL_RANK=env.get("SLURM_LOCALID", "0"))
        rank, world = int(env["RANK"]), int(env["WORLD_SIZE"])
        local = int(os.environ.get("LOCAL_RANK", "0"))
        run = open_run(opts["run_dir"], "rank%d" % rank)
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
        text = traceback.format_exc()[-3000:]
        run.write(".error", text)
        sys.stderr.write("@@ERROR@@" + text + "\n")
        sys.exit(3)


if __name__ == "__main__":
    main()
