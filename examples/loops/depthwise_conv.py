"""A depthwise 3x3 convolution (one filter per channel, groups = channels), zero padding 1,
stride 1, in the loop language:

    y[n, c, oh, ow] = sum_{kh, kw} x[n, c, oh + kh - 1, ow + kw - 1] * weight[c, 0, kh, kw]

the semantics of `F.conv2d(x, weight, padding=1, groups=C)` with weight [C, 1, 3, 3]. The
padding is an `if` guard, so Solar counts only the taps inside the input: per channel and
image (3H - 2)(3W - 2) MACs rather than the 9HW of every tap (the PyTorch twin's count).

Sizes: the 3x3 depthwise layer of a MobileNetV2 bottleneck (144 channels on a 56x56 map),
batch 8, bf16.

    solar analyze examples/loops/depthwise_conv.py --arch H100_SXM
    solar validate examples/loops/depthwise_conv.py --reference examples/loops/depthwise_conv_torch.py --set N=2 --set C=8 --set H=12 --set W=10
"""
from solar.loopir import Tensor, kernel

N, C, H, W = 8, 144, 56, 56
KH, KW = 3, 3

x = Tensor("N,C,H,W", dtype="bf16", role="input")
weight = Tensor("C, 1, KH, KW", dtype="bf16", role="weight")
y = Tensor("N,C,H,W", dtype="bf16", role="output")


@kernel
def depthwise3x3(x, weight, y):
    for n in range(N):
        for c in range(C):
            for oh in range(H):
                for ow in range(W):
                    for kh in range(KH):
                        for kw in range(KW):
                            if 0 <= oh + kh - 1 < H and 0 <= ow + kw - 1 < W:
                                y[n, c, oh, ow] += (x[n, c, oh + kh - 1, ow + kw - 1]
                                                    * weight[c, 0, kh, kw])


def model():
    depthwise3x3(x, weight, y)
