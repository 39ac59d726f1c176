// A repeat op alone in the traffic model (docs/cache-aware.md, "Repeat"): its body is a graph
// of its own, with its own fusion and tiling search, run `trips` times.
//
// Two schedules, both attainable, the smaller taken:
// - streamed: every iteration moves the body's Q(S), reading its invariant inputs (weights)
//   and carried state from DRAM and writing the next state back;
// - resident: the invariant and carried inputs (R bytes) stay on chip across iterations, so
//   an iteration moves the body's Q(S - R) less what its compulsory traffic moves of them (a
//   schedule at S - R reads each of them at least once), and the loop reads them once before
//   the first iteration and writes the final state once after the last.
// The repeat's own unfused bytes (each body op through DRAM) bound both from above
// (fusion.cc, alone).
#include <fmt/format.h>

#include "fusion_impl.h"

namespace solar::tiling::detail {

namespace {

Wide sub_sat(Wide a, Wide b) { return a > b ? a - b : 0; }

}  // namespace

RepeatModel::RepeatModel(const ir::Op& op, const GraphCurveOptions& options) {
  const ir::RepeatOp& r = op.repeat();
  const ir::Graph& body = *r.body;
  trips = static_cast<Wide>(r.trips);
  cost = cost::graph_cost(body);
  model = std::make_unique<GraphTrafficModel>(body, cost, options);
  std::vector<char> stacked(body.tensors().size(), 0);
  for (const ir::RepeatOutput& out : r.outputs)
    if (out.how == ir::LoopOutput::Stacked) stacked[out.value.value] = 1;
  for (std::size_t k = 0; k < r.inputs.size(); ++k) {
    const ir::RepeatInput& in = r.inputs[k];
    if (in.how == ir::LoopInput::Sliced) continue;
    const ir::Tensor& param = body.tensor(in.param);
    const Wide size = cost::tensor_bytes(param, param.num_elements()).raw();
    const Wide read = cost.source_bytes_read[in.param.value].raw();
    resident += size;
    per_iteration += read;
    once += read;
    if (in.how != ir::LoopInput::Carried) continue;
    const ir::Tensor& next = body.tensor(in.next);
    if (ir::is_graph_source(next.role) || stacked[in.next.value]) continue;
    // Written by every iteration when streamed; once, after the last, when kept on chip.
    const Wide written = cost::tensor_bytes(next, next.num_elements()).raw();
    per_iteration += written;
    once += written;
  }
}

Wide RepeatModel::traffic(Wide capacity, std::string* detail) const {
  const Wide body_q = model->at(to_count(capacity), TrafficMode::Attainable).traffic_bytes.raw();
  const Wide streamed = mul_sat(trips, body_q);
  Wide best = streamed;
  bool kept = false;
  if (resident < capacity) {
    const Wide inner =
        model->at(to_count(capacity - resident), TrafficMode::Attainable).traffic_bytes.raw();
    const Wide with_state = add_sat(mul_sat(trips, sub_sat(inner, per_iteration)), once);
    if (with_state < best) {
      best = with_state;
      kept = true;
    }
  }
  if (detail) {
    *detail = kept ? fmt::format("repeat: {} iterations of its body's Q(S - R), R = {} of weights "
                                 "and state kept on chip across iterations",
                                 static_cast<std::uint64_t>(trips), mib(resident))
                   : fmt::format("repeat: {} iterations of its body's Q(S), weights and state "
                                 "({}) re-read every iteration",
                                 static_cast<std::uint64_t>(trips), mib(resident));
  }
  return best;
}

}  // namespace solar::tiling::detail
