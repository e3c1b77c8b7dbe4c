"""The HTML page of a trial report (neuron-env.trial/1), built from its JSON document alone so
every mode (one process, distributed, --collect) gets one: the verdict and every result, where
the device's numbers drift from the CPU's (per module), eager vs compiled time, the CPU
fallbacks by phase, and the cost beside its baseline. Each section reads its fields
defensively: a field a run did not record says "not recorded", never breaks the page."""

from __future__ import annotations

from typing import Any

from neuron_env.report import plots
from neuron_env.report.html_page import badge, checks_table, esc, num, page, plot, table
from neuron_env.report.model import Report

NOT_RECORDED = '<p class="muted">not recorded in this run.</p>'


def _details(report: Report, rid: str) -> dict[str, Any] | None:
    r = next((r for r in report.results if r.id == rid), None)
    return r.details if r is not None and isinstance(r.details, dict) else None


def _module_of(tensor: str) -> str:
    """grad.mlp.0.weight -> mlp.0 (its module); output -> output (not a module's tensor)."""
    head, _, rest = tensor.partition(".")
    if head in ("grad", "param") and rest:
        return rest.rpartition(".")[0] or rest
    return tensor


def _per_module(mismatches: list[Any]) -> list[tuple[str, float]]:
    """The largest abs error per module, over its tensors (gradients, parameters)."""
    worst: dict[str, float] = {}
    for m in mismatches:
        if isinstance(m, dict) and isinstance(m.get("max_abs_error"), int | float):
            mod = _module_of(str(m.get("tensor", "?")))
            worst[mod] = max(worst.get(mod, 0.0), float(m["max_abs_error"]))
    return list(worst.items())


def drift(report: Report) -> str:
    """trial.eager: details.first_divergence {module, module_type, order, modules, why,
    max_abs_error} and details.mismatches [{tensor, max_abs_error, ok}]."""
    d = _details(report, "trial.eager")
    if d is None:
        return "<h2>Where the numbers drift</h2>" + NOT_RECORDED
    out = ["<h2>Where the numbers drift</h2>"]
    div = d.get("first_divergence")
    if d.get("ok") is True:
        out.append(f"<p>Every compared tensor ({esc(d.get('tensors', '?'))}) is within "
                   "tolerance of the CPU reference.</p>")
    if isinstance(div, dict) and div.get("module"):
        order, n = div.get("order"), div.get("modules")
        out.append(f"<p>First module out of tolerance, in execution order: "
                   f"<code>{esc(div['module'])}</code> ({esc(div.get('module_type') or '?')}"
                   f"{f', module {int(order) + 1} of {esc(n)}' if isinstance(order, int) else ''}"
                   f"): {esc(div.get('why', ''))}</p>")
        if isinstance(order, int) and isinstance(n, int) and 0 < n <= 2000:
            cells = "".join(
                f'<span class="s-{"pass" if i < order else "fail" if i == order else "none"}" '
                f'title="module {i + 1}"></span>' for i in range(n))
            out.append(f'<div class="strip" aria-label="modules along the model">{cells}</div>'
                       '<p class="muted">Modules along the model: within tolerance (green), the '
                       "first out of tolerance (red), after it not compared one by one "
                       "(grey).</p>")
    elif isinstance(div, dict):
        out.append(f"<p>The per-module comparison did not run: {esc(div.get('why', ''))}</p>")
    labels, values, hi, title = drift_bars(d)
    if labels:
        out.append(plot(plots.bars, labels, values, title=title, xlabel="max abs error",
                        highlight=hi, salt="drift"))
        out.append(table(("module", "max abs error"), ((f"<code>{esc(m)}</code>", num(e))
                                                        for m, e in zip(labels, values,
                                                                        strict=True)),
                         numeric=(1,)))
    elif d.get("ok") is not True and not isinstance(div, dict):
        out.append(NOT_RECORDED)
    return "".join(out)


def drift_bars(d: dict[str, Any]) -> tuple[list[str], list[float], int | None, str]:
    """(labels, values, highlighted index, title) of the per-module chart. It answers the
    text's question first: the first module out of tolerance (in execution order) is the top
    bar, in red, with its own output's error where its tensors are not among the worst ones;
    then the other modules by their largest error over the whole step (gradients too)."""
    per = _per_module(d.get("mismatches") or [])
    div = d.get("first_divergence")
    first = div.get("module") if isinstance(div, dict) and div.get("module") else None
    if first is not None:
        own = dict(per).get(str(first))
        err = div.get("max_abs_error") if isinstance(div, dict) else None
        value = max(x for x in (own, err, 0.0) if isinstance(x, int | float))
        per = [(str(first), float(value))] + [(m, e) for m, e in per if m != str(first)]
    if not per:
        return [], [], None, ""
    title = "largest abs error vs the CPU per module, over the whole step (outputs, gradients)"
    if first is not None:
        title += f"\nred: {first}, the first module out of tolerance (its output)"
    return [m for m, _ in per], [e for _, e in per], 0 if first is not None else None, title


def timing(report: Report) -> str:
    """target.timing {eager, compiled: {first_call_s, iterations, median_s, min_s, max_s,
    stdev_s}} (else trial.eager/trial.compile details.timing); trial.compile details.speedup;
    trial.shapes details.rows."""
    t = (report.target or {}).get("timing")
    if not isinstance(t, dict) or not t:
        t = {k: d["timing"] for k, rid in (("eager", "trial.eager"), ("compiled", "trial.compile"))
             if isinstance(d := _details(report, rid), dict) and isinstance(d.get("timing"), dict)}
    out = ["<h2>Time: eager vs compiled</h2>"]
    rows = [(str(k), v) for k, v in t.items() if isinstance(v, dict)]
    if not rows:
        out.append(NOT_RECORDED)
    else:
        emu = "EMULATED device (CPU timings): " if _emulated(report) else ""
        out.append(plot(plots.ranges, rows, title=f"{emu}seconds per call: min–max whisker, "
                        "quartile box, median, first call", salt="timing"))
        from neuron_env.report.noise import spread

        boxes = {k: spread(v) or {} for k, v in rows}
        out.append(table(("run", "first call s", "median s", "box from s", "box to s", "min s",
                          "max s", "stdev s", "iterations"),
                         ((esc(k), num(v.get("first_call_s")), num(v.get("median_s")),
                           num(boxes[k].get("low_s")), num(boxes[k].get("high_s")),
                           num(v.get("min_s")), num(v.get("max_s")), num(v.get("stdev_s")),
                           num(v.get("iterations"), "d")) for k, v in rows),
                         numeric=(1, 2, 3, 4, 5, 6, 7, 8)))
        out += _timing_notes(rows)
    shapes = (_details(report, "trial.shapes") or {}).get("rows")
    if isinstance(shapes, list) and shapes:
        out.append("<h3>Shape sweep</h3>" + table(
            ("shape", "compilations", "compile s", "steady s", "error"),
            ((esc("x".join(map(str, r.get("shape") or []))), num(r.get("compilations"), "d"),
              num(r.get("compile_s")), num(r.get("steady_s")), esc(r.get("error") or ""))
             for r in shapes if isinstance(r, dict)), numeric=(1, 2, 3)))
    return "".join(out)


def _timing_notes(rows: list[tuple[str, dict[str, Any]]]) -> list[str]:
    """What one run's spread says (report/noise.py): noisy runs and what to do, and whether
    compiled vs eager is distinguishable at all."""
    from neuron_env.report.noise import advice, speed_words, spread

    out, notes, worst = [], [], None
    for k, v in rows:
        sp = spread(v)
        if sp is not None and sp["noisy"]:
            notes.append(f"{esc(k)} is noisy: {esc('; '.join(sp['warnings']))}")
            worst = worst or sp
    if worst is not None:
        notes.append(esc(advice(worst)))
    if notes:
        out.append('<p class="muted">One run on this machine: ' + " · ".join(notes) + "</p>")
    by = dict(rows)
    words = speed_words(by.get("eager"), by.get("compiled"))
    if words:
        out.append(f"<p>{esc(words)} (eager median ÷ compiled median, judged against the "
                   "spread of both runs).</p>")
    return out


def fallbacks(report: Report) -> str:
    """trial.fallback details.phases {phase: {ops, counts}} (else details.ops/counts, the eager
    forward and backward), trial.compile details.fallback_ops."""
    out = ["<h2>CPU fallbacks by phase</h2>"]
    d = _details(report, "trial.fallback")
    phases: dict[str, dict[str, Any]] = {}
    if d is not None and isinstance(d.get("phases"), dict):
        phases = {str(k): v for k, v in d["phases"].items() if isinstance(v, dict)}
    elif d is not None and isinstance(d.get("ops"), list):
        phases["eager (forward and backward)"] = {"ops": d["ops"], "counts": d.get("counts")}
    comp = (_details(report, "trial.compile") or {}).get("fallback_ops")
    if isinstance(comp, list) and "compile" not in phases:
        phases["compile"] = {"ops": comp}
    if not phases:
        return "".join(out) + NOT_RECORDED
    rows = []
    for phase, v in phases.items():
        c, o = v.get("counts"), v.get("ops")
        counts: dict[str, Any] = c if isinstance(c, dict) else {}
        ops: list[Any] = o if isinstance(o, list) else []
        listed = ", ".join(f"<code>{esc(o)}</code>"
                           + (f" ×{esc(counts[o])}" if counts.get(o) else "") for o in ops)
        if not reached(report, phase):
            rows.append((esc(phase), '<span class="badge s-skip">not reached</span>',
                         '<span class="muted">the phase did not complete (see its result above)'
                         + (f"; before it stopped: {listed}" if listed else "") + "</span>"))
            continue
        rows.append((esc(phase), badge("warn" if ops else "pass"),
                     listed or '<span class="muted">none: every op ran on the device</span>'))
    return "".join(out) + table(("phase", "", "ops that fell back to the CPU"), rows)


def reached(report: Report, phase: str) -> bool:
    """Whether a phase ran to its end: the compile phase only when trial.compile recorded its
    timed run (a compile that failed stopped before it). A phase that did not complete is never
    a pass. (The eager phases are recorded as each completes.)"""
    if phase != "compile":
        return True
    c = next((r for r in report.results if r.id == "trial.compile"), None)
    return c is not None and isinstance((c.details or {}).get("timing"), dict)


def _emulated(report: Report) -> bool:
    return bool((report.target or {}).get("emulated") or report.extra.get("emulated"))


def _figures(x: Any) -> dict[str, Any] | None:
    return x if isinstance(x, dict) and "usd_per_1000_samples" in x else None


def cost(report: Report) -> str:
    """trial.cost details {price, this, baseline, comparison: {throughput_ratio, cost_ratio,
    line}}: this run beside its baseline."""
    out = ["<h2>Cost</h2>"]
    d = _details(report, "trial.cost")
    this = _figures((d or {}).get("this"))
    if this is None:
        return "".join(out) + NOT_RECORDED
    runs = [("this run", this)]
    if (base := _figures((d or {}).get("baseline"))) is not None:
        runs.append(("baseline", base))
    from neuron_env.report.verdict import cost_kind as kind

    fields = (("label", "label", None), ("instance type", "instance_type", None),
              ("samples/s", "samples_per_s", ".4g"), ("USD/hour", "usd_per_hour", ".4g"),
              ("USD per 1,000 samples", "usd_per_1000_samples", ".4g"),
              ("USD per step", "usd_per_step", ".3g"))
    out.append(table(("", *(esc(n) for n, _ in runs)),
                     [*((esc(name), *((num(f.get(key), fmt) if fmt else esc(f.get(key) or "–"))
                                      for _, f in runs)) for name, key, fmt in fields),
                      ("what it is", *(esc(kind(f)) for _, f in runs))],
                     numeric=tuple(range(1, len(runs) + 1))))
    per = [(n, f["usd_per_1000_samples"]) for n, f in runs
           if isinstance(f.get("usd_per_1000_samples"), int | float)]
    if len(per) > 1:
        kinds = [kind(f) for _, f in runs]
        tag = "" if all(k == "measured" for k in kinds) else \
            f"NOT A MEASUREMENT of the instances priced ({'; '.join(kinds)}): "
        out.append(plot(plots.bars, [n for n, _ in per], [v for _, v in per],
                        title=f"{tag}USD per 1,000 samples", xlabel="USD", salt="cost"))
    elif _emulated(report):
        out.append('<p><b>REHEARSAL on the emulated device: CPU throughput and a price; not '
                   "a Trainium result.</b></p>")
    comp = (d or {}).get("comparison")
    if isinstance(comp, dict) and comp.get("line"):
        out.append(f"<p>{esc(comp['line'])}</p>")
    price = (d or {}).get("price")
    if isinstance(price, dict):
        out.append(f'<p class="muted">price: {esc(price.get("usd_per_hour"))} USD/hour from '
                   f'{esc(price.get("source"))} ({esc(price.get("region"))})'
                   f'{"; " + esc(price["note"]) if price.get("note") else ""}</p>')
    return "".join(out)


def ranks(report: Report) -> str:
    """trial.distributed details.ranks [{rank, host, first_step_s, step_s}] and throughput."""
    d = _details(report, "trial.distributed") or {}
    rows = d.get("ranks")
    if not isinstance(rows, list) or not rows:
        return ""
    out = ["<h2>Ranks</h2>", table(
        ("rank", "host", "first step s", "step s", "q1-q3 s", "spread"),
        ((num(r.get("rank"), "d"), esc(r.get("host") or "–"), num(r.get("first_step_s")),
          num(r.get("step_s")), *_rank_box(r.get("spread")))
         for r in rows if isinstance(r, dict)), numeric=(0, 2, 3))]
    thr = d.get("throughput")
    if isinstance(thr, dict):
        out.append(f"<p>{num(thr.get('samples_per_s'))} samples/s over "
                   f"{esc(d.get('world_size'))} ranks; one rank alone "
                   f"{num(thr.get('one_rank_samples_per_s'))}; scaling efficiency "
                   f"{num(thr.get('scaling_efficiency'), '.2f')}</p>")
        sp = thr.get("spread")
        if isinstance(sp, dict):  # #49 section 4: each step as long as its slowest rank
            out.append(f"<p>step spread: median {num(sp.get('median_s'))} s, q1-q3 "
                       f"{num(sp.get('low_s'))}-{num(sp.get('high_s'))} s"
                       + (f"; <b>NOISY</b>: {esc('; '.join(map(str, sp.get('warnings') or [])))}"
                          if sp.get("noisy") else "") + "</p>")
    return "".join(out)


def _rank_box(sp: Any) -> tuple[str, str]:
    """(q1-q3, steady/NOISY) cells of a rank's step spread; dashes for a rank without one."""
    if not isinstance(sp, dict):
        return "–", "–"
    return (f"{num(sp.get('low_s'))}-{num(sp.get('high_s'))}",
            "<b>NOISY</b>" if sp.get("noisy") else "steady")


def render(report: Report) -> str:
    t = report.target or {}
    s = report.summary
    ok = report.exit_code == 0
    emulated = bool(t.get("emulated") or report.extra.get("emulated"))
    counts = ", ".join(f"{s[k]} {k}" for k in ("pass", "warn", "fail", "skip", "error") if s[k])
    head = (f"<h1>neuron-env trial: <code>{esc(t.get('model', '?'))}</code> "
            f'<span class="verdict s-{"pass" if ok else "fail"}">'
            f"{'PASS' if ok else esc(f'FAIL (exit {report.exit_code})')}</span></h1>"
            f"<p>{esc(t.get('device', '?'))}, {esc(t.get('dtype', '?'))}"
            f"{', autocast' if t.get('autocast') else ''}"
            + (f", {esc(t['world_size'])} ranks ({esc(t.get('strategy', '?'))})"
               if t.get("world_size") else "")
            + f"; {esc(counts or 'no results')}"
            + ("; <b>EMULATED device, not Trainium</b>" if emulated else "") + "</p>")
    body = (head + "<h2>Results</h2>" + checks_table(report.results) + drift(report)
            + timing(report) + fallbacks(report) + cost(report) + ranks(report))
    return page(f"neuron-env trial: {t.get('model', '?')}", body)
