"""MODEL callables for trial_models_overhead.py: a tiny GPT-2 (transformers, config built in
code) and a small ResNet written out (torchvision's needs a CUDA-paired torchvision)."""

import torch
from torch import nn


def gpt2():
    from transformers import GPT2Config, GPT2LMHeadModel

    cfg = GPT2Config(vocab_size=512, n_positions=128, n_embd=64, n_layer=2, n_head=4)
    ids = torch.randint(0, 512, (4, 64), generator=torch.Generator().manual_seed(1))
    return GPT2LMHeadModel(cfg).eval(), {"input_ids": ids}


class Basic(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.c1, self.b1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False), nn.BatchNorm2d(cout)
        self.c2, self.b2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False), nn.BatchNorm2d(cout)
        self.down = (nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                   nn.BatchNorm2d(cout)) if stride != 1 or cin != cout
                     else nn.Identity())

    def forward(self, x):
        y = torch.relu(self.b1(self.c1(x)))
        return torch.relu(self.b2(self.c2(y)) + self.down(x))


def resnet():
    """A resnet10-like net (4 stages of one basic block) on 8 RGB 32x32 images, eval mode."""
    model = nn.Sequential(nn.Conv2d(3, 16, 3, 1, 1, bias=False), nn.BatchNorm2d(16), nn.ReLU(),
                          Basic(16, 16, 1), Basic(16, 32, 2), Basic(32, 64, 2), Basic(64, 64, 2),
                          nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 10))
    return model.eval(), (torch.randn(8, 3, 32, 32),)
