// Segments priced once per structure (docs/cache-aware.md, "Repeated layers"): the
// segmentation search (fusion.cc) prices up to max_segment_ops segments ending at every unit,
// and in a model whose layers repeat most of them are the same segment of another layer
// under other names. A segment's plan (fusion_plan.cc) and traffic (fusion_segment.cc) read
// only: its units' own fields and problems, the metadata of the tensors they read and write
// and of the views between those and their roots, which of those tensors are the same,
// which roots are graph sources, and which produced roots are used outside the segment (a
// later reader, a graph output, an unanalyzed reader) or by nobody. segment_key writes all of
// that with the tensors renamed by first appearance, so two segments with equal keys have
// equal plans up to renaming and equal traffic at every capacity.
#include <bit>
#include <unordered_map>

#include "fusion_impl.h"

namespace solar::tiling {

namespace {

// Interns value lists: equal lists, equal ids.
class Interner {
 public:
  std::uint32_t id(std::vector<std::uint64_t> v) {
    return ids_.emplace(std::move(v), static_cast<std::uint32_t>(ids_.size())).first->second;
  }

 private:
  std::unordered_map<std::vector<std::uint64_t>, std::uint32_t, detail::KeyHash> ids_;
};

void push_wide(std::vector<std::uint64_t>& v, detail::Wide w) {
  v.push_back(static_cast<std::uint64_t>(w));
  v.push_back(static_cast<std::uint64_t>(w >> 64));
}

}  // namespace

void GraphTrafficModel::Impl::build_signatures(const ir::Graph& g) {
  Interner tensors, unit_fields;
  constexpr std::uint32_t kNone = ~std::uint32_t{0};
  tensor_sig.assign(g.tensors().size(), kNone);
  // A tensor: shape, dtype, role, storage, size, and the signature of the tensor it is a free
  // view of (the walk a tiled fusion follows through views reads every shape on the way).
  auto sig = [&](auto&& self, std::uint32_t t) -> std::uint32_t {
    if (tensor_sig[t] != kNone) return tensor_sig[t];
    const ir::Tensor& x = g.tensor(ir::TensorId{t});
    const cost::Storage st = storage_of(g, x.id);
    std::vector<std::uint64_t> v;
    v.push_back(x.shape.size());
    for (std::int64_t e : x.shape) v.push_back(static_cast<std::uint64_t>(e));
    v.push_back(static_cast<std::uint64_t>(x.dtype));
    v.push_back(static_cast<std::uint64_t>(x.role));
    v.push_back(static_cast<std::uint64_t>(st.format));
    v.push_back(std::bit_cast<std::uint64_t>(st.zero_fraction));
    push_wide(v, tensor_size[t]);
    const int parent = view_parent[t];
    v.push_back(parent < 0 ? kNone : self(self, static_cast<std::uint32_t>(parent)));
    return tensor_sig[t] = tensors.id(std::move(v));
  };
  for (std::uint32_t t = 0; t < g.tensors().size(); ++t) sig(sig, t);

  unit_sig.assign(units.size(), 0);
  for (std::size_t u = 0; u < units.size(); ++u) {
    const detail::Unit& unit = units[u];
    const ir::Op& op = g.op(unit.op);
    std::vector<std::uint64_t> v;
    // A repeat op's body model is its own: never shared.
    v.push_back(unit.repeat ? u + 1 : 0);
    v.push_back(static_cast<std::uint64_t>(op.kind()));
    v.push_back((unit.has_curve ? 1u : 0u) | (unit.attainable_only ? 2u : 0u) |
                (unit.pattern ? 4u : 0u) | (unit.can_reside ? 8u : 0u));
    v.push_back(static_cast<std::uint64_t>(unit.reduce));
    v.push_back(static_cast<std::uint64_t>(unit.problem_id + 1));
    push_wide(v, unit.read_bytes);
    push_wide(v, unit.write_bytes);
    push_wide(v, unit.own_bytes);
    v.push_back(unit.operand_bytes.size());
    for (detail::Wide b : unit.operand_bytes) push_wide(v, b);
    v.push_back(op.inputs.size());
    for (ir::TensorId in : op.inputs) v.push_back(tensor_sig[in.value]);
    v.push_back(op.outputs.size());
    for (ir::TensorId out : op.outputs) v.push_back(tensor_sig[out.value]);
    unit_sig[u] = unit_fields.id(std::move(v));
  }
}

std::vector<std::uint64_t> GraphTrafficModel::Impl::segment_key(int a, int b) const {
  // Local names by first appearance: tensors as the units name them (a source a tiled fusion
  // follows is matched by the view its reader names) and their roots.
  std::vector<std::uint32_t> named, roots;
  auto local = [](std::vector<std::uint32_t>& seen, std::uint32_t t) -> std::uint64_t {
    for (std::size_t i = 0; i < seen.size(); ++i)
      if (seen[i] == t) return i;
    seen.push_back(t);
    return seen.size() - 1;
  };
  std::vector<std::uint64_t> key;
  key.reserve(static_cast<std::size_t>(b - a) * 12);
  for (int u = a; u < b; ++u) {
    key.push_back(unit_sig[u]);
    const ir::Op& op = graph->op(units[u].op);
    for (ir::TensorId in : op.inputs)
      key.push_back(local(named, in.value) << 32 | local(roots, root[in.value]));
    for (ir::TensorId out : op.outputs) {
      const std::uint32_t r = root[out.value];
      key.push_back(local(named, out.value) << 32 | local(roots, r));
      // Who else needs it: nobody; readers only inside; a reader outside or a graph output.
      const std::vector<int>& us = users[r];
      const bool outside = used_outside[r] || (!us.empty() && (us.front() < a || us.back() >= b));
      key.push_back((us.empty() ? 1u : 0u) | (outside ? 2u : 0u) |
                    (used_outside[r] ? 4u : 0u));
    }
  }
  return key;
}

}  // namespace solar::tiling
