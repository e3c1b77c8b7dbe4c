"""Judging the trial's figures (pure): the pad-or-bucket advice of a shape sweep, and the
observed/expected/fix fields of each result."""

from __future__ import annotations

import math
import statistics

PAD_WASTE_LIMIT = 0.25  # pad to the largest shape while that wastes at most this much compute


def _elems(shape) -> int:
    return math.prod(shape)


def _bucket(shape: tuple[int, ...], varying: tuple[bool, ...]) -> tuple[int, ...]:
    """Round each dimension that varies across the shapes up to a power of two; a fixed one
    (RGB channels, a hidden size) stays as it is."""
    return tuple(1 << max(d - 1, 0).bit_length() if v else d
                 for d, v in zip(shape, varying, strict=True))


def _varying(shapes: list[tuple[int, ...]]) -> tuple[bool, ...]:
    return tuple(len(set(dims)) > 1 for dims in zip(*shapes, strict=True))


def _waste(shapes, target_of) -> float:
    """The padded share of the compute when each shape is padded to target_of(s): padded
    elements over all elements computed (shapes 10 and 30 padded to 30: 20 of 60, 33%; not the
    mean per-shape overhead, 100%)."""
    padded = sum(_elems(target_of(s)) for s in shapes)
    return 1 - sum(_elems(s) for s in shapes) / padded if padded else 0.0


def shapes(data: dict, status: str) -> tuple[str, str, dict]:
    """(status, summary, advice) for a shape sweep's rows."""
    if data.get("mode") == "eager":  # compile failed: no compilations to advise on
        return status, str(data.get("eager_summary", "")), {}
    rows = [r for r in data["rows"] if "error" not in r]
    failed = [r for r in data["rows"] if "error" in r]
    comp = sum(r.get("compilations", 0) for r in rows)
    new = [r for r in rows if r.get("compilations", 0) > 0]
    all_shapes = [tuple(r["shape"]) for r in rows]
    if not rows:
        return "fail", f"every shape failed: {failed[0]['error']}", {}
    compile_s = statistics.mean(r["compile_s"] for r in new) if new else 0.0
    steady_s = statistics.median(r["steady_s"] for r in rows)
    largest = max(all_shapes, key=_elems)
    fits = all(all(a <= b for a, b in zip(s, largest, strict=True)) for s in all_shapes)
    pad_waste = _waste(all_shapes, lambda s: largest) if fits else None
    varying = _varying(all_shapes) if len({len(s) for s in all_shapes}) == 1 \
        else tuple(True for _ in largest)
    buckets = sorted({_bucket(s, varying) for s in all_shapes}, key=_elems)
    adv = {"shapes": len(rows), "distinct_shapes": len(set(all_shapes)), "compilations": comp,
           "new_shapes_compiled": len(new),
           "mean_compile_s": compile_s, "median_steady_s": steady_s,
           "steps_per_compile": compile_s / steady_s if steady_s else None,
           "pad_to": list(largest) if fits else None, "pad_waste": pad_waste,
           "buckets": [list(b) for b in buckets],
           "bucket_waste": _waste(all_shapes, lambda s: _bucket(s, varying)),
           "varying_dims": [i for i, v in enumerate(varying) if v]}
    if failed:
        return "fail", (f"{len(failed)} of {len(data['rows'])} shapes failed "
                        f"({'x'.join(map(str, failed[0]['shape']))}: {failed[0]['error']})"), adv
    if not new:
        return "pass", f"{len(rows)} shapes, no compilation: every shape was already compiled", adv
    adv["recommendation"] = _recommend(adv)
    summary = (f"{len(rows)} shapes caused {comp} compilation(s), {compile_s:.2f}s each on "
               f"average vs {steady_s * 1000:.1f} ms per steady step (one compile = "
               f"{adv['steps_per_compile'] or 0:.0f} steps): {adv['recommendation']}")
    return ("warn" if comp > 1 else "pass"), summary, adv


def _recommend(adv: dict) -> str:
    pad = (f"pad every input to {'x'.join(map(str, adv['pad_to']))} (1 graph, "
           f"{adv['pad_waste']:.0%} of the compute padding)") if adv["pad_to"] else None
    if pad and adv["pad_waste"] <= PAD_WASTE_LIMIT:
        return pad
    listed = ", ".join("x".join(map(str, b)) for b in adv["buckets"])
    n, distinct = len(adv["buckets"]), adv["distinct_shapes"]
    also = (f"; padding all to the largest would make {adv['pad_waste']:.0%} of the compute "
            "padding") if pad else ""
    if n < distinct:
        return (f"bucket shapes to powers of two ({listed}: {n} graph(s) instead of {distinct}, "
                f"{adv['bucket_waste']:.0%} of the compute padding){also}")
    return (f"power-of-two buckets would not reduce the {distinct} graphs: keep to these shapes "
            f"and compile each once at start-up ({distinct} x {adv['mean_compile_s']:.2f}s){also}")


def observed(name: str, data: dict):
    if "max_abs_error" in data and "tensors" in data:
        return {"max_abs_error": data["max_abs_error"], "max_rel_error": data["max_rel_error"],
                "mismatched_tensors": data["mismatched_tensors"], "worst": data.get("worst")}
    if name == "fallback" and data.get("ops") is not None:
        return {"ops": data["ops"]}
    return None


def expected(name: str, data: dict):
    if "rtol" in data and "atol" in data:
        rule = {"rule": data["rule_applied"]} if data.get("rule_applied") else {}
        return {"rtol": data["rtol"], "atol": data["atol"], **rule}
    if name == "fallback":
        return {"ops": []}
    return None


def fix(name: str, status: str, data: dict, opts) -> str | None:
    if status not in ("fail", "error", "warn"):
        return None
    if data.get("hint"):
        return data["hint"]
    return {
        "device": "run neuron-env doctor: " + "; ".join(data.get("causes") or []),
        "import": "install torch into the target: neuron-env install --python TARGET",
        "reference": "the model fails on the CPU too: fix the model (see details.error, the "
                     "innermost frames and your code's)",
        "eager": _eager_fix(data),
        "steps": "the drift grows with --steps: check the optimizer state and the dtype",
        "fallback": "these ops run on the CPU in eager mode (details.sources: the lines that "
                    "call them) and fail under torch.compile: rewrite them with supported ops "
                    "or keep them out of the compiled region",
        "compile": _compile_fix(data),
        "shapes": _shapes_fix(data),
        "baseline": "the device disagrees with the environment used today: compare per tensor "
                    "(details.mismatches)",
        "generate": _generate_fix(data),
        "dtype": "cast float64 tensors to float32 (model.float()) to run what the device runs",
    }.get(name)


def _generate_fix(data: dict) -> str:
    at = f" at {data['user_frame']}" if data.get("user_frame") else ""
    if data.get("side") == "device":
        return (f"generate() crashed on the device, not in the tokens it picked: "
                f"{data.get('root_cause')}{at}; the CPU ran the same decode (details.error: the "
                "innermost frames and the model's)")
    if data.get("side") == "cpu":
        return (f"generate() fails on the CPU too: {data.get('root_cause')}{at}; fix the model "
                "or its generation config first")
    return ("the device picks other tokens than the CPU: run without --generate to see which "
            "tensors differ (trial.eager, first diverging module)")


def _shapes_fix(data: dict) -> str:
    failed = [r for r in data.get("rows") or [] if r.get("error")]
    if failed:
        r = failed[0]
        return (f"shape {'x'.join(map(str, r['shape']))} does not run on this model "
                f"({r['error']}): leave it out of --shapes/--batch-sizes, or change the model "
                "where the error points")
    if data.get("mode") == "eager":
        return "fix trial.compile first: this sweep ran in eager mode and could not count "\
               "compilations"
    return "pad or bucket input shapes (details.advice) so that few graphs compile"


def _eager_fix(data: dict) -> str:
    if data.get("crashed"):
        return ("the model crashes on the device but runs on the CPU: see details.error (the "
                "innermost frames and your code's); ops that ran on the CPU are in trial.fallback")
    div = data.get("first_divergence") or {}
    side = div.get("side") or "both"
    start = (f"start at module {div['module']} ({div.get('module_type')}), the first whose "
             "output leaves tolerance; " if div.get("module") and side == "both" else
             f"start at module {div['module']} ({div.get('module_type')}): it runs on the "
             f"{'device path' if side == 'device' else 'CPU'} only and changes the numbers; "
             if div.get("module") else "")
    tail = "check driver/runtime versions with neuron-env doctor"
    bad = [m.get("tensor", "") for m in data.get("mismatches") or []]
    if bad and not any(b.startswith("output") for b in bad) and \
            data.get("tolerance_used", 1e30) < 10:
        tail += "; only loss/gradients differ, by less than 10x the tolerance: a looser "\
                "--rtol/--atol may be right"
    return f"{start}compare per tensor (details.mismatches); {tail}"


def _compile_fix(data: dict) -> str:
    if data.get("ops"):
        return (f"{', '.join(data['ops'])} is not supported by the neuron compiler: rewrite it, "
                "keep it out of the compiled region, or allow CPU fallback with "
                "TORCH_NEURONX_DISABLE_FALLBACK_EXECUTION=0")
    if data.get("graph_breaks"):
        return "remove the graph breaks (details.graph_breaks): data-dependent Python control "\
               "flow, .item(), print"
    at = f" at {data['user_frame']}" if data.get("user_frame") else ""
    cause = data.get("root_cause") or "see details.traceback"
    check = data.get("cpu_aot_eager") or {}
    if check.get("ok"):  # tried: the same model compiles on the CPU
        return (f"torch.compile(backend='aot_eager') compiles and runs this model on the CPU, "
                f"so the failure comes with the device (backend {data.get('backend')!r}, or "
                f"code on the device path only): {cause}{at}; keep that code out of the "
                "compiled region "
                "(torch.compiler.disable) or report it with details.traceback")
    if check.get("error"):  # tried: the CPU fails too, so the model's code is the cause
        there = f" at {check['user_frame']}" if check.get("user_frame") else ""
        return (f"torch.compile fails on the CPU too (backend='aot_eager': {check['error']}"
                f"{there}): fix the model's code there, or keep it out of the compiled region "
                "(torch.compiler.disable)")
    if data.get("aot_eager_helps"):
        return ("the backend compiler failed (details.traceback): run with --compile-backend "
                "aot_eager to tell whether the graph itself is sound")
    return f"torch.compile could not trace the model{at}: {cause} (see details.traceback)"
