"""`trial MODEL --world-size N`: the distributed trial's Report (`trial.distributed`, and
`trial.cost` with the price it used and, with --baseline, the side-by-side comparison), its
text and Markdown views, and the cost baseline file (--save-baseline)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from neuron_env.cost import maths
from neuron_env.cost.prices import Price, choose
from neuron_env.errors import UsageError
from neuron_env.guards.text import field
from neuron_env.report import noise
from neuron_env.report.model import Report, Result, exit_code
from neuron_env.report.verdict import cost_kind
from neuron_env.trial import distributed as dist
from neuron_env.trial.collected import timing
from neuron_env.trial.options import TrialOptions

SCHEMA = "neuron-env.trial/1"
BASELINE_SCHEMA = "neuron-env.trial-cost-baseline/1"
REHEARSAL = ("REHEARSAL on the emulated device: CPU throughput and a price; not a Trainium "
             "result")


@dataclass(frozen=True)
class CostOptions:
    price_per_hour: float | None = None
    instance_type: str | None = None
    region: str | None = None
    aws: bool = False
    collect: str | None = None  # a RUN_DIR of a run launched with --print-launch's commands


MAX_BASELINE = 4 * 1024 * 1024  # a cost baseline is < 1 KiB; a whole trial report a few KiB
_BASELINE_FIELDS = (("samples_per_s", "number", False), ("step_s", "number", True),
                    ("usd_per_hour", "number", True), ("usd_per_1000_samples", "number", True),
                    ("usd_per_step", "number", True), ("label", "str", True),
                    ("emulated", "bool", True), ("instance_type", "str", True),
                    ("region", "str", True), ("price_source", "str", True),
                    ("model", "str", True), ("device", "str", True), ("on_host", "bool", True),
                    ("world_size", "int", True), ("strategy", "str", True))


def read_baseline(path: str) -> dict[str, Any]:
    """`--baseline FILE` with --world-size: read by the one reader (guards/files.read_json: a
    regular file, capped, not too deep, no NaN/Infinity), then every field it may use checked
    for its type (numbers finite, throughput > 0); only those fields are kept."""
    from neuron_env.guards.files import field, read_json

    what = f"--baseline {path}"
    hint = ("save one with: neuron-env trial MODEL --world-size N --save-baseline FILE on the "
            "environment you use today")
    doc = read_json(path, MAX_BASELINE, what)
    if isinstance(doc, dict) and doc.get("schema") == SCHEMA:  # a whole trial JSON report
        results = doc.get("results")
        cost = next((r.get("details") for r in results if isinstance(r, dict)
                     and r.get("id") == "trial.cost"), None) if isinstance(results, list) else None
        this = cost.get("this") if isinstance(cost, dict) else None
        doc = dict(this, schema=BASELINE_SCHEMA) if isinstance(this, dict) else {}
    if not isinstance(doc, dict) or doc.get("schema") != BASELINE_SCHEMA:
        raise UsageError(f"{what}: not a cost baseline from `trial --world-size`",
                         hint="the one-process trial's tensor baselines are compared without "
                              "--world-size; " + hint)
    out: dict[str, Any] = {"schema": BASELINE_SCHEMA}
    for key, kind, optional in _BASELINE_FIELDS:
        v = field(doc, key, kind, what, optional=optional, lo=0 if kind in ("number", "int")
                  else None)
        if v is not None:
            out[key] = v
    from neuron_env.trial.collected import step_samples

    samples = step_samples(doc, what)
    if samples:
        out["step_samples_s"] = samples
    if out["samples_per_s"] <= 0:
        raise UsageError(f"{what}: `samples_per_s` is {out['samples_per_s']}: a throughput "
                         "must be > 0", hint=hint)
    return out


DIFFERS = ("not priced: the ranks finished, but their results differ from one process "
           "(trial.distributed): a price for a wrong result would mislead")
UNFINISHED = ("no steady-state throughput: the distributed trial did not finish "
              "(trial.distributed says why)")


def cost_result(thr: dict[str, Any] | None, price: Price, emulated: bool, label: str,
                baseline: dict[str, Any] | None,
                why: str | None = None) -> tuple[Result, dict[str, Any] | None]:
    """(trial.cost, this run's cost figures for --save-baseline). why: the reason there is no
    price when thr is None (the ranks' results differ, the timings are suspect, no finish)."""
    tag = f" [{REHEARSAL}]" if emulated else ""
    if not thr or not thr.get("samples_per_s"):
        return Result("trial.cost", "trial", "skip", why or UNFINISHED,
                      details={"price": price.as_dict()}), None
    this = dict(maths.figures(price.usd_per_hour or 0.0, thr["samples_per_s"], thr["step_s"]),
                label=label, emulated=emulated, instance_type=price.instance_type,
                region=price.region, price_source=price.source, on_host=price.on_host)
    if thr.get("step_samples_s"):
        this["step_samples_s"] = thr["step_samples_s"]
    if price.usd_per_hour is None:
        this.update(usd_per_hour=None, usd_per_1000_samples=None, usd_per_step=None)
    details: dict[str, Any] = {"price": price.as_dict(), "this": this, "rehearsal": emulated}
    if baseline is not None:
        ratios = dict(maths.compare(this, baseline), **apart(this, baseline))
        details.update(baseline=baseline, comparison=dict(
            ratios, line=comparison_line(this, baseline, ratios)))

    if price.usd_per_hour is None:
        line = f" {details['comparison']['line']}" if baseline is not None else ""
        return Result("trial.cost", "trial", "skip", f"no price: {price.note}{line}{tag}",
                      details=details, fix=price_fix(price)), this
    summary = (f"${this['usd_per_1000_samples']:.4g} per 1,000 samples, "
               f"${this['usd_per_step']:.3g} per step at {thr['samples_per_s']:.1f} samples/s "
               f"and ${price.usd_per_hour:g}/h ({price.instance_type or 'given price'}, "
               f"{price.source}{': ' + price.reference if price.reference else ''})")
    if emulated:
        summary = (f"REHEARSAL, not a Trainium price (CPU throughput on the emulated device): "
                   f"{summary}")
    if baseline is not None:
        summary += "; " + details["comparison"]["line"]
    spread = cost_spread(this)
    if spread is not None:
        details["spread"] = spread
        summary += "; " + spread["line"]
    if price.warning:
        summary += f"; {price.warning}"
    status = "warn" if price.warning else "pass"
    return Result("trial.cost", "trial", status, summary, details=details,
                  observed={"usd_per_1000_samples": this["usd_per_1000_samples"]},
                  fix="price an instance type the release supports (--instance-type T)"
                  if price.warning else None), this


def price_fix(price: Price) -> str:
    """What to give for a price, from what was given: --instance-type only when no type is
    known (a type given or found is not asked for again)."""
    if price.instance_type:
        return (f"give --price-per-hour X (the {price.instance_type} hourly price you pay), or "
                f"--aws (the AWS Pricing API's on-demand price in {price.region})")
    return ("give --price-per-hour X, --instance-type T (the price table) or --aws (the AWS "
            "Pricing API)")


def comparison_line(this: dict[str, Any], baseline: dict[str, Any],
                    ratios: dict[str, Any]) -> str:
    """maths.verdict_line, said as what it is when either side is not a measurement of the
    instance it is priced as (an emulated run, a CPU run priced as a GPU instance)."""
    line = spread_line(this, baseline, ratios)
    off = [f"{x.get('label') or who} ({cost_kind(x)})" for who, x in (("this run", this),
                                                                ("the baseline", baseline))
           if cost_kind(x) != "measured"]
    if not off:
        return line
    return (f"NOT A MEASUREMENT of the instances priced: {'; '.join(off)}; as priced: {line}")


def _range(x: dict[str, Any], key: str, per_step: bool) -> tuple[float, float] | None:
    """x[key] at the fast and slow ends of x's step spread (its interquartile range): a
    per-step figure (cost) scales with the step time, a per-second one (throughput) inversely."""
    v, samples = x.get(key), x.get("step_samples_s")
    s = noise.spread(timing(samples)) if samples and v is not None else None
    if s is None or s["low_s"] <= 0:
        return None
    lo, hi = s["low_s"] / s["median_s"], s["high_s"] / s["median_s"]
    return (v * lo, v * hi) if per_step else (v / hi, v / lo)


def cost_spread(this: dict[str, Any]) -> dict[str, Any] | None:
    """A distributed run's $ per 1,000 samples at both ends of its timed steps' interquartile
    range, and its noise warnings (trial/cost.cost_spread's record); None without samples."""
    rng = _range(this, "usd_per_1000_samples", True)
    if rng is None:
        return None
    sp = noise.spread(timing(this["step_samples_s"]))
    if sp is None:
        return None
    return noise.cost_record(sp, rng, f"{sp['iterations']} timed steps (quartiles)")


def apart(this: dict[str, Any], baseline: dict[str, Any]) -> dict[str, Any]:
    """Whether each ratio is larger than the two runs' spreads (#49 section 4): True when the
    interquartile ranges of the two runs' figures do not overlap, False when they do, None
    when either run recorded no step samples (an older baseline)."""
    out: dict[str, Any] = {}
    for key, figure, per_step in (("cost_distinguishable", "usd_per_1000_samples", True),
                                  ("throughput_distinguishable", "samples_per_s", False)):
        a, b = _range(this, figure, per_step), _range(baseline, figure, per_step)
        out[key] = None if a is None or b is None else (a[1] < b[0] or b[1] < a[0])
    return out


def spread_line(this: dict[str, Any], baseline: dict[str, Any], ratios: dict[str, Any]) -> str:
    """maths.verdict_line when the spreads separate the two runs; "not distinguishable" (no
    winner) when they overlap; the honest "spread not recorded" when a side has no samples."""
    line = maths.verdict_line(this, baseline, ratios)
    c, t = ratios.get("cost_ratio"), ratios.get("throughput_ratio")
    if c is None and t is None:
        return line
    sep = ratios.get("cost_distinguishable") if c is not None else \
        ratios.get("throughput_distinguishable")
    if sep is None:
        return (line + "; one run each, their spread not recorded (identical runs on a shared "
                "host can differ by a third): repeat both before deciding")
    if sep:
        return line + "; beyond both runs' spread (interquartile ranges apart)"
    here, there = this.get("label", "this run"), baseline.get("label", "the baseline")
    by = f"cost ratio {c:.2f}" if c is not None else f"throughput ratio {t:.2f}"
    return (f"{here} vs {there}: not distinguishable ({by} by the medians, but the two runs' "
            "interquartile ranges overlap): repeat both with more --iterations on an idle "
            "host before deciding")


def run(python: str, by: str, o: TrialOptions, d: dist.DistOptions, c: CostOptions) -> Report:
    dist.validate(o, d)
    baseline = read_baseline(o.baseline) if o.baseline else None
    price = choose(c.price_per_hour, c.instance_type, c.region, c.aws)
    backend = dist.BACKENDS[o.device]
    r = dist.collect(c.collect, d) if c.collect else dist.run(python, o, d)
    main = dist.verdict(r, d, o.timeout, backend)
    if main.status == "pass" and r.info.get("implausible"):  # --collect: figures no run makes
        from neuron_env.util.record import replace

        main = replace(main, status="warn", summary=f"{main.summary}; {r.info['implausible']}")
    emulated = bool((r.reference or {}).get("emulated"))
    if emulated:
        main = _tag(main)
    thr = (main.details or {}).get("throughput") if main.status == "pass" else None
    label = f"{o.device} x{d.world_size} ({price.instance_type or 'this host'})"
    cost, this = cost_result(thr, price, emulated, label, baseline, no_price_reason(main, r))
    if o.save_baseline and this is not None:
        _save(o.save_baseline, dict(this, schema=BASELINE_SCHEMA, model=o.model,
                                    device=o.device, world_size=d.world_size,
                                    strategy=d.strategy))
    results = (main, cost)
    ref = r.reference or {}
    target = {"interpreter": {"path": python, "chosen_by": by}, "model": o.model,
              "device": o.device, "dtype": o.dtype, "autocast": False, "emulated": emulated,
              "backend": {"torch": ref.get("torch")}, "world_size": d.world_size,
              "strategy": d.strategy, "nnodes": d.nnodes, "process_group_backend": backend}
    return Report(schema=SCHEMA, tool=_tool(), matrix=None, target=target, results=results,
                  exit_code=exit_code(results),
                  extra={"elapsed_s": round(r.elapsed, 3), "emulated": emulated},
                  view=render_text, markdown=render_markdown)


def no_price_reason(main: Result, r: Any) -> str | None:
    """Why trial.cost has no throughput to price: the real reason, never a guess."""
    if main.status == "pass":
        return None
    if r.info.get("implausible") and "throughput" in (main.details or {}):
        return ("not priced: the ranks' results match one process, but their timings are "
                f"suspect ({r.info['implausible']}): a price from them would mislead")
    return DIFFERS if "throughput" in (main.details or {}) else UNFINISHED


def _tool() -> dict[str, str]:
    from neuron_env.report.envelope import TOOL

    return TOOL


def _tag(res: Result) -> Result:
    from neuron_env.util.record import replace

    return replace(res, summary=f"[EMULATED] {res.summary}")


def _save(path: str, doc: dict[str, Any]) -> None:
    from neuron_env.guards.atomic import write_output
    from neuron_env.util.jsonout import dumps

    write_output(os.path.abspath(path), dumps(doc, indent=2) + "\n")


# -- views ----------------------------------------------------------------------------------------
def _f(v: Any, spec: str) -> str:
    return "-" if v is None else format(v, spec)


def rank_rows(rep: Report) -> list[list[str]]:
    res = next((r for r in rep.results if r.id == "trial.distributed"), None)
    ranks = ((res.details or {}).get("ranks") or []) if res else []
    return [[str(x["rank"]), field(x.get("host") or "-"), f"{x['shard'][0]}:{x['shard'][1]}",
             _f(x.get("first_step_s"), ".3f"), _f((x.get("step_s") or 0) * 1000, ".2f"),
             *_box(x.get("spread"))] for x in ranks]


def _box(s: dict[str, Any] | None) -> list[str]:
    """[q1-q3 ms, spread word] of a rank's step spread; '-' for a rank file without samples."""
    if not isinstance(s, dict):
        return ["-", "-"]
    word = "NOISY" if s.get("noisy") else "steady"
    return [f"{s['low_s'] * 1000:.2f}-{s['high_s'] * 1000:.2f}", word]


def spread_lines(rep: Report) -> list[str]:
    """The run's step spread (each step as long as its slowest rank), and why it is noisy."""
    res = next((r for r in rep.results if r.id == "trial.distributed"), None)
    s = ((res.details or {}).get("throughput") or {}).get("spread") if res else None
    if not isinstance(s, dict):
        return []
    out = [f"median {s['median_s'] * 1000:.2f} ms, q1-q3 {s['low_s'] * 1000:.2f}-"
           f"{s['high_s'] * 1000:.2f} ms, stdev {s['cv']:.0%} of the median, "
           f"{s.get('outliers') or 0} of {s.get('iterations')} steps outliers"]
    if s.get("noisy"):
        out += [f"NOISY: {w}" for w in s["warnings"]] + [noise.advice(s)]
    return out


def cost_rows(rep: Report) -> list[list[str]]:
    res = next((r for r in rep.results if r.id == "trial.cost"), None)
    d = (res.details or {}) if res else {}
    rows = []
    for key in ("this", "baseline"):
        x = d.get(key)
        if x:
            rows.append([field(x.get("label") or key), _f(x.get("samples_per_s"), ".1f"),
                         _f(x.get("usd_per_hour"), "g"), _f(x.get("usd_per_1000_samples"), ".4g"),
                         _f(x.get("usd_per_step"), ".3g"), cost_kind(x)])
    cmp_ = d.get("comparison")
    if cmp_:
        rows.append(["ratio (this / baseline)", _f(cmp_.get("throughput_ratio"), ".2f"), "",
                     _f(cmp_.get("cost_ratio"), ".2f"), "", ""])
    return rows


RANK_HEAD = ["rank", "host", "shard", "first step s", "steady step ms", "q1-q3 ms", "spread"]
SPREAD_HEAD = "Step spread (each step as long as its slowest rank)"
COST_HEAD = ["run", "samples/s", "$/h", "$ per 1,000 samples", "$ per step", "kind"]


def _table(head: list[str], rows: list[list[str]]) -> list[str]:
    widths = [max(len(x) for x in col) for col in zip(head, *rows, strict=True)]
    return ["  " + "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip()
            for r in [head, *rows]]


def title(rep: Report) -> str:
    t = rep.target
    emu = " [EMULATED]" if t.get("emulated") else ""
    return field(f"trial {t.get('model')} on {t.get('device')}{emu}: {t.get('world_size')} "
                 f"ranks, {t.get('strategy')}" + (f", {t.get('nnodes')} torchrun agents"
                                                  if (t.get("nnodes") or 1) > 1 else ""))


def render_text(rep: Report, verbose: bool = False, colour: bool = False) -> str:
    from neuron_env.report import text

    body = title(rep) + "\n" + text.render(rep, verbose=verbose, colour=colour)
    head, _, verdict = body.rstrip("\n").rpartition("\n\n")
    extra: list[str] = []
    if rank_rows(rep):
        extra += ["", "Ranks", *_table(RANK_HEAD, rank_rows(rep))]
    if spread_lines(rep):
        extra += ["", SPREAD_HEAD, *("  " + x for x in spread_lines(rep))]
    if cost_rows(rep):
        extra += ["", "Cost" + (f" ({REHEARSAL})" if rep.target.get("emulated") else ""),
                  *_table(COST_HEAD, cost_rows(rep))]
    return "\n".join([head, *extra, "", verdict]) + "\n"


def _md(head: list[str], rows: list[list[str]]) -> list[str]:
    from neuron_env.trial.markup import md

    def row(cells: list[str]) -> str:
        return "| " + " | ".join(md(c) for c in cells) + " |"
    return [row(head), "|" + "---|" * len(head), *(row(r) for r in rows)]


def render_markdown(rep: Report, verbose: bool = False, colour: bool = False) -> str:
    from neuron_env.trial.markup import ICONS, md

    lines = [f"## neuron-env {md(title(rep))}", "", f"**exit {rep.exit_code}**", "",
             "|  | result | summary |", "|---|---|---|"]
    lines += [f"| {ICONS[r.status]} | `{r.id}` | {md(r.summary)} |" for r in rep.results]
    if rank_rows(rep):
        lines += ["", "### Ranks", "", *_md(RANK_HEAD, rank_rows(rep))]
    if spread_lines(rep):
        lines += ["", f"### {SPREAD_HEAD}", "", *(f"- {md(x)}" for x in spread_lines(rep))]
    if cost_rows(rep):
        tag = f" ({REHEARSAL})" if rep.target.get("emulated") else ""
        lines += ["", f"### Cost{md(tag)}", "", *_md(COST_HEAD, cost_rows(rep))]
    fixes = [r for r in rep.results if r.fix and r.status in ("fail", "warn", "error")]
    if fixes:
        lines += ["", "### What to do", ""] + [f"- `{r.id}`: {md(r.fix)}" for r in fixes]
    if rep.target.get("emulated"):
        lines += ["", f"_{REHEARSAL}: every op ran on the CPU._"]
    return "\n".join(lines) + "\n"
