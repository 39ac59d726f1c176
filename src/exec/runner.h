// The graph runner behind run_graph (private to src/exec; docs/executor.md, "Running graphs"
// and "Repeat"). A plan made once (what is needed, which views share memory, the memory
// peak), then runs on bound sources. A repeat op's body gets a runner of its own, planned
// once and run once per iteration (repeat.cc).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "solar/exec/buffer.h"
#include "solar/exec/executor.h"
#include "solar/exec/kernels.h"
#include "solar/ir/graph.h"
#include "solar/util/count.h"

namespace solar::exec::detail {

// Bytes of a tensor in the executor's compute representation (4 bytes per f32-and-narrower
// float, 8 per f64 and per integer or bool).
Count compute_bytes(const ir::Tensor& t);
std::string bytes_str(Count b);

// How a tensor comes to hold its value.
struct Slot {
  bool needed = false;
  bool pinned = false;              // an output or kept: never freed
  int last_use = -1;                // last op (position) that reads it; -1: none
  std::optional<ir::TensorId> base; // a view: shares this tensor's memory
  std::int64_t offset = 0;          // ... starting this many elements in
  int root = -1;                    // the tensor whose allocation holds the memory
};

class Runner;

// A needed repeat op, planned: its body's runner and the memory one iteration holds beyond
// the op's own outputs.
struct RepeatPlan {
  std::unique_ptr<Runner> body;
  Count transient;           // body peak + carried state + copied slices + stacking scratch
  Count allocated_per_trip;  // bytes one iteration allocates (body, copied slices)
  Count allocated_once;      // stacking scratch
};

class Runner {
 public:
  Runner(const ir::Graph& g, const ExecOptions& options);
  ~Runner();

  // --- pins (before plan) ---
  // A graph run: its Output-role tensors and the tensors named in `keep` (UserError for an
  // unknown name).
  void pin_outputs_and_keep(const std::set<std::string>& keep);
  // A body: the tensors the repeat op reads back.
  void pin(ir::TensorId id) { slots_[id.value].pinned = true; }
  bool pinned(ir::TensorId id) const { return slots_[id.value].pinned; }

  // --- plan ---
  // Which tensors and ops the pins need (idempotent; call again after pinning more).
  void mark_needed();
  bool needed(ir::TensorId id) const { return slots_[id.value].needed; }
  // mark_needed, then refuses what cannot run (planning repeat bodies), plans views and memory.
  void plan();

  // --- sources ---
  // A graph run: every input, weight and constant by name, checked (UserError naming it).
  void bind(const TensorMap& sources);
  // A body: drops the last run's values; then set_source for each param the body needs.
  void reset();
  void set_source(ir::TensorId id, Buffer b) { values_[id.value] = std::move(b); }

  // --- run ---
  void execute();
  const Buffer& value(ir::TensorId id) const { return values_[id.value]; }
  const ExecStats& stats() const { return stats_; }
  const ir::Graph& graph() const { return g_; }

 private:
  const ir::Tensor& tensor(ir::TensorId id) const { return g_.tensor(id); }
  [[noreturn]] void fail_unsupported(const ir::Op& op, const std::string& why) const;
  void check_runnable();
  void plan_views();
  bool allocates(const ir::Tensor& t) const;
  void plan_memory();
  std::vector<ir::TensorId> dead_after(const ir::Op& op) const;
  Origin op_origin(const ir::Op& op) const;
  void run_op(const ir::Op& op, const ExecContext& ctx);

  // repeat.cc
  std::unique_ptr<RepeatPlan> plan_repeat(const ir::Op& op);
  void run_repeat(const ir::Op& op, std::span<const Buffer* const> ins, const ExecContext& ctx);

  const ir::Graph& g_;
  const ExecOptions& options_;
  std::vector<Slot> slots_;
  std::vector<bool> op_needed_;
  std::vector<Buffer> values_;
  std::vector<std::unique_ptr<RepeatPlan>> repeats_;  // by op id; set for needed repeat ops
  ExecStats stats_;
};

}  // namespace solar::exec::detail
