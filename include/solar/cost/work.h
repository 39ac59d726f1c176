// Work and traffic of one op (DESIGN.md §3): tensor-unit MACs by dtype, vector FLOPs by
// dtype, special-function ops, and bytes from footprints at each tensor's own width.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "solar/ir/graph.h"
#include "solar/util/count.h"

namespace solar::cost {

// What kind of contraction an einsum is: decides which unit a math policy allows.
enum class ContractionClass {
  None,         // not a contraction (elementwise, reduction, data movement)
  Matmul,       // plain-index contraction (mm, bmm, linear, einsum)
  Convolution,  // a contraction with a sliding-window (affine) operand subscript
};

struct Work {
  ContractionClass contraction = ContractionClass::None;
  // Tensor-unit MACs keyed by the dtype of the contraction's operands (the wider of the
  // two when they differ). 1 MAC = 2 FLOP.
  std::map<ir::DType, Count> macs;
  // Elementwise and reduction FLOPs keyed by the output dtype.
  std::map<ir::DType, Count> vector_flops;
  Count special_ops;    // exp, log, tanh, erf, rsqrt, sqrt, recip, sigmoid, sin, cos
  Count bytes_read;     // sum of input footprints at their own widths
  Count bytes_written;  // outputs written once
  Count live_points;    // iteration points after the mask (einsum ops)
  bool analyzed = true; // false for unanalyzed ops: all counts are zero and unknown
  std::string note;     // the assumption behind data-dependent or opaque costs

  Count total_macs() const;
  Count total_vector_flops() const;
  Count flops() const { return Count(2) * total_macs() + total_vector_flops(); }
  Count bytes() const { return bytes_read + bytes_written; }
  Work& operator+=(const Work& o);  // sums every field (contraction class kept if equal)
};

// Number of iteration points of an einsum that satisfy its mask (exact).
// Throws Unsupported when the mask is too complex to count exactly.
Count live_points(const ir::EinsumOp& e);

// Elements of `tensor` an operand reads: its footprint (distinct in-range elements touched).
Count operand_footprint(const ir::EinsumOp& e, const ir::Operand& operand,
                        const ir::Tensor& tensor);

// Bytes of `elements` elements of `t` at its own width (sub-byte widths packed; 2:4
// sparsity stores half the values plus 2-bit indices).
Count tensor_bytes(const ir::Tensor& t, Count elements);

// The classification used by math policies.
ContractionClass classify_contraction(const ir::EinsumOp& e);

// The work of one op of `g`.
Work op_work(const ir::Graph& g, const ir::Op& op);

}  // namespace solar::cost
