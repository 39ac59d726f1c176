// Runs an EinsumGraph on real data (docs/executor.md, docs/validation.md), freeing each tensor after its last use.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>

#include "solar/exec/buffer.h"
#include "solar/exec/kernels.h"
#include "solar/ir/graph.h"

namespace solar::exec {

// How one rank's collective ops reach the other ranks (run_ranks, exec/ranks.h): `run` is
// called when the rank reaches a collective, with its inputs, and returns when `out` (already
// allocated with the op's result type) holds the result. Throws UserError when the ranks'
// collectives do not match.
class CollectiveHook {
 public:
  virtual ~CollectiveHook() = default;
  virtual void run(const ir::Op& op, const std::vector<const Buffer*>& inputs, Buffer& out) = 0;
};

struct ExecOptions {
  int threads = 0;                      // 0: every core (OpenMP's default team size)
  std::uint64_t memory_limit_bytes = 0; // 0: default_memory_limit_bytes()
  // Where collective ops go; null (a graph run alone): a collective is refused (Unsupported).
  CollectiveHook* collectives = nullptr;
};

// 80% of the machine's physical memory (sysconf), in bytes.
std::uint64_t default_memory_limit_bytes();

// What a run allocated, in bytes of the compute representation (f32/f64/i64 words).
struct ExecStats {
  std::uint64_t limit_bytes = 0;      // the memory limit the run was held to
  std::uint64_t peak_bytes = 0;       // most bytes the executor held at once
  std::uint64_t allocated_bytes = 0;  // sum over every tensor it allocated
  int ops_run = 0;                    // ops executed (ops no output depends on are skipped)
  int views = 0;                      // view/slice ops that shared their input's memory
};

// Values by tensor name.
using TensorMap = std::map<std::string, Buffer>;

// Runs `g` on `sources` (one buffer per input/weight/constant tensor, by name; shapes and
// dtypes must match). Returns every Output-role tensor, plus the tensors named in `keep`.
//
// Memory: each intermediate is freed after its last consumer (unless it is an output or kept);
// a view of a contiguous layout (a same-size view, a slice of one contiguous block) shares
// its input's memory. Before anything is allocated, the peak of live tensors is computed from
// the liveness plan and held to `memory_limit_bytes`: a single tensor larger than the limit,
// or a peak above it, is a UserError naming the tensor (or op) and the sizes. Sources belong
// to the caller and are not counted; kernels' scratch memory (im2col panels) is not counted.
//
// Throws UserError naming the tensor when a source is missing, unknown or mismatched, or a
// kept name does not exist; Unsupported for an unanalyzed op or an opaque function the
// executor cannot run (naming the op, and its framework op); kernel errors (an index out of
// range, ...) carry the op's name. Ops whose outputs nothing needs are not run.
TensorMap run_graph(const ir::Graph& g, const TensorMap& sources, const ExecOptions& options = {},
                    const std::set<std::string>& keep = {}, ExecStats* stats = nullptr);

}  // namespace solar::exec
