"""Row softmax, y = softmax(x, dim=-1), in the loop language.

Written as the numerically stable decomposition every softmax kernel uses, and the one
Solar's aten lowering of `torch.softmax` counts (src/lower/aten_reduce.cc, softmax_into): the row
maximum, exp(x - max), the row sum, and a division. Per row of length C that is
(C-1) + C + (C-1) + C vector FLOPs and C exponentials.

Sizes: the attention-probability softmax of a 4k-token prefill, 32 heads x 4096 query rows
over 4096 keys, in bf16.

    solar analyze examples/loops/softmax.py --arch H100_SXM
    solar validate examples/loops/softmax.py --reference examples/loops/softmax_torch.py --set R=64 --set C=128
"""
from solar.loopir import Tensor, exp, inf, kernel, max

R, C = 32 * 4096, 4096  # rows (heads x queries), columns (keys)

x = Tensor("R,C", dtype="bf16", role="input")
y = Tensor("R,C", dtype="bf16", role="output")


@kernel
def softmax(x, y):
    row_max = Tensor("R", dtype="bf16", fill=-inf)
    e = Tensor("R,C", dtype="bf16")
    row_sum = Tensor("R", dtype="bf16")
    for r in range(R):
        for c in range(C):
            row_max[r] = max(row_max[r], x[r, c])
    for r in range(R):
        for c in range(C):
            e[r, c] = exp(x[r, c] - row_max[r])
    for r in range(R):
        for c in range(C):
            row_sum[r] += e[r, c]
    for r in range(R):
        for c in range(C):
            y[r, c] = e[r, c] / row_sum[r]


def model():
    softmax(x, y)
