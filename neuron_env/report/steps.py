"""doctor's "Next steps": one action per problem, like `flutter doctor`. Checks that share a fix
command share one step; every apt command (the Neuron repository set-up, a missing or wrong
package, a reinstall) merges into ONE `apt-get install` of every package at its pinned version;
the steps run in the order they must: apt, other host changes, install, smoke.

Pure: results -> steps. The JSON keeps every check's own fix; only the text view groups."""

from __future__ import annotations

import re
from collections.abc import Iterable

from neuron_env.report.model import Result
from neuron_env.util.record import record
from neuron_env.util.template import sh
from neuron_env.util.wrap import split_top

ORDER = ("apt", "host", "install", "smoke")
PROBLEMS = ("fail", "warn", "error")
TITLES = {"apt": "install the Neuron apt packages",
          "smoke": "then run the device smoke test in the new environment"}
# the segments of a Neuron apt command: repository set-up, update, install
_SETUP = re.compile(r"^(sudo install -d .*/etc/apt/keyrings|curl -fsSL \S+ \| sudo gpg .*|"
                    r"echo \"deb .* \| sudo tee /etc/apt/sources\.list\.d/\S+ >/dev/null)$")
_UPDATE = "sudo apt-get update"
_INSTALL = re.compile(r"^sudo apt-get install (?P<args>.*)$")


@record
class Step:
    kind: str  # apt | host | install | smoke
    command: str
    ids: tuple[str, ...]  # the checks it fixes
    title: str  # what it does, in prose


def problem_fixes(results: Iterable[Result]) -> list[Result]:
    return [r for r in results if r.status in PROBLEMS and r.fix_command]


def is_apt(command: str) -> bool:
    """Only Neuron repository set-up, `apt-get update` and `apt-get install`."""
    return all(_SETUP.match(s) or s == _UPDATE or _INSTALL.match(s)
               for s in split_top(command, "&&"))


def merge_apt(commands: list[str]) -> str:
    """The apt commands as one: the repository set-up once (when any sets it up), one update,
    then one install of every package named, each at its pin where any command pins it."""
    setup: list[str] = []
    pkgs: dict[str, str] = {}  # name -> the word to install (pinned where any pins)
    flags: list[str] = []
    for c in commands:
        for seg in split_top(c, "&&"):
            if _SETUP.match(seg):
                if seg not in setup:
                    setup.append(seg)
            elif (m := _INSTALL.match(seg)) is not None:
                for word in split_top(m.group("args"), " "):
                    if word.startswith("-"):
                        flags += [] if word in flags else [word]
                        continue
                    name = _unquote(word).split("=")[0]
                    if name not in pkgs or ("=" in word and "=" not in pkgs[name]):
                        pkgs[name] = _requote(word)
    update = [_UPDATE] if setup or any(_UPDATE in split_top(c, "&&") for c in commands) else []
    install = " ".join(["sudo apt-get install", *flags, *pkgs.values()])
    return " && ".join([*setup, *update, install])


def _unquote(word: str) -> str:
    return word.strip("'\"")


def _requote(word: str) -> str:
    """A package word quoted so the shell leaves it alone (`name=1.2*` would be a glob)."""
    plain = _unquote(word)
    if "$(" in plain:
        return f'"{plain}"'
    return sh(plain)


def kind(command: str) -> str:
    if is_apt(command):
        return "apt"
    if "neuron-env install" in command or "-m neuron_env install" in command:
        return "install"
    return "host"


def plan(results: Iterable[Result], smoke: bool = False) -> list[Step]:
    """The steps that fix `results`' problems, in the order they run; `smoke`: end with the
    device smoke test in the environment the install step made (or the target's)."""
    todo = problem_fixes(results)
    apt = [r for r in todo if kind(r.fix_command or "") == "apt"]
    steps: list[Step] = []
    if apt:
        # the command that sets the repository up leads (its packages first)
        cmd = merge_apt(sorted((r.fix_command or "" for r in apt), key=lambda c: not any(
            _SETUP.match(s) for s in split_top(c, "&&"))))
        notes = list(dict.fromkeys(p for r in apt if (p := prose(r))))  # e.g. "in the image"
        # "at the release's versions" only where the command pins one (2.34 states none)
        title = TITLES["apt"] + (" at the release's versions"
                                 if re.search(r"\baws-neuron[\w-]*=", cmd) else "")
        steps.append(Step("apt", cmd, tuple(r.id for r in apt), " ".join([title, *notes])))
    for k in ("host", "install"):
        by_cmd: dict[str, list[Result]] = {}
        for r in todo:
            if kind(r.fix_command or "") == k:
                by_cmd.setdefault(r.fix_command or "", []).append(r)
        steps += [Step(k, cmd, tuple(r.id for r in rs), prose(rs[0]) or k)
                  for cmd, rs in by_cmd.items()]
    if smoke and steps:
        python = _installed_python(steps)
        if python:
            steps.append(Step("smoke", f"neuron-env smoke --python {python}", (),
                              TITLES["smoke"]))
    return steps


def prose(r: Result) -> str:
    """A fix's words without its command (the command stands on its own line)."""
    fix, cmd = r.fix or "", r.fix_command or ""
    if cmd and cmd in fix:
        fix = fix.replace(cmd, "").strip()
    return fix.strip().rstrip(":;,").strip()


def _installed_python(steps: list[Step]) -> str | None:
    """The interpreter the (last) install step leaves: VENV/bin/python, or its --python."""
    for s in reversed(steps):
        if s.kind != "install":
            continue
        words = split_top(s.command.split(" && ")[-1], " ")
        for flag, suffix in (("--venv", "/bin/python"), ("--python", "")):
            if flag in words and words.index(flag) + 1 < len(words):
                return words[words.index(flag) + 1] + suffix
    return None


def step_of(steps: list[Step], result_id: str) -> int | None:
    """1-based number of the step that fixes `result_id`, or None."""
    return next((i for i, s in enumerate(steps, 1) if result_id in s.ids), None)
