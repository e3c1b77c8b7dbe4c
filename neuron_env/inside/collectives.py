# Runs inside the TARGET interpreter as ONE rank of `neuron-env collectives`: stdlib + torch.
# The rank comes from the launcher's environment: RANK / WORLD_SIZE / LOCAL_RANK / MASTER_ADDR /
# MASTER_PORT (neuron-env's own launcher, torchrun) or SLURM_PROCID / SLURM_NTASKS /
# SLURM_LOCALID (srun). argv[1] is a JSON object of options. For every op and size: one checked
# run, `iterations` timed runs, and a second checked run with another pattern (so a stale
# buffer or a wrong rank's data is caught); rank 0 gathers every rank's rows and prints one
# JSON document between markers on stdout. "@@STEP op:size@@" lines on stderr say where a rank
# is, so the launcher can name the rank and the step that hung.
import json
import os
import sys
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # _shared.py, even under -P
from _shared import emit, pick_device, step, sync

# nccl-tests' bus-bandwidth factors (n = world size), as docs/collectives.md lists them; source:
# https://github.com/NVIDIA/nccl-tests/tree/master/doc (its performance notes)
FACTORS = {
    "all_reduce": lambda n: 2.0 * (n - 1) / n,
    "all_gather": lambda n: (n - 1) / n,
    "reduce_scatter": lambda n: (n - 1) / n,
    "all_to_all": lambda n: (n - 1) / n,
    "broadcast": lambda n: 1.0,
    "send_recv": lambda n: 1.0,
}
# patterns stay small integers so every dtype holds every sum exactly (bf16: up to 256)
MODULUS = {"float32": 61, "float16": 7, "bfloat16": 3, "int32": 61, "int64": 61}




def rank_env():
    """(rank, world, local_rank): torchrun/neuron-env variables, else Slurm's."""
    env = os.environ
    if "RANK" not in env and "SLURM_PROCID" in env:
        env["RANK"] = env["SLURM_PROCID"]
        env["WORLD_SIZE"] = env.get("SLURM_NTASKS", "1")
        env["LOCAL_RANK"] = env.get("SLURM_LOCALID", "0")
    return int(env["RANK"]), int(env["WORLD_SIZE"]), int(env.get("LOCAL_RANK", "0"))


def pattern(torch, rank, n_elems, it, dtype, device, offset=0):
    """Element i of rank r at pass it: (i + offset + 5r + 7it) mod M, M prime to 5 and 7."""
    m = MODULUS[dtype]
    i = torch.arange(offset, offset + n_elems, dtype=torch.int64)
    v = (i + 5 * rank + 7 * it) % m
    return v.to(getattr(torch, dtype)).to(device)


class Fault:
    """Test hook (NEURON_ENV_COLLECTIVES_FAULT=corrupt:R|hang:R|crash:R): a faulty rank R."""

    def __init__(self, spec, rank):
        kind, _, who = (spec or "").partition(":")
        self.kind = kind if who.strip() == str(rank) else ""

    def before_op(self):
        if self.kind == "hang":
            time.sleep(3600)
        if self.kind == "crash":
            os._exit(17)

    def corrupt(self, torch, t):
        if self.kind == "corrupt" and t.numel():
            t.view(-1)[0] += 1
        return t


class Op:
    """One collective at one size: buffers, the call, and the exact expected result."""

    def __init__(self, torch, dist, name, count, dtype, device, rank, world):
        self.torch, self.dist, self.name, self.dtype = torch, dist, name, dtype
        self.device, self.rank, self.n = device, rank, world
        split = name in ("all_gather", "reduce_scatter", "all_to_all")
        self.chunk = count // world if split else count  # per-rank chunk, rounded down
        self.total = self.chunk * world if split else count
        self.size_bytes = self.total * torch.empty(0, dtype=getattr(torch, dtype)).element_size()

    def buffers(self, it, fault):
        t, r = self.torch, self.rank
        n_in = self.total if self.name in ("reduce_scatter", "all_to_all") else self.chunk
        src = fault.corrupt(t, pattern(t, r, n_in, it, self.dtype, self.device))
        n_out = {"all_gather": self.total, "reduce_scatter": self.chunk,
                 "all_to_all": self.total}.get(self.name, self.chunk)
        out = src.clone() if self.name in ("all_reduce", "broadcast") else \
            t.full((n_out,), -1, dtype=src.dtype, device=self.device)
        return src, out

    def call(self, src, out):
        d, n, r = self.dist, self.n, self.rank
        if self.name == "all_reduce":
            d.all_reduce(out)
        elif self.name == "all_gather":
            d.all_gather_into_tensor(out, src)
        elif self.name == "reduce_scatter":
            d.reduce_scatter_tensor(out, src)
        elif self.name == "all_to_all":
            d.all_to_all_single(out, src)
        elif self.name == "broadcast":
            d.broadcast(out, 0)
        elif self.name == "send_recv":
            reqs = [d.isend(src, (r + 1) % n), d.irecv(out, (r - 1) % n)]
            for q in reqs:
                q.wait()

    def expected(self, it):
        t, c, n, r = self.torch, self.chunk, self.n, self.rank

        def p(rank, k, offset=0):
            return pattern(t, rank, k, it, "int64", "cpu", offset)
        if self.name == "all_reduce":
            return sum(p(s, c) for s in range(n))
        if self.name == "all_gather":
            return t.cat([p(s, c) for s in range(n)])
        if self.name == "reduce_scatter":
            return sum(p(s, c, r * c) for s in range(n))
        if self.name == "all_to_all":
            return t.cat([p(s, c, r * c) for s in range(n)])
        if self.name == "broadcast":
            return p(0, c)
        return p((r - 1) % n, c)  # send_recv: from the previous rank in the ring

    def wrong(self, out, it):
        """(wrong elements, the source ranks whose data arrived wrong where the layout says)."""
        got = out.detach().cpu().to(self.torch.float64)
        bad = got != self.expected(it).to(self.torch.float64)
        n_bad = int(bad.sum().item())
        if not n_bad or self.name in ("all_reduce", "reduce_scatter"):
            return n_bad, []  # a sum does not say whose contribution was wrong
        if self.name == "broadcast":
            return n_bad, [0]
        if self.name == "send_recv":
            return n_bad, [(self.rank - 1) % self.n]
        per_chunk = bad.view(self.n, self.chunk).any(dim=1)
        return n_bad, [s for s in range(self.n) if bool(per_chunk[s])]




def measure(torch, op, iterations, fault, device):
    """(wrong elements, seconds per call): checked pass 0, timed passes, checked pass 1."""
    src, out = op.buffers(0, fault)
    fault.before_op()
    sys.stderr.write("@@CALL@@\n")  # this rank entered the collective (a hang elsewhere: not)
    sys.stderr.flush()
    op.call(src, out)
    sync(torch, device)
    wrong, suspects = op.wrong(out, 0)
    src, out = op.buffers(0, Fault("", -1))
    op.dist.barrier()
    t0 = time.perf_counter()
    for _ in range(iterations):
        op.call(src, out)
    sync(torch, device)
    elapsed = (time.perf_counter() - t0) / iterations
    src, out = op.buffers(1, fault)
    op.call(src, out)
    sync(torch, device)
    wrong2, suspects2 = op.wrong(out, 1)
    return wrong + wrong2, sorted(set(suspects) | set(suspects2)), elapsed


def row(op, wrong=0, suspects=(), seconds=0.0, skipped=None):
    """This rank's row; rank 0 merges them (time averaged over ranks, as nccl-tests does)."""
    base = dict(op=op.name, dtype=op.dtype, size_bytes=op.size_bytes, count=op.total)
    if skipped:
        return dict(base, skipped=skipped)
    return dict(base, seconds=seconds, wrong=wrong, suspects=list(suspects))


def run_all(torch, dist, opts, rank, world, device):
    fault = Fault(os.environ.get("NEURON_ENV_COLLECTIVES_FAULT"), rank)
    rows = []
    for name in opts["ops"]:
        for size in opts["sizes"]:
            item = torch.empty(0, dtype=getattr(torch, opts["dtype"])).element_size()
            op = Op(torch, dist, name, max(1, size // item), opts["dtype"], device, rank, world)
            if (name == "send_recv" and world < 2) or op.chunk == 0:
                rows.append(row(op, skipped="needs at least %d elements and 2 ranks" % world))
                continue
            step("%s:%d" % (name, op.size_bytes))
            wrong, suspects, sec = measure(torch, op, opts["iterations"], fault, device)
            rows.append(row(op, wrong, suspects, sec))
    return rows


def merge(per_rank, world):
    """Rank 0: one row per (op, size) from every rank's rows."""
    out = []
    for i, first in enumerate(per_rank[0]):
        rows = [r[i] for r in per_rank]
        if "skipped" in first:
            out.append(first)
            continue
        sec = sum(r["seconds"] for r in rows) / len(rows)
        algbw = first["size_bytes"] / sec / 1e9 if sec > 0 else 0.0
        wrong_by_rank = [r["wrong"] for r in rows]
        out.append(dict(
            {k: first[k] for k in ("op", "dtype", "size_bytes", "count")},
            time_us=sec * 1e6, algbw_gbps=algbw, busbw_gbps=algbw * FACTORS[first["op"]](world),
            wrong=sum(wrong_by_rank),
            wrong_ranks=[r for r, w in enumerate(wrong_by_rank) if w],
            suspect_ranks=sorted({s for r in rows for s in r["suspects"]})))
    return out


def gather_json(torch, dist, obj, world, device):
    """Every rank's `obj` on every rank, through the backend under test (no numpy, no pickle)."""
    data = json.dumps(obj).encode()
    n = torch.tensor([len(data)], dtype=torch.int64, device=device)
    sizes = torch.zeros(world, dtype=torch.int64, device=device)
    dist.all_gather_into_tensor(sizes, n)
    longest = int(sizes.max().item())
    buf = torch.zeros(longest, dtype=torch.int32)
    buf[:len(data)] = torch.tensor(list(data), dtype=torch.int32)
    out = torch.zeros(longest * world, dtype=torch.int32, device=device)
    dist.all_gather_into_tensor(out, buf.to(device))
    out = out.cpu().view(world, longest)
    return [json.loads(bytes(out[r, :int(sizes[r])].tolist()).decode()) for r in range(world)]


def emulated(torch):
    mod = getattr(torch, "neuron", None)
    return bool(mod is not None and getattr(mod, "is_emulated", lambda: False)())


def main():
    opts = json.loads(sys.argv[1])
    rank, world, local_rank = rank_env()
    step("import")
    import torch
    import torch.distributed as dist

    step("init")
    device = pick_device(torch, opts["device"], local_rank)
    dist.init_process_group(opts["backend"], rank=rank, world_size=world)
    rows = run_all(torch, dist, opts, rank, world, device)
    step("gather")
    gathered = gather_json(torch, dist, rows, world, device)
    if rank == 0:
        doc = dict(rows=merge(gathered, world), world_size=world, backend=opts["backend"],
                   device=str(device.type), torch=torch.__version__,
                   emulated=device.type == "neuron" and emulated(torch))
        emit(doc)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    try:
        main()
    except Exception:
        sys.stderr.write("@@ERROR@@" + traceback.format_exc()[-3000:] + "\n")
        sys.exit(3)
