// Provable lower bounds on the DRAM traffic of one einsum for an on-chip capacity S in bytes
// (docs/cache-aware.md): no schedule of the einsum, tiled or not,
// with any recomputation, moves fewer bytes between DRAM and a fast memory of S bytes.
//
// Units: the formulas count words (elements). S in words is S_bytes / w_min, with w_min the
// narrowest element width (in bytes) of the einsum's tensors, so at least as many elements
// as really fit are assumed to fit; a word bound converts to bytes as words * w_min, which
// never exceeds the true bytes moved. Compulsory traffic is exact in bytes, each tensor at
// its own width and storage (2:4 and bitmap formats, problem.h).
//
// Sparse operands: a schedule may skip every multiply-accumulate with a zero operand, so the
// segment formulas count G = the MACs that must run (nonzero_point_fraction), and the words
// they count are stored values (a 2:4 or bitmap value is at least as wide as its dtype, so
// w_min stays the narrowest dtype width).
#pragma once

#include <string>

#include "solar/ir/graph.h"
#include "solar/tiling/problem.h"
#include "solar/util/count.h"

namespace solar::tiling {

enum class BoundFormula {
  Compulsory,   // every distinct input footprint read once, the output written once
  Gemm,         // Smith et al.: 2*G/sqrt(S) - 2S - |Out|, G = MACs (GEMM and BMM; see .cc)
  Convolution,  // S*G/sqrt(u*(2S+pad)*2S*3S) - S (G/sqrt(12uS) - S unpadded), u: im2col reuse
  Projective,   // Hölder-Brascamp-Lieb: S*G/F(S) - S, F from the tile-shape LP
};
std::string_view bound_formula_name(BoundFormula f);  // compulsory gemm convolution projective

struct ProvableBound {
  Count traffic_bytes;       // the bound
  BoundFormula formula;      // which term gave it (the largest)
  double formula_words = 0;  // the non-compulsory formula's value in words (may be < 0)
  std::string detail;        // the formula with its numbers, for reports
};

// The largest of the bounds that apply to `p` at `capacity_bytes` (> 0):
// - always the compulsory traffic;
// - Gemm when `p` is a product-sum einsum over two distinct plain operands whose ranks are each
//   M-like (first operand and output), N-like (second and output), K-like (both operands)
//   or batch (all three), with at least one K-like rank;
// - Convolution when `p` is a product-sum with a sliding-window first operand, a plain
//   second operand and a plain output (the im2col triple);
// - Projective for every product-sum einsum (affine operands with per-dimension
//   multiplicity and padding allowance, see docs/cache-aware.md).
// `product_sum` says whether the einsum's combine is mul($0,$1) with sum reduction: the
// segment arguments need one multiply-accumulate per iteration point and are skipped
// otherwise. A masked problem's segment arguments count its live points (the MACs that must
// run); the compulsory traffic stays every footprint (masks do not shrink them).
ProvableBound provable_bound(const TilingProblem& p, bool product_sum, Count capacity_bytes);

// The bound for einsum op `op` of `g`: problem_from_einsum in MaskedEinsum::Live mode (and its
// Unsupported cases) with product_sum = is_product_sum(op.einsum()).
ProvableBound provable_bound(const ir::Graph& g, const ir::Op& op, Count capacity_bytes);

// The fraction of a product-sum's iteration points whose operands are all nonzero, at least:
// 1 minus the sum of the inputs' zero fractions (a point with a zero operand may be skipped;
// zeros spread evenly, as cost::tensor_bytes assumes), floored at 0; 1 without sparse inputs.
double nonzero_point_fraction(const TilingProblem& p);

// Whether an einsum is a product-sum (combine mul($0,$1), reduce sum).
bool is_product_sum(const ir::EinsumOp& e);

// The value of max sum_r y_r subject to sum_{r in R_X} y_r <= c_X for every X and
// 0 <= y_r <= u_r, solved exactly by enumerating vertices (few variables). `sets` are rank
// masks, `caps` the c_X, `upper` the u_r (all >= 0). Exposed for tests.
double projective_lp(const std::vector<RankMask>& sets, const std::vector<double>& caps,
                     const std::vector<double>& upper);

}  // namespace solar::tiling
