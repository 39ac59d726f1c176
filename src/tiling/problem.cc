#include "solar/tiling/problem.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <map>
#include <optional>
#include <set>

#include "fmt/format.h"
#include "solar/cost/work.h"
#include "solar/ir/attrs.h"
#include "solar/util/errors.h"
#include "storage.h"

namespace solar::tiling {

bool TensorAccess::plain() const {
  for (const DimAccess& d : dims)
    if (!d.plain()) return false;
  return true;
}

Count TensorAccess::elements() const {
  Count n = 1;
  for (const DimAccess& d : dims) n *= Count::from_signed(d.extent);
  return n;
}

Count TilingProblem::points() const {
  Count n = 1;
  for (const Rank& r : ranks) n *= Count::from_signed(r.extent);
  return n;
}

Count TilingProblem::live_points() const {
  if (mask.empty()) return points();
  ir::EinsumOp e;
  for (const Rank& r : ranks) e.indices.push_back({r.name, r.extent});
  for (const RankConstraint& c : mask) {
    std::vector<ir::AffineTerm> terms;
    for (const DimTerm& t : c.terms) terms.push_back({t.rank, t.coef});
    e.mask.push_back({ir::AffineExpr::make(std::move(terms), c.constant)});
  }
  return cost::live_points(e);
}

RankMask TilingProblem::mask_ranks() const {
  RankMask m = 0;
  for (const RankConstraint& c : mask)
    for (const DimTerm& t : c.terms) m |= RankMask{1} << t.rank;
  return m;
}

void TilingProblem::check() const {
  SOLAR_CHECK(static_cast<int>(ranks.size()) <= kMaxRanks, "too many ranks");
  SOLAR_CHECK(!tensors.empty() && tensors.back().output, "the last tensor must be the output");
  for (const Rank& r : ranks) SOLAR_CHECK(r.extent >= 1, "rank extent < 1");
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const TensorAccess& t = tensors[i];
    SOLAR_CHECK(t.output == (i + 1 == tensors.size()), "only the last tensor is the output");
    SOLAR_CHECK(t.bits > 0, "element width must be positive");
    RankMask seen = 0;
    for (const DimAccess& d : t.dims) {
      SOLAR_CHECK(d.extent >= 1, "dimension extent < 1");
      for (const DimTerm& term : d.terms) {
        SOLAR_CHECK(term.rank >= 0 && term.rank < static_cast<int>(ranks.size()), "bad rank");
        SOLAR_CHECK(term.coef != 0, "zero coefficient");
        SOLAR_CHECK(!(seen & (RankMask{1} << term.rank)), "rank used twice in one tensor");
        seen |= RankMask{1} << term.rank;
      }
      if (t.output) SOLAR_CHECK(d.plain(), "output dimensions must be plain");
    }
    SOLAR_CHECK(seen == t.ranks, "rank mask out of date");
    SOLAR_CHECK(t.group_dim >= -1 && t.group_dim < static_cast<int>(t.dims.size()) &&
                    (t.group_dim < 0 || t.storage.format == StorageFormat::Compressed24),
                "a group dimension needs 2:4 storage and must be one of the tensor's");
    if (!mask.empty()) {
      SOLAR_CHECK(t.plain() && t.group_dim < 0, "a masked problem needs plain tensors");
      for (const DimAccess& d : t.dims)
        SOLAR_CHECK(d.extent == ranks[d.terms[0].rank].extent,
                    "a masked problem's dimensions span their ranks");
    }
  }
  for (const RankConstraint& c : mask)
    for (const DimTerm& term : c.terms)
      SOLAR_CHECK(term.rank >= 0 && term.rank < static_cast<int>(ranks.size()) && term.coef != 0,
                  "bad rank in a mask constraint");
}

std::vector<std::int64_t> row_major_strides(const std::vector<std::int64_t>& shape) {
  std::vector<std::int64_t> s(shape.size(), 0);
  __int128 stride = 1;
  for (std::size_t d = shape.size(); d-- > 0;) {
    s[d] = stride < (__int128{1} << 62) ? static_cast<std::int64_t>(stride) : 0;
    stride *= std::max<std::int64_t>(shape[d], 1);
  }
  return s;
}

std::vector<std::int64_t> element_strides(const TensorAccess& a) {
  if (!a.strides.empty()) return a.strides;
  std::vector<std::int64_t> extents;
  for (const DimAccess& d : a.dims) extents.push_back(d.extent);
  return row_major_strides(extents);
}

// ---- storage ------------------------------------------------------------------------------

Storage storage_of(const ir::Graph& g, ir::TensorId id) {
  // A free view (a view, a slice that does not copy) renames its source's elements: they are
  // stored as the source stores them.
  const ir::Tensor* t = &g.tensor(id);
  while (!t->sparsity) {
    const std::optional<ir::OpId> producer = g.producer(t->id);
    if (!producer) break;
    const ir::Op& op = g.op(*producer);
    if (!ir::is_free_view(op) || op.inputs.size() != 1) break;
    t = &g.tensor(op.inputs[0]);
  }
  return storage_of(*t);
}

Count storage_bits(const TensorAccess& a, Count elements) {
  return storage_bits(a.storage, a.bits, elements);
}

namespace detail {

StorageRule::StorageRule(const Storage& storage, int bits)
    : format_(storage.format), width_(static_cast<Wide>(bits)), fraction_(storage.zero_fraction) {
  if (format_ != StorageFormat::Bitmap) return;
  SOLAR_CHECK(fraction_ > 0 && fraction_ <= 1, "a bitmap needs a zero fraction in (0, 1]");
  decimal_ = cost::decimal_fraction(fraction_);
}

RankMask grouped_ranks(const TilingProblem& p) {
  RankMask m = 0;
  for (const TensorAccess& t : p.tensors)
    if (t.group_dim >= 0)
      for (const DimTerm& term : t.dims[t.group_dim].terms) m |= RankMask{1} << term.rank;
  return m;
}

}  // namespace detail

namespace {

// A tensor's access without dimensions yet: its name, width and storage.
TensorAccess access_of(const ir::Graph& g, const ir::Tensor& t, bool output) {
  TensorAccess a;
  a.name = t.name;
  a.bits = ir::dtype_bits(t.dtype);
  a.output = output;
  a.storage = storage_of(g, t.id);
  return a;
}

// The group dimension of a 2:4 tensor whose dimensions are its own, in order: the last.
void set_group_dim(TensorAccess& a) {
  if (a.storage.format == StorageFormat::Compressed24 && !a.dims.empty())
    a.group_dim = static_cast<int>(a.dims.size()) - 1;
}

// A dimension read at sum_k c_k * r_k + c0 whose terms, ordered by coefficient, never
// overlap (c_{k+1} >= c_k * extent_k) and stay inside the dimension is a flattened box: the
// reads of a flat input through a permuted or strided view ("i0*393216+i1*96+i2*768+i3").
// Such a dimension reads exactly one element per rank tuple, as separate plain dimensions
// would, so it is split into them: the tile hull of the flat form counts every element
// between a tile's first and last position, and its search cost explodes with the
// coefficients. nullopt when the terms overlap (a sliding window) or reach outside.
struct SplitDim {
  std::vector<DimAccess> dims;     // outermost (largest coefficient) first, then extent-1 ranks
  std::vector<std::int64_t> step;  // per dim: its coefficient, 0 when not aligned (below)
};
std::optional<SplitDim> split_flattened(const DimAccess& d, const std::vector<Rank>& ranks) {
  if (d.terms.size() < 2 || d.constant < 0) return std::nullopt;
  // Ranks of extent 1 only ever take the value 0: each becomes a plain dimension of its own
  // (one element), whatever its coefficient, and the others must form the box.
  std::vector<DimTerm> terms, unit;
  for (const DimTerm& t : d.terms) (ranks[t.rank].extent == 1 ? unit : terms).push_back(t);
  std::sort(terms.begin(), terms.end(),
            [](const DimTerm& a, const DimTerm& b) { return a.coef < b.coef; });
  __int128 reach = d.constant, next_free = 1;
  for (const DimTerm& t : terms) {
    if (t.coef < next_free) return std::nullopt;  // overlaps the previous terms (or < 1)
    const __int128 extent = ranks[t.rank].extent;
    next_free = static_cast<__int128>(t.coef) * extent;
    reach += static_cast<__int128>(t.coef) * (extent - 1);
  }
  if (reach >= d.extent) return std::nullopt;  // part of it is padding
  SplitDim out;
  // A part's step is its coefficient c when position c0 + (inner terms) + j*c + (outer terms)
  // has digit j at c: the inner terms and c0's remainder stay below c, c0 adds no whole steps
  // modulo the extent, and every outer coefficient is a multiple of c * extent.
  __int128 inner = 0;
  std::vector<std::int64_t> steps(terms.size());
  for (std::size_t k = 0; k < terms.size(); ++k) {
    const __int128 c = terms[k].coef, e = ranks[terms[k].rank].extent;
    bool aligned = d.constant % c + inner < c && (d.constant / c) % e == 0;
    for (std::size_t o = k + 1; o < terms.size() && aligned; ++o)
      aligned = terms[o].coef % (c * e) == 0;
    steps[k] = aligned ? terms[k].coef : 0;
    inner += c * (e - 1);
  }
  for (std::size_t k = terms.size(); k-- > 0;) {
    out.dims.push_back(DimAccess{{{terms[k].rank, 1}}, 0, ranks[terms[k].rank].extent});
    out.step.push_back(steps[k]);
  }
  for (const DimTerm& t : unit) {
    out.dims.push_back(DimAccess{{{t.rank, 1}}, 0, 1});
    out.step.push_back(0);
  }
  return out;
}

}  // namespace

TilingProblem problem_from_einsum(const ir::Graph& g, const ir::Op& op, MaskedEinsum masked) {
  if (op.kind() != ir::OpKind::Einsum)
    throw Unsupported("the tiling model covers einsum ops only", op.origin);
  const ir::EinsumOp& e = op.einsum();
  if (!e.mask.empty() && masked == MaskedEinsum::Refuse)
    throw Unsupported("the tiling model does not handle masked einsums (the mask changes "
                      "which tiles are live)",
                      op.origin);
  if (e.indices.size() > static_cast<std::size_t>(kMaxRanks))
    throw Unsupported("einsum has more than " + std::to_string(kMaxRanks) + " indices",
                      op.origin);
  if (op.outputs.size() != 1) throw Unsupported("einsum with several outputs", op.origin);
  for (const ir::IndexDim& d : e.indices)
    if (d.extent == 0)  // nothing to tile: it reads nothing and writes its output once
      throw Unsupported("an empty iteration space (index '" + d.name + "' has extent 0)",
                        op.origin);
  TilingProblem p;
  for (const ir::IndexDim& d : e.indices) p.ranks.push_back({d.name, d.extent});

  auto add_tensor = [&](const ir::Tensor& t, const std::vector<ir::AffineExpr>& subscript,
                        bool output) {
    TensorAccess a = access_of(g, t, output);
    if (subscript.size() != t.shape.size())
      throw UserError(UserError::Kind::InvalidGraph,
                      "subscript rank differs from tensor '" + t.name + "'", op.origin);
    const std::vector<std::int64_t> row_stride = row_major_strides(t.shape);
    for (std::size_t i = 0; i < subscript.size(); ++i) {
      DimAccess d;
      d.extent = t.shape[i];
      if (d.extent < 1)
        throw Unsupported("tensor '" + t.name + "' has an empty dimension", op.origin);
      d.constant = subscript[i].constant_term();
      if (subscript[i].terms().empty() && d.constant == 0 && d.extent == 1 &&
          static_cast<int>(p.ranks.size()) < kMaxRanks) {
        // A kept size-1 dimension (`keepdim`, unsqueeze: [i0, 0]): a rank of extent 1 of its
        // own keeps the dimension plain, which outputs must be and fusion follows.
        const int r = static_cast<int>(p.ranks.size());
        p.ranks.push_back({fmt::format("{}.{}", t.name, i), 1});
        d.terms.push_back({r, 1});
        a.ranks |= RankMask{1} << r;
        d.constant = 0;
        a.dims.push_back(std::move(d));
        a.tensor_dim.push_back(static_cast<int>(i));
        a.strides.push_back(row_stride[i]);
        continue;
      }
      for (const ir::AffineTerm& term : subscript[i].terms()) {
        RankMask bit = RankMask{1} << term.index;
        if (a.ranks & bit)
          throw Unsupported("index '" + e.indices[term.index].name +
                                "' appears in two dimensions of '" + t.name +
                                "' (diagonal access): not in the tiling model",
                            op.origin);
        a.ranks |= bit;
        d.terms.push_back({term.index, term.coef});
      }
      if (auto split = split_flattened(d, p.ranks)) {
        a.dims.insert(a.dims.end(), split->dims.begin(), split->dims.end());
        a.tensor_dim.insert(a.tensor_dim.end(), split->dims.size(), static_cast<int>(i));
        for (std::int64_t step : split->step) a.strides.push_back(step * row_stride[i]);
        continue;
      }
      if (output && !d.plain())
        throw Unsupported("output subscripts must be plain indices (or a flattened box of "
                          "them) for the tiling model",
                          op.origin);
      a.strides.push_back(d.plain() ? row_stride[i] : 0);
      a.dims.push_back(std::move(d));
      a.tensor_dim.push_back(static_cast<int>(i));
    }
    if (a.storage.format == StorageFormat::Compressed24 && !t.shape.empty()) {
      // Groups of 4 lie along the innermost tensor dimension: the access dimension reading it
      // at stride 1 (a flattened box split into parts: its innermost part).
      const int last = static_cast<int>(t.shape.size()) - 1;
      std::vector<int> reading;
      for (std::size_t d = 0; d < a.dims.size(); ++d)
        if (a.tensor_dim[d] == last) reading.push_back(static_cast<int>(d));
      for (int d : reading)
        if (a.strides[d] == 1 || reading.size() == 1) a.group_dim = d;
    }
    p.tensors.push_back(std::move(a));
  };

  std::set<std::uint32_t> seen;
  for (std::size_t i = 0; i < e.operands.size(); ++i) {
    const ir::Tensor& t = g.tensor(op.inputs[i]);
    add_tensor(t, e.operands[i].subscript, false);
    if (seen.insert(op.inputs[i].value).second) {
      Count fp = cost::operand_footprint(e, e.operands[i], t);
      p.compulsory_bits += storage_bits(p.tensors.back(), fp);
    }
  }
  const ir::Tensor& out = g.tensor(op.outputs[0]);
  add_tensor(out, e.output, true);
  p.compulsory_bits += storage_bits(p.tensors.back(), p.tensors.back().elements());
  if (!e.mask.empty() && masked == MaskedEinsum::Live) {
    // Live tiles are counted over plain dense tiles: every dimension one rank, whole.
    for (const TensorAccess& t : p.tensors) {
      bool whole = t.plain() && t.storage.format != StorageFormat::Compressed24;
      for (const DimAccess& d : t.dims)
        whole = whole && d.extent == p.ranks[d.terms[0].rank].extent;
      if (!whole)
        throw Unsupported("the live tiles of a masked einsum are modelled for plain, whole "
                          "operands only ('" + t.name + "' is read through a window, clipped or "
                          "2:4-structured)",
                          op.origin);
    }
    RankMask named = 0;
    for (const ir::AffineConstraint& c : e.mask)
      for (const ir::AffineTerm& t : c.expr.terms()) named |= RankMask{1} << t.index;
    if (std::popcount(named) > 4)
      throw Unsupported("the live tiles of a mask over more than 4 indices are not modelled",
                        op.origin);
    for (const ir::AffineConstraint& c : e.mask) {
      RankConstraint rc;
      rc.constant = c.expr.constant_term();
      for (const ir::AffineTerm& t : c.expr.terms()) rc.terms.push_back({t.index, t.coef});
      p.mask.push_back(std::move(rc));
    }
  }
  p.check();
  return p;
}

namespace {

// A max pool's indices: the windows of the pooling einsum (batch dims, then one
// `p * stride + r * dilation - padding` dim per kernel dim), written as indices.
std::optional<TilingProblem> pool_argmax_problem(const ir::Graph& g, const ir::Tensor& in,
                                                 const ir::Tensor& out,
                                                 const ir::Attrs& attrs) {
  auto list = [&](const char* name) -> std::vector<std::int64_t> {
    const std::vector<std::int64_t>* v = ir::find_int_list(attrs, name);
    return v ? *v : std::vector<std::int64_t>{};
  };
  const std::vector<std::int64_t> kernel = list("kernel"), stride = list("stride"),
                                  padding = list("padding"), dilation = list("dilation");
  const int n = static_cast<int>(in.shape.size());
  const int k = static_cast<int>(kernel.size());
  if (k == 0 || k > n || stride.size() != kernel.size() || padding.size() != kernel.size() ||
      dilation.size() != kernel.size() || out.shape.size() != in.shape.size() ||
      n + k > kMaxRanks)
    return std::nullopt;
  TilingProblem p;
  TensorAccess a = access_of(g, in, false);
  TensorAccess w = access_of(g, out, true);
  for (int d = 0; d < n; ++d) {
    const int r = static_cast<int>(p.ranks.size());
    if (out.shape[d] < 1) return std::nullopt;
    p.ranks.push_back({fmt::format("i{}", d), out.shape[d]});
    w.dims.push_back(DimAccess{{{r, 1}}, 0, out.shape[d]});
    w.ranks |= RankMask{1} << r;
    DimAccess da{{{r, 1}}, 0, in.shape[d]};
    if (d >= n - k) {
      const int s = d - (n - k);
      if (kernel[s] < 1 || stride[s] < 1 || dilation[s] < 1) return std::nullopt;
      const int rk = static_cast<int>(p.ranks.size());
      p.ranks.push_back({fmt::format("r{}", d), kernel[s]});
      da = DimAccess{{{r, stride[s]}, {rk, dilation[s]}}, -padding[s], in.shape[d]};
      a.ranks |= RankMask{1} << rk;
    } else if (out.shape[d] != in.shape[d]) {
      return std::nullopt;
    }
    a.dims.push_back(std::move(da));
    a.ranks |= RankMask{1} << r;
  }
  set_group_dim(a);
  set_group_dim(w);
  p.tensors = {std::move(a), std::move(w)};
  // Compulsory: the input positions some window reads (the pooling einsum's footprint), as
  // much as the whole input at most; the indices once.
  p.compulsory_bits = storage_bits(p.tensors[0], p.tensors[0].elements()) +
                      storage_bits(p.tensors[1], p.tensors[1].elements());
  p.check();
  return p;
}

// out[i_0, ..] = in[i_perm[0], ..]: each element read once and written once.
std::optional<TilingProblem> permuted_problem(const ir::Graph& g, const ir::Tensor& in,
                                              const ir::Tensor& out,
                                              const std::vector<std::int64_t>& perm) {
  const int n = static_cast<int>(out.shape.size());
  if (static_cast<int>(perm.size()) != n || static_cast<int>(in.shape.size()) != n)
    return std::nullopt;
  TilingProblem p;
  TensorAccess a = access_of(g, in, false);
  TensorAccess w = access_of(g, out, true);
  a.dims.resize(n);
  std::vector<bool> seen(n, false);
  for (int d = 0; d < n; ++d) {
    const std::int64_t j = perm[d];
    if (j < 0 || j >= n || seen[j] || in.shape[j] != out.shape[d] || out.shape[d] < 1)
      return std::nullopt;
    seen[j] = true;
    p.ranks.push_back({fmt::format("i{}", d), out.shape[d]});
    w.dims.push_back(DimAccess{{{d, 1}}, 0, out.shape[d]});
    a.dims[j] = DimAccess{{{d, 1}}, 0, in.shape[j]};
    w.ranks |= RankMask{1} << d;
    a.ranks |= RankMask{1} << d;
  }
  set_group_dim(a);
  set_group_dim(w);
  p.tensors = {std::move(a), std::move(w)};
  for (const TensorAccess& t : p.tensors) p.compulsory_bits += storage_bits(t, t.elements());
  p.check();
  return p;
}

std::vector<std::int64_t> identity(std::size_t n) {
  std::vector<std::int64_t> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<std::int64_t>(i);
  return v;
}

// take_along_dim: out[.., j, ..] = data[.., index[.., j, ..], ..] along `axis`, with the
// index's shape elsewhere equal to the data's. Any element of a data row along the axis may
// be picked, so the pattern reads whole rows: exact when the rows are on chip (a fused
// log-softmax before a loss's gather), more than the gather moves otherwise.
std::optional<TilingProblem> gather_problem(const ir::Graph& g, const ir::Tensor& data,
                                            const ir::Tensor& index,
                                            const ir::Tensor& out, const ir::Attrs& attrs) {
  const std::optional<std::int64_t> axis = ir::find_int(attrs, "axis");
  const std::string* mode = ir::find_string(attrs, "mode");
  const int n = static_cast<int>(out.shape.size());
  if (!axis || !mode || *mode != "elements" || *axis < 0 || *axis >= n || n + 1 > kMaxRanks ||
      data.shape.size() != out.shape.size() || index.shape != out.shape)
    return std::nullopt;
  TilingProblem p;
  TensorAccess d = access_of(g, data, false);
  TensorAccess x = access_of(g, index, false);
  TensorAccess w = access_of(g, out, true);
  const int along = n;  // the data's axis
  for (int i = 0; i < n; ++i) {
    if (out.shape[i] < 1 || data.shape[i] < 1 || (i != *axis && data.shape[i] != out.shape[i]))
      return std::nullopt;
    p.ranks.push_back({fmt::format("i{}", i), out.shape[i]});
    for (TensorAccess* t : {&x, &w}) {
      t->dims.push_back(DimAccess{{{i, 1}}, 0, out.shape[i]});
      t->ranks |= RankMask{1} << i;
    }
    const int r = i == *axis ? along : i;
    d.dims.push_back(DimAccess{{{r, 1}}, 0, data.shape[i]});
    d.ranks |= RankMask{1} << r;
  }
  p.ranks.push_back({"along", data.shape[*axis]});
  for (TensorAccess* t : {&d, &x, &w}) set_group_dim(*t);
  p.tensors = {std::move(d), std::move(x), std::move(w)};
  for (const TensorAccess& t : p.tensors) p.compulsory_bits += storage_bits(t, t.elements());
  p.check();
  return p;
}

}  // namespace

// out = concat(inputs) along `axis`: input k is read at out position j - offset_k of the
// axis, the other positions of its window being outside it (padding, never moved).
std::optional<TilingProblem> concat_problem(const ir::Graph& g, const ir::Op& op) {
  const ir::Tensor& out = g.tensor(op.outputs[0]);
  const std::optional<std::int64_t> axis = ir::find_int(op.move().attrs, "axis");
  const int n = static_cast<int>(out.shape.size());
  if (!axis || *axis < 0 || *axis >= n || n > kMaxRanks || op.inputs.size() + 1 > 16)
    return std::nullopt;
  TilingProblem p;
  for (int d = 0; d < n; ++d) {
    if (out.shape[d] < 1) return std::nullopt;
    p.ranks.push_back({fmt::format("i{}", d), out.shape[d]});
  }
  std::int64_t offset = 0;
  for (ir::TensorId id : op.inputs) {
    const ir::Tensor& in = g.tensor(id);
    if (static_cast<int>(in.shape.size()) != n || in.dtype != out.dtype) return std::nullopt;
    TensorAccess a = access_of(g, in, false);
    for (int d = 0; d < n; ++d) {
      if ((d != *axis && in.shape[d] != out.shape[d]) || in.shape[d] < 1) return std::nullopt;
      a.dims.push_back(DimAccess{{{d, 1}}, d == *axis ? -offset : 0, in.shape[d]});
      a.ranks |= RankMask{1} << d;
    }
    set_group_dim(a);
    offset += in.shape[*axis];
    p.tensors.push_back(std::move(a));
  }
  if (offset != out.shape[*axis]) return std::nullopt;
  TensorAccess w = access_of(g, out, true);
  for (int d = 0; d < n; ++d) {
    w.dims.push_back(DimAccess{{{d, 1}}, 0, out.shape[d]});
    w.ranks |= RankMask{1} << d;
  }
  set_group_dim(w);
  p.tensors.push_back(std::move(w));
  // Each input read once, the output written once (compulsory_bits: every element).
  for (const TensorAccess& t : p.tensors) p.compulsory_bits += storage_bits(t, t.elements());
  p.check();
  return p;
}

std::optional<TilingProblem> problem_from_pattern(const ir::Graph& g, const ir::Op& op) {
  if (op.kind() == ir::OpKind::Move && op.move().kind == ir::MoveKind::Concat &&
      !op.inputs.empty() && op.outputs.size() == 1)
    return concat_problem(g, op);
  if (op.kind() == ir::OpKind::Move && op.move().kind == ir::MoveKind::Gather &&
      op.inputs.size() == 2 && op.outputs.size() == 1)
    return gather_problem(g, g.tensor(op.inputs[0]), g.tensor(op.inputs[1]),
                          g.tensor(op.outputs[0]), op.move().attrs);
  if (op.kind() == ir::OpKind::Einsum || op.inputs.size() != 1 || op.outputs.size() != 1)
    return std::nullopt;
  const ir::Tensor& in = g.tensor(op.inputs[0]);
  const ir::Tensor& out = g.tensor(op.outputs[0]);
  const int n = static_cast<int>(in.shape.size());
  if (n == 0 || n > kMaxRanks) return std::nullopt;
  for (std::int64_t e : in.shape)
    if (e < 1) return std::nullopt;
  if (op.kind() == ir::OpKind::Move) {
    const ir::MoveOp& m = op.move();
    if (m.kind == ir::MoveKind::Copy && out.shape == in.shape && out.dtype == in.dtype)
      return permuted_problem(g, in, out, identity(in.shape.size()));
    if (m.kind == ir::MoveKind::Permute && out.dtype == in.dtype) {
      if (const std::vector<std::int64_t>* perm = ir::find_int_list(m.attrs, "perm"))
        return permuted_problem(g, in, out, *perm);
    }
    return std::nullopt;
  }
  if (op.kind() != ir::OpKind::Opaque) return std::nullopt;
  const ir::OpaqueOp& o = op.opaque();
  if (o.function == "pool_argmax") return pool_argmax_problem(g, in, out, o.attrs);
  // A scan along `axis` reads and writes each element once, as an elementwise op does; a
  // tile of the axis carries one running value per row from the tile before it.
  if (o.function == "cumsum" || o.function == "cumprod")
    return out.shape == in.shape ? permuted_problem(g, in, out, identity(in.shape.size()))
                                 : std::nullopt;
  if (o.function != "argmax" && o.function != "argmin") return std::nullopt;
  std::optional<int> axis;
  if (ir::find_attr(o.attrs, "axis")) {
    const std::optional<std::int64_t> v = ir::find_int(o.attrs, "axis");
    if (!v || *v < 0 || *v >= n) return std::nullopt;
    axis = static_cast<int>(*v);
  }
  auto reduced = [&](int d) { return !axis || *axis == d; };
  TilingProblem p;
  TensorAccess a = access_of(g, in, false);
  for (int d = 0; d < n; ++d) {
    if (in.shape[d] < 1) return std::nullopt;
    p.ranks.push_back({fmt::format("{}{}", reduced(d) ? "r" : "i", d), in.shape[d]});
    a.dims.push_back(DimAccess{{{d, 1}}, 0, in.shape[d]});
    a.ranks |= RankMask{1} << d;
  }
  // The indices: the kept dims in order, with the reduced ones either dropped or kept with
  // size 1 (keepdim), each then a unit rank of its own.
  TensorAccess w = access_of(g, out, true);
  const bool keepdim = static_cast<int>(out.shape.size()) == n;
  std::size_t od = 0;
  for (int d = 0; d < n; ++d) {
    int r = d;
    if (reduced(d)) {
      if (!keepdim) continue;
      if (static_cast<int>(p.ranks.size()) >= kMaxRanks) return std::nullopt;
      r = static_cast<int>(p.ranks.size());
      p.ranks.push_back({fmt::format("{}.{}", out.name, d), 1});
    }
    if (od >= out.shape.size() || out.shape[od] != p.ranks[r].extent) return std::nullopt;
    w.dims.push_back(DimAccess{{{r, 1}}, 0, p.ranks[r].extent});
    w.ranks |= RankMask{1} << r;
    ++od;
  }
  if (od != out.shape.size()) return std::nullopt;
  set_group_dim(a);
  set_group_dim(w);
  p.tensors = {std::move(a), std::move(w)};
  for (const TensorAccess& t : p.tensors) p.compulsory_bits += storage_bits(t, t.elements());
  p.check();
  return p;
}

TilingProblem gemm_problem(std::int64_t m, std::int64_t n, std::int64_t k, ir::DType dtype) {
  if (m < 1 || n < 1 || k < 1)
    throw UserError(UserError::Kind::BadArgument, "GEMM extents must be >= 1");
  TilingProblem p;
  p.ranks = {{"m", m}, {"n", n}, {"k", k}};
  int bits = ir::dtype_bits(dtype);
  auto dim = [](int r, std::int64_t extent) { return DimAccess{{{r, 1}}, 0, extent}; };
  p.tensors.push_back({"A", bits, false, {dim(0, m), dim(2, k)}, 0b101});
  p.tensors.push_back({"B", bits, false, {dim(2, k), dim(1, n)}, 0b110});
  p.tensors.push_back({"C", bits, true, {dim(0, m), dim(1, n)}, 0b011});
  for (const TensorAccess& t : p.tensors) p.compulsory_bits += storage_bits(t, t.elements());
  p.check();
  return p;
}

RankMask affine_ranks(const TilingProblem& p) {
  RankMask m = 0;
  for (const TensorAccess& t : p.tensors)
    for (const DimAccess& d : t.dims)
      if (!d.plain())
        for (const DimTerm& term : d.terms) m |= RankMask{1} << term.rank;
  return m;
}

TilingProblem without_constraints_on(TilingProblem p, RankMask drop) {
  std::erase_if(p.mask, [&](const RankConstraint& c) {
    return std::any_of(c.terms.begin(), c.terms.end(),
                       [&](const DimTerm& t) { return drop & (RankMask{1} << t.rank); });
  });
  return p;
}

ReducedProblem reduce_problem(const TilingProblem& p, bool merge_ranks) {
  const int n = static_cast<int>(p.ranks.size());
  // Ranks in windows, in plain dims that clip them (a concat's parts), along a 2:4 tensor's
  // groups (a tile there must respect them) or in the mask keep their own loops: neither a
  // batch factor nor merged.
  RankMask affine = affine_ranks(p) | detail::grouped_ranks(p) | p.mask_ranks();
  for (const TensorAccess& t : p.tensors)
    for (const DimAccess& d : t.dims)
      if (d.plain() && d.extent < p.ranks[d.terms[0].rank].extent)
        affine |= RankMask{1} << d.terms[0].rank;
  std::vector<std::uint64_t> signature(n, 0);  // bit per tensor containing the rank
  for (std::size_t t = 0; t < p.tensors.size(); ++t)
    for (int r = 0; r < n; ++r)
      if (p.tensors[t].ranks & (RankMask{1} << r)) signature[r] |= std::uint64_t{1} << t;
  const std::uint64_t all = (std::uint64_t{1} << p.tensors.size()) - 1;

  ReducedProblem out;
  // New rank index of every old rank (-1: removed), and the group representative.
  std::vector<int> new_index(n, -1);
  std::map<std::uint64_t, int> group_of_signature;
  for (int r = 0; r < n; ++r) {
    const bool is_affine = affine & (RankMask{1} << r);
    if (p.ranks[r].extent == 1 && !is_affine) continue;
    if (!is_affine && signature[r] == all) {
      out.batch *= Count::from_signed(p.ranks[r].extent);
      continue;
    }
    if (!is_affine && merge_ranks) {
      auto [it, inserted] =
          group_of_signature.emplace(signature[r], static_cast<int>(out.problem.ranks.size()));
      if (!inserted) {
        Rank& g = out.problem.ranks[it->second];
        g.name += "*" + p.ranks[r].name;
        g.extent *= p.ranks[r].extent;  // fits: products of extents of one tensor
        new_index[r] = it->second;
        continue;
      }
    }
    new_index[r] = static_cast<int>(out.problem.ranks.size());
    out.problem.ranks.push_back(p.ranks[r]);
  }
  for (const TensorAccess& t : p.tensors) {
    TensorAccess a;
    a.name = t.name;
    a.bits = t.bits;
    a.output = t.output;
    a.storage = t.storage;
    std::set<int> placed;  // merged ranks get one plain dimension
    for (std::size_t di = 0; di < t.dims.size(); ++di) {
      const DimAccess& d = t.dims[di];
      // The group dimension's ranks are kept whole (above), so it stays a dimension.
      if (static_cast<int>(di) == t.group_dim) a.group_dim = static_cast<int>(a.dims.size());
      DimAccess nd;
      nd.constant = d.constant;
      if (d.plain()) {
        int r = new_index[d.terms[0].rank];
        if (r < 0 || !placed.insert(r).second) continue;  // removed, or merged into an earlier dim
        nd.terms.push_back({r, 1});
        // A merged rank's dim spans the merged extent; an unmerged one keeps its own (a
        // clipping dim stays clipped).
        const bool own = affine & (RankMask{1} << d.terms[0].rank);
        nd.extent = own ? d.extent : out.problem.ranks[r].extent;
        a.ranks |= RankMask{1} << r;
      } else {
        nd.extent = d.extent;
        for (const DimTerm& term : d.terms) {
          int r = new_index[term.rank];
          if (r < 0) continue;  // an extent-1 rank contributes only its value 0
          nd.terms.push_back({r, term.coef});
          a.ranks |= RankMask{1} << r;
        }
        if (nd.terms.empty() && nd.constant >= 0 && nd.constant < nd.extent) {
          nd.extent = 1;  // a fixed in-range position: one element along this dimension
          nd.constant = 0;
        }
      }
      a.dims.push_back(std::move(nd));
    }
    out.problem.tensors.push_back(std::move(a));
  }
  for (const RankConstraint& c : p.mask) {
    RankConstraint nc{{}, c.constant};
    for (const DimTerm& t : c.terms) nc.terms.push_back({new_index[t.rank], t.coef});
    out.problem.mask.push_back(std::move(nc));
  }
  out.problem.compulsory_bits = p.compulsory_bits;
  out.problem.check();
  return out;
}

}  // namespace solar::tiling
