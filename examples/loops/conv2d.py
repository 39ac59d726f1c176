"""A grouped, strided, dilated, zero-padded 2-D convolution with bias, in the loop language:

    y[n, k, oh, ow] = bias[k] + sum_{c, kh, kw} x[n, g*CG + c, STRIDE*oh + DIL*kh - PAD,
                                                          STRIDE*ow + DIL*kw - PAD]
                                               * weight[k, c, kh, kw]      (g = k // KG)

the semantics of `F.conv2d(x, weight, bias, STRIDE, PAD, DIL, G)`. The zero padding is an
`if` guard: the taps that fall outside the input are not iterated, so Solar counts only the
MACs of taps inside the input (the PyTorch twin's graph counts every tap, padding included).
The bias is a second nest (one add per output, as the aten lowering adds it).

Sizes: a ResNeXt-style 3x3 block, 32 groups of 8 channels, 256 -> 256 channels on a 56x56
map, stride 2 with DeepLab-style atrous dilation 3 (padding 3 keeps the window centred;
stride and dilation share no factor, so every input pixel is read), batch 8, bf16. Output
28x28.

    solar analyze examples/loops/conv2d.py --arch H100_SXM
    solar validate examples/loops/conv2d.py --reference examples/loops/conv2d_torch.py --set N=1 --set C=8 --set K=8 --set G=2 --set H=9 --set W=10
"""
from solar.loopir import Tensor, kernel

N, C, H, W = 8, 256, 56, 56  # batch, input channels, input height and width
K, G = 256, 32  # output channels, groups
KH, KW = 3, 3  # kernel window
STRIDE, PAD, DIL = 2, 3, 3
CG, KG = C // G, K // G  # input and output channels per group
OH = (H + 2 * PAD - DIL * (KH - 1) - 1) // STRIDE + 1
OW = (W + 2 * PAD - DIL * (KW - 1) - 1) // STRIDE + 1

x = Tensor("N,C,H,W", dtype="bf16", role="input")
weight = Tensor("K,CG,KH,KW", dtype="bf16", role="weight")
bias = Tensor("K", dtype="bf16", role="weight")
y = Tensor("N,K,OH,OW", dtype="bf16", role="output")


@kernel
def conv2d(x, weight, bias, y, stride, pad, dil):
    acc = Tensor("N,K,OH,OW", dtype="bf16")
    for n in range(N):
        for g in range(G):
            for ko in range(KG):
                for oh in range(OH):
                    for ow in range(OW):
                        for c in range(CG):
                            for kh in range(KH):
                                for kw in range(KW):
                                    if (0 <= stride * oh + dil * kh - pad < H
                                            and 0 <= stride * ow + dil * kw - pad < W):
                                        acc[n, g * KG + ko, oh, ow] += (
                                            x[n, g * CG + c, stride * oh + dil * kh - pad,
                                              stride * ow + dil * kw - pad]
                                            * weight[g * KG + ko, c, kh, kw])
    for n in range(N):
        for k in range(K):
            for oh in range(OH):
                for ow in range(OW):
                    y[n, k, oh, ow] = acc[n, k, oh, ow] + bias[k]


def model():
    conv2d(x, weight, bias, y, STRIDE, PAD, DIL)
