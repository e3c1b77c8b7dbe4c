"""doctor's screen, pure parts: the next steps (one action per problem, apt merged, in run
order) and the fitting of text to a terminal (hanging indent, no word split, commands that
paste back whole)."""

from __future__ import annotations

import re

from neuron_env.report import doctor_text, steps, text
from neuron_env.report.model import Report, Result
from neuron_env.util import wrap

SETUP = ("sudo install -d -m 0755 /etc/apt/keyrings && curl -fsSL https://apt.example/K.PUB | "
         "sudo gpg --dearmor --yes -o /etc/apt/keyrings/neuron.gpg && echo \"deb "
         "[signed-by=/etc/apt/keyrings/neuron.gpg]\" https://apt.example noble main | sudo tee "
         "/etc/apt/sources.list.d/neuron.list >/dev/null && sudo apt-get update")
DRIVER = (SETUP + " && sudo apt-get install -y \"linux-headers-$(uname -r)\" 'a-dkms=1.0*' "
          "'a-coll=2.0*' 'a-tools=3.0*'")
INSTALL = "neuron-env install --venv ~/v --python /usr/bin/python3.12"


def fail(id_: str, cmd: str | None, fix: str | None = None, status: str = "fail") -> Result:
    return Result(id_, id_.split(".")[0], status, f"{id_} is wrong", fix=fix or cmd,
                  fix_command=cmd)


def bare_host() -> list[Result]:
    return [
        fail("python.version", INSTALL, f"no Python 3.12 here: {INSTALL}"),
        fail("backend.torch", INSTALL, f"no Python 3.12 here: {INSTALL}"),
        fail("backend.pairing", INSTALL, f"no Python 3.12 here: {INSTALL}"),
        fail("backend.collectives", "sudo apt-get install -y a-coll=2.0*"),
        fail("driver.module", DRIVER),
        fail("driver.packages", DRIVER, status="warn"),
        fail("tools.path", "sudo apt-get install -y 'a-tools'"),
        fail("net.efa", None, "launch with EFA interfaces", status="warn"),
        fail("driver.devices", "sudo modprobe neuron"),
    ]


def test_apt_commands_merge_into_one_install_at_the_pins():
    merged = steps.merge_apt(["sudo apt-get install -y a-coll=2.0*", DRIVER,
                              "sudo apt-get install -y --reinstall 'a-tools'"])
    assert merged.count("sudo apt-get install") == 1 and merged.count("apt-get update") == 1
    assert merged.count("gpg --dearmor") == 1
    install = merged.split(" && ")[-1]
    assert install == ("sudo apt-get install -y --reinstall 'a-coll=2.0*' "
                       "\"linux-headers-$(uname -r)\" 'a-dkms=1.0*' 'a-tools=3.0*'")


def test_steps_group_identical_fixes_and_run_apt_then_host_then_install_then_smoke():
    plan = steps.plan(bare_host(), smoke=True)
    assert [s.kind for s in plan] == ["apt", "host", "install", "smoke"]
    assert plan[0].ids == ("backend.collectives", "driver.module", "driver.packages",
                           "tools.path")
    assert plan[2].ids == ("python.version", "backend.torch", "backend.pairing")
    assert plan[2].command == INSTALL and plan[2].title == "no Python 3.12 here"
    assert plan[3].command == "neuron-env smoke --python ~/v/bin/python"
    assert steps.step_of(plan, "backend.torch") == 3 and steps.step_of(plan, "net.efa") is None


def report(results: list[Result]) -> Report:
    return Report(schema="neuron-env.doctor/1", tool={}, matrix=None, target={},
                  results=tuple(results), exit_code=1, view=doctor_text.render)


def test_text_prints_each_command_once_and_numbered_next_steps():
    out = wrap.fit(doctor_text.render(report(bare_host())), None)
    assert out.count(INSTALL) == 1 and out.count("a-coll=2.0*") == 1
    assert out.count("sudo modprobe neuron") == 1 and out.count("no Python 3.12 here") == 1
    assert "fix: next step 3 below" in out
    tail = out[out.index("Next steps:"):]
    assert re.findall(r"^  (\d)\. ", tail, re.M) == ["1", "2", "3", "4"]
    assert wrap.CMD not in out


def test_a_fix_without_a_command_stays_under_its_check_once():
    rs = [fail("net.efa", None, "launch with EFA"), fail("net.other", None, "launch with EFA")]
    out = doctor_text.render(report(rs))
    assert out.count("launch with EFA") == 1 and "fix: as for net.efa" in out
    assert "Next steps" not in out


LINE = ("    ✗ Python 3.11.2 at /usr/bin/python3 (not a venv, chosen by --python) is outside "
        ">=3.12,<3.15  (python.version)")


def test_wrap_hangs_under_the_bullet_and_never_splits_a_word():
    lines = wrap.wrap_line(LINE, 60)
    assert all(len(ln) <= 60 for ln in lines) and len(lines) == 2
    assert lines[1].startswith("      ") and not lines[1].startswith("       ")
    assert " ".join(ln.strip() for ln in lines) == LINE.strip()
    assert "(python.version)" in lines[-1]


def test_wrap_keeps_a_word_wider_than_the_line_whole_and_in_place():
    url = "https://example.com/" + "x" * 90
    assert wrap.wrap_line(f"        docs: {url}", 80) == [f"        docs: {url}"]


def test_wrap_ignores_colour_codes_when_measuring():
    line = "    \x1b[31m✗\x1b[0m " + "word " * 14 + "(id.x)"
    lines = wrap.wrap_line(line, 60)
    assert all(wrap.visible(ln) <= 60 for ln in lines) and lines[1].startswith("      w")


def unfold(lines: list[str]) -> str:
    """What a shell reads: backslash-newline removed."""
    return re.sub(r" \\\n *", " ", "\n".join(lines)).strip()


def test_a_long_command_is_cut_into_lines_that_paste_back_as_the_same_command():
    lines = wrap.command_lines(DRIVER, "     ", 80)
    assert len(lines) > 3 and all(len(ln) <= 80 for ln in lines)
    assert all(ln.endswith(" \\") for ln in lines[:-1])
    assert unfold(lines) == DRIVER
    # never inside quotes or $( )
    assert any('"linux-headers-$(uname -r)"' in ln for ln in lines)


def test_fit_without_a_width_keeps_one_line_per_item():
    s = f"    ✗ {'long ' * 40}(x.y)\n     {wrap.CMD}{DRIVER}\n"
    assert wrap.fit(s, None) == s.replace(wrap.CMD, "")


def test_split_top_respects_quotes_and_groups():
    cmd = "a && b 'x && y' && { c && d; } && \"e && f\""
    assert wrap.split_top(cmd, "&&") == ["a", "b 'x && y'", "{ c && d; }", "\"e && f\""]


def test_only_reports_are_fitted_never_a_document_s_artifact():
    from neuron_env.report.model import Document
    from neuron_env.report.render import render as render_any

    script = "#!/bin/sh\n" + "echo " + "word " * 40 + "\n"
    doc = Document({"exit_code": 0}, lambda body: script)
    assert render_any(doc, "text", width=40) == script
    rep = report([fail("python.version", None, "word " * 30)])
    assert max(map(len, render_any(rep, "text", width=40).splitlines())) <= 40


def test_a_quoted_command_in_prose_is_never_cut():
    cmd = "`neuron-env install --backend emulated --venv ~/neuron-rehearsal`"
    lines = wrap.wrap_line(f"        fix: cannot install here; to rehearse, {cmd}, then go on", 60)
    assert any(cmd in ln for ln in lines)
    assert " ".join(ln.strip() for ln in lines).endswith(f"{cmd}, then go on")
    odd = "        fix: a ` lone backtick " + "word " * 12
    assert " ".join(x.strip() for x in wrap.wrap_line(odd, 40)) == odd.strip()


def test_the_generic_text_view_knows_nothing_of_doctor():
    """doctor's own lines (the rehearsal lead, the fixes run, the smoke step) live in its view,
    report/doctor_text.py; report/text.py names no doctor at all."""
    from pathlib import Path

    source = Path(text.__file__).read_text(encoding="utf-8")
    assert "doctor" not in source.lower() and "REHEARS" not in source
    assert not {"rehearsal_lead", "fixes_run"} & set(vars(text))
    rs = bare_host()
    assert "neuron-env smoke" not in text.render(report(rs))  # only doctor's steps end so
    assert "neuron-env smoke" in doctor_text.render(report(rs))


def test_any_report_that_says_where_its_matrix_came_from_shows_the_matrix_line():
    """install's plan prints it too (not only doctor): the generic view's footer."""
    m = {"release": "2.99", "origin": "user", "path": "/home/u/neuron-2.99.toml"}
    rep = Report(schema="neuron-env.install/1", tool={}, matrix=m, target={},
                 results=(), exit_code=0)
    out = text.render(rep).splitlines()
    assert out[-3:] == ["matrix: Neuron 2.99 (user)", "  /home/u/neuron-2.99.toml",
                        "OK: no checks (against Neuron 2.99; exit 0)"]
