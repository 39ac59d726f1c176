// The window builders: convolution and window reduction as one einsum each (builders.h).
#include <optional>
#include <vector>

#include <fmt/format.h>

#include "builders.h"
#include "solar/util/errors.h"

namespace solar::lower::detail {

ConvLayout ConvLayout::identity(std::size_t rank) {
  ConvLayout l;
  for (std::size_t d = 0; d < rank; ++d) {
    l.lhs.push_back(static_cast<std::int64_t>(d));
    l.rhs.push_back(static_cast<std::int64_t>(d));
    l.out.push_back(static_cast<std::int64_t>(d));
  }
  return l;
}

// The index order (n, g, bg, k, c, p.., r.., then one input index per input-dilated
// dimension) and the names are the ones the reports show for a convolution's ranks.
void convolution(Context& c, TensorId x, TensorId w, TensorId out, const ConvLayout& layout,
                 const std::vector<WindowDim>& window, std::int64_t feature_groups,
                 std::int64_t batch_groups) {
  const Shape xs = c.t(x).shape, ws = c.t(w).shape, os = c.t(out).shape;
  const std::size_t rank = xs.size();
  const std::size_t nd = window.size();
  if (rank < 3 || ws.size() != rank || os.size() != rank || nd + 2 != rank)
    throw Unsupported("convolution needs operands of equal rank >= 3");
  const ConvLayout& l = layout;
  if (l.lhs.size() != rank || l.rhs.size() != rank || l.out.size() != rank)
    throw Unsupported("convolution dimension numbers of the wrong rank");
  const std::int64_t G = feature_groups, B = batch_groups;
  const std::int64_t N = xs[l.lhs[0]], C = xs[l.lhs[1]], O = ws[l.rhs[0]], I = ws[l.rhs[1]],
                     No = os[l.out[0]];
  if (G < 1 || B < 1 || (G > 1 && B > 1)) throw Unsupported("inconsistent convolution groups");
  if (C != G * I || O % (G * B) != 0 || N != B * No || os[l.out[1]] != O)
    throw Unsupported("convolution extents do not match the groups");
  const std::int64_t Kg = O / (G * B);
  Space s;
  ir::IndexPos n = s.add("n", No);
  std::optional<ir::IndexPos> g, bg;
  if (G > 1) g = s.add("g", G);
  if (B > 1) bg = s.add("bg", B);
  ir::IndexPos k = s.add("k", Kg), ci = s.add("c", I);
  AffineExpr feat = ix(k);
  if (g) feat = AffineExpr::make({AffineTerm{*g, Kg}, AffineTerm{k, 1}}, 0);
  if (bg) feat = AffineExpr::make({AffineTerm{*bg, Kg}, AffineTerm{k, 1}}, 0);
  AffineExpr in_feat = g ? AffineExpr::make({AffineTerm{*g, I}, AffineTerm{ci, 1}}, 0) : ix(ci);
  AffineExpr in_batch = bg ? AffineExpr::make({AffineTerm{*bg, No}, AffineTerm{n, 1}}, 0) : ix(n);
  std::vector<AffineExpr> sx(rank), sw(rank), so(rank);
  sx[l.lhs[0]] = in_batch;
  sx[l.lhs[1]] = in_feat;
  sw[l.rhs[0]] = feat;
  sw[l.rhs[1]] = ix(ci);
  so[l.out[0]] = ix(n);
  so[l.out[1]] = feat;
  std::vector<ir::IndexPos> ps, rs;
  for (std::size_t d = 0; d < nd; ++d) ps.push_back(s.add(fmt::format("p{}", d), os[l.out[2 + d]]));
  for (std::size_t d = 0; d < nd; ++d) rs.push_back(s.add(fmt::format("r{}", d), ws[l.rhs[2 + d]]));
  std::vector<ir::AffineConstraint> mask;
  bool padded = false;
  for (std::size_t d = 0; d < nd; ++d) {
    const WindowDim& wd = window[d];
    AffineExpr q = AffineExpr::make({AffineTerm{ps[d], wd.stride}, AffineTerm{rs[d], wd.dilation}},
                                    -wd.pad_lo);
    sw[l.rhs[2 + d]] = ix(rs[d]);
    so[l.out[2 + d]] = ix(ps[d]);
    const std::int64_t extent = xs[l.lhs[2 + d]];
    if (wd.input_dilation == 1) {
      sx[l.lhs[2 + d]] = q;
      std::vector<std::int64_t> ext;
      for (const auto& dim : s.dims) ext.push_back(dim.extent);
      padded = padded || q.min_value(ext) < 0 || q.max_value(ext) >= extent;
    } else {
      // The input element i sits at q = i*input_dilation: q - i*input_dilation == 0.
      ir::IndexPos i = s.add(fmt::format("i{}", d), extent);
      sx[l.lhs[2 + d]] = ix(i);
      std::vector<AffineTerm> t{{ps[d], wd.stride}, {rs[d], wd.dilation}, {i, -wd.input_dilation}};
      AffineExpr eq = AffineExpr::make(t, -wd.pad_lo);
      for (auto& term : t) term.coef = -term.coef;
      mask.push_back({eq});
      mask.push_back({AffineExpr::make(t, wd.pad_lo)});
    }
  }
  c.einsum({x, w}, out, std::move(s), {sx, sw}, so, mul(arg(0), arg(1)), Reduce::Sum, mask,
           {padded ? std::optional<double>(0.0) : std::nullopt, std::nullopt});
}

// Plain dimensions are b<d>; windowed ones p<k> and r<k>, k counting the windowed dimensions
// (pooling's spatial dimensions), interleaved: the names and order the reports show.
void window_reduce(Context& c, TensorId in, TensorId out, const std::vector<std::int64_t>& sizes,
                   const std::vector<WindowDim>& window, Reduce r, double pad_value) {
  const Shape is = c.t(in).shape, os = c.t(out).shape;
  if (sizes.size() != is.size() || window.size() != is.size() || os.size() != is.size())
    throw Unsupported("window of the wrong rank");
  Space s;
  std::vector<AffineExpr> si, so;
  bool needs_pad = false;
  std::size_t k = 0;
  for (std::size_t d = 0; d < is.size(); ++d) {
    if (sizes[d] == 0) {
      if (is[d] != os[d]) throw Unsupported("pooling changes a batch dimension");
      AffineExpr b = ix(s.add(fmt::format("b{}", d), is[d]));
      si.push_back(b);
      so.push_back(b);
      continue;
    }
    const WindowDim& wd = window[d];
    if (wd.input_dilation != 1) throw Unsupported("a window over a dilated input");
    ir::IndexPos p = s.add(fmt::format("p{}", k), os[d]);
    ir::IndexPos q = s.add(fmt::format("r{}", k), sizes[d]);
    ++k;
    AffineExpr a = AffineExpr::make({AffineTerm{p, wd.stride}, AffineTerm{q, wd.dilation}},
                                    -wd.pad_lo);
    std::vector<std::int64_t> ext;
    for (const auto& dim : s.dims) ext.push_back(dim.extent);
    needs_pad = needs_pad || a.min_value(ext) < 0 || a.max_value(ext) >= is[d];
    si.push_back(std::move(a));
    so.push_back(ix(p));
  }
  c.einsum({in}, out, std::move(s), {si}, so, arg(0), r, {},
           {needs_pad ? std::optional<double>(pad_value) : std::nullopt});
}

}  // namespace solar::lower::detail
