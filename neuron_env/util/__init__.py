"""Small shared helpers: records, package names, versions, wrapping, templates, progress lines
(the invariants they lean on live in neuron_env/guards/)."""
