"""A robot-control policy MLP at batch 1, in the loop language: the observation vector (64
joint positions, velocities and sensor readings) goes through a 256-wide ReLU MLP to 12 joint
commands squashed to [-1, 1] by tanh (a TD3/SAC-style deterministic actor for a quadruped):

    64 -> 256 (relu) -> [256 -> 256 (relu)] x L -> 12 (tanh)

The L hidden layers share a shape, so their weights are stacked, W_h[L, 256, 256], and
model() runs them in a static `for l in range(L)` over the views W_h[l], b_h[l]. Each layer
is one kernel: a matrix-vector contraction, then bias and activation in one elementwise nest
(1 add + 1 relu, or 1 add + 1 tanh, per output; as F.linear + relu/tanh count). fp32, as a
control loop on an embedded CPU/GPU runs it. MACs: OBS*HID + L*HID*HID + HID*ACT per step.

    solar analyze examples/loops/robot_mlp.py --arch H100_SXM
    solar validate examples/loops/robot_mlp.py --reference examples/loops/robot_mlp_torch.py
"""
from solar.loopir import Tensor, kernel, relu, tanh

BATCH = 1
OBS, HID, ACT = 64, 256, 12  # observation, hidden width, actions
L = 2  # hidden 256 -> 256 layers

state = Tensor("BATCH,OBS", dtype="f32", role="input")
W_in = Tensor("HID,OBS", dtype="f32", role="weight")
b_in = Tensor("HID", dtype="f32", role="weight")
W_h = Tensor("L,HID,HID", dtype="f32", role="weight")
b_h = Tensor("L,HID", dtype="f32", role="weight")
W_out = Tensor("ACT,HID", dtype="f32", role="weight")
b_out = Tensor("ACT", dtype="f32", role="weight")
action = Tensor("BATCH,ACT", dtype="f32", role="output")


@kernel
def linear_relu(x, W, bias, y, n_in, n_out):
    acc = Tensor("BATCH, n_out", dtype="f32")
    for b in range(BATCH):
        for o in range(n_out):
            for i in range(n_in):
                acc[b, o] += x[b, i] * W[o, i]
    for b in range(BATCH):
        for o in range(n_out):
            y[b, o] = relu(acc[b, o] + bias[o])


@kernel
def linear_tanh(x, W, bias, y, n_in, n_out):
    acc = Tensor("BATCH, n_out", dtype="f32")
    for b in range(BATCH):
        for o in range(n_out):
            for i in range(n_in):
                acc[b, o] += x[b, i] * W[o, i]
    for b in range(BATCH):
        for o in range(n_out):
            y[b, o] = tanh(acc[b, o] + bias[o])


def model():
    h = Tensor("BATCH,HID", dtype="f32")
    linear_relu(state, W_in, b_in, h, OBS, HID)
    for l in range(L):
        h_next = Tensor("BATCH,HID", dtype="f32")
        linear_relu(h, W_h[l], b_h[l], h_next, HID, HID)
        h = h_next
    linear_tanh(h, W_out, b_out, action, HID, ACT)
