// The aten table's padding: constant_pad_nd, and reflection and replication padding with
// their gradients.
#include <algorithm>
#include <functional>
#include <optional>
#include <vector>

#include <fmt/format.h>

#include "context.h"
#include "families.h"
#include "solar/util/errors.h"

namespace solar::lower::detail {

namespace {

// constant_pad_nd: `pad` lists (before, after) pairs from the last dimension backwards.
void lower_constant_pad(Context& c) {
  TensorId in = c.use_arg("self");
  const std::size_t r = c.t(in).shape.size();
  auto p = c.ints("pad");
  if (p.size() % 2 != 0 || p.size() / 2 > r) throw Unsupported("malformed pad list");
  std::vector<std::int64_t> pads(2 * r, 0);
  for (std::size_t k = 0; k < p.size() / 2; ++k) {
    std::size_t d = r - 1 - k;
    pads[2 * d] = p[2 * k];
    pads[2 * d + 1] = p[2 * k + 1];
  }
  for (std::int64_t x : pads)
    if (x < 0) throw Unsupported("negative padding (cropping)");
  c.move(MoveKind::Pad, {in}, c.def(0), {{"pads", pads}, {"value", c.num_arg("value", 0)}});
}

// Reflection and replication padding over the trailing dims (`padding` lists (before,
// after) pairs from the last dim backwards), one dim at a time. Along a dim of input size I
// with pads (L, R), output position o reads, left of the input, L - o (reflection) or 0
// (replication); right of it, I - 2 - o' (reflection) or I - 1 (replication) for o' = o - L - I.
enum class EdgePad { Reflect, Replicate };

// An einsum over `out`'s shape (plus `extra` summed indices) reading `in` plainly except
// along `dim`, where `sub(i, extra)` gives the position; `mask` over i (and extra).
void along(Context& c, TensorId in, TensorId out, std::size_t dim,
           const std::function<AffineExpr(ir::IndexPos i, std::optional<ir::IndexPos> extra)>& sub,
           std::int64_t extra_extent,
           const std::function<std::vector<AffineConstraint>(ir::IndexPos,
                                                             std::optional<ir::IndexPos>)>& mask,
           Reduce r, std::optional<double> pad) {
  const Shape os = c.t(out).shape;
  Space s;
  std::vector<AffineExpr> so, si;
  ir::IndexPos i = -1;
  for (std::size_t d = 0; d < os.size(); ++d) {
    ir::IndexPos p = s.add(fmt::format("i{}", d), os[d]);
    if (d == dim) i = p;
    so.push_back(ix(p));
  }
  std::optional<ir::IndexPos> extra;
  if (extra_extent > 0) extra = s.add("e", extra_extent);
  si = so;
  si[dim] = sub(i, extra);
  c.einsum({in}, out, std::move(s), {si}, so, arg(0), r, mask(i, extra), {pad});
}

std::vector<std::int64_t> edge_pads(Context& c, std::size_t nd, std::size_t rank) {
  std::vector<std::int64_t> p = c.ints("padding");
  if (p.size() != 2 * nd || rank < nd) throw Unsupported("padding list does not match the dims");
  for (std::int64_t x : p)
    if (x < 0) throw Unsupported("negative edge padding (cropping)");
  return p;
}

// Whether dimension k (of the nd padded ones, last first) is the last one with padding: it
// writes the output, the others a temporary.
bool last_padded(const std::vector<std::int64_t>& pads, std::size_t k, std::size_t nd) {
  for (std::size_t j = k + 1; j < nd; ++j)
    if (pads[2 * j] != 0 || pads[2 * j + 1] != 0) return false;
  return true;
}

Fn edge_pad(std::size_t nd, EdgePad mode) {
  return [=](Context& c) {
    TensorId cur = c.use_arg("self");
    const std::size_t rank = c.t(cur).shape.size();
    auto pads = edge_pads(c, nd, rank);
    TensorId out = c.def(0);
    const bool reflect = mode == EdgePad::Reflect;
    for (std::size_t k = 0; k < nd; ++k) {
      const std::size_t dim = rank - 1 - k;
      const std::int64_t L = pads[2 * k], R = pads[2 * k + 1], I = c.t(cur).shape[dim];
      if (L == 0 && R == 0) continue;
      if (reflect && (L >= I || R >= I))
        throw Unsupported("reflection padding as wide as the input");
      std::vector<TensorId> parts;
      auto part = [&](std::int64_t n, bool left) {
        Shape sh = c.t(cur).shape;
        sh[dim] = n;
        TensorId t = c.temp(left ? "left" : "right", sh, c.t(cur).dtype);
        along(
            c, cur, t, dim,
            [&](ir::IndexPos i, std::optional<ir::IndexPos>) {
              if (!reflect) return AffineExpr::constant(left ? 0 : I - 1);
              return left ? AffineExpr::make({AffineTerm{i, -1}}, L)
                          : AffineExpr::make({AffineTerm{i, -1}}, I - 2);
            },
            0,
            [](ir::IndexPos, std::optional<ir::IndexPos>) {
              return std::vector<AffineConstraint>{};
            },
            Reduce::None, std::nullopt);
        parts.push_back(t);
      };
      if (L > 0) part(L, true);
      parts.push_back(cur);
      if (R > 0) part(R, false);
      Shape sh = c.t(cur).shape;
      sh[dim] = L + I + R;
      TensorId next = last_padded(pads, k, nd) ? out : c.temp("padded", sh, c.t(cur).dtype);
      c.move(MoveKind::Concat, parts, next, {{"axis", static_cast<std::int64_t>(dim)}});
      cur = next;
    }
    if (cur != out) c.move(MoveKind::Copy, {cur}, out);  // no padding at all
  };
}

// The gradient: per dim, grad_input = grad's centre + the mirrored (or summed) edge parts.
Fn edge_pad_backward(std::size_t nd, EdgePad mode) {
  return [=](Context& c) {
    TensorId cur = c.use_arg("grad_output");
    const std::size_t rank = c.t(cur).shape.size();
    auto pads = edge_pads(c, nd, rank);
    TensorId out = c.def(0);
    const Shape xs = c.t(out).shape;
    const bool reflect = mode == EdgePad::Reflect;
    ir::DType dt = c.t(cur).dtype;
    for (std::size_t k = 0; k < nd; ++k) {
      const std::size_t dim = rank - 1 - k;
      const std::int64_t L = pads[2 * k], R = pads[2 * k + 1], I = xs[dim];
      if (L == 0 && R == 0) continue;
      if (c.t(cur).shape[dim] != L + I + R)
        throw Unsupported("padding gradient of an unexpected size");
      auto slice = [&](std::int64_t from, std::int64_t n, const char* what) {
        Shape sh = c.t(cur).shape;
        std::vector<std::int64_t> starts(rank, 0), ends = sh, steps(rank, 1);
        starts[dim] = from;
        ends[dim] = from + n;
        sh[dim] = n;
        TensorId t = c.temp(what, sh, dt);
        c.move(MoveKind::Slice, {cur}, t, {{"starts", starts}, {"ends", ends}, {"steps", steps}});
        return t;
      };
      Shape sh = c.t(cur).shape;
      sh[dim] = I;
      std::vector<TensorId> terms{slice(L, I, "centre")};
      auto edge = [&](std::int64_t n, bool left) {
        TensorId g = slice(left ? 0 : L + I, n, left ? "left" : "right");
        TensorId t = c.temp(left ? "from_left" : "from_right", sh, dt);
        if (reflect) {
          // left: i in [1, L] reads g[L - i]; right: i in [I-1-R, I-2] reads g[I - 2 - i]
          const std::int64_t lo = left ? 1 : I - 1 - R, hi = left ? L : I - 2,
                             off = left ? L : I - 2;
          along(
              c, g, t, dim,
              [&](ir::IndexPos i, std::optional<ir::IndexPos>) {
                return AffineExpr::make({AffineTerm{i, -1}}, off);
              },
              0,
              [&](ir::IndexPos i, std::optional<ir::IndexPos>) {
                std::vector<AffineConstraint> m;
                within(m, AffineExpr::make({AffineTerm{i, 1}}, -lo), hi - lo);
                return m;
              },
              Reduce::None, 0.0);
        } else {
          // the whole edge adds into position 0 (left) or I - 1 (right)
          const std::int64_t at = left ? 0 : I - 1;
          along(
              c, g, t, dim, [&](ir::IndexPos, std::optional<ir::IndexPos> e) { return ix(*e); }, n,
              [&](ir::IndexPos i, std::optional<ir::IndexPos>) {
                std::vector<AffineConstraint> m;
                within(m, AffineExpr::make({AffineTerm{i, 1}}, -at), 0);
                return m;
              },
              Reduce::Sum, std::nullopt);
        }
        terms.push_back(t);
      };
      if (L > 0) edge(L, true);
      if (R > 0) edge(R, false);
      TensorId next = last_padded(pads, k, nd) ? out : c.temp("grad", sh, dt);
      Expr sum = arg(0);
      for (std::size_t t = 1; t < terms.size(); ++t) sum = add(sum, arg(static_cast<int>(t)));
      c.elementwise(terms, next, sum);
      cur = next;
    }
    if (cur != out) c.move(MoveKind::Copy, {cur}, out);
  };
}

}  // namespace

void register_pad_ops(const Register& reg) {
  reg("aten::constant_pad_nd.default", lower_constant_pad);
  static const char* const edge_names[2][3][2] = {
      {{"aten::reflection_pad1d.default", "aten::reflection_pad1d_backward.default"},
       {"aten::reflection_pad2d.default", "aten::reflection_pad2d_backward.default"},
       {"aten::reflection_pad3d.default", "aten::reflection_pad3d_backward.default"}},
      {{"aten::replication_pad1d.default", "aten::replication_pad1d_backward.default"},
       {"aten::replication_pad2d.default", "aten::replication_pad2d_backward.default"},
       {"aten::replication_pad3d.default", "aten::replication_pad3d_backward.default"}}};
  for (int m = 0; m < 2; ++m)
    for (std::size_t nd = 1; nd <= 3; ++nd) {
      const EdgePad mode = m == 0 ? EdgePad::Reflect : EdgePad::Replicate;
      reg(edge_names[m][nd - 1][0], edge_pad(nd, mode));
      reg(edge_names[m][nd - 1][1], edge_pad_backward(nd, mode));
    }
}

}  // namespace solar::lower::detail
