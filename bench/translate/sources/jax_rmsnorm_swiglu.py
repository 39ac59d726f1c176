"""RMSNorm then a SwiGLU feed-forward layer in JAX (a transformer block's MLP half)."""
import jax
import jax.numpy as jnp

batch_size = 8
seq_len = 128
d_model = 256
d_ff = 688
eps = 1e-6


def forward(x, g, w_gate, w_up, w_down):
    rms = jnp.sqrt(jnp.mean(x * x, axis=-1, keepdims=True) + eps)
    h = x / rms * g
    a = h @ w_gate
    return (jax.nn.silu(a) * (h @ w_up)) @ w_down


def get_inputs():
    k = jax.random.split(jax.random.PRNGKey(0), 5)
    return [jax.random.normal(k[0], (batch_size, seq_len, d_model)),
            1.0 + 0.1 * jax.random.normal(k[1], (d_model,)),
            jax.random.normal(k[2], (d_model, d_ff)) / 16.0,
            jax.random.normal(k[3], (d_model, d_ff)) / 16.0,
            jax.random.normal(k[4], (d_ff, d_model)) / 26.0]
