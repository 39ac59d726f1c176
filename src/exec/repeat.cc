// Repeat ops in the graph runner (docs/executor.md, "Repeat"): the body is planned once by a
// runner of its own, then run `trips` times on bound params; `last` results are the final
// iteration's values, `stacked` results are copied row by row into the op's output. The
// result equals running ir::unroll's flat graph (tests/cpp/exec/repeat_test.cc).
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "runner.h"
#include "solar/util/errors.h"

namespace solar::exec::detail {

namespace {

using ir::LoopInput;
using ir::LoopOutput;
using ir::Op;
using ir::Tensor;
using ir::TensorId;

std::int64_t product(const std::vector<std::int64_t>& shape, std::size_t from, std::size_t to) {
  std::int64_t p = 1;
  for (std::size_t d = from; d < to; ++d) p *= shape[d];
  return p;
}

// A row along `axis` is one contiguous block when every dimension before the axis has
// extent 1 (axis 0 always).
bool row_is_contiguous(const std::vector<std::int64_t>& shape, std::int64_t axis) {
  return product(shape, 0, static_cast<std::size_t>(axis)) == 1;
}

// Row `row` of `in` along `axis`, without the axis (shape `param`): a view when the row is one
// contiguous block, else a copy by the slice kernel.
Buffer slice_row(const Buffer& in, std::int64_t axis, std::int64_t row,
                 const std::vector<std::int64_t>& param, const ExecContext& ctx) {
  const std::vector<std::int64_t>& shape = in.shape();
  const std::size_t a = static_cast<std::size_t>(axis);
  if (row_is_contiguous(shape, axis))
    return in.alias(param, row * product(shape, a + 1, shape.size()));
  std::vector<std::int64_t> starts(shape.size(), 0), ends = shape, steps(shape.size(), 1);
  starts[a] = row;
  ends[a] = row + 1;
  std::vector<std::int64_t> one = shape;
  one[a] = 1;
  ir::MoveOp slice{ir::MoveKind::Slice, {{"starts", starts}, {"ends", ends}, {"steps", steps}}};
  Buffer out = Buffer::uninitialized(in.dtype(), std::move(one));
  const Buffer* ins[] = {&in};
  run_move(slice, ins, out, ctx);
  return out.alias(param);
}

// A stacked output built row by row. When a row of the output is one contiguous block, rows
// are copied straight into it; otherwise into a scratch buffer with the iteration axis first,
// permuted into place once at the end.
class Stacker {
 public:
  Stacker(const Tensor& out, std::int64_t axis)
      : shape_(out.shape), axis_(axis), direct_(row_is_contiguous(out.shape, axis)) {
    row_shape_ = shape_;
    row_shape_.erase(row_shape_.begin() + axis);
    row_size_ = product(row_shape_, 0, row_shape_.size());
    std::vector<std::int64_t> layout = shape_;
    if (!direct_) {
      layout = row_shape_;
      layout.insert(layout.begin(), shape_[static_cast<std::size_t>(axis)]);
    }
    rows_ = Buffer::uninitialized(out.dtype, std::move(layout));
  }

  void put(std::int64_t row, const Buffer& value, const ExecContext& ctx) {
    Buffer dst = rows_.alias(row_shape_, row * row_size_);
    const Buffer* ins[] = {&value};
    run_move(ir::MoveOp{ir::MoveKind::Copy, {}}, ins, dst, ctx);
  }

  Buffer finish(const ExecContext& ctx) {
    if (direct_) return std::move(rows_);
    // Scratch dimension 0 is the iteration; output dimension d < axis is row dimension d.
    std::vector<std::int64_t> perm;
    for (std::int64_t d = 0; d < static_cast<std::int64_t>(shape_.size()); ++d)
      perm.push_back(d < axis_ ? d + 1 : d == axis_ ? 0 : d);
    Buffer out = Buffer::uninitialized(rows_.dtype(), shape_);
    const Buffer* ins[] = {&rows_};
    run_move(ir::MoveOp{ir::MoveKind::Permute, {{"perm", perm}}}, ins, out, ctx);
    rows_ = Buffer();
    return out;
  }

 private:
  std::vector<std::int64_t> shape_, row_shape_;
  std::int64_t axis_;
  bool direct_;
  std::int64_t row_size_ = 0;
  Buffer rows_;
};

}  // namespace

// The body's runner pins the values the needed results read and the next values of carried
// params the body needs (to a fixed point: pinning a next value may need another param).
std::unique_ptr<RepeatPlan> Runner::plan_repeat(const Op& op) {
  const ir::RepeatOp& r = op.repeat();
  const ir::Graph& body = *r.body;
  auto plan = std::make_unique<RepeatPlan>();
  plan->body = std::make_unique<Runner>(body, options_);
  Runner& b = *plan->body;
  for (std::size_t k = 0; k < r.outputs.size(); ++k)
    if (slots_[op.outputs[k].value].needed) b.pin(r.outputs[k].value);
  for (bool changed = true; changed;) {
    b.mark_needed();
    changed = false;
    for (const ir::RepeatInput& in : r.inputs)
      if (in.how == LoopInput::Carried && b.needed(in.param) && !b.pinned(in.next)) {
        b.pin(in.next);
        changed = true;
      }
  }
  try {
    b.plan();
  } catch (const UserError& e) {
    throw UserError(e.kind(), fmt::format("op '{}' (repeat body): {}", op.name, e.message()),
                    op_origin(op));
  } catch (const Unsupported& e) {
    throw Unsupported(fmt::format("op '{}' (repeat body): {}", op.name, e.message()),
                      op_origin(op));
  }
  plan->transient = Count(b.stats().peak_bytes);
  plan->allocated_per_trip = Count(b.stats().allocated_bytes);
  for (std::size_t k = 0; k < r.inputs.size(); ++k) {
    const ir::RepeatInput& in = r.inputs[k];
    if (!b.needed(in.param)) continue;
    const Count bytes = compute_bytes(body.tensor(in.param));
    if (in.how == LoopInput::Carried) plan->transient += bytes;  // the previous iteration's
    if (in.how == LoopInput::Sliced && !row_is_contiguous(tensor(op.inputs[k]).shape, in.axis)) {
      plan->transient += bytes;
      plan->allocated_per_trip += bytes;
    }
  }
  for (std::size_t k = 0; k < r.outputs.size(); ++k) {
    const ir::RepeatOutput& o = r.outputs[k];
    const Tensor& out = tensor(op.outputs[k]);
    if (o.how == LoopOutput::Stacked && slots_[out.id.value].needed &&
        !row_is_contiguous(out.shape, o.axis)) {
      plan->transient += compute_bytes(out);  // the scratch the rows go to first
      plan->allocated_once += compute_bytes(out);
    }
  }
  return plan;
}

void Runner::run_repeat(const Op& op, std::span<const Buffer* const> ins,
                        const ExecContext& ctx) {
  const ir::RepeatOp& r = op.repeat();
  const ir::Graph& body = *r.body;
  Runner& b = *repeats_[op.id.value]->body;
  std::vector<Buffer> state(r.inputs.size());  // carried: this iteration's value
  for (std::size_t k = 0; k < r.inputs.size(); ++k)
    if (r.inputs[k].how == LoopInput::Carried) state[k] = *ins[k];
  std::vector<Buffer> last(r.outputs.size());
  std::vector<std::optional<Stacker>> stacks(r.outputs.size());
  for (std::size_t k = 0; k < r.outputs.size(); ++k)
    if (r.outputs[k].how == LoopOutput::Stacked && slots_[op.outputs[k].value].needed)
      stacks[k].emplace(tensor(op.outputs[k]), r.outputs[k].axis);
  for (std::int64_t it = 0; it < r.trips; ++it) {
    const std::int64_t row = r.reverse ? r.trips - 1 - it : it;
    b.reset();
    for (std::size_t k = 0; k < r.inputs.size(); ++k) {
      const ir::RepeatInput& in = r.inputs[k];
      if (!b.needed(in.param)) continue;
      switch (in.how) {
        case LoopInput::Invariant: b.set_source(in.param, *ins[k]); break;
        case LoopInput::Carried: b.set_source(in.param, state[k]); break;
        case LoopInput::Sliced:
          b.set_source(in.param,
                       slice_row(*ins[k], in.axis, row, body.tensor(in.param).shape, ctx));
          break;
      }
    }
    try {
      b.execute();
    } catch (const UserError& e) {
      throw UserError(e.kind(), fmt::format("iteration {} of {}: {}", it, r.trips, e.message()),
                      e.origin());
    } catch (const Unsupported& e) {
      throw Unsupported(fmt::format("iteration {} of {}: {}", it, r.trips, e.message()),
                        e.origin());
    }
    stats_.ops_run += b.stats().ops_run;
    stats_.views += b.stats().views;
    for (std::size_t k = 0; k < r.inputs.size(); ++k)
      if (r.inputs[k].how == LoopInput::Carried && b.pinned(r.inputs[k].next))
        state[k] = b.value(r.inputs[k].next);
    for (std::size_t k = 0; k < r.outputs.size(); ++k) {
      if (!slots_[op.outputs[k].value].needed) continue;
      const Buffer& v = b.value(r.outputs[k].value);
      if (stacks[k]) {
        stacks[k]->put(row, v, ctx);
      } else {
        last[k] = v;
      }
    }
  }
  b.reset();  // the last iteration's intermediates go now; its results live on in `last`
  for (std::size_t k = 0; k < r.outputs.size(); ++k) {
    const TensorId o = op.outputs[k];
    if (!slots_[o.value].needed) continue;
    values_[o.value] = stacks[k] ? stacks[k]->finish(ctx) : last[k].alias(tensor(o).shape);
  }
}

}  // namespace solar::exec::detail
