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
  const nlohmann::json& kind_arg = c.a("collective");
  if (!kind_arg.is_string())
    throw Unsupported("a collective without the sharded capture's `collective` argument (was "
                      "it recorded outside a shard_map over a mesh?)");
  const auto kind = ir::parse_collective_kind(kind_arg.get<std::string>());
  if (!kind) throw Unsupported("unknown collective kind '" + kind_arg.get<std::string>() + "'");
  ir::CollectiveOp op;
  op.kind = *kind;
  // A ppermute's send and recv run between a pair (the IR's rule); `size` is its axis'.
  const bool pair = op.kind == ir::CollectiveKind::Send || op.kind == ir::CollectiveKind::Recv;
  op.group.size = pair ? 2 : c.int_arg("size", 1);
  op.group.ranks_per_domain = c.int_arg("ranks_per_domain", 0);  // placed on a system
  if (c.a("group").is_string()) op.group.name = c.a("group").get<std::string>();
  if (ir::collective_reduces(op.kind)) {
    const auto r = ir::parse_collective_reduction(c.a("reduction").get<std::string>());
    if (!r) throw Unsupported("unknown collective reduction");
    op.reduction = *r;
  }
  op.axis = c.int_arg("axis", 0);
  op.concat_axis = c.int_arg("concat_axis", 0);
  op.peer = c.int_arg("peer", 0);
  op.root = c.int_arg("root", 0);
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
