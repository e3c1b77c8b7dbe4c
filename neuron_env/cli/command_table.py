"""Every command and group with the module in neuron_env/cli/ that registers it, in the
order help lists them, and help's panels. Its own module so that cli/app.py and cli/lazy.py
read it without importing the cli package back (tests/unit/test_shape.py: no import circles);
the package re-exports both names."""

COMMANDS = (  # (command or group, its module in neuron_env/cli/), in help (workflow) order
    ("doctor", "doctor"),
    ("install", "install"),
    ("smoke", "smoke"),
    ("trial", "trial"),
    ("scan", "scan"),
    ("collectives", "collectives"),
    ("fleet", "fleet"),
    ("userdata", "bootstrap"),
    ("imagebuilder-component", "bootstrap"),
    ("slurm-healthcheck", "engines"),
    ("k8s-manifests", "engines"),
    ("bundle", "bundle"),
    ("instance", "instance"),
    ("matrix", "matrix"),
)
PANELS = (  # (help panel, its commands): `neuron-env --help` in the order a user needs them
    ("Check, install, run", ("doctor", "install", "smoke", "trial")),
    ("Port and scale out", ("scan", "collectives", "fleet")),
    ("Bootstrap and engines", ("userdata", "imagebuilder-component", "slurm-healthcheck",
                               "k8s-manifests")),
    ("Support and reference", ("bundle", "instance", "matrix")),
)
