"""scan: an indexed XLA device maps to the same neuron index; --list-rules fits 80 columns
(a URL, which cannot be cut, apart)."""

from __future__ import annotations

from neuron_env.commands import scan as cmd


def test_xla_device_with_an_index_maps_to_that_neuron_index(tmp_path):
    f = tmp_path / "m.py"
    f.write_text("import torch_xla.core.xla_model as xm\n"
                 "a = xm.xla_device(n=1)\nb = xm.xla_device(2)\nc = xm.xla_device()\n"
                 "d = xm.xla_device(n=k)\n")
    cmd.run([str(f)], mode="fix", exit_zero=True)
    text = f.read_text()
    assert 'a = torch.device("neuron:1")' in text and 'b = torch.device("neuron:2")' in text
    assert 'c = torch.device("neuron")' in text
    assert "d = xm.xla_device(n=k)" in text  # a computed index is the reader's to carry


def test_list_rules_fits_80_columns():
    doc = cmd.list_rules(None, [], [], "text")
    text = doc.view(doc.body)
    wide = [ln for ln in text.splitlines() if len(ln) > 80]
    assert all(ln.strip().startswith("https://") and " " not in ln.strip() for ln in wide), wide
    assert sum(1 for ln in text.splitlines() if ln.startswith("  -> ")) == len(doc.body["rules"])
