# Part of the trial script (inside/trial.py), run INSIDE the target interpreter: stdlib + torch
# (passed in). Flattening outputs to named tensors and judging device tensors against the CPU.
#
# float32: element-wise as torch.allclose: |device - reference| <= atol + rtol * |reference|.
# Reduced precision (bfloat16, autocast): the device's max abs error against the float32 CPU
# reference must stay within LOW_FACTOR x the max abs error of the CPU at the same dtype
# against the same reference, plus a floor of one bfloat16 step at the tensor's scale.
import dataclasses

TOL = {"float32": (1e-3, 1e-5), "bfloat16": (5e-2, 2e-2)}
# Two correct bfloat16 implementations round differently (accumulation order, fused kernels),
# so their errors against float32 are of the same size but not equal: twice the CPU's error
# leaves room for a different rounding path, while a wrong result (a lost term, a wrong op, a
# lower precision than asked) is many times bfloat16's own error.
LOW_FACTOR = 2.0
BF16_STEP = 2.0 ** -8  # one bfloat16 ulp relative to a value: the floor where the CPU is exact


def flatten(out, prefix="output", skipped=None):
    """[(name, tensor)] of an output: tensors, dicts (ModelOutput too), lists, tuples and
    dataclasses, field by field. Anything else (a DynamicCache, None, ints) is named in
    `skipped` as (name, type name) when a list is given."""
    import torch
    if isinstance(out, torch.Tensor):
        return [(prefix, out)]
    if isinstance(out, dict):
        items = list(out.items())
    elif isinstance(out, (tuple, list)):
        items = list(enumerate(out))
    elif dataclasses.is_dataclass(out) and not isinstance(out, type):
        items = [(f.name, getattr(out, f.name)) for f in dataclasses.fields(out)]
    else:
        if skipped is not None and out is not None:
            skipped.append((prefix, type(out).__name__))
        return []
    return [x for k, v in items for x in flatten(v, "%s[%s]" % (prefix, k), skipped)]


def host(t):
    """A tensor as float32 on the CPU, detached: what every comparison reads."""
    return t.detach().to("cpu").float()


def _nonfinite(torch, got, want):
    finite_want = torch.isfinite(want)
    nonfinite_got = ~torch.isfinite(got) & finite_want
    return finite_want, nonfinite_got, finite_want & ~nonfinite_got


def _base(got, want):
    if got is None:
        return {"ok": False, "missing": True, "excess": 1e30}
    if tuple(got.shape) != tuple(want.shape):
        return {"ok": False, "shape": [list(got.shape), list(want.shape)], "excess": 1e30}
    return None


def compare_one(torch, got, want, rtol, atol):
    """Element-wise as torch.allclose (atol absolute). max_rel_error is |a-b|/|b| over the
    elements where |b| >= atol/rtol (where the relative term dominates the allowance), so a
    value near zero does not blow it up; with rtol 0 (no relative term) over every element
    with b != 0. `excess` is the
    largest |a-b| / (atol + rtol*|b|): at most 1 passes. NaN/Inf where the reference is finite
    count as mismatches (and apart, in `nonfinite`)."""
    early = _base(got, want)
    if early:
        return early
    finite_want, nonfinite_got, both = _nonfinite(torch, got, want)
    diff = (got - want).abs()
    allow = atol + rtol * want.abs()
    bad = ((diff > allow) & both) | nonfinite_got
    d, a, w = diff[both], allow[both], want.abs()[both]
    nonfinite = int(nonfinite_got.sum())
    rel_mask = (w >= atol / rtol) if rtol > 0 else (w > 0)
    rel_mask &= w > 0
    excess = 1e30 if nonfinite else (float((d / a.clamp_min(1e-38)).max()) if d.numel() else 0.0)
    return {"ok": int(bad.sum()) == 0, "max_abs_error": float(d.max()) if d.numel() else 0.0,
            "max_rel_error": float((d[rel_mask] / w[rel_mask]).max())
            if int(rel_mask.sum()) else 0.0,
            "mismatched": int(bad.sum()), "elements": got.numel(), "nonfinite": nonfinite,
            "excess": min(excess, 1e30), "reference_nonfinite": int((~finite_want).sum())}


def compare_low(torch, got, want, cpu, rtol=None, atol=None, level=0.0):
    """The reduced-precision rule: max|got - want| <= LOW_FACTOR * max|cpu - want| + floor, where
    cpu is the CPU's run at the device's dtype and want the float32 CPU reference. The floor is
    atol + rtol * max|want| when the user gave them, else one bfloat16 step at that scale.
    level: the CPU's typical relative error at that dtype over the whole model (#48.6): the
    CPU's own error of one tensor is one sample, small by chance in some (a gradient whose
    rounding cancelled), so the error allowed is at least LOW_FACTOR * level * max|want|
    (cpu_level)."""
    early = _base(got, want)
    if early:
        return early
    finite_want, nonfinite_got, both = _nonfinite(torch, got, want)
    scale = float(want.abs()[finite_want].max()) if int(finite_want.sum()) else 0.0
    dev = float((got - want).abs()[both].max()) if int(both.sum()) else 0.0
    cpu_ok = cpu is not None and tuple(cpu.shape) == tuple(want.shape)
    cpu_both = finite_want & torch.isfinite(cpu) if cpu_ok else None
    cpu_err = float((cpu - want).abs()[cpu_both].max()) if cpu_ok and int(cpu_both.sum()) \
        else 0.0
    floor = (atol or 0.0) + (rtol or 0.0) * scale if rtol is not None or atol is not None \
        else BF16_STEP * scale + 1e-6
    allowed = LOW_FACTOR * max(cpu_err, level * scale) + floor
    nonfinite = int(nonfinite_got.sum())
    w = want.abs()[both]
    rel_mask = w >= max(scale * 1e-3, 1e-12)
    diff = (got - want).abs()[both]
    return {"ok": nonfinite == 0 and dev <= allowed, "max_abs_error": dev,
            "max_rel_error": float((diff[rel_mask] / w[rel_mask]).max())
            if int(rel_mask.sum()) else 0.0,
            "cpu_error": cpu_err, "cpu_typical_error": level * scale,
            "allowed_error": allowed, "elements": got.numel(),
            "nonfinite": nonfinite, "mismatched": int((diff > allowed).sum()) + nonfinite,
            "excess": 1e30 if nonfinite else dev / max(allowed, 1e-38),
            "reference_nonfinite": int((~finite_want).sum())}


def is_output(name):
    return name.startswith("output") or name == "loss"


def cpu_level(torch, want, low):
    """The 90th percentile over tensors of the CPU's relative error at the reduced dtype
    (max|cpu - want| / max|want|): how far that dtype itself takes 9 in 10 of this model's
    tensors (a tensor's own CPU error is one sample of it)."""
    rel = []
    for name, w in want.items():
        c = low.get(name)
        if w is None or c is None or tuple(c.shape) != tuple(w.shape) or not w.numel():
            continue
        both = torch.isfinite(w) & torch.isfinite(c)
        scale = float(w.abs()[both].max()) if int(both.sum()) else 0.0
        if scale > 0:
            rel.append(float((c - w).abs()[both].max()) / scale)
    rel.sort()
    return rel[min(len(rel) - 1, (9 * len(rel)) // 10)] if rel else 0.0


def compare_all(torch, got, want, rtol, atol, low=None, user_tol=False):
    """Every tensor of `want` against `got`. low: the CPU's tensors at the device's reduced
    dtype (then compare_low judges, the user's --rtol/--atol as its floor when user_tol)."""
    rows = []
    level = cpu_level(torch, want, low) if low is not None else 0.0
    for name, w in want.items():
        if w is None:
            continue
        if low is not None:
            c = compare_low(torch, got.get(name), w, low.get(name),
                            rtol if user_tol else None, atol if user_tol else None, level)
        else:
            c = compare_one(torch, got.get(name), w, rtol, atol)
        rows.append(dict(c, tensor=name))
    bad = [r for r in rows if not r["ok"]]
    worst = max(rows, key=lambda r: r["excess"]) if rows else None
    outs = [r for r in rows if is_output(r["tensor"])]
    worst_out = max(outs, key=lambda r: r.get("max_abs_error", 1e30)) if outs else None
    bad_outs = [r for r in bad if is_output(r["tensor"])]
    # the headline: the output that differs most when an output differs, else the worst tensor
    head = max(bad_outs, key=lambda r: r["excess"]) if bad_outs else worst
    strip = lambda r: {k: v for k, v in (r or {}).items() if k != "excess"}  # noqa: E731
    return {"ok": not bad, "tensors": len(rows), "mismatched_tensors": len(bad),
            "rule": "low_precision" if low is not None else "allclose",
            "max_abs_error": (head or {}).get("max_abs_error", 0.0),
            "max_rel_error": (head or {}).get("max_rel_error", 0.0),
            "tolerance_used": min((head or {}).get("excess", 0.0), 1e30),
            "nonfinite": sum(r.get("nonfinite", 0) for r in rows),
            "worst": head["tensor"] if head else None, "worst_detail": strip(head),
            "largest_output_error": strip(worst_out) if worst_out else None,
            "mismatches": [strip(r) for r in sorted(bad, key=lambda r: (
                not is_output(r["tensor"]), -r["excess"]))][:20]}


def _why(w, rtol, atol, rule):
    if w.get("missing"):
        return "missing"
    if w.get("shape"):
        return "shape %s vs %s" % tuple(w["shape"])
    nf = ", %d NaN/Inf" % w["nonfinite"] if w.get("nonfinite") else ""
    if rule == "low_precision":
        return ("device max abs err %.3g vs the CPU's own %.3g at this dtype (typical at this "
                "scale %.3g; allowed %.3g)%s" % (w["max_abs_error"], w["cpu_error"],
                                                 w.get("cpu_typical_error", 0.0),
                                                 w["allowed_error"], nf))
    return ("%d of %d elements outside |a-b| <= atol + rtol*|b| (rtol=%g atol=%g), max abs err "
            "%.3g, max rel err %.3g%s" % (w["mismatched"], w["elements"], rtol, atol,
                                          w["max_abs_error"], w["max_rel_error"], nf))


def verdict(cmp, rtol, atol):
    w, rule = cmp["worst_detail"], cmp.get("rule")
    if cmp["ok"]:
        if not cmp["tensors"]:
            return "no tensor to compare"
        if rule == "low_precision":
            return ("%d tensors within %gx the CPU's own error at this dtype (closest: %s, device "
                    "max abs err %.3g vs CPU %.3g)" % (cmp["tensors"], LOW_FACTOR, cmp["worst"],
                                                      w["max_abs_error"], w["cpu_error"]))
        return ("%d tensors match within rtol=%g atol=%g (closest: %s, max abs err %.3g, max rel "
                "err %.3g, %.0f%% of the tolerance)" % (
                    cmp["tensors"], rtol, atol, cmp["worst"], w["max_abs_error"],
                    w["max_rel_error"], 100 * cmp["tolerance_used"]))
    return "MISMATCH: %d of %d tensors differ; %s %s (%s)" % (
        cmp["mismatched_tensors"], cmp["tensors"],
        "largest output difference" if is_output(cmp["worst"]) else "worst",
        cmp["worst"], _why(w, rtol, atol, rule))
