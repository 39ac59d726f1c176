// Runs an EinsumGraph on real data (DESIGN.md §6), freeing each tensor after its last use.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>

#include "solar/exec/buffer.h"
#include "solar/exec/kernels.h"
#include "solar/ir/graph.h"

namespace solar::exec {

struct ExecOptions {
  int threads = 0;                      // 0: every core
  std::uint64_t memory_limit_bytes = 0; // 0: 80% of physical memory
};

// Values by tensor name.
using TensorMap = std::map<std::string, Buffer>;

// Runs `g` on `sources` (one buffer per input/weight/constant tensor, by name; shapes and
// dtypes must match). Returns every Output-role tensor, plus the tensors named in `keep`.
// Intermediates are freed after their last use. Throws UserError naming the tensor when a
// source is missing or mismatched, or when a single tensor does not fit in the memory limit;
// Unsupported for an unanalyzed op or an opaque function it cannot run.
TensorMap run_graph(const ir::Graph& g, const TensorMap& sources, const ExecOptions& options = {},
                    const std::set<std::string>& keep = {});

}  // namespace solar::exec
