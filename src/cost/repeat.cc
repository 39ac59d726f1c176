// The work of a repeat op (docs/cost.md, "Repeat"): what its unrolled graph (ir/unroll.h)
// counts, computed from one body.
//
// Iteration i < trips-1 must produce the carried state and the stacked rows the graph reads;
// the last iteration the stacked rows and the final values the graph reads. So each body op
// runs (trips - 1) times under the first set of roots and once under the second, and a body
// op that neither needs (the update of state nobody reads after the loop) is dead there, as
// it is in the unrolled graph. Each stacked output the graph reads is assembled once: its
// rows read and the whole written (the concatenation the unrolled graph ends with).
#include <fmt/format.h>

#include "solar/util/errors.h"
#include "work_detail.h"

namespace solar::cost::detail {

using ir::LoopInput;
using ir::LoopOutput;

Work scaled(const Work& w, Count n) {
  Work out = w;
  for (auto& [dtype, m] : out.macs) m *= n;
  for (auto& [dtype, m] : out.macs_2_4) m *= n;
  out.macs_dense *= n;
  for (auto& [dtype, f] : out.vector_flops) f *= n;
  out.special_ops *= n;
  out.bytes_read *= n;
  out.bytes_written *= n;
  out.live_points *= n;
  for (Work& p : out.parts) p = scaled(p, n);
  return out;
}

namespace {

// Adds `w` (one body op's work) run `times` times to the repeat's parts and totals.
void add_runs(Work& total, const Work& w, Count times) {
  if (times == Count(0) || !w.counted()) return;
  if (w.parts.empty()) {
    total.parts.push_back(scaled(w, times));
  } else {
    for (const Work& p : w.parts) total.parts.push_back(scaled(p, times));
  }
  Work sum = scaled(w, times);
  sum.parts.clear();
  total += sum;
}

}  // namespace

Work repeat_work(const ir::Graph& g, const ir::Op& op, std::vector<Count>* input_bytes,
                 const std::vector<char>* live_outputs) {
  const ir::RepeatOp& r = op.repeat();
  const ir::Graph& body = *r.body;
  auto live = [&](std::size_t k) { return !live_outputs || (*live_outputs)[k] != 0; };

  // Roots of the middle iterations and of the last one.
  std::vector<char> mid(body.tensors().size(), 0), last(body.tensors().size(), 0);
  for (const ir::RepeatInput& in : r.inputs)
    if (in.how == LoopInput::Carried) mid[in.next.value] = 1;
  for (std::size_t k = 0; k < r.outputs.size(); ++k) {
    if (!live(k)) continue;
    const ir::RepeatOutput& out = r.outputs[k];
    last[out.value.value] = 1;
    if (out.how == LoopOutput::Stacked) mid[out.value.value] = 1;
  }
  const GraphCost last_cost = graph_cost_from(body, last);
  const GraphCost mid_cost = r.trips > 1 ? graph_cost_from(body, mid) : GraphCost{};

  Work w;
  if (last_cost.num_unanalyzed > 0 || mid_cost.num_unanalyzed > 0) {
    w.analyzed = false;
    for (const ir::Op& b : body.ops())
      if (!last_cost.per_op[b.id.value].analyzed) {
        w.note = fmt::format("its body op '{}' is not analyzed: {}", b.name,
                             last_cost.per_op[b.id.value].note);
        break;
      }
    if (w.note.empty()) w.note = "an op of its body is not analyzed";
    if (input_bytes) input_bytes->assign(op.inputs.size(), Count(0));
    return w;
  }

  const Count middle_runs = Count::from_signed(r.trips - 1);
  for (const ir::Op& b : body.ops()) {
    if (r.trips > 1) add_runs(w, mid_cost.per_op[b.id.value], middle_runs);
    add_runs(w, last_cost.per_op[b.id.value], Count(1));
  }
  for (std::size_t k = 0; k < r.outputs.size(); ++k) {
    if (!live(k) || r.outputs[k].how != LoopOutput::Stacked) continue;
    const ir::Tensor& out = g.tensor(op.outputs[k]);
    Work stack;
    stack.bytes_read = tensor_bytes(out, out.num_elements());
    stack.bytes_written = stack.bytes_read;
    stack.note = fmt::format("stacking '{}': its {} rows read, the whole written", out.name,
                             r.trips);
    w.parts.push_back(stack);
    w += stack;
  }
  w.note = fmt::format("repeat: {} iterations of a {}-op body", r.trips, body.ops().size());

  // What the graph reads of each input, for compulsory traffic: an invariant or the initial
  // carried state as much as one iteration reads of it; a sliced input whole when every
  // iteration reads its slice whole, else one slice's reads (the unrolled graph's rule for a
  // source read through slices, graph_cost.h).
  if (input_bytes) {
    const GraphCost& reads = r.trips > 1 ? mid_cost : last_cost;
    input_bytes->assign(op.inputs.size(), Count(0));
    for (std::size_t k = 0; k < r.inputs.size(); ++k) {
      const ir::RepeatInput& in = r.inputs[k];
      Count n = std::max(reads.source_bytes_read[in.param.value],
                         last_cost.source_bytes_read[in.param.value]);
      if (in.how == LoopInput::Sliced) {
        const ir::Tensor& param = body.tensor(in.param);
        const ir::Tensor& outer = g.tensor(op.inputs[k]);
        if (n >= tensor_bytes(param, param.num_elements()))
          n = tensor_bytes(outer, outer.num_elements());
      }
      (*input_bytes)[k] = n;
    }
  }
  return w;
}

}  // namespace solar::cost::detail
