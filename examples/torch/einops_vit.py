"""A one-block vision transformer written with einops (KernelBench format): patches cut by
`rearrange`, the class token broadcast by `repeat`, attention as `einops.einsum`, the
tokens pooled by `reduce`. einops calls torch underneath (reshape, permute, expand, einsum,
mean), so Solar sees plain aten ops; the Mamba programs of KernelBench level 3 use it too.

solar analyze examples/torch/einops_vit.py --arch H100_SXM [--set batch_size=2]
"""

import torch
import torch.nn as nn
from einops import einsum, rearrange, reduce, repeat

batch_size = 8
channels = 3
image = 64
patch = 8
d_model = 128
n_heads = 4
n_classes = 10


class Model(nn.Module):
    def __init__(self, channels, image, patch, d_model, n_heads, n_classes):
        super().__init__()
        self.patch, self.n_heads = patch, n_heads
        self.embed = nn.Linear(patch * patch * channels, d_model)
        self.cls = nn.Parameter(torch.randn(1, 1, d_model))
        self.pos = nn.Parameter(torch.randn(1, (image // patch) ** 2 + 1, d_model))
        self.norm1 = nn.LayerNorm(d_model)
        self.qkv = nn.Linear(d_model, 3 * d_model, bias=False)
        self.proj = nn.Linear(d_model, d_model)
        self.norm2 = nn.LayerNorm(d_model)
        self.mlp = nn.Sequential(nn.Linear(d_model, 4 * d_model), nn.GELU(),
                                 nn.Linear(4 * d_model, d_model))
        self.head = nn.Linear(d_model, n_classes)

    def forward(self, img):
        x = self.embed(rearrange(img, "b c (h p1) (w p2) -> b (h w) (p1 p2 c)",
                                 p1=self.patch, p2=self.patch))
        x = torch.cat([repeat(self.cls, "1 n d -> b n d", b=x.shape[0]), x], dim=1) + self.pos
        q, k, v = rearrange(self.qkv(self.norm1(x)), "b n (three h e) -> three b h n e",
                            three=3, h=self.n_heads)
        scores = einsum(q, k, "b h i e, b h j e -> b h i j") * q.shape[-1] ** -0.5
        out = einsum(scores.softmax(dim=-1), v, "b h i j, b h j e -> b h i e")
        x = x + self.proj(rearrange(out, "b h n e -> b n (h e)"))
        x = x + self.mlp(self.norm2(x))
        return self.head(reduce(x, "b n d -> b d", "mean"))


def get_inputs():
    return [torch.randn(batch_size, channels, image, image)]


def get_init_inputs():
    return [channels, image, patch, d_model, n_heads, n_classes]
