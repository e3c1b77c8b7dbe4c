"""Real models that issue 37/40 found failing on the emulated device (tiny Hugging Face configs
built in code, nothing downloaded), each compared with the same model on the CPU. One process,
JSON out, as scenarios.py; needs `transformers` (the hf_python fixture)."""

import warnings

from scenarios import SCENARIOS, main, scenario

SCENARIOS.clear()
warnings.simplefilter("ignore")


def _same(model_cls, cfg, inputs: dict, compile_: bool = False, out_key: str = "logits"):
    """The model's output on the device (eager, or compiled with backend="neuron") equals the
    CPU's; returns the device model."""
    import torch

    torch.manual_seed(0)
    model = model_cls(cfg).eval()
    with torch.no_grad():
        ref = getattr(model(**inputs), out_key)
        dev = model.to("neuron")
        run = torch.compile(dev, backend="neuron", dynamic=False) if compile_ else dev
        got = getattr(run(**{k: v.to("neuron") for k, v in inputs.items()}), out_key)
    assert got.device.type == "neuron", got.device
    torch.testing.assert_close(got.cpu(), ref, atol=1e-4, rtol=1e-4)
    return dev


def _moe(model_cls, cfg):
    """Item 15: MoE routing calls histc on an int tensor on the device."""
    import neuron_emulator
    import torch

    neuron_emulator.clear_fallback_ops()
    ids = torch.randint(0, cfg.vocab_size, (2, 8))
    _same(model_cls, cfg, {"input_ids": ids})
    assert neuron_emulator.get_executed_ops().get("aten::histc"), "histc did not run"
    assert "aten::histc" not in neuron_emulator.get_fallback_ops()


@scenario
def hf_mixtral_runs_on_the_device():
    """Item 15 (Mixtral). https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/reference/api/supported-operators.html"""
    from transformers import MixtralConfig, MixtralForCausalLM

    _moe(MixtralForCausalLM, MixtralConfig(
        vocab_size=64, hidden_size=32, intermediate_size=48, num_hidden_layers=1,
        num_attention_heads=4, num_key_value_heads=2, num_local_experts=4,
        num_experts_per_tok=2, max_position_embeddings=32))


@scenario
def hf_qwen2_moe_runs_on_the_device():
    """Item 15 (Qwen2-MoE). https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/reference/api/supported-operators.html"""
    from transformers import Qwen2MoeConfig, Qwen2MoeForCausalLM

    _moe(Qwen2MoeForCausalLM, Qwen2MoeConfig(
        vocab_size=64, hidden_size=32, intermediate_size=48, moe_intermediate_size=16,
        shared_expert_intermediate_size=16, num_hidden_layers=1, num_attention_heads=4,
        num_key_value_heads=2, num_experts=4, num_experts_per_tok=2,
        max_position_embeddings=32))


@scenario
def hf_beit_runs_on_the_device():
    """Item 14: BEiT indexes its relative-position table with a CPU index tensor.
    https://docs.pytorch.org/docs/stable/generated/torch.Tensor.index_put_.html"""
    import torch
    from transformers import BeitConfig, BeitForImageClassification

    cfg = BeitConfig(image_size=16, patch_size=4, num_channels=3, hidden_size=32,
                     num_hidden_layers=1, num_attention_heads=2, intermediate_size=48,
                     use_relative_position_bias=True, num_labels=3)
    _same(BeitForImageClassification, cfg, {"pixel_values": torch.randn(2, 3, 16, 16)})


@scenario
def hf_mistral_sliding_window_compiles():
    """Also (issue 40): Mistral's sliding-window mask builds a tensor inside forward and moves it
    to the device, under torch.compile(backend="neuron").
    https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/compile/reference-torch-compile.html"""
    import torch
    from transformers import MistralConfig, MistralForCausalLM

    cfg = MistralConfig(vocab_size=64, hidden_size=32, intermediate_size=48,
                        num_hidden_layers=1, num_attention_heads=4, num_key_value_heads=2,
                        max_position_embeddings=32, sliding_window=4)
    _same(MistralForCausalLM, cfg, {"input_ids": torch.randint(0, 64, (2, 8))}, compile_=True)


@scenario
def hf_deberta_v2_compiles():
    """Also (issue 40): DeBERTa-v2's relative positions call torch.tensor(mid - 1) inside
    forward, under torch.compile(backend="neuron").
    https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/compile/reference-torch-compile.html"""
    import torch
    from transformers import DebertaV2Config, DebertaV2ForMaskedLM

    cfg = DebertaV2Config(vocab_size=64, hidden_size=32, intermediate_size=48,
                          num_hidden_layers=1, num_attention_heads=2, max_position_embeddings=32,
                          relative_attention=True, position_buckets=8,
                          pos_att_type=["p2c", "c2p"])
    _same(DebertaV2ForMaskedLM, cfg, {"input_ids": torch.randint(0, 64, (2, 8))}, compile_=True)


@scenario
def hf_whisper_generates_on_the_device():
    """Also (issue 40): Whisper's generate reads device tensors with .tolist()/.item().
    https://docs.pytorch.org/docs/stable/generated/torch.Tensor.tolist.html"""
    import torch
    from transformers import WhisperConfig, WhisperForConditionalGeneration

    cfg = WhisperConfig(vocab_size=64, d_model=32, encoder_layers=1, decoder_layers=1,
                        encoder_attention_heads=2, decoder_attention_heads=2,
                        encoder_ffn_dim=48, decoder_ffn_dim=48, num_mel_bins=8,
                        max_source_positions=16, max_target_positions=16,
                        decoder_start_token_id=1, pad_token_id=0, eos_token_id=2,
                        bos_token_id=1, suppress_tokens=[], begin_suppress_tokens=[])
    torch.manual_seed(0)
    model = WhisperForConditionalGeneration(cfg).eval()
    feats = torch.randn(1, 8, 32)
    kw = {"max_new_tokens": 4, "do_sample": False}
    with torch.no_grad():
        ref = model.generate(feats, **kw)
        got = model.to("neuron").generate(feats.to("neuron"), **kw)
    assert got.device.type == "neuron" and torch.equal(got.cpu(), ref), (got, ref)


if __name__ == "__main__":
    main()
