"""`neuron-env install`: probe -> plan (pure) -> [dry run | execute] -> Report."""

from __future__ import annotations

import shlex
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from neuron_env.commands import TOOL
from neuron_env.errors import (
    ConfigurationError,
    InterpreterError,
    NeuronEnvError,
    ResolutionError,
    UsageError,
)
from neuron_env.guards import redact
from neuron_env.install import installers, noop
from neuron_env.install.plan import Inputs, make_plan
from neuron_env.install.steps import Progress
from neuron_env.matrix import catalog
from neuron_env.matrix.model import python_range
from neuron_env.matrix.overrides import index_overrides, refuse_plain_http
from neuron_env.probes.host import make_root
from neuron_env.report.model import Report, Result, exit_code
from neuron_env.util.record import replace

SCHEMA = "neuron-env.install/1"
# doctor's backend checks that judge an installed (or already up-to-date) target, per backend
VERIFY_CHECKS = {"neuron": ["backend.torch", "backend.pairing", "backend.origin",
                            "backend.tools", "backend.emulator"],
                 "emulated": ["backend.torch", "backend.origin", "backend.emulator"]}


@dataclass(frozen=True)
class InstallOptions:
    matrix: str | None = None
    python: str | None = None
    root: str | None = None
    torch: str | None = None
    backend: str = "neuron"
    venv: str | None = None
    installer: str | None = None
    find_links: tuple[str, ...] = ()
    offline: bool = False
    dry_run: bool = False
    force: bool = False
    yes: bool = False
    neuron_index_url: str | None = None
    pytorch_index_url: str | None = None
    timeout: float = 1800.0
    lock_timeout: float = 900.0
    quiet: bool = False
    with_: tuple[str, ...] = ()  # --with torchvision,torchaudio: the matching companions


def _overrides(m, opts: InstallOptions) -> dict[str, tuple[str, str]]:
    flags = {"neuron": opts.neuron_index_url, "pytorch-cpu": opts.pytorch_index_url}
    out = {k: (url.rstrip("/"), by) for k, (url, by) in index_overrides(m, flags).items()}
    refuse_plain_http(m, out)
    return out


def _find_links(opts: InstallOptions) -> tuple[str, ...]:
    out = []
    for d in opts.find_links:
        p = Path(d).expanduser()
        if not p.is_dir():
            raise UsageError(f"--find-links {d}: no such directory",
                             hint="pass a directory of wheels (a wheelhouse)")
        out.append(str(p.resolve()))
    if opts.offline and not out:
        raise UsageError("--offline needs --find-links DIR (a wheelhouse to install from)",
                         hint="pip download the plan's wheels into DIR on a connected host")
    return tuple(out)


def _target(opts: InstallOptions, progress: Progress) -> tuple[str, str | None]:
    """(python, venv to create). With --venv: DIR's python, or the base python to make it."""
    from neuron_env.install import venv
    from neuron_env.probes.interpreter import resolve_target
    from neuron_env.target_python.launch import interpreter

    if not opts.venv:  # absolute: the children run in /, not in the caller's directory
        return interpreter(resolve_target(opts.python)[0]), None
    d = Path(opts.venv).expanduser().absolute()
    py = venv.existing(d)
    if py:
        return py, None
    return interpreter(resolve_target(opts.python)[0]), str(d)


def _confirm(plan_text: str, opts: InstallOptions) -> float:
    """Ask on a TTY; the seconds spent at the prompt (elapsed_s leaves them out)."""
    if opts.yes or opts.dry_run or not (sys.stdin.isatty() and sys.stderr.isatty()):
        return 0.0
    start = time.monotonic()
    sys.stderr.write(plan_text + "Proceed? [y/N] ")
    sys.stderr.flush()
    if sys.stdin.readline().strip().lower() not in ("y", "yes"):
        raise UsageError("install cancelled at the prompt", hint="--yes skips the prompt")
    return time.monotonic() - start


def _validate(opts: InstallOptions) -> None:
    if opts.torch is not None and not opts.torch.strip():
        raise UsageError("--torch is empty", hint="use --torch 2.14 or --torch 2.13")


def _check_root(opts: InstallOptions) -> None:
    if opts.root is not None and not Path(opts.root).is_dir():
        raise ConfigurationError(f"--root {opts.root}: no such directory",
                                 hint="pass the mount point of the image (or a fixture root)")


def _probe(opts: InstallOptions, python: str, matrix):
    from neuron_env.probes.facts import gather

    facts = gather(make_root(opts.root), python, None, want_neuron_ls=False)
    if not facts.target.usable:
        raise InterpreterError(f"cannot install into {python}: {facts.target.error}",
                               hint=f"pass --python with a Python {python_range(matrix)} "
                                    "interpreter")
    return facts


def _plan(opts: InstallOptions, matrix, facts, python: str, create: str | None, find_links):
    t = facts.target
    inputs = Inputs(python=python if not create else str(Path(create) / "bin" / "python"),
                    python_version=t.version, prefix=create or t.prefix, os_id=facts.os.id,
                    os_version=facts.os.version_id, arch=facts.arch,
                    installed={} if create else {k: d.version for k, d in t.dists.items()},
                    torch=opts.torch, backend=opts.backend, force=opts.force,
                    overrides=_overrides(matrix, opts), find_links=find_links,
                    offline=opts.offline, companions=opts.with_)
    return make_plan(matrix, inputs)


def run(opts: InstallOptions, progress: Progress | None = None) -> Report:
    """validate -> load matrix -> probe (once) -> plan -> [dry run | no-op | execute]."""
    t0 = time.monotonic()
    progress = progress or Progress(quiet=opts.quiet)
    _validate(opts)
    matrix = catalog.select(opts.matrix)
    _check_root(opts)
    find_links = _find_links(opts)
    python, create = _target(opts, progress)
    facts = _probe(opts, python, matrix)
    plan = _plan(opts, matrix, facts, python, create, find_links)
    results = [_plan_result(plan, create)]
    extra = {"dry_run": opts.dry_run, "plan": plan.serialize(), "venv_created": None,
             "status": "planned", "packages": [], "steps": [], "log": None, "manifest": None}
    if opts.dry_run:
        inst = installers.choose(opts.installer, plan.python, True)
        extra["installer"] = inst.serialize() if inst else None
        extra["commands"] = _commands(plan, inst, create)
        return _report(matrix, facts, results, extra, t0)
    why = None if create else noop.up_to_date(plan, facts.target)
    if why:  # the no-op: nothing imported of resolution, the target probed once
        progress.say(f"Nothing to do: {why}")
        results += [noop.nothing_to_do(why),
                    *_judge(opts.python or python, opts.matrix)(plan, matrix, facts)]
        extra.update(status="unchanged", manifest=facts.target.manifest_path)
        return _report(matrix, facts, results, extra, t0)
    waited = _confirm(plan_text(plan, create), opts)  # time at the prompt is not install time
    t0 += waited
    progress.pause(waited)
    return _execute(opts, matrix, facts, plan, python, create, results, extra, progress, t0)


def _judge(python_flag: str | None, matrix_flag: str | None):
    """doctor's backend checks on the target, for install/ (which sits below checks/)."""
    def judge(plan, m, facts) -> list[Result]:
        from neuron_env import checks

        ctx = checks.Context(python_flag=python_flag, matrix_flag=matrix_flag,
                             index_overrides={i.name: i.url for i in plan.indexes
                                              if i.overridden_by})
        return checks.run_checks(facts, m, ctx, VERIFY_CHECKS[plan.backend])
    return judge


def _execute(opts, matrix, facts, plan, python, create, results, extra, progress, t0):
    from neuron_env.install import emulator_wheel
    from neuron_env.install.execute import execute
    from neuron_env.install.run_state import ExecOptions

    made_dir = False
    if create:
        from neuron_env.install import venv
        from neuron_env.probes.facts import gather

        made_dir = not Path(create).exists()
        progress.say(f"Creating the venv {create} with {python}")
        python = venv.create(Path(create), python)
        extra["venv_created"] = create
        facts = replace(facts, target=gather(make_root(opts.root), python, None,
                                             want_neuron_ls=False).target)
    try:
        out = execute(plan, matrix, facts,
                      ExecOptions(installer=opts.installer, timeout=opts.timeout,
                                  lock_timeout=opts.lock_timeout, python_flag=opts.python
                                  or python, matrix_flag=opts.matrix,
                                  judge=_judge(opts.python or python, opts.matrix)),
                      progress, bundled_builder=emulator_wheel.build)
    except (NeuronEnvError, KeyboardInterrupt) as e:
        _undo_created(create, made_dir, e, progress)
        if isinstance(e, ResolutionError):
            _say_reachable(e, plan)
        raise
    results += out.results
    extra.update(status=out.status, packages=out.packages, log=out.log,
                 manifest=out.manifest, steps=[s.serialize() for s in out.steps])
    return _report(matrix, out.facts or facts, results, extra, t0)


def _undo_created(create: str | None, made_dir: bool, e: BaseException,
                  progress: Progress) -> None:
    """A venv this run created and could not fill is removed (never half a venv left)."""
    if not create:
        return
    from neuron_env.install import venv

    kept = _keep_logs(Path(create))  # the logs lived in the venv: keep them outside it
    venv.remove(Path(create), made_dir)
    progress.say(f"Removed the venv {create} this run created (the install did not finish)"
                 + "".join(f"; its log is kept: {new}" for new in kept.values()))
    if isinstance(e, NeuronEnvError):
        for old, new in kept.items():
            e.message = e.message.replace(old, new)
            e.hint = e.hint.replace(old, new) if e.hint else e.hint
        e.message += f" (the new venv {create} was removed)"


def _keep_logs(venv_dir: Path) -> dict[str, str]:
    """Move the install logs out of a venv about to be removed, into neuron-env's cache
    (logs/); old path -> new path."""
    import shutil
    import tempfile

    from neuron_env.matrix.cache import directory

    src = venv_dir / ".neuron-env" / "logs"
    cache = directory()
    dest = (cache.parent if cache else Path(tempfile.gettempdir()) / "neuron-env") / "logs"
    kept = {}
    for log in sorted(src.glob("*.log")) if src.is_dir() else []:
        try:
            dest.mkdir(parents=True, exist_ok=True, mode=0o700)
            new = dest / log.name
            shutil.copyfile(log, new)
            kept[str(log)] = str(new)
        except OSError:
            continue
    return kept


def _say_reachable(e: ResolutionError, plan) -> None:
    """A resolution that failed says which torch versions the local sources offer."""
    import sys

    from neuron_env.install.reachable import pip_configured, torch_hint

    local = [i.url for i in plan.indexes if i.url.startswith("file:")]
    configured = pip_configured(prefix=sys.prefix) if not plan.find_links else ([], [])
    e.hint = "; ".join(h for h in (e.hint, torch_hint(plan.find_links, local,
                                                       str(plan.pair.torch), configured)) if h)


def _report(matrix, facts, results, extra, t0) -> Report:
    extra["elapsed_s"] = round(time.monotonic() - t0, 3)
    extra["emulated"] = extra["plan"]["backend"] == "emulated"
    return Report(schema=SCHEMA, tool=TOOL,
                  matrix=catalog.provenance(matrix),
                  target=facts.serialize(), results=tuple(results),
                  exit_code=exit_code(results), extra=extra, view=render_text)


def _plan_result(plan, create) -> Result:
    reqs = ", ".join(r.spec for r in plan.requirements)
    where = f"new venv {create}" if create else plan.prefix
    if plan.forced:
        return Result("install.plan", "install", "warn",
                      f"FORCED (--force, unsupported): {plan.forced[0]}"
                      + (f" (+{len(plan.forced) - 1} more)" if len(plan.forced) > 1 else ""),
                      observed=reqs, details={"forced": list(plan.forced),
                                              "warnings": list(plan.warnings)})
    if plan.warnings:
        return Result("install.plan", "install", "warn",
                      f"{plan.backend} backend, torch {plan.pair.torch} into {where}; "
                      f"{plan.warnings[0]}", observed=reqs,
                      details={"warnings": list(plan.warnings)})
    return Result("install.plan", "install", "pass",
                  f"{plan.backend} backend, torch {plan.pair.torch} into {where}: {reqs}",
                  observed=reqs)


def _commands(plan, inst, create) -> list[str]:
    """What a run would execute, for people reading --dry-run."""
    q = shlex.join
    cmds = []
    if create:
        cmds.append(q([plan.python.rsplit("/bin/", 1)[0], "(created with -m venv)"]))
    by_index: dict[str, list[str]] = {}
    for r in plan.requirements:
        if r.index and r.source == "index":
            by_index.setdefault(r.index, []).append(r.spec)
    for name, reqs in by_index.items():
        src = installers.sources(plan.index(name).url, [], plan.find_links, plan.offline)
        cmds.append(q(installers.resolve_cmd(inst, "REPORT.json", reqs, src, True)))
    src = installers.sources(None, [i.url for i in plan.indexes], plan.find_links, plan.offline)
    cmds.append(q(installers.resolve_cmd(inst, "REPORT.json", ["<pinned by URL>", "..."], src,
                                         False)))
    cmds.append(q(installers.install_cmd(inst, plan.python, "LOCK.txt", True)))
    cmds.append(q(installers.check_cmd(inst)))
    return cmds


def plan_text(plan, create=None) -> str:
    """The plan as the prompt shows it: the same lines as the report's text view."""
    lines = _plan_lines(plan.serialize())
    if create:
        lines.insert(1, f"  environment: {create} (new venv)")
    return redact.text("\n".join(lines) + "\n")


def _plan_lines(p: dict) -> list[str]:
    head = [f"Install plan (Neuron {p['release']}, {p['backend']} backend, plan {p['key']}):",
            f"  python: {p['python']['path']} ({p['python']['version']}), prefix "
            f"{p['python']['prefix']}"]
    for r in p["requirements"]:
        src = (f"from the {r['index']} index" if r["index"] else
               "bundled with neuron-env" if r["source"] == "bundled" else "any index")
        head.append(f"    {r['requirement']:<28} {src}")
    for i in p["indexes"]:
        over = f" (from {i['overridden_by']})" if i["overridden_by"] else ""
        head.append(f"  index {i['name']}: {i['url']}{over}")
    for f in p["forced"]:
        head.append(f"  !! FORCED: {f}")
    return head


def render_text(rep: Report, verbose: bool = False, colour: bool = False) -> str:
    from neuron_env.report import text

    x = rep.extra
    head = _plan_lines(x["plan"])
    if x.get("dry_run"):
        head.append("  dry run: nothing was changed. A run would execute:")
        head += [f"    {c}" for c in x.get("commands") or []]
    for pk in x.get("packages") or []:
        if pk.get("origin") not in ("present",):
            head.append(f"  + {pk['name']} {pk['version']}  ({pk.get('origin')}"
                        f"{': ' + pk['index_url'] if pk.get('index_url') else ''})")
    if x.get("log"):
        head.append(f"  log: {x['log']}")
    if x.get("manifest"):
        head.append(f"  manifest: {x['manifest']}")
    return redact.text("\n".join(head) + "\n\n" + text.render(rep, verbose=verbose,
                                                                colour=colour))
