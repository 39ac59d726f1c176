// Work and traffic of one op (docs/cost.md): tensor-unit MACs by dtype, vector FLOPs by
// dtype, special-function ops, and bytes from footprints at each tensor's own width.
#pragma once

#include <string_view>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "solar/cost/live_points.h"  // Work::live_points
#include "solar/ir/graph.h"
#include "solar/util/count.h"

namespace solar::cost {

// What kind of contraction an einsum is: decides which unit a math policy allows.
enum class ContractionClass {
  None,         // not a contraction (elementwise, reduction, data movement)
  Matmul,       // plain-index contraction (mm, bmm, linear, einsum)
  Convolution,  // a contraction with a sliding-window (affine) operand subscript
  Attention,    // a contraction of a fused attention op (the lowering's hint, EinsumOp::hint):
                // run by the framework's fused attention kernels, not by its matmul library
};

struct WorkPart;

struct Work {
  ContractionClass contraction = ContractionClass::None;
  // Tensor-unit MACs keyed by the dtype of the contraction's operands (the wider of the
  // two when they differ): the dense MACs of the contraction as written, zeros included.
  // 1 MAC = 2 FLOP.
  std::map<ir::DType, Count> macs;
  // The part of `macs` (same keys, each <= macs[dtype]) that a tensor unit with a 2:4
  // structured-sparse peak may run at that peak: every MAC of a contraction with a
  // 2:4-structured operand. Whether the zeros are skipped is the device's business
  // (bound/sol.h): a unit without a sparse peak runs these MACs at its dense peak.
  std::map<ir::DType, Count> macs_2_4;
  // The contraction's MACs over its whole index box, its mask ignored (all dtypes): what an
  // implementation that computes the masked points too (a causal attention that does not
  // skip the tiles above the diagonal) runs. Equal to total_macs() without a mask; 0 for
  // ops that are not contractions.
  Count macs_dense;
  // Elementwise and reduction FLOPs keyed by the output dtype.
  std::map<ir::DType, Count> vector_flops;
  Count special_ops;    // exp, log, tanh, erf, rsqrt, sqrt, recip, sigmoid, sin, cos
  Count bytes_read;     // sum of input footprints at their own widths
  Count bytes_written;  // outputs written once
  Count live_points;    // iteration points after the mask (einsum ops)
  bool analyzed = true; // false for unanalyzed ops: all counts are zero and unknown
  // Dead: none of its results reaches a graph output, so no implementation needs to run it
  // (torch.compile and XLA drop it). The counts say what it would cost; no total, bound or
  // traffic includes them. analyzed is true.
  bool dead = false;
  // In the totals and bounds: analyzed and not dead.
  bool counted() const { return analyzed && !dead; }
  std::string note;     // the assumption behind data-dependent or opaque costs
  // A repeat op's work as the ops that run (docs/cost.md, "Repeat"): one entry per body op
  // and per set of iterations that need it (a nested repeat's parts, flattened), and one per
  // stacked output (the stacking copy). The counts above are the sum of every part's work
  // times its runs; the bounds price each run as an op of its own. Empty for other ops.
  std::vector<WorkPart> parts;

  Count total_macs() const;
  Count total_macs_2_4() const;  // the sum of macs_2_4 (<= total_macs())
  Count total_vector_flops() const;
  Count flops() const { return Count(2) * total_macs() + total_vector_flops(); }
  Count bytes() const { return bytes_read + bytes_written; }
  // Sums every count; the contraction class is kept when equal (None otherwise), analyzed
  // is the conjunction, and the note is left as it was.
  Work& operator+=(const Work& o);
};

// Work that runs `runs` times (a body op of a repeat op): `work` counts one run.
struct WorkPart {
  Work work;
  Count runs;
};

// Elements of `tensor` an operand reads: its footprint (distinct in-range elements touched
// over the whole iteration box; the mask is ignored, so a causal mask still reads every row
// of Q and K). Exact for plain, constant, single-term and window (conv) subscripts and for
// small diagonal groups; for huge irregular affine subscripts it falls back to a lower
// bound, never an overestimate (docs/cost.md).
Count operand_footprint(const ir::EinsumOp& e, const ir::Operand& operand,
                        const ir::Tensor& tensor);

// Bytes of `elements` elements of `t` at its own width (docs/cost.md, "Bytes"): dense,
// ceil(n * dtype_bits / 8) with sub-byte widths packed; 2:4 structured sparsity in its
// compressed format, ceil(ceil(n/2) * (dtype_bits + 2) / 8) (half the values, a 2-bit index
// each); an unstructured zero fraction f > 0 as the smaller of dense and a bitmap format,
// ceil(n/8) + ceil(nnz * dtype_bits / 8) with nnz = ceil(n * (1 - f)) (exact in integers).
Count tensor_bytes(const ir::Tensor& t, Count elements);

// The zeros among n elements of a tensor with zero fraction f (0 <= f <= 1): floor(n * f),
// exact for f read as its shortest round-trip decimal, the number the IR's text and JSON
// forms print (zeros=0.3 is 3/10, so 10 elements hold 3 zeros, where the double nearest 0.3,
// a little below it, would give 2). Beyond 128-bit products (more than ~10^21 elements) it
// is exact for the binary value instead. The one rule every byte count of sparse storage uses.
Count zeros_of(Count n, double f);

// f as digits / pow10, its shortest round-trip decimal ("0.3" is 3 / 10); nullopt when the
// power of ten passes 10^38. For callers that evaluate zeros_of in a tight loop.
struct DecimalFraction {
  unsigned __int128 digits = 0;
  unsigned __int128 pow10 = 1;
};
std::optional<DecimalFraction> decimal_fraction(double f);

// The classification used by math policies, from the op's structure alone: reduce sum,
// combine mul($0,$1), at least one reduced index. Convolution when an operand (or output)
// subscript is neither a plain index nor a constant (strided, dilated, padded, grouped or
// transposed windows); Matmul otherwise. Outer products (no reduced index) are None.
ContractionClass classify_contraction(const ir::EinsumOp& e);

// The same for an einsum op of `g`, also requiring non-bool operands (a bool "product" is a
// logical and, not tensor-unit work), and Attention for a contraction whose hint is Attention
// (a fused attention op's; those kernels choose their math units themselves, docs/bounds.md).
// This is the class op_work records in Work::contraction.
ContractionClass classify_contraction(const ir::Graph& g, const ir::Op& op);

// Per-live-point cost of a combine expression, from the function table in docs/cost.md:
// arithmetic, comparisons and select are 1 vector FLOP; exp, log, tanh, erf, rsqrt, sqrt,
// recip, sin, cos are 1 special op; sigmoid is 2 special + 1 vector; pow is 2 special +
// 1 vector. Operands and constants are free. A subexpression that occurs several times
// (structurally equal subtrees, e.g. mul(sub($0,$1), sub($0,$1))) is counted once: any
// implementation computes it once and reuses the value.
struct CombineCost {
  std::uint64_t vector_flops = 0;  // vector FLOPs per live point
  std::uint64_t special_ops = 0;   // special-function ops per live point
};
CombineCost combine_cost(const ir::Expr& combine);

// The work of one op of `g`, per the rules in docs/cost.md. Unanalyzed ops give
// analyzed = false with the reason in `note`. Throws Unsupported (with the op's origin) for
// an uncountable mask and UserError(InvalidGraph) for a malformed op.
Work op_work(const ir::Graph& g, const ir::Op& op);

}  // namespace solar::cost
