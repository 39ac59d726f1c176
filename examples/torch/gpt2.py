"""A 12-layer GPT-2-style model (KernelBench format) named as Hugging Face's GPT-2 names its
modules: wte, wpe, h.N (ln_1, attn.c_attn, attn.c_proj, ln_2, mlp.c_fc, mlp.c_proj), ln_f,
lm_head. Its report's module tree has one row per block (docs/cli.md, `--by module`).

Small sizes by default (tests); GPT-2 small is
solar analyze examples/torch/gpt2.py --arch H100_SXM --set seq_len=1024 --set d_model=768 \
    --set n_heads=12 --set vocab=50257
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

batch_size = 2
seq_len = 16
vocab = 64
d_model = 32
n_heads = 4
n_layers = 12

class CausalSelfAttention(nn.Module):
    def __init__(self, d_model, n_heads):
        super().__init__()
        self.h = n_heads
        self.c_attn = nn.Linear(d_model, 3 * d_model)
        self.c_proj = nn.Linear(d_model, d_model)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.c_attn(x).split(d, dim=-1)
        q, k, v = (z.view(b, t, self.h, d // self.h).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.c_proj(y.transpose(1, 2).reshape(b, t, d))

class MLP(nn.Module):
    def __init__(self, d_model):
        super().__init__()
        self.c_fc = nn.Linear(d_model, 4 * d_model)
        self.c_proj = nn.Linear(4 * d_model, d_model)

    def forward(self, x):
        return self.c_proj(F.gelu(self.c_fc(x), approximate="tanh"))

class Block(nn.Module):
    def __init__(self, d_model, n_heads):
        super().__init__()
        self.ln_1 = nn.LayerNorm(d_model)
        self.attn = CausalSelfAttention(d_model, n_heads)
        self.ln_2 = nn.LayerNorm(d_model)
        self.mlp = MLP(d_model)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))

class Model(nn.Module):
    def __init__(self, vocab, seq_len, d_model, n_heads, n_layers):
        super().__init__()
        self.wte = nn.Embedding(vocab, d_model)
        self.wpe = nn.Embedding(seq_len, d_model)
        self.h = nn.ModuleList(Block(d_model, n_heads) for _ in range(n_layers))
        self.ln_f = nn.LayerNorm(d_model)
        self.lm_head = nn.Linear(d_model, vocab, bias=False)

    def forward(self, tokens):
        pos = torch.arange(tokens.shape[1], device=tokens.device)
        x = self.wte(tokens) + self.wpe(pos)
        for block in self.h:
            x = block(x)
        return self.lm_head(self.ln_f(x))

def get_inputs():
    return [torch.randint(0, vocab, (batch_size, seq_len))]

def get_init_inputs():
    return [vocab, seq_len, d_model, n_heads, n_layers]
