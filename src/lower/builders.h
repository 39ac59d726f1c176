// The op library every dialect table calls: dialect-neutral builders that stage one op family
// (elementwise maps, flips, convolutions and window reductions, arg-reductions, scans, sorts,
// gathers and scatters, softmax, attention) into a Context from tensors, shapes, window
// parameters and dtypes. A builder never reads an op's named arguments or operand list: each dialect's entry
// reads those its own way and calls the builder, so two frontends that compute the same op
// produce the same graph, costs and stated assumptions. Which file serves which family:
// src/lower/README.md.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string_view>
#include <vector>

#include "context.h"
#include "op_table.h"
#include "solar/ir/graph.h"
#include "solar/ir/shape.h"

namespace solar::lower::detail {

// ---- elementwise (build_pointwise.cc)

// Reads operand k of the current op as a combine term, the dialect's way (aten by argument
// name, jax by position in its operand list): a tensor joins `inputs` and is `$index`, a number
// is a constant; what cannot be read throws Unsupported.
using ReadTerm =
    std::function<ir::Expr(Context&, std::size_t k, std::vector<ir::TensorId>& inputs)>;

// f of the op's first `arity` operands, elementwise into output 0 (numpy broadcasting).
Fn pointwise(ReadTerm read, std::size_t arity,
             std::function<ir::Expr(Context&, const std::vector<ir::Expr>&)> f);
// f of the op's one operand, elementwise into output 0.
Fn unary(ReadTerm read, std::function<ir::Expr(Context&, ir::Expr)> f);
Fn unary(ReadTerm read, ir::ExprOp op);

// ---- data movement (build_move.cc)

// out[.., i, ..] = in[.., n-1-i, ..] along every dimension d with flipped[d] (flip, rev, a
// reversed scan): a copy with an affine subscript.
void flip(Context& c, ir::TensorId in, ir::TensorId out, const std::vector<bool>& flipped);

// ---- windows (build_window.cc)

// Which dimension of each operand of a convolution is which: lhs [batch, feature, spatial...],
// rhs [output feature, input feature, spatial...], out [batch, feature, spatial...], each
// entry the position of that dimension in the operand.
struct ConvLayout {
  std::vector<std::int64_t> lhs, rhs, out;
  // Every operand in that order (torch's N, C, spatial... and O, I, spatial...).
  static ConvLayout identity(std::size_t rank);
};

// One spatial dimension of a window: output position p reads, for tap r, input position
// p*stride + r*dilation - pad_lo (below 0 or past the input: the padding value). With
// input_dilation d > 1 the input element i sits at position i*d (lhs or base dilation).
struct WindowDim {
  std::int64_t stride = 1;
  std::int64_t dilation = 1;
  std::int64_t pad_lo = 0;
  std::int64_t input_dilation = 1;
};

// A grouped convolution as one einsum:
//   out[n, g*Kg + k, p..] = sum_{c, r..} x[n, g*I + c, q..] * w[g*Kg + k, c, r..]
// with q per `window` (input dilation: an input index i and the mask q - i*d == 0), G =
// feature_groups; batch_groups B > 1 instead splits x's batch: x[bg*N + n, c, ..] feeds output
// feature bg*Kb + k. Padding reads 0. Throws Unsupported when the extents do not match the
// groups.
void convolution(Context& c, ir::TensorId x, ir::TensorId w, ir::TensorId out,
                 const ConvLayout& layout, const std::vector<WindowDim>& window,
                 std::int64_t feature_groups, std::int64_t batch_groups);

// A window reduction over every dimension of `in` (pooling, reduce_window):
//   out[p..] = REDUCE_{r..} in[p*stride + r*dilation - pad_lo]
// where sizes[d] is dimension d's window (0: not windowed, a plain index as in a batch or
// channel dimension); reads outside the input yield `pad_value` (the reduction's identity:
// -inf for max, 0 for a sum). Input dilation must be 1 (made explicit by the caller).
void window_reduce(Context& c, ir::TensorId in, ir::TensorId out,
                   const std::vector<std::int64_t>& sizes, const std::vector<WindowDim>& window,
                   ir::Reduce r, double pad_value);

// ---- index-valued ops (build_index.cc)

// An argmax/argmin (`what`; "pool_argmax" for a pooling's indices) of `in` over `axis` (every
// dimension without one): an opaque op that compares every element once. `attrs` are kept
// (a pooling's windows, for the executor).
void arg_reduce(Context& c, ir::TensorId in, ir::TensorId out, const char* what,
                std::optional<std::int64_t> axis = std::nullopt, ir::Attrs attrs = {});

// A scan along `axis` (`function`: cumsum, cumprod, cummax, cummin): one combine per element;
// `outs` are the values (and indices).
void scan(Context& c, const char* function, ir::TensorId in, std::vector<ir::TensorId> outs,
          std::int64_t axis);

// The smallest k with 2^k >= n (0 for n <= 1).
std::int64_t ceil_log2(std::int64_t n);

// What a sort writes, as its stated assumption says: values and indices, or (a sort whose
// operands may or may not carry an iota) values and, when asked, indices.
enum class SortWrites { ValuesAndIndices, ValuesMaybeIndices };

// A comparison sort along `axis` of a tensor of `shape`: n*ceil(log2 n) compares per row (at
// least one per element); `bytes` is what it reads and writes (the caller knows its outputs).
ir::OpaqueOp sort_op(const std::vector<std::int64_t>& shape, std::int64_t axis, Count bytes,
                     SortWrites writes);
// Top-k selection along `axis` by a heap: n*ceil(log2 k) compares per row (k at least 2).
ir::OpaqueOp topk_op(const std::vector<std::int64_t>& shape, std::int64_t axis, std::int64_t k,
                     bool largest, Count bytes);

// How a gather or scatter addresses its axis: "take" (the index replaces the axis:
// index_select, embedding, x[idx]) or "elements" (the index has the data's rank and picks one
// element per position: torch.gather, take_along_axis).
enum class IndexMode { Take, Elements };
// How a scatter combines with what is there.
enum class ScatterReduce { None, Sum, Prod, Mean, Max, Min };
// The names of the scatter move's attributes (docs/ir-text.md): none, sum, prod, mean, max,
// min; take, elements. The parsers return nullopt for another name.
const char* scatter_reduce_name(ScatterReduce r);
std::optional<ScatterReduce> parse_scatter_reduce(std::string_view name);
std::optional<IndexMode> parse_index_mode(std::string_view name);

// out = data gathered along `axis` at `index` (a gather move).
void gather(Context& c, ir::TensorId data, ir::TensorId index, ir::TensorId out,
            std::int64_t axis, IndexMode mode);
// out = data with src scattered along `axis` at `index`, combined by `reduce` (a scatter
// move); include_self, when given, says whether data's own element joins a reduction.
void scatter(Context& c, ir::TensorId data, ir::TensorId index, ir::TensorId src,
             ir::TensorId out, std::int64_t axis, IndexMode mode, ScatterReduce reduce,
             std::optional<bool> include_self = std::nullopt);

// ---- normalization (build_norm.cc)

// Softmax, log-softmax, or softmax whose rows of nothing but -inf give 0 (torch's
// _safe_softmax).
enum class Softmax { Plain, Log, Safe };
// The softmax of `in` over `dim` into `out` (max, exp(x - max), sum, divide), restricted to
// the points of `mask`.
void softmax(Context& c, ir::TensorId in, ir::TensorId out, std::int64_t dim, Softmax kind,
             const std::vector<ir::AffineConstraint>& mask = {});

// ---- attention (build_attention.cc)

// A tensor a builder asks for when it reaches it: an entry's output or a graph source is made
// at that point, so the graph holds its tensors in the order the lowering has always staged
// them (reports list tensors in that order).
using TensorAt = std::function<ir::TensorId()>;

// The extents of an attention over [..., H, L, E] operands: Hq query and Hk key heads (grp =
// Hq / Hk query heads per key head), L queries, S keys, E and Ev features. Throws Unsupported
// for operands that do not fit (ranks, heads, batch dimensions).
struct AttentionDims {
  std::size_t rank;
  std::int64_t Hq, Hk, L, S, E, Ev, grp;
};
AttentionDims attention_dims(const Shape& qs, const Shape& ks, const Shape& vs);

// The causal mask over a [..., L, S] elementwise or reduction space of rank `rank` (index l
// is rank-2, s is rank-1): key s <= query l, top-left aligned; none when not `causal`.
std::vector<ir::AffineConstraint> causal_mask(std::size_t rank, bool causal);

// Scaled dot-product attention over [..., H, L, E] operands: scores = Q K^T (grouped-query:
// query head hk*grp + j reads key head hk), times `scale`, the mask (a bool tensor keeps
// where true, another is added; `causal`: key s <= query l, top-left aligned), softmax over
// the keys, P V into `out`. The einsums carry the attention contraction hint. `mask` may be
// empty (no mask).
void attention(Context& c, ir::TensorId q, ir::TensorId k, ir::TensorId v, const TensorAt& mask,
               const TensorAt& out, double scale, bool causal);

}  // namespace solar::lower::detail
