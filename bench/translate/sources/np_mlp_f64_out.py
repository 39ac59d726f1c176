"""A two-layer perceptron in NumPy: the arithmetic in float32, the result returned as float64
(a NumPy source whose output is wider than its arithmetic)."""
import numpy as np

batch_size = 64
in_features = 512
hidden = 1024
out_features = 256


def get_inputs():
    rng = np.random.default_rng(0)
    return [rng.standard_normal((batch_size, in_features)).astype(np.float32),
            (rng.standard_normal((hidden, in_features)) / np.sqrt(in_features)).astype(np.float32),
            (rng.standard_normal((out_features, hidden)) / np.sqrt(hidden)).astype(np.float32)]


def forward(x, w1, w2):
    h = np.maximum(x @ w1.T, 0.0)
    return (h @ w2.T).astype(np.float64)
