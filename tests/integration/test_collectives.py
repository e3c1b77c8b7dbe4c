"""`neuron-env collectives` end to end: real ranks of real torch 2.13.0 (gloo on the CPU),
exact results, nccl-tests' bandwidth definitions, injected faults named, no rank left behind,
and the same test under torchrun and under Slurm-style variables."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from neuron_env.collectives import launch
from neuron_env.collectives.options import CollectivesOptions
from neuron_env.collectives.runner import free_port
from neuron_env.errors import UsageError
from tests.helpers.cli import REPO, cli_env, run_cli

pytestmark = pytest.mark.integration
SCHEMA = json.loads((REPO / "neuron_env/schemas/collectives.schema.json").read_text())
FACTOR = {"all_reduce": lambda n: 2 * (n - 1) / n, "all_gather": lambda n: (n - 1) / n,
          "reduce_scatter": lambda n: (n - 1) / n, "all_to_all": lambda n: (n - 1) / n,
          "broadcast": lambda n: 1, "send_recv": lambda n: 1}


def coll(torch_python, *args, fault=None, timeout=240):
    env = cli_env(NEURON_ENV_COLLECTIVES_FAULT=fault) if fault else cli_env()
    p = run_cli("collectives", "--python", torch_python, "--device", "cpu", "--format", "json",
                "--iterations", "2", *args, env=env, timeout=timeout)
    doc = json.loads(p.stdout)
    jsonschema.validate(doc, SCHEMA)
    assert doc["exit_code"] == p.returncode, p.stderr
    return doc, {r["id"]: r for r in doc["results"]}


def gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return Path(f"/proc/{pid}/status").read_text().find("zombie") >= 0


def test_two_ranks_every_op_exact_with_nccl_tests_bandwidths(torch_python):
    doc, r = coll(torch_python, "--sizes", "8B,64K,1M")
    assert doc["exit_code"] == 0 and doc["target"]["world_size"] == 2
    assert doc["target"]["backend"] == "gloo" and doc["target"]["emulated"] is False
    ops = sorted(x for x in r if x != "collectives.launch")
    assert ops == sorted(f"collectives.{o}" for o in FACTOR)
    assert len(doc["rows"]) == 6 * 3
    for row in doc["rows"]:
        assert row["wrong"] == 0
        algbw = row["size_bytes"] / (row["time_us"] * 1e-6) / 1e9
        assert row["algbw_gbps"] == pytest.approx(algbw, rel=1e-6)
        assert row["busbw_gbps"] == pytest.approx(algbw * FACTOR[row["op"]](2), rel=1e-6)
    text = run_cli("collectives", "--python", torch_python, "--device", "cpu", "--ops",
                   "all_reduce", "--sizes", "1K", "--iterations", "1").stdout
    assert "busbw GB/s" in text and "collectives.all_reduce" in text


def neuron_coll(torch_python, world, *args, fault=None):
    """`collectives --device neuron` on the emulator: one emulated device per rank."""
    env = cli_env(NEURON_EMULATOR_DEVICES=str(world), NEURON_ENV_COLLECTIVES_FAULT=fault)
    p = run_cli("collectives", "--python", torch_python, "--device", "neuron", "--format",
                "json", "--iterations", "2", *args, env=env, timeout=300)
    doc = json.loads(p.stdout)
    jsonschema.validate(doc, SCHEMA)
    assert doc["exit_code"] == p.returncode, p.stderr
    return doc, {r["id"]: r for r in doc["results"]}


@pytest.mark.parametrize("world", [2, 4])
def test_every_op_on_the_emulated_neuron_device_and_its_backend(torch_python, world):
    doc, r = neuron_coll(torch_python, world, "--sizes", "8B,1000B,64K")
    assert doc["exit_code"] == 0, doc["results"]
    t = doc["target"]
    assert (t["device"], t["backend"], t["world_size"], t["emulated"]) == ("neuron", "neuron",
                                                                          world, True)
    assert sorted(x for x in r if x != "collectives.launch") == sorted(
        f"collectives.{o}" for o in FACTOR)
    for row in doc["rows"]:
        assert row.get("wrong", 0) == 0, row  # a skipped row (too small) has none
        if "skipped" not in row:
            assert row["busbw_gbps"] == pytest.approx(row["algbw_gbps"] *
                                                      FACTOR[row["op"]](world), rel=1e-6)


def test_a_corrupted_rank_on_the_emulated_device_is_named(torch_python):
    doc, r = neuron_coll(torch_python, 2, "--ops", "all_gather", "--sizes", "4K",
                         fault="corrupt:1")
    assert doc["exit_code"] == 1
    assert "data from rank 1 arrived wrong" in r["collectives.all_gather"]["summary"]


def test_doctor_smoke_collectives_adds_one_all_reduce_result(torch_python, tmp_path):
    from tests.helpers import roots

    root = roots.trn2_host(tmp_path / "r")
    args = ["doctor", "--root", str(root), "--python", torch_python, "--only",
            "smoke,collectives", "--format", "json"]
    p = run_cli(*args, "--smoke", "--collectives", env=cli_env(NEURON_EMULATOR_DEVICES="2"),
                timeout=300)
    doc = json.loads(p.stdout)
    assert [r["id"] for r in doc["results"]] == ["smoke.device", "collectives.all_reduce"]
    res = doc["results"][1]
    assert res["status"] == "pass" and p.returncode == 0, res
    assert res["details"]["world_size"] == 2 and res["details"]["backend"] == "neuron"
    assert res["summary"].startswith("2 ranks (neuron): ")
    assert {row["size_bytes"] for row in res["details"]["rows"]} == {8, 64 << 10, 1 << 20}
    p = run_cli(*args, "--collectives")
    assert p.returncode == 2 and "add --smoke" in p.stdout + p.stderr


def test_four_ranks_sizes_that_do_not_divide_evenly(torch_python):
    doc, r = coll(torch_python, "--world-size", "4", "--ops", "all_gather,reduce_scatter,"
                  "all_to_all,send_recv", "--sizes", "8B,1000B", "--dtype", "int32")
    assert doc["exit_code"] == 0, r
    by = {(x["op"], x["size_bytes"]): x for x in doc["rows"]}
    # 1000 B of int32 = 250 elements: 62 per rank, as nccl-tests rounds (count/n)*n
    assert by[("all_gather", 992)]["count"] == 248 and by[("all_gather", 992)]["wrong"] == 0
    assert by[("send_recv", 1000)]["count"] == 250
    assert "skipped" in by[("all_to_all", 0)]  # 8 B = 2 elements: less than one per rank
    assert "size(s) too small" in r["collectives.all_to_all"]["summary"]


def test_a_corrupted_contribution_is_detected_and_its_rank_named(torch_python):
    doc, r = coll(torch_python, "--ops", "all_reduce,all_gather", "--sizes", "8B,4K",
                  fault="corrupt:1")
    assert doc["exit_code"] == 1
    assert r["collectives.all_reduce"]["status"] == "fail"
    assert "data from rank 1 arrived wrong" in r["collectives.all_gather"]["summary"]
    assert all(x["wrong"] > 0 for x in doc["rows"])


def test_a_hanging_rank_is_named_and_every_rank_killed(torch_python):
    doc, r = coll(torch_python, "--ops", "all_reduce", "--sizes", "8B", "--timeout", "20",
                  fault="hang:1")
    launch_ = r["collectives.launch"]
    assert doc["exit_code"] == 4 and launch_["timed_out"]
    assert "rank 1 never entered all_reduce at 8 B; rank 0 waited inside it" in \
        launch_["summary"]
    assert all(gone(x["pid"]) for x in launch_["details"]["ranks"])


def test_a_crashing_rank_is_named_and_the_others_stopped(torch_python):
    doc, r = coll(torch_python, "--ops", "broadcast", "--sizes", "8B", "--timeout", "120",
                  fault="crash:1")
    launch_ = r["collectives.launch"]
    assert doc["exit_code"] == 1 and launch_["summary"].startswith("rank 1 died (exit 17)")
    assert doc["elapsed_s"] < 100  # stopped after the grace, not at the timeout
    assert all(gone(x["pid"]) for x in launch_["details"]["ranks"])


def test_bad_input_is_exit_2_with_json(torch_python):
    for args in (["--sizes", "lots"], ["--ops", "allreduce"], ["--timeout", "nan"]):
        doc, _ = coll(torch_python, *args)
        assert doc["exit_code"] == 2 and doc["error"]["code"] == "usage"


def test_printed_launch_lines_parse_in_bash():
    """What --print-launch prints is pasted into a shell: bash must parse every line as is (an
    apostrophe in the HEAD_ADDR message once opened a quote that never closed)."""
    o = CollectivesOptions(device="cpu", ops=("all_reduce",), sizes=(8,), iterations=1,
                           timeout=60)
    for kind in ("torchrun", "srun"):
        text = launch.render(kind, "neuron-env", "/venv/bin/python", o, 2, 8)
        # the whole text, and each line on its own (a user pastes the one they need; two
        # stray quotes on two lines would pair up in the whole text and hide the problem)
        for chunk in (text, *text.splitlines()):
            p = subprocess.run(["bash", "-n"], input=chunk, capture_output=True, text=True,
                               timeout=30)
            assert p.returncode == 0, (kind, p.stderr, chunk)


def test_under_torchrun_rank_0_reports_for_every_rank(torch_python, tmp_path):
    torchrun = Path(torch_python).with_name("torchrun")
    ne = shutil.which("neuron-env", path=str(Path(sys.executable).parent))
    o = CollectivesOptions(device="cpu", ops=("all_reduce", "send_recv"), sizes=(8, 4096),
                           iterations=1, timeout=120)
    line = launch.render("torchrun", ne, torch_python, o, 1, 2).splitlines()[-1]
    line = line.replace("${HEAD_ADDR:?set HEAD_ADDR to the address of the first node}:29500",
                        f"127.0.0.1:{free_port()}") + " --format json"
    assert line.startswith("torchrun ")
    p = subprocess.run(str(torchrun) + line[len("torchrun"):], shell=True, capture_output=True,
                       text=True, timeout=240, env=cli_env(), cwd=tmp_path)
    doc = json.loads(p.stdout)  # one document: rank 1 spoke on stderr
    assert p.returncode == 0, p.stderr[-2000:]
    assert doc["target"]["world_size"] == 2 and len(doc["rows"]) == 4
    assert all(x["wrong"] == 0 for x in doc["rows"])


def test_under_slurm_variables(torch_python):
    port = str(free_port())
    procs = [subprocess.Popen(
        [sys.executable, "-m", "neuron_env", "collectives", "--launched", "--python",
         torch_python, "--device", "cpu", "--ops", "all_gather", "--sizes", "64B",
         "--iterations", "1", "--format", "json", "--timeout", "120"],
        env=cli_env(SLURM_PROCID=str(i), SLURM_NTASKS="2", SLURM_LOCALID=str(i),
                    MASTER_ADDR="127.0.0.1", MASTER_PORT=port),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO) for i in (0, 1)]
    outs = [p.communicate(timeout=240) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs[0][1][-1500:]
    doc = json.loads(outs[0][0])
    assert outs[1][0] == "" and doc["rows"][0]["wrong"] == 0 and doc["rows"][0]["count"] == 16
@pytest.mark.parametrize("kind", launch.KINDS)
def test_launch_lines_are_valid_shell_and_carry_the_rendezvous(kind):
    o = CollectivesOptions(device="neuron", sizes=(8, 1 << 20), ops=("all_reduce",))
    text = launch.render(kind, "/opt/ne/bin/neuron-env", "/opt/venv/bin/python", o, 4, 64)
    assert "NEURON_RT_ROOT_COMM_ID=" in text and "FI_PROVIDER=efa" in text
    assert "collectives --launched --device neuron --ops all_reduce --sizes 8B,1048576B" in text
    assert "--python /opt/venv/bin/python" in text
    if kind == "torchrun":
        assert "--nnodes=4 --nproc-per-node=64 --rdzv-backend=c10d" in text
    else:
        assert "#SBATCH --nodes=4" in text and "srun --kill-on-bad-exit=1" in text
    bash = shutil.which("bash")
    assert subprocess.run([bash, "-n"], input=text, text=True).returncode == 0
    with pytest.raises(UsageError):
        launch.render("mpirun", "ne", None, o, 2, None)
