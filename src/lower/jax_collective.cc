// The jax table's collectives: the jaxpr collectives of a shard_map body over a mesh of more
// than one device (psum, psum_invariant, pmax, pmin, all_gather, reduce_scatter/psum_scatter,
// all_to_all, ppermute, pbroadcast), each one rank's collective op. The sharded capture
// (python/solar/frontends/jax/collectives.py) resolves what depends on the rank and the mesh
// and writes it as arguments: `collective` (the IR kind), `reduction`, `group` (the mesh axes,
// comma-joined), `size` (their extents' product; a send or recv is a pair), `axis`,
// `concat_axis`, `peer` (a ppermute's send or recv partner, a program rank), `root`
// (pbroadcast's source), and with --system `ranks_per_domain` (mesh_links.py).
#include <string>

#include "jax_families.h"
#include "solar/util/errors.h"

namespace solar::lower::detail::jax {

namespace {

void collective(Context& c) {
  // A ppermute's send and recv run between a pair; `size` is its axis'.
  ir::CollectiveOp op = c.collective_args("a shard_map over a mesh");
  std::vector<TensorId> inputs;
  if (op.kind != ir::CollectiveKind::Recv) inputs.push_back(in(c, 0));
  c.collective(std::move(inputs), c.def(0), std::move(op));
}

}  // namespace

void register_collective_ops(const Register& reg) {
  for (const char* name : {"jax::psum", "jax::psum_invariant", "jax::pmax", "jax::pmin",
                           "jax::all_gather", "jax::reduce_scatter", "jax::psum_scatter",
                           "jax::all_to_all", "jax::ppermute", "jax::pbroadcast"})
    reg(name, collective);
}

}  // namespace solar::lower::detail::jax
