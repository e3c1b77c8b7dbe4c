"""THE one place that starts a target Python (the user's interpreter, never neuron-env's own).

Every command that runs code in the target comes here: doctor's probe, install (``-m venv``,
``-m pip``, the verify probe), smoke, trial, collectives, bundle. Nothing else builds an argv
that starts with the target's path (tests/unit/test_target_shape.py checks it).

How a target starts (``launch``)
--------------------------------
- through the subprocess funnel (guards/proc.py): its own session and process group, a timeout
  that holds for grandchildren, the whole group killed on timeout, Ctrl-C or exit;
- with an absolute interpreter path (a relative ``--python`` is resolved first, the cwd then
  changes);
- in one of two modes, chosen per use:

  ``TOOL`` (doctor's probe, install's venv/pip/verify, bundle's ``pip list``, the device count)
      ``python -I -X utf8``: isolated (no PYTHON* variables, no user site, neither the cwd nor
      the script's folder on sys.path), UTF-8 standard streams; cwd ``/``. A ``json.py``,
      ``pip.py`` or ``venv.py`` in the caller's directory or on PYTHONPATH is never imported.
  ``WORKLOAD`` (smoke, trial, collectives ranks)
      ``python SCRIPT``: the caller's environment is kept (NEURON_RT_*, PYTHONPATH, XLA and
      torch settings are the workload's business), PYTHONIOENCODING=utf-8 and
      PYTHONUNBUFFERED=1 added; sys.path[0] is neuron_env/inside (the script's folder), never
      the cwd; the cwd is a fresh private temporary directory (0700), so nothing in the
      caller's directory shadows a module. Trial alone keeps the caller's cwd: its MODEL
      (``module:callable``, ``path/model.py:callable``) is named relative to it, by contract.
      A module (trial's torchrun agents) runs through ``inside/run_module.py``, never
      ``python -m`` (which puts the cwd first on sys.path): neither the cwd nor that folder is
      on its sys.path.

The protocol (``protocol``), spoken by every script in neuron_env/inside/
---------------------------------------------------------------------------
- stdout: ONE JSON document between two ``@@NEURON_ENV_JSON@@`` markers (the last pair wins;
  anything else on stdout is ignored);
- stderr: ``@@STEP name@@`` on a line of its own when a step starts (names: ``[^@\\n]+``, e.g.
  ``import``, ``matmul``, ``all_reduce:1048576``); collectives add ``@@CALL@@`` (the rank
  entered the collective after its last step) and ``@@ERROR@@`` + traceback;
- the last step announced says where a run hung or died (``start-up`` before the first).

Outcomes (``outcome``)
----------------------
A finished run is a ``TargetRun``: its Results, whether the target is emulated, an info dict,
the elapsed time. A run without a document is one Result that says why: ``timed out`` (the
whole group was killed), ``could not start``, ``crashed (signal N)`` or ``gave no result``.
"""
