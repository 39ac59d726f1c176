"""A closed-over integer array that is an arange, recorded as the iota that computes it.

jax.nn.dot_product_attention builds its local-window mask from `np.arange` positions the
jaxpr closes over (constants, not iota equations); a constant's values are data to the
lowering, so a mask built from them would not be structural and the window's dead scores
would count. An arange constant is the same values as `iota * step + start`: recorded as
that computation, its comparisons are index comparisons and the band is recognized
(docs/jax-frontend.md, "Masks").
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np


def arange_jaxpr(c: Any) -> Optional[Any]:
    """The closed jaxpr computing `c` from an iota when `c` is a 1-D integer arange of at
    least two elements (start + step * i, step != 0); else None."""
    if not isinstance(c, np.ndarray) or c.ndim != 1 or c.size < 2 or \
            not np.issubdtype(c.dtype, np.integer):
        return None
    start, step = int(c[0]), int(c[1]) - int(c[0])
    if step == 0 or not np.array_equal(c, start + step * np.arange(c.size, dtype=np.int64)):
        return None
    import jax
    from jax import lax

    n, dtype = c.size, c.dtype

    def iota():
        x = lax.iota(dtype, n)
        if step != 1:
            x = x * np.asarray(step, dtype)
        if start != 0:
            x = x + np.asarray(start, dtype)
        return x

    return jax.make_jaxpr(iota)()
