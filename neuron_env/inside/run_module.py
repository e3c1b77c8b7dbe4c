# Runs inside the TARGET interpreter: stdlib only. `python run_module.py MODULE ARGS...` runs
# MODULE as `python -m MODULE ARGS...` would, except that neither the current directory nor
# this folder is on sys.path: `python -m` puts the cwd first, so a `json.py` there would run
# inside the module (trial's torchrun agents: `torch.distributed.run`). `-P` (Python 3.11+)
# does the same, but a Python 3.10 target refuses it. The caller's environment (PYTHONPATH,
# user site) is kept: a workload's business.
import os
import runpy
import sys


def main():
    here = os.path.realpath(os.path.dirname(os.path.abspath(__file__)))
    if sys.path and os.path.realpath(sys.path[0] or os.curdir) == here:
        del sys.path[0]  # `python SCRIPT` put this folder first (unless -P/PYTHONSAFEPATH)
    if len(sys.argv) < 2:
        sys.stderr.write("usage: run_module.py MODULE [ARGS...]\n")
        sys.exit(2)
    module = sys.argv[1]
    sys.argv = sys.argv[1:]  # argv[0] becomes the module's file, as under -m
    runpy.run_module(module, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
