// Pipeline stages: ops assigned to stages by their layer, cuts crossed by send/recv pairs.
#include "solar/parallel/stages.h"

#include <algorithm>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <string>

#include "solar/ir/rewrite.h"

namespace solar::parallel {

namespace {

const std::regex& layer_re() {
  static const std::regex re(R"(\.layers\.(\d+)(?:\.|$))");
  return re;
}

std::optional<std::int64_t> layer_of(const std::string& path) {
  std::smatch m;
  if (!std::regex_search(path, m, layer_re())) return std::nullopt;
  return std::stoll(m[1].str());
}

}  // namespace

std::int64_t layer_count(const ir::Graph& g) {
  std::int64_t n = 0;
  for (const auto& [path, cls] : g.module_types)
    if (auto l = layer_of(path)) n = std::max(n, *l + 1);
  return n;
}

std::int64_t stage_of_layer(std::int64_t n, std::int64_t layers, std::int64_t pp) {
  std::int64_t base = layers / pp, extra = layers % pp, cut = extra * (base + 1);
  return n < cut ? n / (base + 1) : extra + (n - cut) / base;
}

std::vector<ir::Graph> split_stages(const ir::Graph& g, std::int64_t pp, std::int64_t tp,
                                    std::int64_t tp_rank, std::int64_t devices_per_domain) {
  const std::int64_t layers = layer_count(g);
  if (layers < pp)
    throw UserError(UserError::Kind::BadArgument, std::to_string(layers) + " layers do not make " +
                                                      std::to_string(pp) + " pipeline stages");
  const auto& ops = g.ops();
  std::vector<std::optional<std::int64_t>> stage(ops.size());
  auto producer = [&](ir::TensorId x) -> std::optional<std::size_t> {
    auto p = g.producer(x);
    if (!p) return std::nullopt;
    return p->value;
  };
  for (std::size_t i = 0; i < ops.size(); ++i) {
    if (auto l = layer_of(ops[i].origin.module + ".")) {
      stage[i] = stage_of_layer(*l, layers, pp);
      continue;
    }
    for (auto x : ops[i].inputs)
      if (auto j = producer(x); j && stage[*j])
        stage[i] = std::max(stage[i].value_or(0), *stage[*j]);
  }
  struct Recv {
    ir::TensorId tensor;
    std::int64_t peer;
    std::int64_t per_domain;
  };
  struct Send {
    ir::TensorId tensor;
    std::int64_t to;
    std::int64_t per_domain;
  };
  std::vector<std::vector<Send>> sends(pp);
  std::vector<std::vector<Recv>> recvs(pp);
  std::vector<std::set<ir::TensorId>> received(pp);
  std::vector<std::set<std::size_t>> needed(pp);
  auto rank_of = [&](std::int64_t s) { return s * tp + tp_rank; };
  // Op i (in no layer, inputs from graph sources) runs in stage s, with what it reads.
  auto need = [&](auto&& self, std::size_t i, std::int64_t s) -> void {
    if (!needed[s].insert(i).second) return;
    for (auto x : ops[i].inputs)
      if (auto j = producer(x); j && !stage[*j]) self(self, *j, s);
  };
  for (std::size_t i = 0; i < ops.size(); ++i) {
    if (!stage[i]) continue;
    const std::int64_t s = *stage[i];
    needed[s].insert(i);
    for (auto x : ops[i].inputs) {
      auto j = producer(x);
      if (!j) continue;
      if (!stage[*j]) {
        need(need, *j, s);
      } else if (*stage[*j] != s && !received[s].count(x)) {
        const std::int64_t src = *stage[*j];
        bool same = rank_of(src) / devices_per_domain == rank_of(s) / devices_per_domain;
        std::int64_t per_domain = same ? 2 : 1;
        sends[src].push_back({x, s, per_domain});
        recvs[s].push_back({x, rank_of(src), per_domain});
        received[s].insert(x);
      }
    }
  }
  auto sent_name = [&](const Send& snd) {
    return g.tensor(snd.tensor).name + ".to_stage" + std::to_string(snd.to);
  };
  auto pair_op = [&](ir::CollectiveKind kind, std::int64_t peer, std::int64_t per_domain) {
    ir::CollectiveOp c;
    c.kind = kind;
    c.group.size = 2;
    c.group.ranks_per_domain = per_domain;
    c.peer = peer;
    return c;
  };
  std::vector<ir::Graph> out;
  for (std::int64_t s = 0; s < pp; ++s) {
    // The stage's ops in order: its receives first, each send after the op making its tensor.
    std::vector<ir::Op> sops;
    for (const Recv& r : recvs[s]) {
      ir::Op op;
      op.name = g.tensor(r.tensor).name;
      op.outputs = {r.tensor};
      op.body = pair_op(ir::CollectiveKind::Recv, r.peer, r.per_domain);
      sops.push_back(std::move(op));
    }
    std::vector<ir::Tensor> extra;  // the sends' results, by the tensor ids they will get
    for (std::size_t i = 0; i < ops.size(); ++i) {
      if (!needed[s].count(i)) continue;
      sops.push_back(ops[i]);
      for (const Send& snd : sends[s]) {
        if (std::find(ops[i].outputs.begin(), ops[i].outputs.end(), snd.tensor) ==
            ops[i].outputs.end())
          continue;
        ir::Op op;
        op.name = sent_name(snd);
        op.inputs = {snd.tensor};
        // A result id past the input graph's tensors: the send's own output tensor.
        op.outputs = {ir::TensorId{static_cast<std::uint32_t>(g.tensors().size() + extra.size())}};
        op.body = pair_op(ir::CollectiveKind::Send, rank_of(snd.to), snd.per_domain);
        sops.push_back(std::move(op));
        ir::Tensor t = g.tensor(snd.tensor);
        t.name = sent_name(snd);
        // An output, so that every pass keeps it (its result is what it sent).
        t.role = ir::Role::Output;
        t.sparsity.reset();
        extra.push_back(std::move(t));
      }
    }
    std::vector<bool> named(g.tensors().size()), made(g.tensors().size() + extra.size());
    for (const ir::Op& op : sops) {
      for (auto x : op.inputs) named[x.value] = true;
      for (auto x : op.outputs) {
        if (x.value < named.size()) named[x.value] = true;
        made[x.value] = true;
      }
    }
    ir::Graph sg = ir::empty_like(g);
    sg.name = g.name + " stage " + std::to_string(s);
    std::vector<ir::TensorId> map(g.tensors().size() + extra.size());
    for (const ir::Tensor& t0 : g.tensors()) {
      // A graph output made in another stage is that stage's; one received here is not ours.
      if (!named[t0.id.value] || (t0.role == ir::Role::Output && !made[t0.id.value])) continue;
      ir::Tensor t = t0;
      if (t.role == ir::Role::Output && received[s].count(t0.id)) t.role = ir::Role::Intermediate;
      map[t0.id.value] = sg.add_tensor(std::move(t));
    }
    for (std::size_t k = 0; k < extra.size(); ++k)
      map[g.tensors().size() + k] = sg.add_tensor(extra[k]);
    for (ir::Op& op : sops) {
      for (auto& x : op.inputs) x = map[x.value];
      for (auto& x : op.outputs) x = map[x.value];
      op.id = {};
      sg.add_op(std::move(op));
    }
    out.push_back(std::move(sg));
  }
  return out;
}

}  // namespace solar::parallel
