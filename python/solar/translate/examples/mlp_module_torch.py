"""A KernelBench-style source whose parameters live inside modules (solar translate's worked
example of the naming convention: module parameters are loop `weight` tensors named after
their state_dict() keys, `.` written `__`)."""
import torch
import torch.nn as nn

batch_size, in_features, hidden, out_features = 64, 512, 1024, 256


class Model(nn.Module):
    def __init__(self, in_features, hidden, out_features):
        super().__init__()
        self.fc1 = nn.Linear(in_features, hidden)
        self.fc2 = nn.Linear(hidden, out_features, bias=False)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, hidden, out_features]
