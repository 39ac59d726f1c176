"""One op in PyTorch (bench/startup.py): what `solar analyze` of a program costs besides
the program itself: the interpreter, Solar's and torch's imports, the capture's fixed setup,
the analysis, the process's exit."""

import torch


class Model(torch.nn.Module):
    def forward(self, x):
        return torch.relu(x)


def get_inputs():
    return [torch.randn(64, 64)]


def get_init_inputs():
    return []
