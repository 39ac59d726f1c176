#include "solar/ir/view_map.h"

#include <numeric>

#include "solar/ir/attrs.h"
#include "solar/ir/shape.h"

namespace solar::ir {

namespace {

// Dimension d of one side -> the other side's dimension `other[d]`; a size-1 dimension of
// `shape` without one -> 0 (the only value it takes).
Substitution dims_to(const std::vector<int>& other, const std::vector<std::int64_t>& shape) {
  Substitution s(shape.size());
  for (std::size_t d = 0; d < shape.size(); ++d) {
    if (other[d] >= 0) s[d] = AffineExpr::index(other[d]);
    else if (shape[d] == 1) s[d] = AffineExpr::constant(0);
  }
  return s;
}

}  // namespace

DimMap view_map(const std::vector<std::int64_t>& in, const std::vector<std::int64_t>& out) {
  DimMap m{std::vector<int>(in.size(), -1), std::vector<int>(out.size(), -1)};
  if (numel(in) == numel(out)) {
    const std::vector<std::int64_t> si = row_major_strides(in);
    const std::vector<std::int64_t> so = row_major_strides(out);
    for (std::size_t d = 0; d < in.size(); ++d)
      for (std::size_t e = 0; e < out.size(); ++e)
        if (in[d] > 1 && in[d] == out[e] && si[d] == so[e]) {
          m.out_of_in[d] = static_cast<int>(e);
          m.in_of_out[e] = static_cast<int>(d);
        }
    return m;
  }
  if (out.size() < in.size()) return m;
  const std::size_t shift = out.size() - in.size();
  for (std::size_t d = 0; d < in.size(); ++d)
    if (in[d] == out[d + shift] && in[d] > 1) {
      m.out_of_in[d] = static_cast<int>(d + shift);
      m.in_of_out[d + shift] = static_cast<int>(d);
    }
  return m;
}

std::optional<MovePaths> move_paths(const Graph& g, const Op& op) {
  if (op.kind() != OpKind::Move || op.inputs.size() != 1 || op.outputs.size() != 1)
    return std::nullopt;
  const MoveOp& m = op.move();
  const auto& in = g.tensor(op.inputs[0]).shape;
  const auto& out = g.tensor(op.outputs[0]).shape;
  switch (m.kind) {
    case MoveKind::View: case MoveKind::Copy: {
      if (g.tensor(op.inputs[0]).dtype != g.tensor(op.outputs[0]).dtype) return std::nullopt;
      if (numel(in) != numel(out)) {  // a broadcast (a repeat is not a view of this)
        if (out.size() < in.size()) return std::nullopt;
        for (std::size_t d = 0; d < in.size(); ++d)
          if (in[d] != 1 && in[d] != out[d + out.size() - in.size()]) return std::nullopt;
      }
      const DimMap dm = view_map(in, out);
      return MovePaths{dims_to(dm.out_of_in, in), dims_to(dm.in_of_out, out)};
    }
    case MoveKind::Cast:
      if (in != out) return std::nullopt;
      [[fallthrough]];
    case MoveKind::Permute: {
      std::vector<std::int64_t> perm(in.size());
      std::iota(perm.begin(), perm.end(), 0);
      if (m.kind == MoveKind::Permute) {
        const auto* p = find_int_list(m.attrs, "perm");
        if (!p || p->size() != in.size()) return std::nullopt;
        perm = *p;
      }
      MovePaths paths{Substitution(in.size()), Substitution(out.size())};
      for (std::size_t e = 0; e < perm.size(); ++e) {
        const auto d = static_cast<std::size_t>(perm[e]);
        if (d >= in.size()) return std::nullopt;
        paths.forward[d] = AffineExpr::index(static_cast<IndexPos>(e));
        paths.backward[e] = AffineExpr::index(static_cast<IndexPos>(d));
      }
      return paths;
    }
    case MoveKind::Slice: {
      const auto* starts = find_int_list(m.attrs, "starts");
      const auto* steps = find_int_list(m.attrs, "steps");
      if (!starts || starts->size() != in.size() || (steps && steps->size() != in.size()))
        return std::nullopt;
      // out[o] = in[start + step * o] per dimension.
      MovePaths paths{Substitution(in.size()), Substitution(out.size())};
      for (std::size_t d = 0; d < in.size(); ++d) {
        const std::int64_t start = (*starts)[d], step = steps ? (*steps)[d] : 1;
        if (start < 0 || step < 1) return std::nullopt;
        const auto v = static_cast<IndexPos>(d);
        paths.forward[d] = AffineExpr::make({{v, step}}, start);
        if (step == 1) paths.backward[d] = AffineExpr::make({{v, 1}}, -start);
      }
      return paths;
    }
    case MoveKind::Concat: case MoveKind::Pad: case MoveKind::Gather: case MoveKind::Scatter:
      return std::nullopt;
  }
  return std::nullopt;
}

}  // namespace solar::ir
