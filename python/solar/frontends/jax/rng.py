"""Random numbers in a JAX capture: the RNG primitives (random_bits, random_split, threefry2x32,
...) replaced by their implementation on the keys' uint32 data, so the graph computes the
same bits with integer ops the executor runs, and structural primitives on typed key arrays
recorded on that data (docs/jax-frontend.md, "Capture": expands RNG)."""

from __future__ import annotations

import math
from typing import Tuple

import numpy as np

from .encoding import aval_shape_dtype, is_key

# Key data in, key data out: keys are held as their uint32 data throughout.
KEY_IDENTITY = {"random_wrap", "random_unwrap"}
# RNG primitives replaced by their implementation (integer ops on the key data).
EXPAND = {"random_bits", "random_split", "random_fold_in", "random_seed", "threefry2x32",
           "iota_2x32_shape"}


# About the ops one expanded RNG primitive records (threefry2x32: 20 rounds of 5 ops, key
# injections, the counter and the folding of its words), for the unroll-cap estimate.
EXPANDED_OPS = 140


class NotExpandable(Exception):
    """An RNG primitive whose implementation the capture cannot expand (the reason)."""


def _prng():
    try:
        from jax._src.random import prng
    except ImportError:  # older JAX
        from jax._src import prng
    return prng


def _threefry():
    try:
        from jax._src.random import threefry2x32 as t
    except ImportError:  # older JAX: threefry lives in prng
        from jax._src import prng as t
    return t


def physical_aval(aval):
    """A key-typed aval as its uint32 key data (shape + key shape); others unchanged."""
    import jax

    shape, dtype = aval_shape_dtype(aval)
    return jax.ShapeDtypeStruct(tuple(shape), np.dtype(dtype)) if is_key(aval.dtype) else aval


def key_shape(aval) -> Tuple[int, ...]:
    try:
        return tuple(int(d) for d in aval.dtype._impl.key_shape)
    except Exception:
        return (2,)


def expansion(eqn):
    """The function on physical values (key data) that implements an RNG primitive."""
    import jax.numpy as jnp
    from jax import lax

    name, p = eqn.primitive.name, eqn.params
    prng = _prng()
    if name in ("random_bits", "random_split", "random_fold_in"):
        aval = eqn.invars[0].aval
        impl = aval.dtype._impl
        if impl.name != "threefry2x32":
            raise NotExpandable(f"jax::{name} of the {impl.name} generator (only threefry2x32 "
                                 "is expanded)")
        if name == "random_bits":
            return lambda kd: prng.random_bits_impl_base(impl, kd, aval.ndim,
                                                         bit_width=p["bit_width"],
                                                         shape=p["shape"])
        if name == "random_split":
            return lambda kd: prng.random_split_impl_base(impl, kd, aval.ndim, shape=p["shape"])
        return lambda kd, m: prng.random_fold_in_impl_base(impl, kd, m, aval.shape)
    if name == "random_seed":
        impl = p["impl"]
        if impl.name != "threefry2x32":
            raise NotExpandable(f"jax::random_seed of the {impl.name} generator")
        return lambda s: prng.random_seed_impl_base(s, impl=impl)
    if name == "threefry2x32":
        t = _threefry()

        def threefry(k1, k2, x1, x2):
            # The counts take the output's shape; the keys keep theirs (scalars, or a batch
            # under vmap) and broadcast in each op, so the key schedule is computed once.
            shape = np.broadcast_shapes(*(np.shape(a) for a in (k1, k2, x1, x2)))
            x1, x2 = jnp.broadcast_to(x1, shape), jnp.broadcast_to(x2, shape)
            return list(t._threefry2x32_lowering(k1, k2, x1, x2, use_rolled_loops=False))

        return threefry
    if name == "iota_2x32_shape":
        shape = tuple(int(d) for d in p["shape"])
        if math.prod(shape) >= 2 ** 32:
            raise NotExpandable("jax::iota_2x32_shape of 2^32 or more elements")
        strides = [math.prod(shape[d + 1:]) for d in range(len(shape))]

        def iota_2x32():
            # The row-major flat index, as (high, low) 32-bit words; below 2^32 elements the
            # high word is 0.
            lo = None
            for d, st in enumerate(strides):
                t = lax.broadcasted_iota(np.uint32, shape, d)
                if st != 1:
                    t = t * np.uint32(st)
                lo = t if lo is None else lo + t
            return [lax.full(shape, 0, np.uint32), lo]

        return iota_2x32
    raise NotExpandable(f"jax::{name} has no expansion")


def physical_params(eqn):
    """Parameters of a structural primitive on typed keys, extended over the trailing key
    dimensions; None for a primitive without a rule here."""
    name, p = eqn.primitive.name, dict(eqn.params)
    key = next(v.aval for v in list(eqn.invars) + list(eqn.outvars)
               if hasattr(v, "aval") and is_key(v.aval.dtype))
    ks = key_shape(key)
    if name == "slice":
        p["start_indices"] = tuple(p["start_indices"]) + (0,) * len(ks)
        p["limit_indices"] = tuple(p["limit_indices"]) + ks
        if p.get("strides") is not None:
            p["strides"] = tuple(p["strides"]) + (1,) * len(ks)
        return p
    if name in ("squeeze", "concatenate", "rev", "copy", "copy_p"):
        return p
    if name == "reshape":
        if p.get("dimensions") is not None:
            return None
        p["new_sizes"] = tuple(p["new_sizes"]) + ks
        return p
    if name == "broadcast_in_dim":
        r = len(p["shape"])
        p["shape"] = tuple(p["shape"]) + ks
        p["broadcast_dimensions"] = tuple(p["broadcast_dimensions"]) + tuple(
            r + k for k in range(len(ks)))
        return p
    if name == "transpose":
        r = len(p["permutation"])
        p["permutation"] = tuple(p["permutation"]) + tuple(r + k for k in range(len(ks)))
        return p
    if name == "dynamic_slice":
        # keys[i] with a traced i: one more start (0) for each key dimension (key_op adds
        # the operands).
        p["slice_sizes"] = tuple(p["slice_sizes"]) + ks
        return p
    return None

