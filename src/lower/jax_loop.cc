// The jax table's loops: a scan or while loop the recorder kept as one (a repeat op whose
// body lowers with this same table), and the control flow it could not record (unanalyzed,
// with its reason).
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "jax_families.h"
#include "solar/util/errors.h"

namespace solar::lower::detail::jax {

namespace {

// Loops and branches the recorder could not unroll (it says why in `reason`).
void lower_control_flow(Context& c) {
  const auto& r = c.a("reason");
  throw Unsupported(r.is_string() ? r.get<std::string>()
                                  : "control flow the recorder did not unroll");
}

// A scan or while_loop the recorder kept as a loop (`jax::scan_repeat`, docs/jax-frontend.md
// "Loops"): `args.body` is a nested trace (its own `tensors` and `ops`, ids of its own)
// lowered with this same table into the body graph of one repeat op; `args.inputs` binds
// each operand to a body param (invariant, carried with its `next`, sliced along `axis`),
// `args.outputs` makes each result from a body tensor (the last value, or stacked along
// `axis`); `trips` and `reverse` as ir::RepeatOp.
void lower_scan_repeat(Context& c) {
  const nlohmann::json& body = c.a("body");
  const nlohmann::json& bin = c.a("inputs");
  const nlohmann::json& bout = c.a("outputs");
  if (!body.is_object() || !bin.is_array() || !bout.is_array())
    throw Unsupported("a loop without its body, input bindings or output bindings");
  if (bin.size() != n_operands(c)) throw Unsupported("a loop with one binding per operand missing");
  if (bout.size() != c.op().outputs.size())
    throw Unsupported("a loop with one binding per output missing");
  OpTrace bt;
  LowerResult br;
  try {
    nlohmann::json tj = {{"schema", kOpTraceSchema}, {"name", "body"}, {"frontend", "jax"},
                         {"tensors", body.value("tensors", nlohmann::json::array())},
                         {"ops", body.value("ops", nlohmann::json::array())}};
    bt = optrace_from_json(tj, "<loop body>");
    br = lower_with_table(bt, {}, table(), "jax");
  } catch (const UserError& e) {
    throw Unsupported(fmt::format("its body: {}", e.message()));
  }
  if (!br.warnings.empty()) throw Unsupported(fmt::format("its body op {}", br.warnings[0]));
  // Trace id -> body tensor, before masks (which forget the ids of the tensors they change).
  std::vector<TensorId> of;
  for (std::size_t k = 0; k < br.trace_ids.size(); ++k) {
    const std::int64_t id = br.trace_ids[k];
    if (id < 0) continue;
    if (static_cast<std::size_t>(id) >= of.size()) of.resize(id + 1);
    of[id] = TensorId{static_cast<std::uint32_t>(k)};
  }
  recognize_masks_in(br);
  ir::Graph& g = br.graph;
  auto body_tensor = [&](const nlohmann::json& v) -> TensorId {
    if (!v.is_number_integer()) throw Unsupported("a loop binding names no body tensor");
    const std::int64_t id = v.get<std::int64_t>();
    if (static_cast<std::size_t>(id) < of.size() && of[id].valid()) return of[id];
    const TraceTensor& x = bt.tensor(id);
    if (x.role != TraceRole::Input)
      throw Unsupported(fmt::format("a loop binding names body tensor t{}, which no op produced",
                                    id));
    // A param the body never reads (a carry passed through, an unused invariant).
    ir::Tensor t;
    t.name = fmt::format("t{}", id);
    t.shape = x.shape;
    t.dtype = Context::dtype_of(x.dtype);
    t.role = ir::Role::Input;
    if (static_cast<std::size_t>(id) >= of.size()) of.resize(id + 1);
    return of[id] = g.add_tensor(std::move(t));
  };
  ir::RepeatOp r;
  r.trips = c.int_arg("trips", 0);
  r.reverse = c.bool_arg("reverse", false);
  std::vector<TensorId> ins;
  for (std::size_t k = 0; k < bin.size(); ++k) {
    const nlohmann::json& b = bin[k];
    std::optional<ir::LoopInput> how =
        b.is_object() ? ir::parse_loop_input(b.value("how", "")) : std::nullopt;
    if (!how) throw Unsupported(fmt::format("loop input {}: not invariant, carried or sliced", k));
    ir::RepeatInput x;
    x.how = *how;
    x.param = body_tensor(b.value("param", nlohmann::json()));
    if (x.how == ir::LoopInput::Carried) x.next = body_tensor(b.value("next", nlohmann::json()));
    if (x.how == ir::LoopInput::Sliced) x.axis = b.value("axis", std::int64_t{0});
    r.inputs.push_back(x);
    ins.push_back(in(c, k));
  }
  for (std::size_t k = 0; k < bout.size(); ++k) {
    const nlohmann::json& b = bout[k];
    std::optional<ir::LoopOutput> how =
        b.is_object() ? ir::parse_loop_output(b.value("how", "")) : std::nullopt;
    if (!how) throw Unsupported(fmt::format("loop output {}: not last or stacked", k));
    ir::RepeatOutput x;
    x.how = *how;
    x.value = body_tensor(b.value("value", nlohmann::json()));
    if (x.how == ir::LoopOutput::Stacked) x.axis = b.value("axis", std::int64_t{0});
    r.outputs.push_back(x);
  }
  r.body = std::make_shared<const ir::Graph>(std::move(g));
  std::vector<TensorId> outs;
  for (std::size_t k = 0; k < bout.size(); ++k) outs.push_back(c.def(k));
  c.repeat(std::move(ins), std::move(outs), std::move(r));
}

}  // namespace

void register_loop_ops(const Register& reg) {
  reg("jax::scan_repeat", lower_scan_repeat);
  // Loops, branches and equations the recorder could not record faithfully (it says why).
  for (std::string_view name :
       {"jax::scan", "jax::while", "jax::cond", "jax::shard_map", "jax::unsupported"})
    reg(name, lower_control_flow);
}

}  // namespace solar::lower::detail::jax
