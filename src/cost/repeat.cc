// The work of a repeat op (docs/cost.md, "Repeat"): what its unrolled graph (ir/unroll.h)
// counts, computed from one body.
//
// The last iteration must produce the stacked rows and the final values the graph reads;
// an earlier one the stacked rows and the carried state the iteration after it reads. A body
// op no iteration's roots need is dead there (the update of state nobody reads after the
// loop), as it is in the unrolled graph. Each stacked output the graph reads is assembled
// once: its rows read and the whole written (the concatenation the unrolled graph ends with).
#include <fmt/format.h>

#include <map>
#include <utility>
#include <vector>

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
  for (auto& [kind, b] : out.comm_bytes) b *= n;
  for (WorkPart& p : out.parts) p.runs *= n;
  return out;
}

namespace {

// Adds `w` (one body op's work) run `times` times to the repeat's parts and totals.
void add_runs(Work& total, const Work& w, Count times) {
  if (times == Count(0) || !w.counted()) return;
  if (w.parts.empty()) {
    total.parts.push_back({w, times});
  } else {
    for (const WorkPart& p : w.parts) total.parts.push_back({p.work, p.runs * times});
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

  // Each iteration's roots, from the last back to the first: the stacked rows the graph
  // reads, plus in the last iteration the final values it reads and in every other one the
  // next values of the carried params the iteration after it reads. The sets repeat from
  // some iteration on (usually at once), so few body costs are computed.
  const std::size_t nt = body.tensors().size();
  std::vector<char> stacked_roots(nt, 0), last_roots(nt, 0);
  for (std::size_t k = 0; k < r.outputs.size(); ++k) {
    if (!live(k)) continue;
    const ir::RepeatOutput& out = r.outputs[k];
    (out.how == LoopOutput::Stacked ? stacked_roots : last_roots)[out.value.value] = 1;
  }
  for (std::size_t t = 0; t < nt; ++t) last_roots[t] |= stacked_roots[t];
  std::map<std::vector<char>, Count> runs_by_roots;
  std::vector<char> roots = last_roots;
  for (std::int64_t it = r.trips - 1; it >= 0; --it) {
    const std::vector<char> alive = live_tensors(body, roots);
    std::vector<char> before = stacked_roots;
    for (const ir::RepeatInput& in : r.inputs)
      if (in.how == LoopInput::Carried && alive[in.param.value]) before[in.next.value] = 1;
    runs_by_roots[roots] += Count(1);
    if (before == roots && it > 0) {  // every earlier iteration has these roots too
      runs_by_roots[roots] += Count::from_signed(it);
      break;
    }
    roots = std::move(before);
  }
  std::vector<std::pair<GraphCost, Count>> costs;
  for (const auto& [set, runs] : runs_by_roots) costs.emplace_back(graph_cost_from(body, set), runs);

  Work w;
  for (const auto& [c, runs] : costs) {
    if (c.num_unanalyzed == 0) continue;
    w.analyzed = false;
    for (const ir::Op& b : body.ops())
      if (!c.per_op[b.id.value].analyzed) {
        w.note = fmt::format("its body op '{}' is not analyzed: {}", b.name,
                             c.per_op[b.id.value].note);
        break;
      }
    if (input_bytes) input_bytes->assign(op.inputs.size(), Count(0));
    return w;
  }

  for (const ir::Op& b : body.ops())
    for (const auto& [c, runs] : costs) add_runs(w, c.per_op[b.id.value], runs);
  for (std::size_t k = 0; k < r.outputs.size(); ++k) {
    if (!live(k) || r.outputs[k].how != LoopOutput::Stacked) continue;
    const ir::Tensor& out = g.tensor(op.outputs[k]);
    Work stack;
    stack.bytes_read = tensor_bytes(out, out.num_elements());
    stack.bytes_written = stack.bytes_read;
    stack.note = fmt::format("stacking '{}': its {} rows read, the whole written", out.name,
                             r.trips);
    w.parts.push_back({stack, Count(1)});
    w += stack;
  }
  w.note = fmt::format("repeat: {} iterations of a {}-op body", r.trips, body.ops().size());

  // What the graph reads of each input, for compulsory traffic: an invariant or the initial
  // carried state as much as one iteration reads of it; a sliced input whole when every
  // iteration reads its slice whole, else one slice's reads (the unrolled graph's rule for a
  // source read through slices, graph_cost.h).
  if (input_bytes) {
    input_bytes->assign(op.inputs.size(), Count(0));
    for (std::size_t k = 0; k < r.inputs.size(); ++k) {
      const ir::RepeatInput& in = r.inputs[k];
      const ir::Tensor& param = body.tensor(in.param);
      const Count slice = tensor_bytes(param, param.num_elements());
      Count n, whole;  // the largest read of one iteration; iterations reading it whole
      for (const auto& [c, runs] : costs) {
        const Count read = c.source_bytes_read[in.param.value];
        n = std::max(n, read);
        if (read >= slice) whole += runs;
      }
      if (in.how == LoopInput::Sliced && whole > Count(1)) {
        const ir::Tensor& outer = g.tensor(op.inputs[k]);
        n = std::max(n, std::min(tensor_bytes(outer, outer.num_elements()), whole * slice));
      }
      (*input_bytes)[k] = n;
    }
  }
  return w;
}

}  // namespace solar::cost::detail
