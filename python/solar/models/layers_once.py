"""Layers captured once (the default; SOLAR_LAYERS_ONCE=0 turns it off; docs/layers-once.md):
a decoder whose layers repeat is captured over a prefix of its layers, and the OpTrace of
the whole model is rebuilt from it by replicating, for every later layer, the recorded ops
of the last prefix layer with the same structure, its tensors renamed (the layer's
parameters, its cache buffers, its intermediates).

The rebuilt trace is meant to be the full capture itself, tensor for tensor and op for op
(the same ids, storages, names, module paths), so every level of the analysis, the module
rows, op counts and coverage are those of the unrolled model by construction; the tests
compare the two traces for equality (tests/python/test_layers_once.py). Where the
prefix trace does not have the shape the replication assumes, `expand` raises NotSound and
the caller captures the whole model as before.
"""

from __future__ import annotations

import contextlib
import os
from typing import Any, Dict, List, Optional, Sequence, Tuple

from . import policy
from .cache_forms import sliding_windows

ENV = "SOLAR_LAYERS_ONCE"


class NotSound(Exception):
    """The prefix trace does not have the shape the replication relies on."""


def enabled() -> bool:
    """On unless SOLAR_LAYERS_ONCE=0: the way back to capturing every layer, for comparison."""
    return os.environ.get(ENV, "") != "0"


def decoder_layers(model, config) -> Optional[Tuple[str, Any]]:
    """(path, nn.ModuleList) of the decoder layers of a transformers causal LM whose forward
    runs `layers[:config.num_hidden_layers]`, or None."""
    n = getattr(config, "num_hidden_layers", None)
    inner = getattr(model, "model", None)
    layers = getattr(inner, "layers", None)
    if not isinstance(n, int) or layers is None or len(layers) != n:
        return None
    return "model.layers", layers


_PLAIN = (int, float, str, bool, type(None))


def _plain(v: Any) -> bool:
    if isinstance(v, _PLAIN):
        return True
    return isinstance(v, (tuple, list)) and all(_plain(x) for x in v)


# Attributes that name the layer rather than shape its work: the cache slot a layer uses is
# its own buffer, renamed with the layer.
_NAMING = frozenset({"training", "layer_idx", "layer_id", "layer_number"})


def signature(layer, extra: Any = None) -> Tuple[Any, ...]:
    """What decides the ops a layer records, short of running it: each submodule's type and
    plain attributes (sizes, windows, attention types, flags), each parameter's and buffer's
    name, shape and dtype, and `extra` (config-derived per-layer values)."""
    parts: List[Any] = [extra]
    for name, m in layer.named_modules():
        attrs = tuple(sorted((k, tuple(v) if isinstance(v, list) else v)
                             for k, v in vars(m).items()
                             if not k.startswith("_") and k not in _NAMING and _plain(v)))
        parts.append((name, type(m).__name__, attrs))
    for name, p in layer.named_parameters():
        parts.append(("p", name, tuple(p.shape), str(p.dtype)))
    for name, b in layer.named_buffers():
        parts.append(("b", name, tuple(b.shape), str(b.dtype)))
    return tuple(parts)


def layer_signatures(model, config) -> Optional[List[Tuple[Any, ...]]]:
    found = decoder_layers(model, config)
    if found is None:
        return None
    windows = sliding_windows(config)
    types = getattr(config, "layer_types", None) or []
    sigs = []
    for i, layer in enumerate(found[1]):
        extra = (types[i] if i < len(types) else None,
                 windows[i] if i < len(windows) else None)
        sigs.append(signature(layer, extra))
    return sigs


def prefix_length(sigs: Sequence[Any]) -> Optional[int]:
    """The shortest prefix in which every layer signature the model repeats occurs twice
    (so each template layer is preceded by a layer, and a second occurrence can be compared
    with the first) and every other one once (DeepSeek-V2-Lite's single dense layer), or
    None when no prefix shorter than the model exists."""
    need: Dict[Any, int] = {}
    for s in sigs:
        need[s] = min(2, need.get(s, 0) + 1)
    counts: Dict[Any, int] = {}
    for k, s in enumerate(sigs, 1):
        counts[s] = counts.get(s, 0) + 1
        if all(counts.get(x, 0) >= n for x, n in need.items()):
            return k if k < len(sigs) else None
    return None


def templates(sigs: Sequence[Any], k: int) -> List[int]:
    """Per layer, the prefix layer it is replicated from (itself inside the prefix)."""
    last = {}
    for j in range(k):
        last[sigs[j]] = j
    return list(range(k)) + [last[sigs[i]] for i in range(k, len(sigs))]


def twins(sigs: Sequence[Any], k: int) -> Dict[int, int]:
    """Per template layer (the last prefix layer of its structure), the prefix layer of the
    same structure before it: the two whose recorded ops must agree before any layer is
    replicated."""
    tmpl = templates(sigs, k)
    out = {}
    for j in sorted(set(tmpl[k:])):
        out[j] = max(x for x in range(j) if sigs[x] == sigs[j])
    return out


@contextlib.contextmanager
def prefix_layers(model, config, k: int):
    """While open, the model runs its first k decoder layers only (transformers' decoders
    run layers[:config.num_hidden_layers]); its parameters stay those of every layer."""
    configs = {id(c): c for c in (config, getattr(model, "config", None),
                                  getattr(getattr(model, "model", None), "config", None))
               if c is not None}
    saved = {i: c.num_hidden_layers for i, c in configs.items()}
    try:
        for c in configs.values():
            c.num_hidden_layers = k
        yield
    finally:
        for i, c in configs.items():
            c.num_hidden_layers = saved[i]


def _layer_of(path: str, prefix: Optional[str]) -> Optional[int]:
    if prefix is None or not path.startswith(prefix):
        return None
    head = path[len(prefix):].split(".", 1)[0]
    return int(head) if head.isdigit() else None


def _rename(path: str, prefix: Optional[str], i: int, j: int) -> str:
    """path of layer j's part -> the same part of layer i (unchanged for stretches that are
    not layers: flow_steps)."""
    if prefix is None:
        return path
    old = f"{prefix}{j}"
    if path == old or path.startswith(old + "."):
        return f"{prefix}{i}" + path[len(old):]
    return path


def _refs(v: Any, out: List[int]) -> None:
    if isinstance(v, dict):
        if "tensor" in v and len(v) == 1:
            out.append(v["tensor"])
            return
        for x in v.values():
            _refs(x, out)
    elif isinstance(v, list):
        for x in v:
            _refs(x, out)


def _remap(v: Any, f) -> Any:
    if isinstance(v, dict):
        if "tensor" in v and len(v) == 1:
            return {"tensor": f(v["tensor"])}
        return {key: _remap(x, f) for key, x in v.items()}
    if isinstance(v, list):
        return [_remap(x, f) for x in v]
    return v


_META = ("shape", "dtype", "strides", "storage_offset", "role")


def _check_twins(tensors, ops, first, last, lo, prefix: Optional[str], a: int, b: int) -> None:
    """Raises NotSound unless layer b's ops are layer a's with every tensor renamed: the
    same op names, module paths (up to the layer index), source lines and plain arguments;
    a tensor each creates at the same place in its own ids; a tensor from elsewhere with
    the same metadata."""
    if last[a] - first[a] != last[b] - first[b]:
        raise NotSound(f"layers {a} and {b} record different op counts")

    def same(u: Any, v: Any) -> bool:
        if isinstance(u, dict) and isinstance(v, dict):
            if "tensor" in u and len(u) == 1:
                if not ("tensor" in v and len(v) == 1):
                    return False
                x, y = u["tensor"], v["tensor"]
                if x is None or y is None:
                    return x is y
                in_a, in_b = x >= lo[a], y >= lo[b]
                if in_a != in_b:
                    return False
                if in_a and x - lo[a] != y - lo[b]:
                    return False
                return all(tensors[x].get(f) == tensors[y].get(f) for f in _META)
            return u.keys() == v.keys() and all(same(u[key], v[key]) for key in u)
        if isinstance(u, list) and isinstance(v, list):
            return len(u) == len(v) and all(same(x, y) for x, y in zip(u, v))
        return type(u) is type(v) and u == v

    for x, y in zip(range(first[a], last[a] + 1), range(first[b], last[b] + 1)):
        p, q = ops[x], ops[y]
        if (p["op"] != q["op"] or p.get("file") != q.get("file") or p.get("line") != q.get("line")
                or _rename(p.get("module", ""), prefix, b, a) != q.get("module", "")
                or not same(p["args"], q["args"])
                or not same([{"tensor": o} for o in p["outputs"]],
                            [{"tensor": o} for o in q["outputs"]])):
            raise NotSound(f"layers {a} and {b} differ at their op {x - first[a]} "
                           f"({p['op']} / {q['op']})")


def expand(trace: Dict[str, Any], layers_path: Optional[str], tmpl: Sequence[int], k: int,
           modules: Optional[Dict[str, str]] = None,
           pairs: Optional[Dict[int, int]] = None,
           labels: Optional[Sequence[Optional[int]]] = None) -> Dict[str, Any]:
    """The OpTrace of all len(tmpl) layers from `trace`, a capture of the first k (every
    layer's parameters recorded, the first k layers' cache buffers as inputs). Layer i >= k
    repeats the ops of layer tmpl[i] < k. `layers_path` is the layer list's module path in
    the trace ("model.model.layers"); `modules` the full model's module types; `pairs`
    {template: an earlier prefix layer of the same structure}, whose recorded ops must be
    the template's, renamed (checked: a layer whose ops depend on its index in a way its
    modules do not show differs from its twin, and nothing is replicated).

    `labels` (with layers_path None): per op, the stretch it belongs to, for stretches that
    are not layers of a module list (a policy's integration steps, flow_steps): they share
    their modules and parameters, so nothing is renamed."""
    n = len(tmpl)
    prefix = None if labels is not None else layers_path + "."
    tensors, ops = trace["tensors"], trace["ops"]
    op_layer = list(labels) if labels is not None else \
        [_layer_of(op.get("module", ""), prefix) for op in ops]
    # Ops: prologue, layer 0, ..., layer k-1, epilogue, each contiguous.
    first: Dict[int, int] = {}
    last: Dict[int, int] = {}
    state = -1  # -1 prologue, L a layer, k epilogue
    for x, lay in enumerate(op_layer):
        if lay is None:
            if state >= 0:
                state = k
            continue
        if lay >= k or lay < state or state == k or (lay > state and lay != state + 1 and
                                                     state >= 0) or (state < 0 and lay != 0):
            raise NotSound(f"op {x} of layer {lay} out of order (after {state})")
        if lay != state:
            first[lay] = x
            state = lay
        last[lay] = x
    if len(first) != k:
        raise NotSound("not every prefix layer recorded ops")
    # The tensors each op creates (constants while its arguments are encoded, then its
    # outputs): ids grow as the capture creates them, so each stretch of ops owns a
    # contiguous id range.
    n_src = 0
    while n_src < len(tensors) and tensors[n_src]["role"] in ("input", "parameter", "buffer"):
        n_src += 1
    high = [0] * len(ops)  # the highest id created up to and including op x
    top = n_src - 1
    for x, op in enumerate(ops):
        ids: List[int] = []
        _refs(op["args"], ids)
        ids.extend(o for o in op["outputs"] if o is not None)
        top = max([top] + ids)
        high[x] = top
    lo = {L: (high[first[L] - 1] if first[L] > 0 else n_src - 1) + 1 for L in range(k)}
    hi = {L: high[last[L]] for L in range(k)}
    pro_end = lo[0]  # prologue ids: [n_src, pro_end)

    def owner(t: int):
        if t < n_src:
            return "src"
        if t < pro_end:
            return "pro"
        for L in range(k):
            if lo[L] <= t <= hi[L]:
                return L
        return "epi"

    # The sources each layer owns: its parameters and buffers by name, its inputs (cache
    # buffers) when only its ops read them.
    readers: Dict[int, set] = {}
    for x, op in enumerate(ops):
        ids = []
        _refs(op["args"], ids)
        for t in ids:
            if t < n_src:
                readers.setdefault(t, set()).add(op_layer[x])
    own: Dict[int, List[int]] = {L: [] for L in range(n)}  # layer -> its source ids (P)
    by_name: Dict[str, int] = {}
    src_layer: Dict[int, int] = {}
    for t in range(n_src):
        e = tensors[t]
        if e["role"] in ("parameter", "buffer"):
            by_name[e.get("name", "")] = t
            lay = _layer_of(e.get("name", ""), prefix)
        else:
            r = readers.get(t, set())
            lay = next(iter(r)) if len(r) == 1 and None not in r else None
        if lay is not None:
            src_layer[t] = lay
            if lay < k:
                own[lay].append(t)

    # Stretches that are not layers (a policy's steps) may make the program's result: the
    # last captured step's actions are an output of the last step only, so the template's
    # are compared and replicated as intermediates, and the last replica's are the output.
    returned = [] if labels is None else \
        [t for t in range(lo[k - 1], hi[k - 1] + 1) if tensors[t]["role"] == "output"]
    if returned:
        tensors = list(tensors)
        for t in returned:
            tensors[t] = {**tensors[t], "role": "intermediate"}

    for j, twin in (pairs or {}).items():
        _check_twins(tensors, ops, first, last, lo, prefix, twin, j)

    key_of: Dict[Any, int] = {}  # virtual key -> new id
    entries: List[Dict[str, Any]] = []
    skey: List[Any] = []  # per new entry, its storage key

    def add(key: Any, entry: Dict[str, Any], storage: Any) -> None:
        key_of[key] = len(entries)
        entry["id"] = len(entries)
        entries.append(entry)
        skey.append(storage)

    origin: Dict[int, int] = {}
    for t, e in enumerate(tensors):
        origin.setdefault(e.get("storage", ("solo", t)), t)

    def ref(i: int, j: int, t: int, check: bool = True) -> Any:
        """The key, in replica i of layer j, of what layer j's ops call P tensor t."""
        o = owner(t)
        if o == j:
            return ("r", i, t)
        if o == "src":
            lay = src_layer.get(t)
            if lay is None:
                return t
            if lay != j:
                if tensors[t]["role"] == "input":
                    raise NotSound(f"layer {j} reads layer {lay}'s input {t}")
                return t  # another layer's parameter, read by name (not expected)
            if tensors[t]["role"] == "input":
                return ("r", i, t)
            name = _rename(tensors[t]["name"], prefix, i, j)
            if name not in by_name:
                raise NotSound(f"no parameter {name}")
            return by_name[name]
        if o == "pro":
            return t
        if o == j - 1:  # the previous layer's result: counted from its end
            off = hi[j - 1] - t
            prev = i - 1
            got = hi[prev] - off if prev < k else ("r", prev, hi[tmpl[prev]] - off)
            src = got if isinstance(got, int) else got[2]
            if check and any(tensors[src].get(f) != tensors[t].get(f)
                             for f in ("shape", "dtype", "strides", "storage_offset")):
                raise NotSound(f"layer {i}'s input from layer {prev} does not match")
            return got
        raise NotSound(f"layer {j} reads tensor {t} of {o}")

    # Sources: inputs (the replicas' own inputs after the last prefix layer's), then
    # parameters and buffers as recorded (every layer's).
    inputs = [t for t in range(n_src) if tensors[t]["role"] == "input"]
    # (None: no layer owns an input, as with a step without a cache: nothing to insert)
    after = max((t for t in inputs if t in src_layer), default=None)
    layer_inputs = [t for t in inputs if t in src_layer]
    if [src_layer[t] for t in layer_inputs] != sorted(src_layer[t] for t in layer_inputs):
        raise NotSound("layer inputs are not in layer order")
    for t in range(n_src):
        e = tensors[t]
        add(t, dict(e), ("p", e.get("storage")))
        if t == after:
            for i in range(k, n):
                for s in own[tmpl[i]]:
                    if tensors[s]["role"] != "input":
                        continue
                    add(("r", i, s), dict(tensors[s]),
                        ("r", i, tensors[s].get("storage")))

    def own_storage(i: int, j: int, t: int) -> Any:
        s = tensors[t].get("storage")
        o = origin[s]
        if o == t:
            return ("r", i, s)
        got = ref(i, j, o, check=False) if owner(o) != "epi" else o
        return skey[key_of[got]]

    new_ops: List[Dict[str, Any]] = []

    def copy_op(op: Dict[str, Any], f, module: Optional[str] = None) -> Dict[str, Any]:
        out = {key: v for key, v in op.items()}
        out["args"] = _remap(op["args"], f)
        out["outputs"] = [None if o is None else f(o) for o in op["outputs"]]
        if module is not None:
            out["module"] = module
        return out

    # Prologue and prefix layers as recorded.
    for t in range(n_src, hi[k - 1] + 1):
        add(t, dict(tensors[t]), ("p", tensors[t].get("storage")))
    ident = lambda t: key_of[t]  # noqa: E731
    for x in range(0, last[k - 1] + 1):
        new_ops.append(copy_op(ops[x], ident))
    # Replicas.
    for i in range(k, n):
        j = tmpl[i]
        for t in range(lo[j], hi[j] + 1):
            e = dict(tensors[t])
            add(("r", i, t), e, own_storage(i, j, t))

        def f(t: int, _i=i, _j=j) -> int:
            return key_of[ref(_i, _j, t)]

        for x in range(first[j], last[j] + 1):
            module = ops[x].get("module")  # (a step's own ops run in no module)
            new_ops.append(copy_op(ops[x], f, None if module is None else
                                   _rename(module, prefix, i, j)))
    # Epilogue: the last prefix layer's results are now the last layer's.
    jn = tmpl[n - 1]
    for t in range(hi[k - 1] + 1, len(tensors)):
        add(t, dict(tensors[t]), ("p", tensors[t].get("storage")))

    def g(t: int) -> int:
        o = owner(t)
        if o == k - 1:
            off = hi[k - 1] - t
            src = hi[jn] - off
            if any(tensors[src].get(fl) != tensors[t].get(fl)
                   for fl in ("shape", "dtype", "strides", "storage_offset")):
                raise NotSound("the last layer's result does not match the prefix's")
            return key_of[("r", n - 1, src)]
        if o == "src" and tensors[t]["role"] == "input" and t in src_layer:
            raise NotSound("the epilogue reads a layer's input")
        if isinstance(o, int):
            raise NotSound(f"the epilogue reads layer {o}")
        return key_of[t]

    for x in range(last[k - 1] + 1, len(ops)):
        new_ops.append(copy_op(ops[x], g))
    for t in returned:
        entries[key_of[("r", n - 1, t)]]["role"] = "output"
    # Storages numbered by first appearance, as the capture numbers them.
    numbers: Dict[Any, int] = {}
    for e, key in zip(entries, skey):
        if "storage" in e:
            e["storage"] = numbers.setdefault(key, len(numbers))
    doc = dict(trace)
    doc["tensors"] = entries
    doc["ops"] = new_ops
    if modules is not None:
        doc["modules"] = modules
    return doc


_BUILT: Dict[str, Any] = {}


def built_model(key: Any, build, new_mode):
    """(fake mode, model) for `key`, built by build(mode) under new_mode() unless the last
    call had the same key (a sweep worker's points: the same model at other batch and
    context sizes). The model is left as built: a capture runs it without changing it."""
    if _BUILT.get("key") != key:
        _BUILT.clear()
        mode = new_mode()
        _BUILT.update(key=key, mode=mode, model=build(mode))
    return _BUILT["mode"], _BUILT["model"]


FLOW_TIME = "flow_time"  # phases.PolicyStep's time embedding: each step's first ops
# A policy's integration steps captured: the last is replicated, the two before it are the
# template's predecessor (whose results it reads) and its twin's.
STEPS_CAPTURED = 3


def flow_steps(trace: Dict[str, Any], steps: int) -> Optional[List[Optional[int]]]:
    """Per op of a policy step's capture (phases.PolicyStep), the integration step it belongs
    to (None before the first): step s runs from its first time-embedding op to the op
    before step s+1's, the last to the end of the trace. None unless `steps` steps are found."""
    labels: List[Optional[int]] = []
    step, inside = -1, False
    for op in trace["ops"]:
        at = op.get("module", "") == FLOW_TIME
        if at and not inside:
            step += 1
        inside = at
        labels.append(step if step >= 0 else None)
    return labels if step + 1 == steps else None


def applies(spec, run, options) -> bool:
    """The runs a prefix capture is tested for: an inference step of a causal LM (prefill or
    one decode token; quantized or not, under a parallel plan or not: a scheme and a plan
    rewrite the captured trace), not a speculative verify step or a training step; a
    policy's control step (its integration steps)."""
    if options.train:
        return False
    return (spec.task == "causal-lm" and run.new_tokens == 1) or spec.task == policy.TASK
