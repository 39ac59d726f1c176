"""mlp_module_torch.py in the loop language: x is forward's argument; fc1.weight, fc1.bias and
fc2.weight are the module's parameters (state_dict keys, `.` written `__`), in their
PyTorch layout (a Linear's weight is [out, in]); the sizes are the source's constants."""
from solar.loopir import Tensor, kernel, relu

batch_size, in_features, hidden, out_features = 64, 512, 1024, 256

x = Tensor("batch_size, in_features", dtype="f32", role="input")
fc1__weight = Tensor("hidden, in_features", dtype="f32", role="weight")
fc1__bias = Tensor("hidden", dtype="f32", role="weight")
fc2__weight = Tensor("out_features, hidden", dtype="f32", role="weight")
y = Tensor("batch_size, out_features", dtype="f32", role="output")


@kernel
def linear_relu(x, w, b, h):
    acc = Tensor("batch_size, hidden", dtype="f32")
    for i in range(batch_size):
        for o in range(hidden):
            for k in range(in_features):
                acc[i, o] += x[i, k] * w[o, k]
    for i in range(batch_size):
        for o in range(hidden):
            h[i, o] = relu(acc[i, o] + b[o])


@kernel
def linear(h, w, y):
    for i in range(batch_size):
        for o in range(out_features):
            for k in range(hidden):
                y[i, o] += h[i, k] * w[o, k]


def model():
    h = Tensor("batch_size, hidden", dtype="f32")
    linear_relu(x, fc1__weight, fc1__bias, h)
    linear(h, fc2__weight, y)
