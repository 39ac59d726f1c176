// The einsum workload Solar hands to accelerator modelers: every einsum of a graph with its
// iteration space, affine projections, dtypes and producer/consumer tensors, in a form
// independent of the target tool (accelforge.h and timeloop.h write it).
//
// Semantics
// - One WorkloadEinsum per live einsum op of the graph, in graph (topological) order. Its
//   operation space is the box of index extents minus the mask: its size is Solar's live
//   points, and for a contraction (cost::classify_contraction) exactly its MACs. Padding is
//   part of the box (a padded convolution counts the MACs at the halo, as Solar does), so
//   a padded operand's projection leaves its tensor there.
// - Accesses name *root* tensors: a free or layout-only data-movement op between two
//   einsums (view, slice, permute, a non-repeating copy) is folded into the consumer's
//   projection when the composition is affine, so the modeler sees the producer's tensor
//   itself (a transpose of q is q read as q[b,s,h,d]). Casts, pads, concats, gathers,
//   scatters, opaque and unanalyzed ops are left out: their outputs enter the workload as
//   inputs, and `left_out` says which op and why.
// - Names are sanitized for the targets' grammars (ISL identifiers, Python identifiers):
//   letters, digits and '_', starting with a letter; rank variables start lowercase. A
//   tensor an einsum reads twice gets an alias (`a__1`) for its second access, because both
//   targets key accesses by tensor name.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "solar/cost/graph_cost.h"
#include "solar/ir/graph.h"
#include "solar/util/count.h"

namespace solar::interop {

// A tensor of the exported workload: a root tensor of the graph, or an alias of one.
struct WorkloadTensor {
  std::string name;                 // exported name (unique, sanitized)
  ir::TensorId id;                  // the graph tensor
  std::string solar_name;           // its name in the graph
  std::vector<std::int64_t> shape;  // the graph tensor's shape
  ir::DType dtype = ir::DType::F32;
  std::vector<std::string> ranks;   // one rank name per dimension (`A_M`): uppercase first
  std::string alias_of;             // non-empty for a second access of one tensor (its name)
};

// How an einsum reads or writes one tensor.
struct WorkloadAccess {
  int tensor = -1;                          // index into Workload::tensors
  std::vector<ir::AffineExpr> projection;  // one per tensor dimension, over the einsum's indices
  std::optional<double> pad;               // the value read outside the tensor (padding)
  bool output = false;
  // Distinct elements of the tensor this access touches, by Solar's footprint rule
  // (docs/cost.md: in-range elements only; the mask is ignored).
  Count footprint;
  std::vector<std::string> folded;  // graph names of the movement ops folded into it, in order
};

struct WorkloadEinsum {
  std::string name;                      // exported name (unique, sanitized)
  ir::OpId op;                           // the graph op
  std::string solar_name;
  std::vector<std::string> rank_variables;  // exported index names, parallel to indices
  std::vector<ir::IndexDim> indices;        // the op's iteration space (graph names)
  std::vector<ir::AffineConstraint> mask;
  std::vector<WorkloadAccess> accesses;  // the inputs in operand order, then the output
  cost::ContractionClass contraction = cost::ContractionClass::None;
  Count box_points;   // product of the extents
  Count live_points;  // box minus the mask: the operation count (== MACs of a contraction)
  bool counted = true;  // false when Solar could not count the mask (live_points = box)
  Count macs;           // tensor-unit MACs (0 unless a contraction)
  std::string combine;  // the combine expression, in the text form (`mul($0,$1)`)
  std::string reduce;   // none sum max min prod any all
  std::string framework_op;  // the origin's framework op, when known
};

// One file of an export: its path relative to the output folder, and its text.
struct ExportFile {
  std::string path;
  std::string contents;
};

// A graph op that is not in the workload, and why.
struct LeftOut {
  std::string op;      // the op's graph name
  std::string kind;    // einsum (dead), move:<kind>, opaque, unanalyzed
  std::string reason;  // one sentence
};

struct Workload {
  std::string graph_name;
  std::string frontend;
  std::string source;
  std::vector<WorkloadTensor> tensors;
  std::vector<WorkloadEinsum> einsums;
  std::vector<LeftOut> left_out;
  std::vector<std::string> folded;  // movement ops folded into at least one projection

  const WorkloadTensor& tensor_of(const WorkloadAccess& a) const { return tensors[a.tensor]; }
  // The sum of live points over the einsums (every operation of the workload) and of MACs.
  Count total_operations() const;
  Count total_macs() const;
};

// Builds the workload of `g` from its cost (graph_cost(g)). Dead einsums are left out (no
// implementation runs them; Solar's totals exclude them), so total_macs() equals
// cost.total.total_macs(). Throws UserError(InvalidGraph) when the graph has no einsum to
// export.
Workload build_workload(const ir::Graph& g, const cost::GraphCost& cost);

// The projection of `a` written for an ISL-based tool: `2*p + r - 1`, naming the einsum's
// exported rank variables.
std::string isl_affine(const ir::AffineExpr& e, const std::vector<std::string>& names);

// An identifier for the targets: non-identifier characters become '_', a leading digit or
// '_' gets a `t` prefix. Exposed for tests.
std::string sanitize_identifier(std::string_view name);

}  // namespace solar::interop
