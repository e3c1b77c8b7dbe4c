"""Real models on the emulated device: tiny Hugging Face GPT-2 / BERT / Llama (configs built
in code, nothing downloaded) and hand-written blocks, compiled with backend="neuron" or run
under neuron autocast, each compared with the same model on the CPU. Needs `transformers` in
the target venv for the HF cases (the hf_python fixture). One process, JSON out, as
scenarios.py."""

import warnings

from scenarios import SCENARIOS, main, scenario

SCENARIOS.clear()


def _hf_compile(model, ids):
    """Forward and backward, eager on the CPU vs compiled (backend="neuron") on the device."""
    import neuron_emulator
    import torch

    model.eval()  # dropout off: both sides compute the same function
    ref = model(input_ids=ids, labels=ids)
    ref.loss.backward()
    grads = {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}
    model.zero_grad(set_to_none=True)
    dev = model.to("neuron")
    compiled = torch.compile(dev, backend="neuron", dynamic=False)
    neuron_emulator.clear_fallback_ops()
    out = compiled(input_ids=ids.to("neuron"), labels=ids.to("neuron"))
    out.loss.backward()
    assert out.logits.device.type == "neuron"
    assert torch.allclose(ref.logits, out.logits.cpu(), atol=1e-4, rtol=1e-4)
    assert torch.allclose(ref.loss, out.loss.cpu(), atol=1e-5)
    bad = [n for n, g in grads.items()
           if not torch.allclose(g, dev.get_parameter(n).grad.cpu(), atol=1e-4, rtol=1e-3)]
    assert grads and not bad, f"gradients differ from the CPU's: {bad}"
    assert neuron_emulator.get_fallback_ops() == [], neuron_emulator.get_fallback_ops()


@scenario
def factory_on_input_device_compiles():
    import torch

    def f(x):
        return x + torch.arange(4, device=x.device).float() + torch.tensor([1.0], device=x.device)

    x = torch.randn(4)
    for backend in ("aot_eager", "neuron"):
        torch._dynamo.reset()
        for dev in ("neuron", "neuron:0"):
            y = torch.compile(f, backend=backend)(x.to(dev))
            assert y.device == torch.device("neuron:0") and torch.allclose(y.cpu(), f(x))


@scenario
def hf_gpt2_compiles_forward_and_backward():
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    cfg = GPT2Config(n_layer=2, n_embd=64, n_head=2, vocab_size=128, n_positions=32,
                     bos_token_id=0, eos_token_id=0)
    _hf_compile(GPT2LMHeadModel(cfg), torch.randint(0, 128, (2, 16)))


@scenario
def hf_bert_compiles_forward_and_backward():
    import torch
    from transformers import BertConfig, BertForMaskedLM

    torch.manual_seed(0)
    cfg = BertConfig(num_hidden_layers=2, hidden_size=64, num_attention_heads=2,
                     intermediate_size=128, vocab_size=128, max_position_embeddings=32)
    _hf_compile(BertForMaskedLM(cfg), torch.randint(0, 128, (2, 16)))


def _dtypes_under_autocast(model, inputs, device):
    """Every torch-level call's output dtypes under torch.autocast(device, bfloat16)."""
    import torch
    from torch.overrides import TorchFunctionMode

    log = []

    class Record(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            outs = out if isinstance(out, (tuple, list)) else [out]
            log.append((getattr(func, "__name__", str(func)),
                        tuple(o.dtype for o in outs if isinstance(o, torch.Tensor))))
            return out

    model = model.to(device)
    inputs = {k: v.to(device) for k, v in inputs.items()}
    with torch.autocast(device, dtype=torch.bfloat16), Record():
        out = model(**inputs)
    out = out if isinstance(out, torch.Tensor) else out.logits
    out.float().sum().backward()
    return log, out


def _compare_autocast(model, inputs):
    import copy

    import torch

    cpu_log, cpu_out = _dtypes_under_autocast(copy.deepcopy(model), inputs, "cpu")
    dev_log, dev_out = _dtypes_under_autocast(model, inputs, "neuron")
    assert len(cpu_log) == len(dev_log), (len(cpu_log), len(dev_log))
    diff = [(i, a, b) for i, (a, b) in enumerate(zip(cpu_log, dev_log, strict=True)) if a != b]
    assert not diff, f"op dtypes differ from CPU autocast: {diff[:5]}"
    assert any(name == "scaled_dot_product_attention" for name, _ in cpu_log)
    assert dev_out.dtype == cpu_out.dtype
    assert torch.allclose(cpu_out.float(), dev_out.cpu().float(), atol=5e-2, rtol=5e-2)


@scenario
def llama_style_block_under_autocast_matches_cpu():
    """RMSNorm + rotary-scaled q/k (float32) + SDPA + gated MLP: under bf16 autocast SDPA gets
    float32 q/k and bfloat16 v, which only the autocast policy's SDPA entry reconciles."""
    import torch
    import torch.nn.functional as F
    from torch import nn

    class RMSNorm(nn.Module):
        def __init__(self, d):
            super().__init__()
            self.w = nn.Parameter(torch.ones(d))

        def forward(self, x):
            x32 = x.float()
            return self.w * (x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + 1e-6))

    class Block(nn.Module):
        def __init__(self, d=32, h=4, t=8):
            super().__init__()
            self.h = h
            self.n1, self.n2 = RMSNorm(d), RMSNorm(d)
            self.qkv = nn.Linear(d, 3 * d, bias=False)
            self.o = nn.Linear(d, d, bias=False)
            self.up, self.gate = nn.Linear(d, 64, bias=False), nn.Linear(d, 64, bias=False)
            self.down = nn.Linear(64, d, bias=False)
            self.register_buffer("cos", torch.cos(torch.arange(t * d // h).float()).view(
                t, d // h))

        def forward(self, x):
            b, t, d = x.shape
            q, k, v = self.qkv(self.n1(x)).split(d, -1)
            q, k, v = (z.view(b, t, self.h, d // self.h).transpose(1, 2) for z in (q, k, v))
            q, k = q * self.cos, k * self.cos  # float32 "rotary" factors, as Llama's
            a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.o(a.transpose(1, 2).reshape(b, t, d))
            y = self.n2(x)
            return x + self.down(F.silu(self.gate(y)) * self.up(y))

    torch.manual_seed(0)
    _compare_autocast(Block(), {"x": torch.randn(2, 8, 32)})


@scenario
def hf_llama_under_autocast_matches_cpu():
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    cfg = LlamaConfig(num_hidden_layers=2, hidden_size=64, num_attention_heads=4,
                      num_key_value_heads=2, intermediate_size=128, vocab_size=128,
                      max_position_embeddings=32, attn_implementation="sdpa")
    _compare_autocast(LlamaForCausalLM(cfg), {"input_ids": torch.randint(0, 128, (2, 16))})


def _resnet_block():
    from torch import nn

    class BasicBlock(nn.Module):
        def __init__(self, c):
            super().__init__()
            self.conv1, self.bn1 = nn.Conv2d(c, c, 3, padding=1, bias=False), nn.BatchNorm2d(c)
            self.conv2, self.bn2 = nn.Conv2d(c, c, 3, padding=1, bias=False), nn.BatchNorm2d(c)
            self.relu = nn.ReLU()

        def forward(self, x):
            y = self.relu(self.bn1(self.conv1(x)))
            return self.relu(self.bn2(self.conv2(y)) + x)

    class TinyResNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1, bias=False),
                                      nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2))
            self.block = BasicBlock(8)
            self.head = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 10),
                                      nn.Hardswish(), nn.Hardsigmoid())

        def forward(self, x):
            return self.head(self.block(self.stem(x)))

    return TinyResNet()


@scenario
def resnet_block_compiles_with_documented_coverage():
    import neuron_emulator
    import torch

    torch.manual_seed(0)
    model = _resnet_block()
    x = torch.randn(2, 3, 16, 16)
    ref = model(x)
    ref.sum().backward()
    grads = {n: p.grad.clone() for n, p in model.named_parameters()}
    model.zero_grad(set_to_none=True)
    # train mode: batch statistics and running-stat updates, as a training step has them
    for m in model.modules():
        if isinstance(m, torch.nn.BatchNorm2d):
            m.reset_running_stats()
    dev = model.to("neuron")
    neuron_emulator.clear_fallback_ops()
    out = torch.compile(dev, backend="neuron", dynamic=False)(x.to("neuron"))
    out.sum().backward()
    assert neuron_emulator.get_fallback_ops() == [], neuron_emulator.get_fallback_ops()
    assert torch.allclose(ref, out.cpu(), atol=1e-5)
    bad = [n for n, g in grads.items()
           if not torch.allclose(g, dev.get_parameter(n).grad.cpu(), atol=1e-4, rtol=1e-3)]
    assert not bad, bad
    # eager too: no documented op falls back
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        dev(x.to("neuron")).sum().backward()
        torch.sin(x.to("neuron")).cos().tril().all()
    assert neuron_emulator.get_fallback_ops() == [], neuron_emulator.get_fallback_ops()


if __name__ == "__main__":
    main()
