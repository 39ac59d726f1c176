"""Losses on a linear classifier's output (KernelBench format): cross entropy, NLL,
MSE, L1, smooth L1, Huber and binary cross entropy, stacked into one vector, plus a
per-element MSE (reduction='none').

solar analyze examples/torch/losses.py --arch H100_SXM --set batch_size=4096
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

batch_size = 8
in_features = 12
n_classes = 10


class Model(nn.Module):
    def __init__(self, in_features, n_classes):
        super().__init__()
        self.head = nn.Linear(in_features, n_classes)

    def forward(self, x, labels, target, prob_target):
        logits = self.head(x)  # [batch, classes]
        scalars = torch.stack([
            F.cross_entropy(logits, labels),
            F.nll_loss(torch.log_softmax(logits, dim=-1), labels, reduction="sum"),
            F.mse_loss(logits, target),
            F.l1_loss(logits, target),
            F.smooth_l1_loss(logits, target, beta=0.5),
            F.huber_loss(logits, target, delta=2.0, reduction="sum"),
            F.binary_cross_entropy(torch.sigmoid(logits), prob_target),
        ])
        return scalars, F.mse_loss(logits, target, reduction="none")


def get_inputs():
    return [
        torch.randn(batch_size, in_features),
        torch.randint(0, n_classes, (batch_size,)),
        torch.randn(batch_size, n_classes),
        torch.rand(batch_size, n_classes),
    ]


def get_init_inputs():
    return [in_features, n_classes]
