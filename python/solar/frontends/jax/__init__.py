"""The JAX frontend: jaxpr capture to an OpTrace (frontend "jax"), lowered by the C++ jax
table (src/lower/jax.cc); docs/jax-frontend.md. jax and flax are imported lazily.

Modules: program (a program file loaded, captured, analyzed, validated, cross-checked with
XLA; the Python API analyze_jax), capture (a function's capture), walker (the jaxpr walk:
inlining, loops, branches), recorder (the OpTrace and a loop body's), rng (random numbers
expanded into integer ops), encoding (values, parameters and locations as JSON), limits (the
memory check before a real run); collectives, sharded and sharded_child (a program that
shards itself with shard_map, one graph per rank: docs/distributed.md).
"""
