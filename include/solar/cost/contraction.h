// Which kind of contraction an einsum is: the class that decides which unit a math policy
// allows (docs/bounds.md).
#pragma once

#include "solar/ir/graph.h"

namespace solar::cost {

enum class ContractionClass {
  None,         // not a contraction (elementwise, reduction, data movement)
  Matmul,       // plain-index contraction (mm, bmm, linear, einsum)
  Convolution,  // a contraction over a sliding window (an affine subscript or mask equality)
  Attention,    // a contraction of a fused attention op (the lowering's hint, EinsumOp::hint):
                // run by the framework's fused attention kernels, not by its matmul library
};

// The classification used by math policies, from the op's structure alone: reduce sum,
// combine mul($0,$1), at least one reduced index. Convolution when an operand (or output)
// subscript slides a reduced index against another (strided, dilated, padded, grouped or
// transposed windows), or when the mask holds a window equality: an index kept in the output
// equal to an affine form of two or more reduced indices (a transposed convolution in gather
// form, `p == s*i + kh - pad`, whose subscripts are all plain); Matmul otherwise. Outer
// products (no reduced index) are None.
ContractionClass classify_contraction(const ir::EinsumOp& e);

// The same for an einsum op of `g`, also requiring non-bool operands (a bool "product" is a
// logical and, not tensor-unit work), and Attention for a contraction whose hint is Attention
// (a fused attention op's; those kernels choose their math units themselves, docs/bounds.md).
// This is the class op_work records in Work::contraction.
ContractionClass classify_contraction(const ir::Graph& g, const ir::Op& op);

}  // namespace solar::cost
