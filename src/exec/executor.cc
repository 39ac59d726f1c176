// The graph runner: checks the sources, plans liveness and memory, then runs each op's kernel
// in graph order (docs/executor.md, "Running graphs"). Repeat ops: repeat.cc.
#include "solar/exec/executor.h"

#include <unistd.h>

#include <algorithm>
#include <exception>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "runner.h"
#include "solar/ir/attrs.h"
#include "solar/ir/shape.h"
#include "solar/ir/verify.h"
#include "solar/util/count.h"
#include "solar/util/errors.h"

namespace solar::exec {

std::uint64_t default_memory_limit_bytes() {
  long pages = sysconf(_SC_PHYS_PAGES);
  long page = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0) return UINT64_MAX;  // unknown: no limit rather than a guess
  return static_cast<std::uint64_t>(pages) / 10 * 8 * static_cast<std::uint64_t>(page);
}

namespace detail {

using ir::Graph;
using ir::MoveKind;
using ir::Op;
using ir::OpKind;
using ir::Tensor;
using ir::TensorId;

using ir::shape_str;

namespace {

std::string type_str(const Tensor& t) { return ir::type_str(t.dtype, t.shape); }

// Offset (in elements) of a slice that is one contiguous block of its row-major input, or
// nullopt: every dimension before the first one that keeps more than one element selects a
// single element, every dimension after it is taken whole.
std::optional<std::int64_t> contiguous_slice_offset(const ir::MoveOp& m, const Tensor& in,
                                                    const Tensor& out) {
  const std::vector<std::int64_t>* starts = ir::find_int_list(m.attrs, "starts");
  const std::vector<std::int64_t>* steps = ir::find_int_list(m.attrs, "steps");
  const std::size_t r = in.shape.size();
  if (!starts || starts->size() != r || out.shape.size() != r) return std::nullopt;
  std::int64_t offset = 0, stride = 1;
  bool inner_whole = true;  // every dimension after the current one is taken whole
  for (std::size_t d = r; d-- > 0;) {
    const std::int64_t e = out.shape[d], n = in.shape[d];
    if (e == 0) return std::nullopt;
    const std::int64_t step = steps ? (*steps)[d] : 1;
    const bool whole = e == n && (n <= 1 || ((*starts)[d] == 0 && step == 1));
    if (!inner_whole && e != 1) return std::nullopt;
    if (e > 1 && step != 1) return std::nullopt;
    offset += (*starts)[d] * stride;
    stride *= n;
    inner_whole = inner_whole && whole;
  }
  return offset;
}

}  // namespace

Count compute_bytes(const Tensor& t) {
  return t.num_elements() * Count(storage_bytes(storage_for(t.dtype)));
}

std::string bytes_str(Count b) {
  double v = b.to_double();
  if (v >= 1e9) return fmt::format("{} bytes ({:.2f} GB)", b.str(), v / 1e9);
  if (v >= 1e6) return fmt::format("{} bytes ({:.2f} MB)", b.str(), v / 1e6);
  return fmt::format("{} bytes", b.str());
}

Runner::Runner(const Graph& g, const ExecOptions& options)
    : g_(g), options_(options), slots_(g.tensors().size()), values_(g.tensors().size()) {}

Runner::~Runner() = default;

void Runner::pin_outputs_and_keep(const std::set<std::string>& keep) {
  for (const std::string& name : keep) {
    std::optional<TensorId> id = g_.find_tensor(name);
    if (!id)
      throw UserError(UserError::Kind::BadArgument,
                      fmt::format("cannot keep '{}': graph '{}' has no tensor of that name",
                                  name, g_.name));
    slots_[id->value].pinned = true;
  }
  for (const Tensor& t : g_.tensors())
    if (t.role == ir::Role::Output) slots_[t.id.value].pinned = true;
}

void Runner::bind(const TensorMap& sources) {
  for (const auto& [name, buffer] : sources) {
    std::optional<TensorId> id = g_.find_tensor(name);
    if (!id || !ir::is_graph_source(tensor(*id).role))
      throw UserError(UserError::Kind::BadArgument,
                      fmt::format("'{}' is not an input, weight or constant of graph '{}'{}",
                                  name, g_.name,
                                  id ? fmt::format(" (it is {})", ir::role_name(tensor(*id).role))
                                     : std::string()));
  }
  for (const Tensor& t : g_.tensors()) {
    if (!ir::is_graph_source(t.role)) continue;
    auto it = sources.find(t.name);
    if (it == sources.end() || !it->second.defined())
      throw UserError(UserError::Kind::BadArgument,
                      fmt::format("no value for {} '{}' {} of graph '{}'", ir::role_name(t.role),
                                  t.name, type_str(t), g_.name));
    const Buffer& b = it->second;
    if (b.shape() != t.shape || b.dtype() != t.dtype)
      throw UserError(UserError::Kind::BadArgument,
                      fmt::format("value for {} '{}' is {}{} but the graph declares {}",
                                  ir::role_name(t.role), t.name, ir::dtype_name(b.dtype()),
                                  shape_str(b.shape()), type_str(t)));
    values_[t.id.value] = b;
  }
}

void Runner::reset() {
  for (Buffer& b : values_) b = Buffer();
  stats_.ops_run = 0;
  stats_.views = 0;
}

// An op runs when some output is pinned or read by an op that runs.
void Runner::mark_needed() {
  for (Slot& s : slots_) {
    s.needed = s.pinned;
    s.last_use = -1;
  }
  const auto& ops = g_.ops();
  op_needed_.assign(ops.size(), false);
  for (std::size_t i = ops.size(); i-- > 0;) {
    const Op& op = ops[i];
    for (TensorId o : op.outputs) op_needed_[i] = op_needed_[i] || slots_[o.value].needed;
    // A send or recv runs even when nothing reads its result: its peer waits for it.
    if (op.kind() == OpKind::Collective &&
        (op.collective().kind == ir::CollectiveKind::Send ||
         op.collective().kind == ir::CollectiveKind::Recv))
      op_needed_[i] = true;
    if (!op_needed_[i]) continue;
    for (TensorId in : op.inputs) {
      slots_[in.value].needed = true;
      slots_[in.value].last_use = std::max(slots_[in.value].last_use, static_cast<int>(i));
    }
  }
}

void Runner::plan() {
  mark_needed();
  check_runnable();
  plan_views();
  plan_memory();
}

void Runner::fail_unsupported(const Op& op, const std::string& why) const {
  const bool framework = !op.origin.op.empty() && op.origin.op != op.name;
  throw Unsupported(fmt::format("op '{}'{}: {}", op.name,
                                framework ? fmt::format(" ({})", op.origin.op) : std::string(),
                                why),
                    Origin{g_.source, op.origin.line, {}});
}

// Refuses before any work: an unanalyzed op or an unknown opaque function on the way to an
// output (in a repeat body too: planning a repeat plans its body).
void Runner::check_runnable() {
  repeats_.clear();
  repeats_.resize(g_.ops().size());
  for (const Op& op : g_.ops()) {
    if (!op_needed_[op.id.value]) continue;
    switch (op.kind()) {
      case OpKind::Unanalyzed: {
        const ir::UnanalyzedOp& u = op.unanalyzed();
        fail_unsupported(op, fmt::format("unanalyzed framework op '{}'{}: the executor cannot "
                                         "run it",
                                         u.framework_op,
                                         u.reason.empty() ? "" : " (" + u.reason + ")"));
      }
      case OpKind::Opaque:
        if (!knows_opaque(op.opaque().function))
          fail_unsupported(op, fmt::format("the executor cannot run opaque function \"{}\" "
                                           "(it runs: {})",
                                           op.opaque().function,
                                           fmt::join(opaque_functions(), ", ")));
        break;
      case OpKind::Repeat:
        repeats_[op.id.value] = plan_repeat(op);
        break;
      case OpKind::Collective:
        if (!options_.collectives)
          fail_unsupported(op, fmt::format("{} exchanges data with other ranks: run the ranks' "
                                           "graphs together (run_ranks, docs/executor.md)",
                                           ir::collective_kind_name(op.collective().kind)));
        break;
      case OpKind::Einsum: case OpKind::Move: break;
    }
  }
}

// Same-size views and contiguous slices share their input's memory (values are never
// written after their op, so sharing is safe).
void Runner::plan_views() {
  for (std::size_t i = 0; i < slots_.size(); ++i) {
    slots_[i].root = static_cast<int>(i);
    slots_[i].base.reset();
    slots_[i].offset = 0;
  }
  for (const Op& op : g_.ops()) {
    if (!op_needed_[op.id.value] || op.kind() != OpKind::Move) continue;
    const Tensor& in = tensor(op.inputs[0]);
    const Tensor& out = tensor(op.outputs[0]);
    std::optional<std::int64_t> offset;
    switch (op.move().kind) {
      case MoveKind::View:
        if (in.dtype == out.dtype && in.num_elements() == out.num_elements()) offset = 0;
        break;
      case MoveKind::Slice:
        offset = contiguous_slice_offset(op.move(), in, out);
        break;
      case MoveKind::Copy: case MoveKind::Permute: case MoveKind::Concat: case MoveKind::Pad:
      case MoveKind::Gather: case MoveKind::Scatter: case MoveKind::Cast:
        break;
    }
    if (!offset) continue;
    Slot& s = slots_[out.id.value];
    s.base = in.id;
    s.offset = *offset;
    s.root = slots_[in.id.value].root;
  }
}

bool Runner::allocates(const Tensor& t) const {
  return !ir::is_graph_source(t.role) && !slots_[t.id.value].base;
}

// Simulates the run: allocations at each op, releases after each tensor's last use. Refuses
// a tensor that alone exceeds the limit, then a peak above it, before anything is allocated.
// A repeat op adds, while it runs, what one iteration holds beyond its outputs (its plan's
// transient bytes: a body run's peak, the carried state, copied slices, stacking scratch).
void Runner::plan_memory() {
  const std::uint64_t limit = options_.memory_limit_bytes != 0 ? options_.memory_limit_bytes
                                                               : default_memory_limit_bytes();
  stats_ = ExecStats{};
  stats_.limit_bytes = limit;
  for (const Tensor& t : g_.tensors()) {
    if (!slots_[t.id.value].needed || !allocates(t)) continue;
    Count b = compute_bytes(t);
    if (b > Count(limit))
      throw UserError(UserError::Kind::BadArgument,
                      fmt::format("tensor '{}' {} needs {} in the executor (f32/f64/i64 "
                                  "words), more than the memory limit of {}",
                                  t.name, type_str(t), bytes_str(b), bytes_str(Count(limit))));
  }
  // users[root]: live tensors sharing the root's allocation.
  std::vector<int> users(slots_.size(), 0);
  Count live(0), peak(0);
  std::vector<TensorId> live_roots;
  auto release = [&](TensorId id) {
    const Slot& s = slots_[id.value];
    if (s.pinned) return;
    const TensorId root{static_cast<std::uint32_t>(s.root)};
    if (--users[s.root] == 0 && allocates(tensor(root))) {
      live -= compute_bytes(tensor(root));
      std::erase(live_roots, root);
    }
  };
  for (const Tensor& t : g_.tensors())
    if (ir::is_graph_source(t.role) && slots_[t.id.value].needed) ++users[t.id.value];
  for (const Op& op : g_.ops()) {
    if (!op_needed_[op.id.value]) continue;
    for (TensorId o : op.outputs) {
      const Tensor& t = tensor(o);
      ++users[slots_[o.value].root];
      if (!allocates(t)) continue;
      Count b = compute_bytes(t);
      live += b;
      stats_.allocated_bytes += b.to_u64();
      live_roots.push_back(o);
    }
    Count during = live;
    if (const RepeatPlan* r = repeats_[op.id.value].get()) {
      during += r->transient;
      stats_.allocated_bytes +=
          (r->allocated_per_trip * Count(static_cast<std::uint64_t>(op.repeat().trips)))
              .to_u64() +
          r->allocated_once.to_u64();
    }
    if (during > peak) peak = during;
    if (during > Count(limit)) {
      std::vector<TensorId> biggest = live_roots;
      std::sort(biggest.begin(), biggest.end(), [&](TensorId a, TensorId b) {
        return compute_bytes(tensor(a)) > compute_bytes(tensor(b));
      });
      if (biggest.size() > 4) biggest.resize(4);
      std::vector<std::string> names;
      for (TensorId id : biggest)
        names.push_back(
            fmt::format("'{}' ({})", tensor(id).name, bytes_str(compute_bytes(tensor(id)))));
      const RepeatPlan* r = repeats_[op.id.value].get();
      throw UserError(
          UserError::Kind::BadArgument,
          fmt::format("graph '{}' needs {} of live tensors at op '{}'{}, more than the memory "
                      "limit of {} (largest live: {})",
                      g_.name, bytes_str(during), op.name,
                      r ? fmt::format(" (of which {} for one iteration of its body)",
                                      bytes_str(r->transient))
                        : std::string(),
                      bytes_str(Count(limit)), fmt::join(names, ", ")));
    }
    for (TensorId id : dead_after(op)) release(id);
  }
  stats_.peak_bytes = peak.to_u64();
}

// Tensors no later op reads: inputs whose last use is `op` (each once, though an op may
// read a tensor twice) and outputs nothing reads.
std::vector<TensorId> Runner::dead_after(const Op& op) const {
  std::vector<TensorId> dead;
  for (TensorId in : op.inputs)
    if (slots_[in.value].last_use == static_cast<int>(op.id.value) &&
        std::find(dead.begin(), dead.end(), in) == dead.end())
      dead.push_back(in);
  for (TensorId o : op.outputs)
    if (slots_[o.value].last_use < 0) dead.push_back(o);
  return dead;
}

void Runner::execute() {
  ExecContext ctx{options_.threads};
  for (const Op& op : g_.ops()) {
    if (!op_needed_[op.id.value]) continue;
    try {
      run_op(op, ctx);
    } catch (const UserError& e) {
      throw UserError(e.kind(), fmt::format("op '{}': {}", op.name, e.message()), op_origin(op));
    } catch (const Unsupported& e) {
      throw Unsupported(fmt::format("op '{}': {}", op.name, e.message()), op_origin(op));
    }
    ++stats_.ops_run;
    // Drop this run's references; memory goes when the last view of it goes too.
    for (TensorId id : dead_after(op))
      if (!slots_[id.value].pinned) values_[id.value] = Buffer();
  }
}

Origin Runner::op_origin(const Op& op) const {
  Origin o = op.origin;
  if (o.file.empty()) o.file = g_.source;
  if (o.op == op.name) o.op.clear();
  return o;
}

void Runner::run_op(const Op& op, const ExecContext& ctx) {
  std::vector<const Buffer*> ins;
  ins.reserve(op.inputs.size());
  for (TensorId in : op.inputs) {
    SOLAR_CHECK(values_[in.value].defined(),
                fmt::format("tensor '{}' is read after it was freed", tensor(in).name));
    ins.push_back(&values_[in.value]);
  }
  if (op.kind() == OpKind::Repeat) {
    run_repeat(op, ins, ctx);  // sets its outputs
    return;
  }
  for (TensorId o : op.outputs) {
    const Tensor& t = tensor(o);
    const Slot& s = slots_[o.value];
    if (s.base) {
      values_[o.value] = values_[s.base->value].alias(t.shape, s.offset);
      ++stats_.views;
    } else {
      values_[o.value] = Buffer::zeros(t.dtype, t.shape);
    }
  }
  switch (op.kind()) {
    case OpKind::Einsum:
      run_einsum(op.einsum(), ins, values_[op.outputs[0].value], ctx);
      return;
    case OpKind::Move:
      if (slots_[op.outputs[0].value].base) return;  // shares its input's memory
      run_move(op.move(), ins, values_[op.outputs[0].value], ctx);
      return;
    case OpKind::Opaque: {
      std::vector<Buffer*> outs;
      for (TensorId o : op.outputs) outs.push_back(&values_[o.value]);
      run_opaque(op.opaque(), ins, outs, ctx);
      return;
    }
    case OpKind::Collective:
      options_.collectives->run(op, ins, values_[op.outputs[0].value]);
      return;
    case OpKind::Unanalyzed: case OpKind::Repeat:
      break;  // refused by check_runnable; run above
  }
  SOLAR_UNREACHABLE(fmt::format("op '{}' cannot run", op.name));
}

}  // namespace detail

TensorMap run_graph(const ir::Graph& g, const TensorMap& sources, const ExecOptions& options,
                    const std::set<std::string>& keep, ExecStats* stats) {
  ir::verify(g);
  detail::Runner r(g, options);
  r.pin_outputs_and_keep(keep);
  r.bind(sources);
  r.plan();
  r.execute();
  TensorMap out;
  for (const ir::Tensor& t : g.tensors())
    if (r.pinned(t.id)) out.emplace(t.name, r.value(t.id));
  if (stats) *stats = r.stats();
  return out;
}

}  // namespace solar::exec
