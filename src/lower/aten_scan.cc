// The selective scan of a state-space model (Mamba): `solar::selective_scan`, the recurrence
// that transformers' Mamba runs as a Python loop over the tokens on a CPU (one mul, one add,
// a cast and a matmul per token, thousands of trace ops a layer), recorded by the torch
// capture as ONE trace op (docs/torch-frontend.md, "Selective scans"). Arguments: the
// discretized decay `deltaA` [B, D, L, N], the discretized input `deltaB_u` [B, D, L, N], the
// read-out `C` [B, N, L] and the initial state [B, D, N]; results the outputs [B, D, L] and
// the last state [B, D, N]. Lowered as ONE repeat op over the L tokens whose body is one
// token's step, as the loop runs it:
//   h = deltaA[:, :, t] * h + deltaB_u[:, :, t]
//   y[:, :, t] = h.to(y's dtype) @ C[:, :, t]      (a contraction over the N state entries)
// with h carried, the sequences sliced per token and y stacked along its last dimension.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "context.h"
#include "families.h"
#include "solar/util/errors.h"

namespace solar::lower::detail {
namespace {

struct ScanBody {
  std::shared_ptr<ir::Graph> graph;
  TensorId decay, input, readout, state;  // params
  TensorId next, out;                     // results
};

ScanBody build_scan_body(Context& outer, std::int64_t B, std::int64_t D, std::int64_t N,
                         ir::DType state_dt, ir::DType read_dt, ir::DType out_dt) {
  ScanBody r;
  r.graph = std::make_shared<ir::Graph>();
  r.graph->name = "selective_scan_step";
  r.graph->frontend = "torch";
  Context c(outer.trace(), *r.graph);
  c.begin(outer.op());
  r.decay = c.source("deltaA_t", {B, D, N}, state_dt);
  r.input = c.source("deltaB_u_t", {B, D, N}, state_dt);
  r.readout = c.source("C_t", {B, N}, read_dt);
  r.state = c.source("h", {B, D, N}, state_dt);
  TensorId decayed = c.temp("decayed", {B, D, N}, state_dt);
  c.elementwise({r.decay, r.state}, decayed, mul(arg(0), arg(1)));
  r.next = c.temp("h_next", {B, D, N}, state_dt);
  c.elementwise({decayed, r.input}, r.next, add(arg(0), arg(1)));
  TensorId h = r.next;
  if (out_dt != state_dt) {  // ssm_state.to(input dtype): a cast copy
    h = c.temp("h_cast", {B, D, N}, out_dt);
    c.elementwise({r.next}, h, arg(0));
  }
  r.out = c.temp("y_t", {B, D}, out_dt);
  Space s;
  AffineExpr b = ix(s.add("b", B)), d = ix(s.add("d", D)), n = ix(s.add("n", N));
  c.einsum({h, r.readout}, r.out, std::move(s), {{b, d, n}, {b, n}}, {b, d},
           mul(arg(0), arg(1)), Reduce::Sum);
  c.mark_output(r.next);
  c.mark_output(r.out);
  c.commit();
  return r;
}

void lower_selective_scan(Context& c) {
  const std::int64_t a_id = c.trace_id("deltaA"), u_id = c.trace_id("deltaB_u"),
                     c_id = c.trace_id("C"), h_id = c.trace_id("state");
  const auto &as = c.shape(a_id), &cs = c.shape(c_id), &hs = c.shape(h_id);
  if (as.size() != 4 || c.shape(u_id) != as || cs.size() != 3 || hs.size() != 3)
    throw Unsupported("a selective scan needs deltaA and deltaB_u [B, D, L, N], C [B, N, L] "
                      "and a state [B, D, N]");
  const std::int64_t B = as[0], D = as[1], L = as[2], N = as[3];
  if (cs != std::vector<std::int64_t>{B, N, L} || hs != std::vector<std::int64_t>{B, D, N})
    throw Unsupported(fmt::format("a selective scan over [B, D, L, N] = [{}, {}, {}, {}] needs C "
                                  "[B, N, L] and a state [B, D, N]", B, D, L, N));
  if (L < 1) throw Unsupported("a selective scan over an empty sequence");
  TensorId decay = c.use(a_id), input = c.use(u_id), readout = c.use(c_id), state = c.use(h_id);
  const ir::DType state_dt = c.t(state).dtype;
  if (c.t(decay).dtype != state_dt || c.t(input).dtype != state_dt)
    throw Unsupported("a selective scan whose state dtype differs from its decay and input");
  TensorId ys = c.def(0), last = c.def(1);
  ScanBody body = build_scan_body(c, B, D, N, state_dt, c.t(readout).dtype, c.t(ys).dtype);
  ir::RepeatOp rep;
  rep.trips = L;
  rep.body = body.graph;
  rep.inputs.push_back({ir::LoopInput::Sliced, body.decay, 2, {}});
  rep.inputs.push_back({ir::LoopInput::Sliced, body.input, 2, {}});
  rep.inputs.push_back({ir::LoopInput::Sliced, body.readout, 2, {}});
  rep.inputs.push_back({ir::LoopInput::Carried, body.state, 0, body.next});
  rep.outputs.push_back({ir::LoopOutput::Stacked, body.out, 2});
  rep.outputs.push_back({ir::LoopOutput::Last, body.next, 0});
  c.repeat({decay, input, readout, state}, {ys, last}, std::move(rep));
}

}  // namespace

void register_scan_ops(const Register& reg) {
  reg("solar::selective_scan", lower_selective_scan);
}

}  // namespace solar::lower::detail
