"""A fix marked safe is one `install` accepts: every safe `neuron-env install …` fix, on hosts
the matrix lists and hosts it does not, goes through install's own planner (make_plan) with the
host's OS and architecture and the interpreter the fix names; none may be refused."""

from __future__ import annotations

import shlex

import pytest

from neuron_env import checks
from neuron_env.errors import ResolutionError
from neuron_env.install.plan import Inputs, make_plan
from neuron_env.matrix import catalog
from neuron_env.util.record import replace
from tests.helpers.facts import host, target

M = catalog.select(None)
CTX = checks.Context(python_flag="/venv/bin/python")
OLD = target({}, "3.11.7")  # outside the matrix's Python range: the fix makes a new venv
BARE = target({}, "3.12.4")  # in range, nothing installed: the fix installs into it
FOUND = (("/usr/bin/python3.12", "3.12"), ("/usr/bin/python3.13", "3.13"))


def plain_os():
    e = next(e for e in M.os if e.status == "supported" and not e.disputed_status)
    return e.id, e.version


HOSTS = {
    "listed OS": lambda t: host(os_id=plain_os()[0], os_version=plain_os()[1], tgt=t),
    "unlisted OS": lambda t: host(os_id="debian", os_version="12", tgt=t),
    "amazon linux": lambda t: host(os_id="amzn", os_version="2023", tgt=t),
    "arm64": lambda t: host(arch="aarch64", tgt=t),
}


def safe_installs(facts):
    for r in checks.run_checks(facts, M, CTX, checks.all_ids()):
        if r.fix_safe and r.fix_command and "neuron-env install" in r.fix_command:
            yield r


def planned(facts, command: str) -> None:
    argv = shlex.split(command)
    opt = {a: argv[i + 1] for i, a in enumerate(argv[:-1]) if a.startswith("--")}
    python = opt.get("--python", facts.target.path)
    version = dict(facts.pythons).get(python) or facts.target.version
    make_plan(M, Inputs(python=python, python_version=f"{version}.0"[:len("3.12.0")]
                        if version.count(".") == 1 else version, prefix="",
                        os_id=facts.os.id, os_version=facts.os.version_id, arch=facts.arch,
                        torch=opt.get("--torch")))


@pytest.mark.parametrize("where", list(HOSTS))
@pytest.mark.parametrize("tgt", [OLD, BARE], ids=["old python", "bare venv"])
def test_every_safe_install_fix_is_one_install_accepts(where, tgt):
    facts = replace(HOSTS[where](tgt), pythons=FOUND)
    for r in safe_installs(facts):
        try:
            planned(facts, r.fix_command)
        except ResolutionError as e:
            pytest.fail(f"{where}: {r.id}'s safe fix `{r.fix_command}` is refused by install: "
                        f"{e.message}")


def test_an_unlisted_os_gets_no_install_fix_but_how_to_rehearse():
    facts = replace(HOSTS["unlisted OS"](OLD), pythons=FOUND)
    r = checks.run_checks(facts, M, CTX, ["python.version"])[0]
    assert r.fix_command is None and not r.fix_safe
    assert "cannot install" in r.fix and "--backend emulated" in r.fix


def test_a_listed_os_keeps_its_safe_install_fix():
    facts = replace(HOSTS["listed OS"](OLD), pythons=FOUND)
    r = checks.run_checks(facts, M, CTX, ["python.version"])[0]
    assert r.fix_safe and "--python /usr/bin/python3.13" in (r.fix_command or "")
