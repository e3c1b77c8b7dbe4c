"""The device smoke test: run inside/smoke.py in the target, in its own process group."""
