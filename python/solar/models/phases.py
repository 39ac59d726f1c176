"""What one phase of a model computes, as a module Solar captures: a prefill of S tokens or one
decode step against a cache of C tokens, with the cache as explicit inputs.

The cache is what a bound should see, not what one implementation does:
- attention keys and values live in a preallocated buffer per layer (slots for C + the new
  tokens); a step writes its new tokens' keys and values into their slots in place and
  attention reads the buffer. Solar's cost model reads the C cached tokens once and writes only
  the new ones (docs/cost.md, "State updated in place"); a concatenating cache, which copies
  the whole cache every step, is one implementation's choice and is not charged;
- recurrent state (Mamba's convolution window and SSM state) is read once and written once;
- a prefill computes the logits of its last token only (what generation needs next).
"""

from __future__ import annotations

from typing import Any, List, Optional, Sequence, Tuple

import torch
from transformers.cache_utils import Cache, CacheLayerMixin, DynamicCache, EncoderDecoderCache

from . import training
from .cache_forms import decode_slots, sliding_windows


class SlotLayer(CacheLayerMixin):
    """One attention layer's key/value buffer [B, heads, slots, head_dim]; update() writes the
    new tokens at slot `start` in place and returns the whole buffer.

    A sliding-window layer's buffer at decode is a rolling one (`offset` > 0): its slots hold
    the last tokens only, slot 0 being the token at position `offset`, so the mask and the
    attention see exactly the window."""

    is_compileable = False

    def __init__(self, keys: torch.Tensor, values: torch.Tensor, start: int, frozen=False,
                 offset: int = 0, sliding: bool = False):
        super().__init__()
        self.keys, self.values, self.start = keys, values, start
        self.frozen = frozen  # cross-attention: filled by the prefill, only read afterwards
        self.offset = offset  # the position of slot 0
        self.is_sliding = sliding  # masking_utils builds the sliding layers' mask from it
        self.is_initialized = True

    def lazy_initialization(self, key_states, value_states) -> None:  # buffers are given
        pass

    def update(self, key_states, value_states, *args, **kwargs):
        if not self.frozen:
            n = key_states.shape[-2]
            self.keys[:, :, self.start:self.start + n].copy_(key_states)
            self.values[:, :, self.start:self.start + n].copy_(value_states)
        return self.keys, self.values

    def get_seq_length(self) -> int:
        return self.offset + self.start

    def get_mask_sizes(self, query_length: int) -> Tuple[int, int]:
        return self.keys.shape[-2], self.offset

    def get_max_cache_shape(self) -> int:
        return self.keys.shape[-2]

    def get_max_length(self) -> int:
        return self.keys.shape[-2]


class Step(torch.nn.Module):
    """model(...) of one phase; forward(ids_or_pixels, *state) with the cache state as inputs.
    `call(model, first, cache)` runs the model; `make_cache(state)` builds the cache object
    over the state tensors (None: no cache)."""

    def __init__(self, model, call, make_cache=None):
        super().__init__()
        self.model = model
        self._call, self._make_cache = call, make_cache
        # The wrapper runs in its model's mode (a fresh Module trains, which would report an
        # eval-mode model as "mixed").
        self.train(model.training)

    def forward(self, first, *state):
        cache = self._make_cache(list(state)) if self._make_cache is not None else None
        return self._call(self.model, first, cache)


def attention_cache(model, config, batch: int, start: int, new: int, sliding: bool):
    """(state, make_cache) of a decoder's attention layers for a step of `new` tokens after
    `start`: the buffers (zeros of their shapes, the step's inputs) and the function building
    the cache over them. With `sliding`, a sliding-window layer's buffer is its rolling
    window (decode_slots); else every layer holds start + new slots (a prefill writes every
    token's keys and values; its attention is the band the mask gives)."""
    windows = sliding_windows(config) if sliding else []
    slots = [decode_slots(w, start, new) for w in windows] if windows else start + new
    state = []
    for kshape, vshape, dtype in _kv_shapes(model, config, batch, slots):
        state += [torch.zeros(kshape, dtype=dtype), torch.zeros(vshape, dtype=dtype)]

    def layer(i, s):
        n = s[2 * i].shape[-2]  # start + new, or the window
        window = windows[i] if i < len(windows) else None
        return SlotLayer(s[2 * i], s[2 * i + 1], n - new, offset=start + new - n,
                         sliding=window is not None)

    def make_cache(s):
        return Cache(layers=[layer(i, s) for i in range(len(s) // 2)])

    return state, make_cache


def _kv_shapes(model, config, batch: int, slots) -> List[Tuple[Tuple[int, ...], ...]]:
    """Per attention layer, the (key, value) buffer shapes of `slots` tokens (an int, or a
    list with a count per layer), read off one unrecorded fake step (what each layer hands
    its cache), so MLA's key/value head dims and grouped-query head counts come from the
    model, not from formulas here."""
    shapes: List[Any] = []

    class Probe(CacheLayerMixin):
        is_compileable = False
        is_sliding = False

        def __init__(self):
            super().__init__()
            self.keys = self.values = None

        def lazy_initialization(self, k, v):
            pass

        def update(self, k, v, *a, **kw):
            n = slots if isinstance(slots, int) else slots[len(shapes)]
            shapes.append(((*k.shape[:2], n, k.shape[-1]), (*v.shape[:2], n, v.shape[-1]),
                           k.dtype))
            return k, v

        def get_seq_length(self):
            return 0

        def get_mask_sizes(self, q):
            return q, 0

        def get_max_cache_shape(self):
            return -1

        def get_max_length(self):
            return -1

    cache = Cache(layer_class_to_replicate=Probe)  # a layer for each one the model has
    ids = torch.zeros((batch, 1), dtype=torch.long)
    with torch.no_grad():
        model(input_ids=ids, past_key_values=cache, use_cache=True)
    return shapes


def _recurrent_states(model, config, batch: int) -> List[torch.Tensor]:
    """Mamba-style models: the conv and SSM state of every layer, as a one-token fake prefill
    leaves them (their shapes and dtypes), to be fed to a decode step as inputs."""
    cache = DynamicCache(config=config)
    ids = torch.zeros((batch, 1), dtype=torch.long)
    with torch.no_grad():
        model(input_ids=ids, cache=cache, use_cache=True)
    states = []
    for layer in cache.layers:
        states.append(torch.empty_like(layer.conv_states[0]))
        states.append(torch.empty_like(layer.recurrent_states[0]))
    return states


def _recurrent_cache(config, states: Sequence[torch.Tensor]) -> Cache:
    cache = DynamicCache(config=config)
    for i, layer in enumerate(cache.layers):
        conv, ssm = states[2 * i], states[2 * i + 1]
        layer.conv_states[0], layer.recurrent_states[0] = conv, ssm
        layer.conv_kernel_size[0] = conv.shape[-1]
        layer.is_conv_states_initialized[0] = layer.is_recurrent_states_initialized[0] = True
        layer.has_previous_state[0] = True
        layer.dtype, layer.device = conv.dtype, conv.device
    return cache


def is_recurrent(config) -> bool:
    return config.model_type in ("mamba", "mamba2")


def causal_lm_step(model, config, phase: str, batch: int, seq: int, context: int):
    """(Step, inputs) for a decoder-only model: prefill of `seq` tokens into an empty cache,
    or one decode token (per sequence) after `context` cached tokens."""
    new = seq if phase == "prefill" else 1
    start = 0 if phase == "prefill" else context
    ids = torch.zeros((batch, new), dtype=torch.long)
    if is_recurrent(config):
        def call(m, x, cache):
            return m(input_ids=x, cache=cache, use_cache=cache is not None,
                     logits_to_keep=1).logits

        if phase == "prefill":
            return Step(model, call), [ids]
        states = _recurrent_states(model, config, batch)
        return Step(model, call, lambda s: _recurrent_cache(config, s)), [ids] + states
    state, make_cache = attention_cache(model, config, batch, start, new, phase == "decode")

    def call(m, x, cache):
        pos = torch.arange(start, start + new).unsqueeze(0).expand(batch, new)
        return m(input_ids=x, cache=cache, position_ids=pos,
                 cache_position=torch.arange(start, start + new), use_cache=True,
                 logits_to_keep=1).logits

    return Step(model, call, make_cache), [ids] + state


def verify_step(model, config, batch: int, context: int, tokens: int):
    """(Step, inputs) of a speculative verify step: the target over `tokens` new tokens per
    sequence after `context` cached ones, written into their cache slots, every new token's
    logits kept (each is compared with the draft's token)."""
    ids = torch.zeros((batch, tokens), dtype=torch.long)
    state = []
    for kshape, vshape, dtype in _kv_shapes(model, config, batch, context + tokens):
        state += [torch.zeros(kshape, dtype=dtype), torch.zeros(vshape, dtype=dtype)]

    def make_cache(s):
        return Cache(layers=[SlotLayer(s[2 * i], s[2 * i + 1], context)
                                    for i in range(len(s) // 2)])

    def call(m, x, cache):
        pos = torch.arange(context, context + tokens).unsqueeze(0).expand(batch, tokens)
        return m(input_ids=x, cache=cache, position_ids=pos,
                 cache_position=torch.arange(context, context + tokens), use_cache=True,
                 logits_to_keep=tokens).logits

    return Step(model, call, make_cache), [ids] + state


def encoder_step(model, config, batch: int, seq: int):
    """An encoder (BERT-like) over `seq` tokens: its last hidden state."""
    ids = torch.zeros((batch, seq), dtype=torch.long)
    return Step(model, lambda m, x, _: m(input_ids=x).last_hidden_state), [ids]


def image_step(model, config, batch: int):
    """An image classifier on a batch of images at the configured size: its logits."""
    size = config.image_size
    pixels = torch.zeros((batch, config.num_channels, size, size), dtype=model.dtype)
    return Step(model, lambda m, x, _: m(pixel_values=x).logits), [pixels]


def seq2seq_step(model, config, phase: str, batch: int, seq: int, context: int):
    """An encoder-decoder (T5-like). prefill: the encoder over `seq` tokens and the decoder's
    first token, filling the cross-attention cache; decode: one decoder token after `context`
    decoded tokens, its self-attention cache of `context` tokens and the cross-attention
    cache of `seq` encoder tokens read."""
    n_layers = config.num_decoder_layers if hasattr(config, "num_decoder_layers") else \
        config.decoder_layers
    heads = config.num_heads if hasattr(config, "num_heads") else config.decoder_attention_heads
    head_dim = getattr(config, "d_kv", None) or config.d_model // heads
    dtype = model.dtype
    start = 0 if phase == "prefill" else context
    self_kv = [torch.zeros((batch, heads, start + 1, head_dim), dtype=dtype)
               for _ in range(2 * n_layers)]
    cross_kv = [torch.zeros((batch, heads, seq, head_dim), dtype=dtype)
                for _ in range(2 * n_layers)]
    dec = torch.zeros((batch, 1), dtype=torch.long)

    def make_cache(s):
        own, cross = s[:2 * n_layers], s[2 * n_layers:]
        cache = EncoderDecoderCache(
            Cache(layers=[SlotLayer(own[2 * i], own[2 * i + 1], start) for i in range(n_layers)]),
            Cache(layers=[SlotLayer(cross[2 * i], cross[2 * i + 1], 0, frozen=phase == "decode")
                          for i in range(n_layers)]))
        if phase == "decode":
            for i in range(n_layers):
                cache.is_updated[i] = True
        return cache

    if phase == "prefill":
        ids = torch.zeros((batch, seq), dtype=torch.long)

        def call(m, x, cache):
            return m(input_ids=x, decoder_input_ids=dec, past_key_values=cache,
                     use_cache=True).logits

        return Step(model, call, make_cache), [ids] + self_kv + cross_kv
    hidden = torch.zeros((batch, seq, config.d_model), dtype=dtype)

    def call_decode(m, x, cache):
        # the encoder's output is needed only for its shape: cross attention reads the cache
        return m(encoder_outputs=(hidden,), decoder_input_ids=x, past_key_values=cache,
                 cache_position=torch.arange(start, start + 1), use_cache=True).logits

    return Step(model, call_decode, make_cache), [dec] + self_kv + cross_kv


def training_step(model, task: str, batch: int, seq: int, optimizer: str = "none",
                  dtype: str = "bf16", recompute: str = "none", name: str = "model",
                  updated=None):
    """A training step's forward over `seq` tokens, every position's logits (causal-lm) or
    hidden state (encoder), no cache; the capture adds the loss and the backward pass. With
    an `optimizer`, each parameter's update runs as its gradient completes, the optimizer
    state (fp32 master copy, moments) inputs after the ids; `recompute` checkpoints decoder
    layers or attention cores (solar.models.training). updated[0] counts the parameter
    elements whose gradient completed."""
    ids = torch.zeros((batch, seq), dtype=torch.long)
    state = training.optimizer_state(model, optimizer, dtype)
    around = training.install_recompute(model, recompute, name)
    updated = updated if updated is not None else [0]

    def install(s):
        training.install_updates(model, optimizer, dtype, s, updated)

    if task == "causal-lm":
        def call(m, x, _):
            with around, training.one_sequence_per_row():
                return m(input_ids=x, use_cache=False).logits
    else:
        def call(m, x, _):
            with around, training.one_sequence_per_row():
                return m(input_ids=x).last_hidden_state
    return Step(model, call, install), [ids] + state


class _PrefixSlots(SlotLayer):
    """A policy layer's key/value buffer: a pass writes its tokens at slot `start` in place
    and attends to the slots written so far (the prefix, the state, its own), not the whole
    buffer."""

    def update(self, key_states, value_states, *args, **kwargs):
        n = key_states.shape[-2]
        end = self.start + n
        self.keys[:, :, self.start:end].copy_(key_states)
        self.values[:, :, self.start:end].copy_(value_states)
        return self.keys[:, :, :end], self.values[:, :, :end]

    def get_seq_length(self) -> int:
        return self.start

    def get_mask_sizes(self, query_length: int) -> Tuple[int, int]:
        return self.start + query_length, 0


class FlowTime(torch.nn.Module):
    """pi0's sine-cosine embedding of the flow time t [B, 1] over `periods` (openpi's
    posemb_sincos), in the activations' dtype. A module of its own so that each integration
    step's ops start at it (layers_once.flow_steps finds the steps by it)."""

    def forward(self, t, periods, dtype):
        angle = t * (2 * torch.pi) / periods
        return torch.cat([torch.sin(angle), torch.cos(angle)], dim=-1).to(dtype)


class PolicyStep(torch.nn.Module):
    """One control step of a vision-language-action policy (solar.models.policy): forward(
    pixels [B x images, 3, H, W], prompt ids [B, L], robot state [B, action_dim], noise
    [B, horizon, action_dim]) -> the action chunk [B, horizon, action_dim].

    `steps_run`: the integration steps to run, when a capture runs fewer than the config's
    (layers_once replicates the rest); the step size stays 1 / config.num_steps."""

    def __init__(self, model, config):
        super().__init__()
        self.model, self.config = model, config
        self.flow_time = FlowTime()
        self.steps_run: Optional[int] = None
        self.train(model.training)

    def _cache(self, buffers, start: int) -> Cache:
        return Cache(layers=[_PrefixSlots(k, v, start) for k, v in buffers])

    def forward(self, pixels, ids, robot_state, noise):
        m, cfg = self.model, self.config
        batch, prompt = ids.shape
        horizon = cfg.action_horizon
        text = cfg.text_config
        prefix = cfg.num_images * cfg.image_tokens + prompt
        slots = prefix + 1 + horizon  # the prefix, the state token, the action chunk
        # The keys and values of every layer live for this step only: intermediates.
        buffers = [tuple(torch.empty((batch, text["num_key_value_heads"], slots,
                                      text["head_dim"]), dtype=noise.dtype) for _ in range(2))
                   for _ in range(text["num_hidden_layers"])]
        images = m.vision_tower(pixel_values=pixels).last_hidden_state
        images = m.projector(images).reshape(batch, cfg.num_images * cfg.image_tokens, -1)
        tokens = torch.cat([images, m.backbone.embed_tokens(ids)], dim=1)
        m.backbone(inputs_embeds=tokens, cache=self._cache(buffers, 0), use_cache=True,
                   position_ids=torch.arange(prefix).unsqueeze(0))
        state = m.state_proj(robot_state).unsqueeze(1)
        m.action_expert(inputs_embeds=state, cache=self._cache(buffers, prefix), use_cache=True,
                        position_ids=torch.tensor([[prefix]]))
        width = m.action_in_proj.out_features
        # width/2 periods, geometric from 4e-3 to 4 (openpi's posemb_sincos)
        periods = 4e-3 * (4.0 / 4e-3) ** torch.linspace(0.0, 1.0, width // 2)
        positions = torch.arange(prefix + 1, prefix + 1 + horizon).unsqueeze(0)
        x = noise
        dt = -1.0 / cfg.num_steps
        # Euler steps from t = 1 (noise) to t = 0; t is a tensor stepped by dt, as openpi's
        # loop carries it, so that every step records the same ops.
        t = torch.ones((batch, 1), dtype=torch.float32)
        for _ in range(self.steps_run or cfg.num_steps):
            time = self.flow_time(t, periods, noise.dtype)
            actions = m.action_in_proj(x)
            mixed = torch.cat([actions, time.unsqueeze(1).expand(batch, horizon, width)], dim=-1)
            mixed = m.action_time_mlp_out(torch.nn.functional.silu(m.action_time_mlp_in(mixed)))
            out = m.action_expert(inputs_embeds=mixed, cache=self._cache(buffers, prefix + 1),
                                  use_cache=True, position_ids=positions).last_hidden_state
            x = x + dt * m.action_out_proj(out)
            t = t + dt
        return x


def policy_step(model, config, batch: int, prompt: int):
    """(PolicyStep, inputs) for `batch` robots, each with config.num_images camera images and
    a prompt of `prompt` tokens (solar.models.policy: what a control step is)."""
    v = config.vision_config
    dtype = next(model.parameters()).dtype
    pixels = torch.zeros((batch * config.num_images, v.get("num_channels", 3), v["image_size"],
                          v["image_size"]), dtype=dtype)
    ids = torch.zeros((batch, prompt), dtype=torch.long)
    state = torch.zeros((batch, config.action_dim), dtype=dtype)
    noise = torch.zeros((batch, config.action_horizon, config.action_dim), dtype=dtype)
    return PolicyStep(model, config), [pixels, ids, state, noise]
