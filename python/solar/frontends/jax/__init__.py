"""The JAX frontend: jaxpr capture to an OpTrace (frontend "jax"), lowered by the C++ jax
table (src/lower/jax.cc); docs/jax-frontend.md. jax and flax are imported lazily."""
