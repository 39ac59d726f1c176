// A brute-force tile-by-tile simulator of a two-level mapping: the check that the closed
// form of mapping.h counts what the loop nest actually moves.
#pragma once

#include <cstdint>

#include "solar/tiling/mapping.h"
#include "solar/tiling/problem.h"

namespace solar::tiling {

// Runs the DRAM-level loop nest of `m` tile by tile, keeping one resident tile per kept
// tensor, and counts elements moved: a tile is loaded when the tile a step needs differs
// from the resident one, an output tile is written back on eviction and at the end and
// re-read on every visit but its first; a tile's size is found by visiting every iteration
// point in it. Bypassed tensors move one element per iteration point (outputs: a read per
// point except an element's first, and a write per point). A masked problem skips the steps
// whose tiles hold no live point (found by visiting their points), reloads a tensor whenever
// the loops outside and at its innermost relevant loop reach another live tuple, and reads
// (writes) the elements of tiles it never loaded once. Cost grows with the number of
// iteration points; refuses (UserError) problems over `max_points` points.
MappingCost simulate_mapping(const TilingProblem& p, const Mapping& m,
                             std::uint64_t max_points = 1u << 22);

}  // namespace solar::tiling
