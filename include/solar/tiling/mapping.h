// A two-level mapping of one einsum (DRAM -> one on-chip buffer) and its closed-form cost:
// the tile-granular model of Orojenesis (docs/cache-aware.md).
//
// Semantics
// - Each rank r is split into tiles of t_r iterations; the DRAM level loops over
//   T_r = ceil(N_r / t_r) tiles (the last tile may be partial) in `order` (outer to inner).
// - The buffer holds one tile of every kept tensor. A tensor's tile is reloaded whenever
//   the DRAM loop indices of its ranks change, so a kept tensor X is transferred
//   mult_X times, where mult_X is the product of T_r over the loops outside X's innermost
//   relevant loop that do not index X (stationarity comes from the order).
// - A tile of X holds, per dimension, the in-range part of the hull of the positions its
//   iterations read (`(t_p-1)*stride + (t_r-1)*dilation + 1` for a window); tiles are loaded
//   whole, without halo reuse between consecutive tiles.
// - Output: every tile is written back when it leaves the buffer; a later visit re-reads
//   its partial sums; the first visit reads nothing (first-read elision), so
//   acc_Out = 2*|Out|*mult_Out - |Out| for a kept output.
// - A bypassed tensor has no buffer space; every iteration point moves one element
//   (inputs: points reads; output: 2*points - |Out|). Only plain dense tensors may be
//   bypassed (a sparse tensor moves as compressed tiles).
// - A 2:4 tensor's tile covers the whole groups of 4 it touches along its group dimension
//   (problem.h), so a tile boundary inside a group loads that group twice.
// - A masked problem (problem.h) skips the DRAM steps whose tiles hold no live point: a
//   tensor is loaded once per live tile tuple of the loops outside and at its innermost
//   relevant loop, an element in no live tile is still read once (masks do not shrink
//   footprints), and output tiles no live point reaches are written once. A tile holds a
//   live point when each constraint holds at one of its corners (exact for one constraint
//   or parallel ones; otherwise it may count an empty tile). No bypass.
// - Sizes in elements; bits are each tensor's storage_bits of its elements (problem.h: dense,
//   2:4 or bitmap, as cost::tensor_bytes); bytes come from bits (curve.h).
#pragma once

#include <cstdint>
#include <vector>

#include "solar/tiling/problem.h"
#include "solar/util/count.h"

namespace solar::tiling {

struct Mapping {
  std::vector<std::int64_t> tile;  // per rank, 1 <= tile <= extent
  std::vector<int> order;          // DRAM loop order, outer to inner; every rank with T > 1
  std::vector<bool> bypass;        // per tensor; empty means none bypassed
};

struct MappingCost {
  std::vector<Count> buffer_elements;  // per tensor: its tile (0 when bypassed)
  std::vector<Count> access_elements;  // per tensor: DRAM reads + writes
  Count buffer_bits;                   // sum over tensors of storage_bits(tile)
  Count traffic_bits;                  // sum over tensors of storage_bits(accesses)
};

// Trip count of rank `r`: ceil(extent / tile).
std::int64_t trips(const TilingProblem& p, const Mapping& m, int r);

// The closed-form cost (the formulas above). Throws UserError(BadArgument) for an invalid
// mapping (tile out of range, a rank with T > 1 missing from the order, a bypassed affine
// or sparse tensor).
MappingCost evaluate_mapping(const TilingProblem& p, const Mapping& m);

}  // namespace solar::tiling
