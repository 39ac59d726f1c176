// Expert parallelism: the rank's block of experts, all-to-all dispatch and combine.
#include "solar/parallel/experts.h"

#include <algorithm>
#include <set>
#include <vector>

#include "solar/ir/rewrite.h"

namespace solar::parallel {

std::map<std::string, std::string> expert_weights(const ir::Graph& g) {
  std::map<std::string, std::string> out;
  for (const ir::Tensor& t : g.tensors()) {
    auto dot = t.name.rfind('.');
    std::string path = dot == std::string::npos ? "" : t.name.substr(0, dot);
    auto it = g.module_types.find(path);
    const std::string cls = it == g.module_types.end() ? "" : it->second;
    bool experts = cls.size() >= 7 && cls.compare(cls.size() - 7, 7, "Experts") == 0;
    if (t.role == ir::Role::Weight && experts && t.shape.size() == 3) out[t.name] = path;
  }
  return out;
}

ExpertParallelGraph expert_parallel(const ir::Graph& in, std::int64_t ep, std::int64_t rank,
                                    const ir::CollectiveGroup& group) {
  const auto weights = expert_weights(in);
  if (weights.empty())
    throw Unsupported(
        "no experts module (a ...Experts class with [experts, ...] weights) to split");
  std::set<std::int64_t> counts;
  for (const auto& [w, path] : weights) counts.insert(in.tensor(*in.find_tensor(w)).shape[0]);
  if (counts.size() != 1 || *counts.begin() % ep) {
    std::string list = "[";
    for (auto c : counts) list += (list.size() > 1 ? ", " : "") + std::to_string(c);
    throw Unsupported(list + "] experts do not split over ep=" + std::to_string(ep));
  }
  const std::int64_t local = *counts.begin() / ep;
  // The working tensors: the input's, then the pass's own (ids past them).
  std::vector<ir::Tensor> t(in.tensors().begin(), in.tensors().end());
  auto id_of = [&](const std::string& n) -> std::optional<ir::TensorId> {
    for (const ir::Tensor& x : t)
      if (x.name == n) return x.id;
    return std::nullopt;
  };
  for (const auto& [w, path] : weights) t[in.find_tensor(w)->value].shape[0] = local;
  const auto& ops = in.ops();
  std::set<std::size_t> gathers;
  std::map<std::uint32_t, std::size_t> gathered;  // gathered tensor -> its gather op
  for (std::size_t i = 0; i < ops.size(); ++i)
    if (ops[i].kind() == ir::OpKind::Move && ops[i].move().kind == ir::MoveKind::Gather &&
        weights.count(in.tensor(ops[i].inputs[0]).name)) {
      gathers.insert(i);
      gathered[ops[i].outputs[0].value] = i;
    }
  // The expert matmuls of each module, the modules in the order their first one runs.
  std::vector<std::pair<std::string, std::vector<std::size_t>>> by_module;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    if (ops[i].kind() != ir::OpKind::Einsum) continue;
    for (auto x : ops[i].inputs)
      if (gathered.count(x.value)) {
        const std::string& m = weights.at(in.tensor(ops[gathered.at(x.value)].inputs[0]).name);
        auto it = std::find_if(by_module.begin(), by_module.end(),
                               [&](const auto& kv) { return kv.first == m; });
        if (it == by_module.end()) it = by_module.insert(by_module.end(), {m, {}});
        it->second.push_back(i);
        break;
      }
  }
  std::map<std::size_t, std::vector<ir::Op>> before;  // ops to put before op i
  std::map<std::size_t, std::map<std::uint32_t, ir::TensorId>> renames;
  std::int64_t count = 0;
  auto add = [&](const std::string& name, ir::TensorId like, std::optional<ir::DType> dtype) {
    ir::Tensor x;
    x.id = {static_cast<std::uint32_t>(t.size())};
    x.name = name;
    x.shape = t[like.value].shape;
    x.dtype = dtype.value_or(t[like.value].dtype);
    x.role = ir::Role::Intermediate;
    t.push_back(x);
    return x.id;
  };
  auto a2a = [&](ir::TensorId x, const std::string& name) {
    const auto& shape = t[x.value].shape;
    if (shape.empty() || shape[0] % ep)
      throw Unsupported(t[x.value].name + ": " + std::to_string(shape.empty() ? 1 : shape[0]) +
                        " (token, expert) pairs do not split evenly over ep=" + std::to_string(ep) +
                        " ranks (uniform routing sends pairs / ep to each: raise --batch)");
    ir::TensorId out = add(name, x, std::nullopt);
    ir::Op op;
    op.name = name;
    op.inputs = {x};
    op.outputs = {out};
    ir::CollectiveOp c;
    c.kind = ir::CollectiveKind::AllToAll;
    c.group = group;
    op.body = c;
    return op;
  };
  for (const auto& [path, bmms] : by_module) {
    const std::size_t first = *std::min_element(bmms.begin(), bmms.end());
    const std::size_t last = *std::max_element(bmms.begin(), bmms.end());
    ir::TensorId x;
    for (auto v : ops[first].inputs)
      if (!gathered.count(v.value)) {
        x = v;
        break;
      }
    ir::Op disp = a2a(x, t[x.value].name + ".dispatched");
    renames[first][x.value] = disp.outputs[0];
    before[first].push_back(std::move(disp));
    // The expert ids, sent with the pairs and made local (in f32: devices publish f32 vector
    // rates, not integer ones; ids below 2^24).
    for (std::size_t i : gathers) {
      const ir::Op& gop = ops[i];
      if (weights.at(in.tensor(gop.inputs[0]).name) != path) continue;
      ir::TensorId ids = gop.inputs[1];
      const std::string key = t[ids.value].name + ".local_experts";
      auto have = id_of(key);
      if (!have) {
        ir::Op sent = a2a(ids, t[ids.value].name + ".dispatched");
        ir::TensorId fl = add(t[ids.value].name + ".f32", ids, ir::DType::F32);
        ir::TensorId loc = add(t[ids.value].name + ".local_f32", ids, ir::DType::F32);
        ir::TensorId k = add(key, ids, std::nullopt);
        const auto& shape = t[ids.value].shape;
        ir::EinsumOp e;
        for (std::size_t d = 0; d < shape.size(); ++d) {
          e.indices.push_back({"i" + std::to_string(d), shape[d]});
          e.output.push_back(ir::AffineExpr::index(static_cast<int>(d)));
        }
        e.operands.push_back({e.output, std::nullopt});
        auto x0 = ir::Expr::operand(0);
        auto num = [](double v) { return ir::Expr::constant(v); };
        e.combine = ir::Expr::make(
            ir::ExprOp::Min,
            {ir::Expr::make(
                 ir::ExprOp::Max,
                 {ir::Expr::make(ir::ExprOp::Sub, {x0, num(double(rank * local))}), num(0)}),
             num(double(local - 1))});
        auto cast = [](ir::TensorId a, ir::TensorId b, const std::string& n) {
          ir::Op op;
          op.name = n;
          op.inputs = {a};
          op.outputs = {b};
          op.body = ir::MoveOp{ir::MoveKind::Cast, {}};
          return op;
        };
        auto& list = before[i];
        ir::TensorId sent_out = sent.outputs[0];
        list.push_back(std::move(sent));
        list.push_back(cast(sent_out, fl, t[fl.value].name));
        ir::Op m;
        m.name = t[loc.value].name;
        m.inputs = {fl};
        m.outputs = {loc};
        m.body = std::move(e);
        list.push_back(std::move(m));
        list.push_back(cast(loc, k, key));
        have = k;
        count += 1;
      }
      renames[i][ids.value] = *have;
    }
    ir::TensorId y = ops[last].outputs[0];
    ir::Op comb = a2a(y, t[y.value].name + ".combined");
    count += 2;
    // Every later reader of the expert outputs reads them combined.
    std::optional<std::size_t> first_reader;
    for (std::size_t j = last + 1; j < ops.size(); ++j)
      if (std::find(ops[j].inputs.begin(), ops[j].inputs.end(), y) != ops[j].inputs.end()) {
        renames[j][y.value] = comb.outputs[0];
        if (!first_reader) first_reader = j;
      }
    if (!first_reader) throw Unsupported(t[y.value].name + ": the experts' output has no reader");
    auto& list = before[*first_reader];
    list.insert(list.begin(), std::move(comb));
  }
  ExpertParallelGraph r{ir::empty_like(in), count};
  std::vector<ir::TensorId> map(t.size());
  for (ir::Tensor& x : t) {
    std::uint32_t old = x.id.value;
    map[old] = r.graph.add_tensor(std::move(x));
  }
  auto put = [&](ir::Op op) {
    for (auto& x : op.inputs) x = map[x.value];
    for (auto& x : op.outputs) x = map[x.value];
    op.id = {};
    r.graph.add_op(std::move(op));
  };
  for (std::size_t i = 0; i < ops.size(); ++i) {
    if (auto it = before.find(i); it != before.end())
      for (ir::Op& op : it->second) put(std::move(op));
    ir::Op op = ops[i];
    if (auto it = renames.find(i); it != renames.end())
      for (auto& x : op.inputs)
        if (auto rn = it->second.find(x.value); rn != it->second.end()) x = rn->second;
    put(std::move(op));
  }
  return r;
}

}  // namespace solar::parallel
