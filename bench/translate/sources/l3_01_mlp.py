"""A three-layer perceptron built with nn.Sequential (level 3: network)."""
import torch
import torch.nn as nn

batch_size = 64
input_size = 1024
hidden_size = 512
output_size = 10


class Model(nn.Module):
    def __init__(self, input_size, hidden_size, output_size):
        super().__init__()
        self.layers = nn.Sequential(
            nn.Linear(input_size, hidden_size), nn.ReLU(),
            nn.Linear(hidden_size, hidden_size), nn.ReLU(),
            nn.Linear(hidden_size, output_size))

    def forward(self, x):
        return self.layers(x)


def get_inputs():
    return [torch.randn(batch_size, input_size)]


def get_init_inputs():
    return [input_size, hidden_size, output_size]
