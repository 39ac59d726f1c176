"""A small GPT (KernelBench format): token and position embeddings, pre-norm transformer
blocks (causal multi-head self-attention via scaled_dot_product_attention, GELU-tanh MLP,
residuals), a final layer norm and a language-model head tied to the token embedding.

solar analyze examples/torch/gpt_block.py --arch H100_SXM --set seq_len=1024 --set n_layers=12
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

batch_size = 2
seq_len = 16
vocab = 64
d_model = 32
n_heads = 4
d_mlp = 4 * d_model
n_layers = 2


class Block(nn.Module):
    def __init__(self, d_model, n_heads, d_mlp):
        super().__init__()
        self.h = n_heads
        self.ln1 = nn.LayerNorm(d_model)
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj = nn.Linear(d_model, d_model)
        self.ln2 = nn.LayerNorm(d_model)
        self.fc = nn.Linear(d_model, d_mlp)
        self.out = nn.Linear(d_mlp, d_model)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=-1)
        q, k, v = (z.view(b, t, self.h, d // self.h).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).reshape(b, t, d))
        return x + self.out(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class Model(nn.Module):
    def __init__(self, vocab, seq_len, d_model, n_heads, d_mlp, n_layers):
        super().__init__()
        self.tok = nn.Embedding(vocab, d_model)
        self.pos = nn.Embedding(seq_len, d_model)
        self.blocks = nn.ModuleList(Block(d_model, n_heads, d_mlp) for _ in range(n_layers))
        self.ln_f = nn.LayerNorm(d_model)

    def forward(self, tokens):
        pos = torch.arange(tokens.shape[1], device=tokens.device)
        x = self.tok(tokens) + self.pos(pos)
        for block in self.blocks:
            x = block(x)
        return F.linear(self.ln_f(x), self.tok.weight)  # tied head: logits [b, t, vocab]


def get_inputs():
    return [torch.randint(0, vocab, (batch_size, seq_len))]


def get_init_inputs():
    return [vocab, seq_len, d_model, n_heads, d_mlp, n_layers]
