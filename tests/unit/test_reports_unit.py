"""Pure parts of the reports work: waivers, --wait's loop, --fix's choice, JUnit/markdown."""

from __future__ import annotations

import datetime as dt
import xml.etree.ElementTree as ET

import pytest

from neuron_env.checks import waivers
from neuron_env.commands import doctor, doctor_fix
from neuron_env.errors import UsageError
from neuron_env.report import junit, markdown
from neuron_env.report.model import Report, Result
from neuron_env.util.record import replace

TODAY = dt.date(2026, 12, 3)


def rep(*results, code=1, strict=False):
    return Report("neuron-env.doctor/1", {"name": "neuron-env", "version": "0"},
                  {"release": "2.33"}, {}, tuple(results), code, extra={"strict": strict})


def test_waiver_flags_need_a_reason_and_a_date():
    with pytest.raises(UsageError, match="--reason"):
        waivers.from_flags(["driver"], [], [])
    with pytest.raises(UsageError, match="not a date"):
        waivers.from_flags(["driver"], ["why"], ["tomorrow"])
    ws = waivers.from_flags(["a.b", "c"], ["one reason"], ["2026-12-31"])
    assert [w.reason for w in ws] == ["one reason"] * 2 and ws[1].until == dt.date(2026, 12, 31)


def test_waiver_applies_until_its_date_then_expires():
    r = Result("driver.packages", "driver", "fail", "missing")
    w = waivers.Waiver("driver", "pinned", dt.date(2026, 12, 31))
    (out,), records = waivers.apply([r], [w], TODAY)
    assert out.status == "skip" and out.waiver["status"] == "fail" and not out.waiver["expired"]
    (out,), records = waivers.apply([r], [w], dt.date(2027, 1, 1))
    assert out.status == "fail" and "WAIVER EXPIRED" in out.summary and records[0]["expired"]
    ok = Result("driver.packages", "driver", "pass", "fine")
    (out,), records = waivers.apply([ok], [w], TODAY)
    assert out is ok and records[0]["applied_to"] == []


def test_wait_retries_until_pass_and_records_attempts(monkeypatch):
    seq = [rep(Result("driver.module", "driver", "fail", "loading")),
           rep(Result("driver.module", "driver", "fail", "loading")),
           rep(Result("driver.module", "driver", "pass", "ok"), code=0)]
    monkeypatch.setattr(doctor, "run", lambda opts, started=None: seq.pop(0))
    slept = []
    out = doctor.run_waiting(doctor.DoctorOptions(wait=60), sleep=slept.append)
    assert out.exit_code == 0 and len(out.extra["wait"]["attempts"]) == 3
    assert out.extra["wait"]["attempts"][0]["failing"] == ["driver.module"]
    assert slept == [doctor.WAIT_INTERVAL] * 2


def test_fix_runs_only_safe_commands_once_and_only_when_confirmed(monkeypatch):
    report = rep(Result("backend.torch", "backend", "fail", "x", fix_command="neuron-env "
                        "install --python /p", fix_safe=True),
                 Result("backend.pairing", "backend", "fail", "y", fix_command="neuron-env "
                        "install --python /p", fix_safe=True),
                 Result("driver.module", "driver", "fail", "z", fix_command="sudo modprobe "
                        "neuron"))
    ran = []
    monkeypatch.setattr(doctor_fix.proc, "run", lambda argv, timeout: ran.append(argv) or
                        type("C", (), {"returncode": 0, "tail": lambda self, n=0: ""})())
    done = doctor_fix.apply(report, lambda cmds: False, print)
    assert ran == [] and not any(d["ran"] for d in done)
    done = doctor_fix.apply(report, lambda cmds: True, print)
    assert len(ran) == 1 and ran[0][-1].endswith("install --python /p")
    assert {d["id"]: d["ran"] for d in done} == {"driver.module": False, "backend.torch": True}


def test_junit_counts_strict_warnings_as_failures_even_beside_failures():
    r = rep(Result("a.b", "os", "warn", "w", duration_s=0.5),
            Result("c.d", "os", "fail", "f"), strict=True)
    suite = ET.fromstring(junit.render(r)).find("testsuite")
    assert suite.get("failures") == "2"
    assert suite.find("testcase").get("time") == "0.500000"


def test_markdown_escapes_pipes_and_fences_the_command():
    text = markdown.render(rep(Result("a.b", "os", "fail", "a | b", fix="do it",
                                      fix_command="echo hi")))
    assert "a \\| b" in text and "```sh\necho hi\n```" in text and "- fix: do it" in text


def test_own_venv_first_on_path_gets_a_new_venv_not_torch_in_neuron_envs_own():

    from neuron_env import checks
    from neuron_env.matrix import catalog
    from tests.helpers.facts import host, target

    facts = replace(host(tgt=target({})), pythons=(("/usr/bin/python3.12", "3.12"),))
    ctx = checks.Context(own_prefix="/venv")  # the target IS neuron-env's own venv
    r = checks.run_checks(facts, catalog.select("2.33"), ctx, ["backend.torch"])[0]
    assert "neuron-env's own environment" in r.fix
    assert r.fix_command == ("neuron-env install --venv ~/neuron-venv --python "
                             "/usr/bin/python3.12")


def test_a_fix_the_planner_would_refuse_is_never_printed():
    from neuron_env import checks
    from neuron_env.matrix import catalog
    from tests.helpers.facts import host, target

    facts = host(os_version="22.04", tgt=target({}))  # install refuses end-of-support 22.04
    r = checks.run_checks(facts, catalog.select("2.33"), checks.Context(), ["backend.torch"])[0]
    assert r.fix_command is None and "cannot install here" in r.fix


def test_time_at_the_install_prompt_is_not_install_time(monkeypatch):
    import io

    from neuron_env.commands import install

    class TTY(io.StringIO):
        def isatty(self):
            return True

    clock = iter([100.0, 130.0])
    monkeypatch.setattr(install.time, "monotonic", lambda: next(clock))
    monkeypatch.setattr(install.sys, "stdin", TTY("y\n"))
    monkeypatch.setattr(install.sys, "stderr", TTY())
    assert install._confirm("plan\n", install.InstallOptions()) == 30.0
    assert install._confirm("plan\n", install.InstallOptions(yes=True)) == 0.0
