// The workload in Timeloop's problem YAML, and a reader that turns such problems back into an
// EinsumGraph.
//
// Timeloop's classic problem (v0.4, read by timeloop-model and timeloop-mapper) holds one
// einsum: `problem: {version, shape: {name, dimensions, coefficients, data_spaces}, instance}`.
// Its limits shape the export:
// - dimension names are one character: Solar's indices become letters (`m` -> `M`);
// - a projection is a sum of products `[DIM]` or `[DIM, COEFFICIENT]` with named integer
//   coefficients and no constant: a stride 2 becomes coefficient `Coef2` (default 2), and a
//   constant offset (padding, a slice start) is dropped: the data space is the padded
//   tensor, Timeloop's own convention for convolutions. A constant subscript projects on a
//   dimension `Z` of extent 1 (so every data space keeps its tensor's rank);
// - every point of the instance box is one multiply-accumulate into the read_write data
//   space: masks are not expressible (the box is written), nor is an elementwise function;
// - at most 5 data spaces (MAX_DATA_SPACES): an einsum with more operands is not written.
// What Timeloop cannot say is kept in `# solar:` comment lines (the op, its combine and
// reduce, the mask, each data space's tensor, dtype, shape and dropped offsets), which the
// reader uses when present, so a Solar export re-reads exactly.
//
// For the graph of einsums, `workload.yaml` is Timeloop's LoopTree (fused) workload: a list of
// problems whose projections and instances are ISL (constants and masks included), linked by
// data-space name.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "solar/interop/workload.h"
#include "solar/ir/graph.h"

namespace solar::interop {

// One classic problem file per einsum that fits (problems/NAME.yaml), then workload.yaml.
// `skipped` (optional) receives "einsum: reason" for the einsums without a problem file.
std::vector<ExportFile> timeloop_files(const Workload& w, std::vector<std::string>* skipped = nullptr);

// The classic problem of one einsum; throws Unsupported when Timeloop's problem shape cannot
// hold it (more than 5 data spaces or 52 dimensions).
std::string timeloop_problem(const Workload& w, const WorkloadEinsum& e);

// Timeloop's LoopTree workload (`problem:` as a list of einsums with ISL projections).
std::string timeloop_looptree_workload(const Workload& w);

// Reads classic Timeloop problems (file name, text), one einsum each, into one graph: data
// spaces of the same name are one tensor; the read_write one is the einsum's output;
// tensors no problem writes are inputs, those none reads are outputs. Every point of the
// instance box is a multiply-accumulate (combine = the product of the inputs, reduce = sum
// over the dimensions the output does not use) and a data space's shape is its
// projection's range, unless `# solar:` lines say otherwise (see above). Checks the problem
// against Timeloop's schema: throws UserError(Parse) naming the file and the key.
ir::Graph read_timeloop_problems(const std::vector<std::pair<std::string, std::string>>& files,
                                 const std::string& graph_name = "timeloop");

}  // namespace solar::interop
