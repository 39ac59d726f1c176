#include "solar/cost/work.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>

#include "solar/cost/affine_values.h"
#include "solar/util/errors.h"
#include "affine_count.h"
#include "work_detail.h"

namespace solar::cost {

using ir::AffineExpr;
using ir::DType;
using ir::EinsumOp;
using ir::ExprOp;
using ir::Graph;
using ir::IndexPos;
using ir::MoveKind;
using ir::Op;
using ir::OpKind;
using ir::Operand;
using ir::Tensor;
using ir::TensorId;

Count Work::total_macs() const {
  Count s;
  for (const auto& [dtype, n] : macs) s += n;
  return s;
}

Count Work::total_macs_2_4() const {
  Count s;
  for (const auto& [dtype, n] : macs_2_4) s += n;
  return s;
}

Count Work::total_vector_flops() const {
  Count s;
  for (const auto& [dtype, n] : vector_flops) s += n;
  return s;
}

Work& Work::operator+=(const Work& o) {
  if (contraction != o.contraction) contraction = ContractionClass::None;
  for (const auto& [dtype, n] : o.macs) macs[dtype] += n;
  for (const auto& [dtype, n] : o.macs_2_4) macs_2_4[dtype] += n;
  macs_dense += o.macs_dense;
  for (const auto& [dtype, n] : o.vector_flops) vector_flops[dtype] += n;
  special_ops += o.special_ops;
  bytes_read += o.bytes_read;
  bytes_written += o.bytes_written;
  live_points += o.live_points;
  analyzed = analyzed && o.analyzed;
  return *this;
}

namespace {

using namespace detail;

// Enumeration limits for exact footprints of irregular affine subscripts. Above them the
// footprint is a lower bound (see count_dim and count_group).
constexpr I128 kMaxFootprintBits = I128{1} << 27;       // bitset window: 16 MiB
constexpr I128 kMaxFootprintPoints = I128{1} << 22;     // enumerated points: 32 MiB of offsets

Origin origin_of(const Op& op) {
  Origin o = op.origin;
  if (o.op.empty()) o.op = op.name;
  return o;
}

// ---- footprints ----------------------------------------------------------------------

struct PosTerm {
  I128 coef;           // > 0 after normalization
  std::int64_t extent; // >= 2 after normalization
};

// Distinct values of c + a*i, i in [0, extent), that fall in [0, size).
I128 count_one_term(I128 a, std::int64_t extent, I128 c, std::int64_t size) {
  // a > 0 here.
  const I128 lo = std::max<I128>(0, ceil_div(-c, a));
  const I128 hi = std::min<I128>(extent - 1, floor_div(I128{size} - 1 - c, a));
  return hi >= lo ? hi - lo + 1 : 0;
}

// R |= R << shift over a bitset of `nbits` bits (bits beyond nbits dropped).
void shift_or(std::vector<std::uint64_t>& bits, I128 shift, I128 nbits) {
  if (shift >= nbits) return;
  const std::size_t ws = static_cast<std::size_t>(shift / 64);
  const unsigned bs = static_cast<unsigned>(shift % 64);
  // High to low so every source word is read before it is updated.
  for (std::size_t i = bits.size(); i-- > ws;) {
    std::uint64_t v = bits[i - ws] << bs;
    if (bs != 0 && i > ws) v |= bits[i - ws - 1] >> (64 - bs);
    bits[i] |= v;
  }
  const unsigned tail = static_cast<unsigned>(nbits % 64);
  if (tail != 0) bits.back() &= (std::uint64_t{1} << tail) - 1;
}

// Distinct in-range values [0, size) of c + sum a_k * i_k (distinct_values_in_range).
I128 count_values(const std::vector<ValueTerm>& raw, I128 c, std::int64_t size) {
  // Normalize to positive coefficients: a*i with a < 0 equals a*(E-1) + |a|*(E-1-i), and
  // i -> E-1-i is a bijection of [0, E). Extent-1 indices contribute a constant 0.
  std::vector<PosTerm> terms;
  for (const ValueTerm& t : raw) {
    const std::int64_t e = t.extent;
    if (e == 1) continue;
    I128 a = t.coef;
    if (a < 0) {
      c += a * (e - 1);
      a = -a;
    }
    terms.push_back({a, e});
  }
  if (terms.empty()) return (c >= 0 && c < size) ? 1 : 0;
  if (terms.size() == 1) return count_one_term(terms[0].coef, terms[0].extent, c, size);

  // Values are c + g*v with v in V = sum_k (a_k/g) * [0, E_k) (a Minkowski sum of
  // arithmetic progressions); the window [0, size) is v in [v_lo, v_hi].
  I128 g = 0;
  for (const PosTerm& t : terms) g = std::gcd(g, t.coef);
  I128 v_max = 0;
  for (PosTerm& t : terms) {
    t.coef /= g;
    v_max += t.coef * (t.extent - 1);
  }
  const I128 v_lo = std::max<I128>(0, ceil_div(-c, g));
  const I128 v_hi = std::min<I128>(v_max, floor_div(I128{size} - 1 - c, g));
  if (v_lo > v_hi) return 0;

  // Windows (conv p*stride + r*dilation, grouped channels g*Cg + c) are usually contiguous:
  // adding progression step a to a contiguous [0, M] stays contiguous when a <= M + 1.
  std::sort(terms.begin(), terms.end(),
            [](const PosTerm& x, const PosTerm& y) { return x.coef < y.coef; });
  {
    I128 m = 0;
    bool contiguous = true;
    for (const PosTerm& t : terms) {
      if (t.coef > m + 1) {
        contiguous = false;
        break;
      }
      m += t.coef * (t.extent - 1);
    }
    if (contiguous) return v_hi - v_lo + 1;
  }

  // Bitset over [0, v_hi]: coefficients are positive, so partial sums above v_hi never come
  // back into the window. Each progression costs log2(E) shift-ors (doubling).
  const I128 nbits = v_hi + 1;
  if (nbits <= kMaxFootprintBits) {
    std::vector<std::uint64_t> bits(static_cast<std::size_t>((nbits + 63) / 64), 0);
    bits[0] = 1;
    for (const PosTerm& t : terms) {
      std::int64_t len = 1;
      while (len <= t.extent / 2) {
        shift_or(bits, t.coef * len, nbits);
        len *= 2;
      }
      // [0, len) u [E-len, E) = [0, E) since E - len <= len.
      if (len < t.extent) shift_or(bits, t.coef * (t.extent - len), nbits);
    }
    I128 n = 0;
    for (I128 v = v_lo; v <= v_hi;) {
      const std::size_t w = static_cast<std::size_t>(v / 64);
      const unsigned b = static_cast<unsigned>(v % 64);
      std::uint64_t word = bits[w] >> b;
      const I128 take = std::min<I128>(64 - b, v_hi - v + 1);
      if (take < 64) word &= (std::uint64_t{1} << static_cast<unsigned>(take)) - 1;
      n += __builtin_popcountll(word);
      v += take;
    }
    return n;
  }

  // A wide window: enumerate the points when there are few.
  I128 points = 1;
  for (const PosTerm& t : terms) {
    points *= t.extent;
    if (points > kMaxFootprintPoints) break;
  }
  if (points <= kMaxFootprintPoints) {
    std::vector<I128> values;
    std::vector<std::int64_t> idx(terms.size(), 0);
    I128 v = 0;
    for (;;) {
      if (v >= v_lo && v <= v_hi) values.push_back(v);
      std::size_t j = 0;
      for (; j < terms.size(); ++j) {
        if (++idx[j] < terms[j].extent) {
          v += terms[j].coef;
          break;
        }
        v -= terms[j].coef * (terms[j].extent - 1);
        idx[j] = 0;
      }
      if (j == terms.size()) break;
    }
    std::sort(values.begin(), values.end());
    return std::unique(values.begin(), values.end()) - values.begin();
  }

  // Too large to enumerate: a lower bound, never an overestimate. Fixing every other index
  // at one value leaves a one-term progression whose values are a subset of the true set.
  I128 best = 0;
  for (std::size_t k = 0; k < terms.size(); ++k) {
    I128 others_max = 0;
    for (std::size_t j = 0; j < terms.size(); ++j)
      if (j != k) others_max += terms[j].coef * (terms[j].extent - 1);
    // In units of g: the window for v is [v_lo, v_hi]; count_one_term works on raw values.
    for (I128 shift : {I128{0}, others_max}) {
      best = std::max(best, count_one_term(terms[k].coef, terms[k].extent, shift - v_lo,
                                           static_cast<std::int64_t>(std::min<I128>(
                                               v_hi - v_lo + 1, INT64_MAX))));
    }
  }
  return best;
}

// Distinct in-range values [0, size) of one dimension's affine expression over the box.
I128 count_dim(const AffineExpr& expr, const std::vector<std::int64_t>& ext, std::int64_t size) {
  std::vector<ValueTerm> terms;
  for (const ir::AffineTerm& t : expr.terms()) terms.push_back({t.coef, ext[t.index]});
  return count_values(terms, expr.constant_term(), size);
}

// Joint footprint of tensor dimensions that share iteration indices (a diagonal a[i,i], or
// a[i, i+j]): the distinct in-range tuples. Exact by enumeration when the group's indices
// span at most kMaxFootprintPoints points; otherwise the largest single dimension's count,
// a lower bound (the tuples project onto each dimension's values).
I128 count_group(const std::vector<const AffineExpr*>& dims,
                 const std::vector<std::int64_t>& sizes, const std::vector<std::int64_t>& ext) {
  std::vector<IndexPos> idx;
  for (const AffineExpr* d : dims)
    for (const ir::AffineTerm& t : d->terms()) idx.push_back(t.index);
  std::sort(idx.begin(), idx.end());
  idx.erase(std::unique(idx.begin(), idx.end()), idx.end());

  I128 points = 1;
  for (IndexPos i : idx) {
    points *= ext[i];
    if (points > kMaxFootprintPoints) break;
  }
  I128 box = 1;  // the group's own sub-box of the tensor, for linear offsets
  for (std::int64_t s : sizes) {
    box *= s;
    if (box > (I128{1} << 100)) break;
  }
  if (points <= kMaxFootprintPoints && box <= (I128{1} << 100)) {
    std::vector<std::int64_t> at(ext.size(), 0);
    std::vector<I128> offsets;
    offsets.reserve(static_cast<std::size_t>(points));
    for (;;) {
      I128 off = 0;
      bool in_range = true;
      for (std::size_t d = 0; d < dims.size() && in_range; ++d) {
        I128 v = dims[d]->constant_term();
        for (const ir::AffineTerm& t : dims[d]->terms()) v += I128{t.coef} * at[t.index];
        in_range = v >= 0 && v < sizes[d];
        off = off * sizes[d] + v;
      }
      if (in_range) offsets.push_back(off);
      std::size_t j = 0;
      for (; j < idx.size(); ++j) {
        if (++at[idx[j]] < ext[idx[j]]) break;
        at[idx[j]] = 0;
      }
      if (j == idx.size()) break;
    }
    std::sort(offsets.begin(), offsets.end());
    return std::unique(offsets.begin(), offsets.end()) - offsets.begin();
  }
  I128 best = 0;
  for (std::size_t d = 0; d < dims.size(); ++d)
    best = std::max(best, count_dim(*dims[d], ext, sizes[d]));
  return best;
}

// ---- work per op kind ----------------------------------------------------------------

DType wider_dtype(DType a, DType b) {
  const int ba = ir::dtype_bits(a), bb = ir::dtype_bits(b);
  if (ba != bb) return ba > bb ? a : b;
  // Equal width: a float type decides the unit (int8 x fp8 runs as fp8 on tensor cores).
  if (ir::is_float(a) != ir::is_float(b)) return ir::is_float(a) ? a : b;
  return a;
}

bool is_2_4(const Tensor& t) { return t.sparsity && t.sparsity->structured_2_4; }

// floor(n * f) for 0 <= f <= 1, exact for the binary value of f: f = m / 2^s with an integer
// mantissa m < 2^53 and s >= 53; the product n * m (up to 181 bits) is kept as a high part
// and a low 64-bit part before the shift.
Count floor_mul_binary(Count n, double f) {
  using U = unsigned __int128;
  int exp = 0;
  const double frac = std::frexp(f, &exp);  // f = frac * 2^exp, frac in [0.5, 1), exp <= 0
  const U m = static_cast<U>(std::ldexp(frac, 53));  // exact: a double has 53 mantissa bits
  const int shift = 53 - exp;                        // f = m / 2^shift
  const U lo = static_cast<U>(static_cast<std::uint64_t>(n.raw())) * m;  // < 2^117
  const U hi = (n.raw() >> 64) * m;                                      // < 2^117
  const U low = static_cast<std::uint64_t>(lo);  // n * m = high * 2^64 + low
  const U high = hi + (lo >> 64);
  // The quotient is at most n, so it fits in 128 bits whichever way it is assembled.
  U q = 0;
  if (shift < 64)
    q = (high << (64 - shift)) | (low >> shift);
  else if (shift < 64 + 128)
    q = high >> (shift - 64);
  return Count::from_raw(q);
}

}  // namespace

std::optional<DecimalFraction> decimal_fraction(double f) {
  SOLAR_CHECK(f >= 0 && f <= 1, fmt::format("zero fraction {} outside [0, 1]", f));
  // "0.3", "0.0125", "1e-05", "1.5e-07": digits p and a power of ten k with f = p / 10^k.
  const std::string text = fmt::format("{}", f);
  const std::size_t e = text.find('e');
  int k = e == std::string::npos ? 0 : -std::stoi(text.substr(e + 1));
  unsigned __int128 p = 0;
  bool fractional = false;
  for (char c : text.substr(0, e)) {
    if (c == '.') {
      fractional = true;
      continue;
    }
    p = p * 10 + static_cast<unsigned>(c - '0');  // at most 17 significant digits
    if (fractional) ++k;
  }
  if (k < 0 || k > 38) return std::nullopt;
  unsigned __int128 pow10 = 1;
  for (int i = 0; i < k; ++i) pow10 *= 10;
  return DecimalFraction{p, pow10};
}

Count zeros_of(Count n, double f) {
  if (f == 1) return n;
  if (f == 0) return Count(0);
  unsigned __int128 product = 0;
  if (std::optional<DecimalFraction> d = decimal_fraction(f))
    if (!__builtin_mul_overflow(n.raw(), d->digits, &product))
      return Count::from_raw(product / d->pow10);
  return floor_mul_binary(n, f);
}

namespace {

Count full_bytes(const Tensor& t) { return tensor_bytes(t, t.num_elements()); }

void add_nonzero(std::map<DType, Count>& m, DType d, Count n) {
  if (n != Count(0)) m[d] += n;
}

const Tensor& input(const Graph& g, const Op& op, std::size_t k) { return g.tensor(op.inputs[k]); }

void require_inputs(const Op& op, std::size_t n, std::string_view what) {
  if (op.inputs.size() < n)
    throw UserError(UserError::Kind::InvalidGraph,
                    fmt::format("{} needs {} inputs, got {}", what, n, op.inputs.size()),
                    origin_of(op));
}

void require_output(const Op& op) {
  if (op.outputs.empty())
    throw UserError(UserError::Kind::InvalidGraph, "op has no output", origin_of(op));
}

Work einsum_work(const Graph& g, const Op& op, std::vector<Count>* input_bytes) {
  const EinsumOp& e = op.einsum();
  if (op.inputs.size() != e.operands.size())
    throw UserError(UserError::Kind::InvalidGraph,
                    fmt::format("einsum has {} inputs but {} operand subscripts",
                                op.inputs.size(), e.operands.size()),
                    origin_of(op));
  require_output(op);
  if (!e.combine.defined())
    throw UserError(UserError::Kind::InvalidGraph, "einsum has no combine expression",
                    origin_of(op));

  Work w;
  for (std::size_t k = 0; k < op.inputs.size(); ++k) {
    const Tensor& t = input(g, op, k);
    Count b;
    try {
      b = tensor_bytes(t, operand_footprint(e, e.operands[k], t));
    } catch (const UserError& ex) {
      throw UserError(ex.kind(), ex.message(), origin_of(op));
    }
    w.bytes_read += b;
    if (input_bytes) input_bytes->push_back(b);
  }
  for (TensorId out : op.outputs) w.bytes_written += full_bytes(g.tensor(out));

  try {
    w.live_points = live_points(e);
  } catch (const Unsupported& ex) {
    throw Unsupported(ex.message(), origin_of(op));
  } catch (const UserError& ex) {
    throw UserError(ex.kind(), ex.message(), origin_of(op));
  }

  w.contraction = classify_contraction(g, op);
  if (w.contraction != ContractionClass::None) {
    const Tensor& a = input(g, op, e.combine.children()[0].operand_index());
    const Tensor& b = input(g, op, e.combine.children()[1].operand_index());
    const DType dtype = wider_dtype(a.dtype, b.dtype);
    add_nonzero(w.macs, dtype, w.live_points);
    w.macs_dense = w.live_points;
    if (!e.mask.empty()) {
      w.macs_dense = 1;
      for (const ir::IndexDim& d : e.indices) w.macs_dense *= Count::from_signed(d.extent);
    }
    if (is_2_4(a) || is_2_4(b)) {
      // The work is the contraction as written; only a tensor unit with a published 2:4 peak
      // skips the structured zeros, so the bound decides (bound/sol.h).
      add_nonzero(w.macs_2_4, dtype, w.live_points);
      w.note = "2:4 structured operand: its MACs run at the 2:4 sparse peak where the device "
               "has one";
    }
    return w;
  }

  const CombineCost per_point = combine_cost(e.combine);
  Count vector = w.live_points * Count(per_point.vector_flops);
  if (e.reduce != ir::Reduce::None) {
    // Reducing n live points into one output element takes n - 1 binary ops.
    const Count out_elements = g.tensor(op.outputs[0]).num_elements();
    if (w.live_points > out_elements) vector += w.live_points - out_elements;
  }
  add_nonzero(w.vector_flops, g.tensor(op.outputs[0]).dtype, vector);
  w.special_ops = w.live_points * Count(per_point.special_ops);
  return w;
}

bool slice_copies(const Op& op) {
  const auto it = op.move().attrs.find("copy");
  if (it == op.move().attrs.end()) return false;
  if (const auto* i = std::get_if<std::int64_t>(&it->second)) return *i != 0;
  if (const auto* d = std::get_if<double>(&it->second)) return *d != 0;
  throw UserError(UserError::Kind::InvalidGraph, "slice attribute 'copy' must be 0 or 1",
                  origin_of(op));
}

Work move_work(const Graph& g, const Op& op, std::vector<Count>* input_bytes) {
  Work w;
  std::vector<Count> reads(op.inputs.size());
  auto write_outputs = [&] {
    for (TensorId out : op.outputs) w.bytes_written += full_bytes(g.tensor(out));
  };
  auto read_all_inputs = [&] {
    for (std::size_t k = 0; k < op.inputs.size(); ++k) reads[k] = full_bytes(input(g, op, k));
  };
  const ir::MoveOp& m = op.move();
  switch (m.kind) {
    case MoveKind::View:
      w.note = "view: no copy";
      break;
    case MoveKind::Slice:
      if (!slice_copies(op)) {
        w.note = "slice view: no copy";
        break;
      }
      require_inputs(op, 1, "slice");
      require_output(op);
      {
        const Tensor& in = input(g, op, 0);
        reads[0] = tensor_bytes(
            in, std::min(g.tensor(op.outputs[0]).num_elements(), in.num_elements()));
      }
      write_outputs();
      break;
    case MoveKind::Copy:
    case MoveKind::Permute:
    case MoveKind::Cast:
    case MoveKind::Pad:
    case MoveKind::Concat:
      read_all_inputs();
      write_outputs();
      break;
    case MoveKind::Gather: {
      require_inputs(op, 2, "gather (data, index)");
      require_output(op);
      const Tensor& data = input(g, op, 0);
      const Count gathered = std::min(g.tensor(op.outputs[0]).num_elements(), data.num_elements());
      reads[0] = tensor_bytes(data, gathered);
      for (std::size_t k = 1; k < op.inputs.size(); ++k) reads[k] = full_bytes(input(g, op, k));
      write_outputs();
      w.note = "gather: reads one data element per output element (indices assumed distinct)";
      break;
    }
    case MoveKind::Scatter: {
      require_inputs(op, 3, "scatter (data, index, src)");
      require_output(op);
      const Tensor& src = input(g, op, 2);
      for (std::size_t k = 1; k < op.inputs.size(); ++k) reads[k] = full_bytes(input(g, op, k));
      const Tensor& out = g.tensor(op.outputs[0]);
      const Count touched = std::min(src.num_elements(), out.num_elements());
      w.bytes_written = tensor_bytes(out, touched);
      w.note = "scatter: in place, writes the src elements only (data is not copied)";
      // A reducing scatter (scatter_add, index_add, scatter_reduce) reads each destination
      // element it updates and combines it with one operation.
      auto reduce = m.attrs.find("reduce");
      if (reduce != m.attrs.end() && std::get_if<std::string>(&reduce->second) != nullptr &&
          std::get<std::string>(reduce->second) != "none") {
        reads[0] = tensor_bytes(input(g, op, 0), touched);
        w.vector_flops[out.dtype] += touched;
        w.note = "scatter with reduce: in place, reads and writes the updated data elements once";
      }
      break;
    }
  }
  for (const Count& r : reads) w.bytes_read += r;
  if (input_bytes) *input_bytes = std::move(reads);
  return w;
}

Work opaque_work(const Graph& g, const Op& op, std::vector<Count>* input_bytes) {
  const ir::OpaqueOp& o = op.opaque();
  Work w;
  if (o.vector_flops != Count(0)) {
    if (op.outputs.empty())
      throw UserError(UserError::Kind::InvalidGraph,
                      "opaque op with vector_flops needs an output (its dtype keys the FLOPs)",
                      origin_of(op));
    add_nonzero(w.vector_flops, g.tensor(op.outputs[0]).dtype, o.vector_flops);
  }
  w.special_ops = o.special_ops;
  // The opaque cost gives reads and writes as one number; it is kept whole in bytes_read.
  w.bytes_read = o.bytes;
  w.note = o.assumption;
  if (input_bytes)
    for (std::size_t k = 0; k < op.inputs.size(); ++k)
      input_bytes->push_back(full_bytes(input(g, op, k)));
  return w;
}

}  // namespace

Count tensor_bytes(const Tensor& t, Count elements) {
  const Count bits(static_cast<std::uint64_t>(ir::dtype_bits(t.dtype)));
  if (is_2_4(t)) {
    // Compressed 2:4 format (as sparse tensor cores read it): 2 of every 4 values kept, each
    // with a 2-bit position index; the footprint is assumed to cover whole groups of 4.
    const Count kept = elements.ceil_div(2);
    return (kept * (bits + Count(2))).ceil_div(8);
  }
  const Count dense = (elements * bits).ceil_div(8);
  if (t.sparsity && t.sparsity->zero_fraction != 0) {
    const double f = t.sparsity->zero_fraction;
    if (!(f >= 0 && f <= 1))
      invalid(fmt::format("tensor '{}' has zero fraction {}, outside [0, 1]", t.name, f));
    // Unstructured zeros: a bitmap of one bit per element plus the nonzero values packed,
    // when that is smaller than dense (it is not for f <= 1/dtype_bits). The fraction is
    // assumed to hold for any footprint of the tensor (zeros spread evenly).
    const Count nonzeros = elements - zeros_of(elements, f);
    const Count bitmap = elements.ceil_div(8) + (nonzeros * bits).ceil_div(8);
    return std::min(dense, bitmap);
  }
  return dense;
}

namespace {

// The footprint when every dimension is a plain index or a constant and no index repeats:
// the product of min(extent, size) and in-range constants. Allocation-free, since nearly
// every operand of a real graph takes this path; nullopt otherwise.
std::optional<Count> simple_footprint(const EinsumOp& e, const Operand& operand,
                                      const Tensor& tensor) {
  const std::size_t n = e.indices.size();
  Count result = 1;
  for (std::size_t d = 0; d < operand.subscript.size(); ++d) {
    const AffineExpr& x = operand.subscript[d];
    const std::int64_t size = tensor.shape[d];
    if (size < 0) return std::nullopt;
    if (x.is_constant()) {
      if (x.constant_term() < 0 || x.constant_term() >= size) return Count(0);
      continue;
    }
    const std::optional<IndexPos> i = x.as_plain_index();
    if (!i || *i < 0 || static_cast<std::size_t>(*i) >= n || e.indices[*i].extent < 0)
      return std::nullopt;
    for (std::size_t d2 = 0; d2 < d; ++d2)
      if (operand.subscript[d2].as_plain_index() == i) return std::nullopt;  // a diagonal
    result *= Count::from_signed(std::min(e.indices[*i].extent, size));
  }
  for (const ir::IndexDim& idx : e.indices)
    if (idx.extent == 0) return Count(0);  // an empty iteration space reads nothing
  return result;
}

}  // namespace

Count operand_footprint(const EinsumOp& e, const Operand& operand, const Tensor& tensor) {
  if (operand.subscript.size() != tensor.shape.size())
    invalid(fmt::format("operand subscript of tensor '{}' has {} expressions for {} dimensions",
                        tensor.name, operand.subscript.size(), tensor.shape.size()));
  if (std::optional<Count> simple = simple_footprint(e, operand, tensor)) return *simple;
  const std::vector<std::int64_t> ext = checked_extents(e);
  for (const AffineExpr& d : operand.subscript) {
    const std::string where = fmt::format("the subscript of tensor '{}'", tensor.name);
    check_indices(d, ext.size(), where);
    check_magnitude(d, ext, where);
  }
  for (std::int64_t x : ext)
    if (x == 0) return Count(0);  // an empty iteration space reads nothing
  for (std::int64_t s : tensor.shape) {
    if (s < 0) invalid(fmt::format("tensor '{}' has a negative dimension", tensor.name));
    if (s == 0) return Count(0);
  }

  // Dimensions that share an index are read jointly; the others are independent, so the
  // footprint is the product of the groups' counts.
  const std::size_t rank = tensor.shape.size();
  Dsu dsu(rank);
  std::vector<int> dim_of_index(ext.size(), -1);
  for (std::size_t d = 0; d < rank; ++d)
    for (const ir::AffineTerm& t : operand.subscript[d].terms()) {
      if (dim_of_index[t.index] >= 0) dsu.unite(static_cast<int>(d), dim_of_index[t.index]);
      dim_of_index[t.index] = static_cast<int>(d);
    }

  Count result = 1;
  std::vector<bool> done(rank, false);
  for (std::size_t d = 0; d < rank; ++d) {
    if (done[d]) continue;
    std::vector<const AffineExpr*> dims;
    std::vector<std::int64_t> sizes;
    const int root = dsu.find(static_cast<int>(d));
    for (std::size_t d2 = d; d2 < rank; ++d2)
      if (dsu.find(static_cast<int>(d2)) == root) {
        done[d2] = true;
        dims.push_back(&operand.subscript[d2]);
        sizes.push_back(tensor.shape[d2]);
      }
    const I128 n = dims.size() == 1 ? count_dim(*dims[0], ext, sizes[0])
                                    : count_group(dims, sizes, ext);
    result *= to_count(n);
  }
  return result;
}

ContractionClass classify_contraction(const EinsumOp& e) {
  if (e.reduce != ir::Reduce::Sum || !e.combine.is_product_of_two_operands()) {
    return ContractionClass::None;
  }
  const std::vector<IndexPos> reduced = e.reduced_indices();
  if (reduced.empty()) return ContractionClass::None;  // outer product
  // A sliding window slides a reduced index (the tap) against another index: `p*s + r*d`
  // (a 1x1 convolution too: its tap has extent 1). An affine subscript without a reduced
  // index is a reshape of one dimension into several kept in the output (the grouped-query
  // head `hk*grp + j` of attention): a matmul.
  auto windowed = [&](const AffineExpr& x) {
    if (x.terms().size() < 2) return false;
    for (const ir::AffineTerm& t : x.terms())
      if (std::find(reduced.begin(), reduced.end(), t.index) != reduced.end()) return true;
    return false;
  };
  for (const Operand& o : e.operands)
    for (const AffineExpr& x : o.subscript)
      if (windowed(x)) return ContractionClass::Convolution;
  // A transposed convolution in scatter form has its window on the output subscript.
  for (const AffineExpr& x : e.output)
    if (windowed(x)) return ContractionClass::Convolution;
  return ContractionClass::Matmul;
}

ContractionClass classify_contraction(const Graph& g, const Op& op) {
  if (op.kind() != OpKind::Einsum) return ContractionClass::None;
  const EinsumOp& e = op.einsum();
  ContractionClass c = classify_contraction(e);
  if (c == ContractionClass::None) return c;
  if (e.hint == ir::ContractionHint::Attention) c = ContractionClass::Attention;
  for (const ir::Expr& child : e.combine.children()) {
    const int k = child.operand_index();
    if (k < 0 || static_cast<std::size_t>(k) >= op.inputs.size())
      throw UserError(UserError::Kind::InvalidGraph,
                      fmt::format("combine uses ${} but the einsum has {} inputs", k,
                                  op.inputs.size()),
                      origin_of(op));
    if (g.tensor(op.inputs[k]).dtype == DType::Bool) return ContractionClass::None;
  }
  return c;
}

namespace {

// The cost of one combine node alone (its children not included): the function table.
CombineCost node_cost(ExprOp op) {
  const ir::ExprOpInfo& info = ir::expr_op_info(op);  // the function table (ir/expr.h)
  return {info.vector_flops, info.special_ops};
}

// Counts each structurally distinct non-leaf subtree of a combine tree once: the value an
// implementation computes once and reuses (`d * d` with d = x - m inlined twice; softplus's
// beta * x in its test and its exponent). A subtree is keyed by a hash of its structure; equal
// hashes are confirmed with ir::Expr's structural equality. A node shared by pointer (an Expr
// copied into two places shares its tree) is recognized without walking it again, so a
// deeply shared tree costs its distinct nodes, not its unfolded size. Combine trees are small:
// the nodes seen are kept in a flat list (inline up to kInline, so the common tree allocates
// nothing), indexed by hash beyond that.
class DistinctSubtrees {
 public:
  CombineCost cost;

  // Counts `e` and its subtrees not seen before; returns the hash of `e`'s structure.
  std::uint64_t visit(const ir::Expr& e) {
    const ExprOp op = e.op();
    if (op == ExprOp::Operand) return mix(0x9E3779B97F4A7C15ull, 1 + e.operand_index());
    if (op == ExprOp::Const) return mix(0xC2B2AE3D27D4EB4Full, const_bits(e.value()));
    // The address of a node's child list identifies the node (Expr exposes no other handle).
    const void* node = &e.children();
    if (const Seen* s = find_node(node)) return s->hash;
    std::uint64_t h = mix(0x165667B19E3779F9ull, static_cast<std::uint64_t>(op));
    for (const ir::Expr& child : e.children()) h = mix(h, visit(child));
    const bool again = find_equal(h, e);  // computed once already
    push({h, node, &e});  // by pointer too, so that another copy of this node is not walked
    if (again) return h;
    const CombineCost own = node_cost(op);
    cost.vector_flops += own.vector_flops;
    cost.special_ops += own.special_ops;
    return h;
  }

 private:
  struct Seen {
    std::uint64_t hash = 0;
    const void* node = nullptr;
    const ir::Expr* expr = nullptr;  // valid while the tree being walked lives
  };
  static constexpr std::size_t kInline = 16;

  static std::uint64_t mix(std::uint64_t h, std::uint64_t v) {
    h ^= v + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
    h *= 0xFF51AFD7ED558CCDull;
    return h ^ (h >> 33);
  }
  // Constants hash as ir::Expr compares them: 0 equals -0 and every NaN equals every NaN.
  static std::uint64_t const_bits(double v) {
    if (v != v) return 0x7FF8000000000000ull;
    if (v == 0) v = 0;
    std::uint64_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    return bits;
  }
  const Seen* find_node(const void* node) const {
    for (std::size_t i = 0; i < std::min(size_, kInline); ++i)
      if (inline_[i].node == node) return &inline_[i];
    auto it = by_node_.find(node);
    return it == by_node_.end() ? nullptr : &more_[it->second];
  }
  bool find_equal(std::uint64_t h, const ir::Expr& e) const {
    for (std::size_t i = 0; i < std::min(size_, kInline); ++i)
      if (inline_[i].hash == h && *inline_[i].expr == e) return true;
    auto [lo, hi] = by_hash_.equal_range(h);
    for (auto it = lo; it != hi; ++it)
      if (*more_[it->second].expr == e) return true;
    return false;
  }
  void push(const Seen& s) {
    if (size_ < kInline) {
      inline_[size_] = s;
    } else {
      by_node_.emplace(s.node, more_.size());
      by_hash_.emplace(s.hash, more_.size());
      more_.push_back(s);
    }
    ++size_;
  }

  Seen inline_[kInline];
  std::size_t size_ = 0;
  std::vector<Seen> more_;
  std::unordered_map<const void*, std::size_t> by_node_;
  std::unordered_multimap<std::uint64_t, std::size_t> by_hash_;
};

}  // namespace

CombineCost combine_cost(const ir::Expr& combine) {
  if (!combine.defined()) return {};
  DistinctSubtrees walk;
  walk.visit(combine);
  return walk.cost;
}

namespace detail {

bool is_copying_slice(const Op& op) {
  return op.kind() == OpKind::Move && op.move().kind == MoveKind::Slice && slice_copies(op);
}

bool is_free_view(const Op& op) {
  if (op.kind() != OpKind::Move) return false;
  switch (op.move().kind) {
    case MoveKind::View: return true;
    case MoveKind::Slice: return !slice_copies(op);
    case MoveKind::Copy: case MoveKind::Permute: case MoveKind::Concat: case MoveKind::Pad:
    case MoveKind::Gather: case MoveKind::Scatter: case MoveKind::Cast:
      return false;
  }
  return false;
}

Work op_work(const Graph& g, const Op& op, std::vector<Count>* input_bytes,
             const std::vector<char>* live_outputs) {
  if (input_bytes) input_bytes->clear();
  switch (op.kind()) {
    case OpKind::Einsum:
      return einsum_work(g, op, input_bytes);
    case OpKind::Move:
      return move_work(g, op, input_bytes);
    case OpKind::Opaque:
      return opaque_work(g, op, input_bytes);
    case OpKind::Unanalyzed: {
      const ir::UnanalyzedOp& u = op.unanalyzed();
      Work w;
      w.analyzed = false;
      w.note = !u.reason.empty()
                   ? u.reason
                   : fmt::format("no lowering for framework op '{}'", u.framework_op);
      if (input_bytes) input_bytes->assign(op.inputs.size(), Count(0));
      return w;
    }
    case OpKind::Repeat:
      return repeat_work(g, op, input_bytes, live_outputs);
  }
  throw InternalError("unknown op kind", __FILE__, __LINE__);
}

}  // namespace detail

Work op_work(const Graph& g, const Op& op) { return detail::op_work(g, op, nullptr); }

std::int64_t distinct_values_in_range(const std::vector<ValueTerm>& terms, std::int64_t constant,
                                      std::int64_t size) {
  return static_cast<std::int64_t>(count_values(terms, constant, size));
}

}  // namespace solar::cost
