// Work and traffic of one op (docs/cost.md): tensor-unit MACs by dtype, vector FLOPs by
// dtype, special-function ops, and bytes from footprints at each tensor's own width. The
// rules it composes have headers of their own, included here for every user of op_work:
// contraction classes, footprints, storage (bytes of sparse tensors), combine costs.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "solar/cost/combine_cost.h"
#include "solar/cost/contraction.h"
#include "solar/cost/footprint.h"
#include "solar/cost/live_points.h"  // Work::live_points
#include "solar/cost/storage.h"
#include "solar/ir/graph.h"
#include "solar/util/count.h"

namespace solar::cost {

struct WorkPart;

// What a collective op moves between ranks (docs/cost.md, "Collectives"): its kind, its group
// and its payload S, the bytes nccl-tests calls the collective's size (bound/collective.h): an
// all_reduce's or broadcast's buffer, a reduce_scatter's whole input, an all_gather's whole
// output, an all_to_all's per-rank buffer, a send's or recv's message.
struct Communication {
  ir::CollectiveKind kind = ir::CollectiveKind::AllReduce;
  ir::CollectiveGroup group;
  Count payload;  // S, bytes per rank
};

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
  // Collectives' payload bytes per rank (S) by collective kind: an op's own, or summed over
  // a graph. Moved over links, not DRAM: bytes_read and bytes_written hold a collective's
  // DRAM traffic (its input read and its result written once).
  std::map<ir::CollectiveKind, Count> comm_bytes;
  // The op's own collective, for the link bounds; empty for other ops and in sums (which keep
  // comm_bytes).
  std::optional<Communication> comm;

  Count total_macs() const;
  Count total_macs_2_4() const;  // the sum of macs_2_4 (<= total_macs())
  Count total_vector_flops() const;
  Count total_comm_bytes() const;  // the sum of comm_bytes
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

// The work of one op of `g`, per the rules in docs/cost.md. Unanalyzed ops give
// analyzed = false with the reason in `note`. Throws Unsupported (with the op's origin) for
// an uncountable mask and UserError(InvalidGraph) for a malformed op.
Work op_work(const ir::Graph& g, const ir::Op& op);

}  // namespace solar::cost
