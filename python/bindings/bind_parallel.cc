// solar._core: parallel plans (parallel/): a graph's tensor-parallel rank graph, pipeline
// stages, expert parallelism and data-parallel gradient reduction.
#include <nanobind/nanobind.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include "bindings.h"
#include "solar/parallel/data_parallel.h"
#include "solar/parallel/experts.h"
#include "solar/parallel/stages.h"
#include "solar/parallel/tensor_parallel.h"
#include "solar/util/errors.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace solar::python {

namespace {

parallel::ShardKind shard_kind(const std::string& s) {
  for (auto k : {parallel::ShardKind::Column, parallel::ShardKind::Row, parallel::ShardKind::Vocab,
                 parallel::ShardKind::Head})
    if (parallel::shard_kind_name(k) == s) return k;
  throw UserError(UserError::Kind::BadArgument,
                  "shard kind '" + s + "': expected column, row, vocab or head");
}

ir::CollectiveGroup group_of(std::int64_t size, const std::string& name,
                             std::int64_t ranks_per_domain) {
  ir::CollectiveGroup g;
  g.size = size;
  g.name = name;
  g.ranks_per_domain = ranks_per_domain;
  return g;
}

}  // namespace

void bind_parallel(nb::module_& m) {
  m.def("remove_dead_ops", &parallel::remove_dead_ops, "graph"_a,
        "The graph without the ops no output depends on.");
  m.def(
      "shard_tensor_parallel",
      [](const ir::Graph& g, std::int64_t tp, std::int64_t rank,
         const std::map<std::string, std::tuple<std::string, int, std::int64_t>>& weights,
         const std::map<std::string, std::pair<int, std::int64_t>>& state, bool sp,
         std::int64_t group_size, const std::string& group_name, std::int64_t ranks_per_domain) {
        parallel::TensorParallelPlan p;
        p.tp = tp;
        p.rank = rank;
        p.sequence_parallel = sp;
        p.group = group_of(group_size, group_name, ranks_per_domain);
        for (const auto& [n, rule] : weights)
          p.weights[n] = {shard_kind(std::get<0>(rule)), std::get<1>(rule), std::get<2>(rule)};
        for (const auto& [n, rule] : state) p.state[n] = {rule.first, rule.second};
        parallel::ShardedGraph s = parallel::shard_tensor_parallel(g, p);
        nb::list colls;
        for (const auto& c : s.collectives)
          colls.append(
              nb::make_tuple(std::string(ir::collective_kind_name(c.kind)), c.tensor, c.why));
        return nb::make_tuple(std::move(s.graph), colls, s.replicated_ops);
      },
      "graph"_a, "tp"_a, "rank"_a, "weights"_a, "state"_a, "sp"_a, "group_size"_a, "group_name"_a,
      "ranks_per_domain"_a = 0,
      "Rank `rank` of `tp`: (graph, [(collective, tensor, why)], [replicated op: why]); "
      "weights {name: (column|row|vocab|head, dim, parts)}, state {name: (dim, parts)}; "
      "parts 0: tp blocks.");
  m.def("split_stages", &parallel::split_stages, "graph"_a, "pp"_a, "tp"_a, "tp_rank"_a,
        "devices_per_domain"_a, "The pp pipeline stage graphs of a rank graph.");
  m.def("layer_count", &parallel::layer_count, "graph"_a);
  m.def(
      "expert_parallel",
      [](const ir::Graph& g, std::int64_t ep, std::int64_t rank, std::int64_t group_size,
         const std::string& group_name, std::int64_t ranks_per_domain) {
        auto r = parallel::expert_parallel(g, ep, rank,
                                           group_of(group_size, group_name, ranks_per_domain));
        return nb::make_tuple(std::move(r.graph), r.all_to_alls);
      },
      "graph"_a, "ep"_a, "rank"_a, "group_size"_a, "group_name"_a, "ranks_per_domain"_a = 0,
      "(rank graph, all-to-alls inserted) with the experts split over ep ranks.");
  m.def(
      "data_parallel",
      [](const ir::Graph& g, std::int64_t dp, int zero, std::int64_t group_size,
         const std::string& group_name, std::int64_t ranks_per_domain) {
        auto r = parallel::data_parallel(g, dp, zero,
                                         group_of(group_size, group_name, ranks_per_domain));
        return nb::make_tuple(std::move(r.graph), r.gradient_elements);
      },
      "graph"_a, "dp"_a, "zero"_a, "group_size"_a, "group_name"_a, "ranks_per_domain"_a = 0,
      "(rank graph, gradient elements) with the gradients reduced over dp replicas.");
}

}  // namespace solar::python
