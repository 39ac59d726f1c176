// The "solar.report.v1" JSON writer (docs/report-json.md).
#include <cmath>

#include <nlohmann/json.hpp>

#include "format.h"
#include "system.h"
#include "solar/report/modules.h"
#include "solar/report/report.h"
#include "solar/util/errors.h"

namespace solar::report {

namespace {

using detail::count_json;
using nlohmann::json;

json by_dtype(const std::map<ir::DType, Count>& m) {
  json out = json::object();
  for (const auto& [d, c] : m) out[std::string(ir::dtype_name(d))] = count_json(c);
  return out;
}

// A double, or null when it is not finite (JSON has no inf/nan).
json number(double v) {
  if (!std::isfinite(v)) return json(nullptr);
  return json(v);
}

json terms_json(const std::vector<bound::Term>& terms) {
  json out = json::object();
  for (const bound::Term& t : terms) out[t.resource] = number(t.seconds);
  return out;
}

json level_json(const bound::LevelBound& l) {
  json j{{"seconds", number(l.seconds)},
         {"bottleneck", l.bottleneck},
         {"terms", terms_json(l.terms)},
         {"unknown", l.unknown},
         {"ceiling", l.ceiling}};
  // Bounded with a system's links only.
  if (l.seconds_no_overlap) j["seconds_no_overlap"] = number(*l.seconds_no_overlap);
  if (l.latency_seconds) j["latency_seconds"] = number(*l.latency_seconds);
  return j;
}

// The framework-kernel level (framework.h): the fields of the other levels and the count of
// kernels that launch.
json framework_json(const FrameworkLevel& l) {
  return json{{"seconds", number(l.seconds)},
              {"bottleneck", l.bottleneck},
              {"terms", terms_json(l.terms)},
              {"unknown", l.unknown},
              {"kernels", l.kernels}};
}

json tensor_ref(const ir::Tensor& t) {
  return json{
      {"name", t.name}, {"dtype", std::string(ir::dtype_name(t.dtype))}, {"shape", t.shape}};
}

json origin_json(const Origin& o) {
  return json{{"file", o.file}, {"line", o.line}, {"op", o.op}};
}

json optional_number(const std::optional<double>& v) { return v ? number(*v) : json(nullptr); }

json memory_json(const MemoryFit& m) {
  return json{{"capacity_bytes", m.capacity_bytes ? count_json(*m.capacity_bytes) : json(nullptr)},
              {"footprint_bytes", count_json(m.footprint_bytes)},
              {"footprint_basis", kFootprintBasis},
              {"fits", m.fits ? json(*m.fits) : json(nullptr)},
              {"largest_tensor", m.largest_tensor.empty()
                                     ? json(nullptr)
                                     : json{{"name", m.largest_tensor},
                                            {"bytes", count_json(m.largest_tensor_bytes)}}}};
}

json cache_aware_json(const ir::Graph& g, const bound::CacheAwareBound& c) {
  json j = json::object();
  j["available"] = c.available;
  j["mode"] = std::string(tiling::traffic_mode_name(c.mode));
  json levels = json::array();
  for (const bound::CapacityLevel& l : c.capacity.levels)
    levels.push_back(
        json{{"name", hw::memory_level_name(l.level)}, {"bytes", count_json(l.bytes)}});
  j["capacity_levels"] = std::move(levels);
  json unpublished = json::array();
  for (hw::MemoryLevel l : c.capacity.unpublished)
    unpublished.push_back(hw::memory_level_name(l));
  j["capacity_unpublished"] = std::move(unpublished);
  if (!c.available) {
    j["reason"] = c.reason;
    return j;
  }
  j["seconds"] = number(c.seconds);
  if (c.seconds_no_overlap) j["seconds_no_overlap"] = number(*c.seconds_no_overlap);
  if (c.latency_seconds) j["latency_seconds"] = number(*c.latency_seconds);
  j["bottleneck"] = c.bottleneck;
  j["terms"] = terms_json(c.terms);
  j["unknown"] = c.unknown;
  j["ceiling"] = c.ceiling;
  j["capacity_bytes"] = count_json(*c.capacity.bytes);
  j["traffic_bytes"] = count_json(c.traffic_bytes);
  json groups = json::array();
  for (const tiling::FusionGroup& grp : c.groups) {
    json ops = json::array();
    for (ir::OpId id : grp.ops) ops.push_back(g.op(id).name);
    groups.push_back(json{{"ops", std::move(ops)},
                          {"kind", std::string(tiling::fusion_kind_name(grp.kind))},
                          {"traffic_bytes", count_json(grp.traffic_bytes)},
                          {"buffer_bytes", count_json(grp.buffer_bytes)},
                          {"detail", grp.detail}});
  }
  j["groups"] = std::move(groups);
  j["exhaustive"] = c.exhaustive;
  j["detail"] = c.detail;
  j["share_basis"] = c.share_basis;
  j["no_fusion_seconds"] = optional_number(c.no_fusion_seconds);
  j["no_fusion_traffic_bytes"] =
      c.no_fusion_traffic_bytes ? count_json(*c.no_fusion_traffic_bytes) : json(nullptr);
  j["ops_at_compulsory"] = c.ops_at_compulsory;
  j["fusion_gap"] = optional_number(c.fusion_gap);
  j["tiling_gap"] = optional_number(c.tiling_gap);
  return j;
}

json ski_slope_json(const ir::Graph& g, const Report& r) {
  const bound::SkiSlope& s = *r.ski_slope;
  json caps = json::array(), att = json::array(), prov = json::array();
  for (Count c : s.capacities) caps.push_back(count_json(c));
  for (Count c : s.attainable) att.push_back(count_json(c));
  for (Count c : s.provable) prov.push_back(count_json(c));
  json ops = json::array();
  for (const bound::SkiSlopeOp& o : s.heaviest) {
    json points = json::array();
    for (const tiling::CurvePoint& p : o.points)
      points.push_back(json::array({count_json(p.buffer_bytes), count_json(p.traffic_bytes)}));
    ops.push_back(json{{"name", g.op(o.op).name}, {"points", std::move(points)}});
  }
  json devices = json::object();
  for (const auto& [id, bytes] : r.device_capacities) devices[id] = count_json(bytes);
  return json{{"capacities_bytes", std::move(caps)},
              {"attainable_bytes", std::move(att)},
              {"provable_bytes", std::move(prov)},
              {"compulsory_bytes", count_json(s.compulsory_bytes)},
              {"device_capacities_bytes", std::move(devices)},
              {"ops", std::move(ops)},
              {"ops_basis",
               "the ops with an einsum curve whose smallest-buffer point moves the most bytes; "
               "points are [buffer bytes, traffic bytes] of the op's attainable Pareto curve"}};
}

}  // namespace

json reassociation_json(const ir::Graph& g, const ReassociationInsight& in) {
  const insight::Reassociation& q = in.group;
  json ops = json::array(), leaves = json::array();
  for (ir::OpId id : q.ops) ops.push_back(g.op(id).name);
  for (const insight::Leaf& l : q.leaves) leaves.push_back(g.tensor(l.tensor).name);
  json devices = json::object();
  for (const ReassociationInsight::Device& d : in.devices)
    devices[d.id] = json{{"fused_seconds_before", number(d.fused_before)},
                         {"fused_seconds_after", number(d.fused_after)},
                         {"cache_aware_seconds_before", optional_number(d.cache_aware_before)},
                         {"cache_aware_seconds_after", optional_number(d.cache_aware_after)}};
  json out{{"output", g.tensor(q.output).name}, {"ops", std::move(ops)},
           {"contractions", q.contractions}, {"leaves", std::move(leaves)},
           {"macs_as_written", count_json(q.macs_as_written)},
           {"macs_least", count_json(q.macs_least)},
           {"macs_absorbed", count_json(q.macs_absorbed)}, {"saving", number(in.saving())},
           {"expression", q.expression}, {"order", q.order}, {"exhaustive", q.exhaustive},
           {"devices", std::move(devices)}};
  if (!in.note.empty()) out["note"] = in.note;
  return out;
}

json to_json(const Report& r) {
  SOLAR_CHECK(r.graph != nullptr, "report without a graph");
  const ir::Graph& g = *r.graph;
  SOLAR_CHECK(r.cost.per_op.size() == g.ops().size(), "report cost does not match its graph");
  for (const bound::DeviceBounds& d : r.devices)
    SOLAR_CHECK(d.per_op.size() == g.ops().size(),
                "report bounds for " + d.device_id + " do not match its graph");

  json j;
  j["schema"] = kReportSchema;
  j["conventions"] = {
      {"mac", "1 MAC = 2 FLOP"},
      {"flops", "totals.flops = 2*macs + vector_flops"},
      {"bytes", "decimal bytes; footprints at each tensor's own width"},
      {"seconds",
       "seconds at dense peak rates, except that 2:4-structured MACs run at the device's 2:4 "
       "sparse peak where it publishes one; fused = the whole graph as one kernel (a lower "
       "bound for any implementation); unfused = sum of per-op rooflines (the eager "
       "reference)"},
      {"sparsity",
       "macs are the contractions as written; macs_2_4 is the part with a 2:4-structured "
       "operand (skipped only on a device with a 2:4 sparse peak); unstructured zeros are "
       "never skipped and only shrink bytes (bitmap format)"},
      {"masks",
       "macs of a masked contraction (causal attention, a tril/triu or -inf fill the program "
       "builds) count its live points; macs_dense counts its whole box, masks ignored: where "
       "the mask cuts off work (causal attention), what an implementation computing the masked "
       "points too runs; where the mask is the op's window (a transposed convolution in gather "
       "form), a count no implementation runs"},
      {"rates", "peaks_used: FLOP/s (ops/s) for compute resources, bytes/s for memory"},
      {"counts", "exact integers; a count above 2^64-1 is written as a decimal string"},
      {"cache_aware",
       "cache_aware = max(fused compute terms, Q(S)/DRAM bandwidth) at S = the device's total "
       "on-chip capacity; mode attainable: Q(S) of the best schedule in the fusion and tiling "
       "mapspace (an estimate); mode provable: a communication lower bound (a hard lower "
       "bound)"},
  };
  j["program"] = {{"name", g.name}, {"frontend", g.frontend}, {"source", g.source}};
  j["options"] = {{"policy", std::string(bound::policy_name(r.options.policy))},
                  {"cache_state", std::string(bound::cache_state_name(r.options.cache_state))},
                  {"mode", std::string(tiling::traffic_mode_name(r.levels.mode))},
                  {"cache_aware", r.levels.cache_aware}};

  const cost::Work& total = r.cost.total;
  j["totals"] = {
      {"macs", count_json(total.total_macs())},
      {"macs_by_dtype", by_dtype(total.macs)},
      {"macs_2_4", count_json(total.total_macs_2_4())},
      {"macs_2_4_by_dtype", by_dtype(total.macs_2_4)},
      {"macs_dense", count_json(total.macs_dense)},
      {"flops", count_json(total.flops())},
      {"vector_flops", count_json(total.total_vector_flops())},
      {"vector_flops_by_dtype", by_dtype(total.vector_flops)},
      {"special_ops", count_json(total.special_ops)},
      {"bytes_unfused", count_json(total.bytes())},
      {"bytes_unfused_read", count_json(total.bytes_read)},
      {"bytes_unfused_written", count_json(total.bytes_written)},
      {"bytes_fused", count_json(r.cost.compulsory_bytes())},
      {"bytes_fused_read", count_json(r.cost.compulsory_bytes_read)},
      {"bytes_fused_written", count_json(r.cost.compulsory_bytes_written)},
  };
  // Graphs with collectives only: their payload per rank, moved over links.
  if (!total.comm_bytes.empty()) {
    j["totals"]["comm_bytes"] = count_json(total.total_comm_bytes());
    j["totals"]["comm_bytes_by_kind"] = detail::comm_bytes_json(total);
  }

  // Coverage: every op the cost module could not analyze, with an estimate of what it may
  // weigh (its inputs and outputs moved once at full size) so that a reader can judge it.
  json unanalyzed = json::array(), dead = json::array();
  int analyzed = 0;
  for (const ir::Op& op : g.ops()) {
    const cost::Work& w = r.cost.per_op[op.id.value];
    if (w.dead) dead.push_back(op.name);
    if (w.analyzed) {
      ++analyzed;
      continue;
    }
    json inputs = json::array(), outputs = json::array();
    for (ir::TensorId t : op.inputs) inputs.push_back(tensor_ref(g.tensor(t)));
    for (ir::TensorId t : op.outputs) outputs.push_back(tensor_ref(g.tensor(t)));
    Count estimate = detail::unanalyzed_bytes_estimate(g, op);
    json share = json::object();
    for (const bound::DeviceBounds& d : r.devices) {
      if (!d.dram_bandwidth) {
        share[d.device_id] = nullptr;
        continue;
      }
      double t = estimate.to_double() / *d.dram_bandwidth;
      share[d.device_id] = t > 0 ? number(t / (d.unfused.seconds + t)) : json(0.0);
    }
    json entry = json::object();
    entry["name"] = op.name;
    entry["framework_op"] = detail::unanalyzed_framework_op(op);
    entry["reason"] = detail::unanalyzed_reason(op, w);
    entry["inputs"] = std::move(inputs);
    entry["outputs"] = std::move(outputs);
    entry["origin"] = origin_json(op.origin);
    entry["bytes_estimate"] = count_json(estimate);
    entry["bytes_estimate_basis"] = "estimate: every input and output moved once at full size";
    entry["share_estimate"] = std::move(share);
    unanalyzed.push_back(std::move(entry));
  }
  int num_ops = static_cast<int>(g.ops().size());
  json coverage = json::object();
  coverage["ops"] = num_ops;
  coverage["analyzed"] = analyzed;
  coverage["unanalyzed"] = num_ops - analyzed;
  coverage["unanalyzed_ops"] = std::move(unanalyzed);
  coverage["complete"] = analyzed == num_ops;
  // Ops none of whose results reaches a graph output: in no number of the report.
  coverage["dead"] = r.cost.num_dead;
  coverage["dead_ops"] = std::move(dead);
  coverage["dead_macs"] = count_json(r.cost.dead_total.total_macs());
  coverage["dead_flops"] = count_json(r.cost.dead_total.flops());
  coverage["dead_bytes"] = count_json(r.cost.dead_total.bytes());
  j["coverage"] = std::move(coverage);

  SOLAR_CHECK(r.cache_aware.empty() || r.cache_aware.size() == r.devices.size(),
              "report cache-aware levels do not match its devices");
  json devices = json::object();
  for (std::size_t di = 0; di < r.devices.size(); ++di) {
    const bound::DeviceBounds& d = r.devices[di];
    json peaks = json::object();
    for (const auto& [resource, rate] : d.peaks_used) peaks[resource] = number(rate);
    json& dev = devices[d.device_id];
    dev["name"] = d.device_name;
    dev["unfused"] = level_json(d.unfused);
    dev["fused"] = level_json(d.fused);
    if (di < r.framework.size()) dev["framework"] = framework_json(r.framework[di]);
    dev["unfused_over_fused"] =
        d.fused.seconds > 0 ? number(d.unfused.seconds / d.fused.seconds) : json(nullptr);
    dev["peaks_used"] = std::move(peaks);
    dev["dram_bandwidth"] = d.dram_bandwidth ? number(*d.dram_bandwidth) : json(nullptr);
    if (di < r.memory.size()) dev["memory"] = memory_json(r.memory[di]);
    if (!d.system_id.empty()) {
      dev["system"] = d.system_id;
      dev["links"] = detail::links_json(d.links);
    }
    if (!r.cache_aware.empty())
      dev["cache_aware"] = cache_aware_json(g, r.cache_aware[di]);
    else
      dev["cache_aware"] = json{{"available", false},
                                {"mode", std::string(tiling::traffic_mode_name(r.levels.mode))},
                                {"reason", r.cache_aware_skipped.empty()
                                               ? std::string("not computed for this report")
                                               : r.cache_aware_skipped}};
  }
  j["devices"] = std::move(devices);
  if (r.system && !r.devices.empty()) j["system"] = detail::system_json(r);
  if (r.ski_slope) j["ski_slope"] = ski_slope_json(g, r);
  if (r.levels.insights) {
    json groups = json::array();
    for (const ReassociationInsight& in : r.reassociation) groups.push_back(reassociation_json(g, in));
    j["insights"] = json{{"reassociation", std::move(groups)}};
  }

  json ops = json::array();
  ops.get_ref<json::array_t&>().reserve(g.ops().size());
  for (const ir::Op& op : g.ops()) {
    const cost::Work& w = r.cost.per_op[op.id.value];
    json row = json::object();
    row["name"] = op.name;
    row["kind"] = std::string(ir::op_kind_name(op.kind()));
    row["class"] = detail::op_class(op, w);
    row["analyzed"] = w.analyzed;
    row["macs"] = count_json(w.total_macs());
    row["macs_by_dtype"] = by_dtype(w.macs);
    row["macs_2_4"] = count_json(w.total_macs_2_4());
    row["macs_2_4_by_dtype"] = by_dtype(w.macs_2_4);
    row["macs_dense"] = count_json(w.macs_dense);
    row["flops"] = count_json(w.flops());
    row["vector_flops"] = count_json(w.total_vector_flops());
    row["special_ops"] = count_json(w.special_ops);
    row["bytes"] = count_json(w.bytes());
    row["bytes_read"] = count_json(w.bytes_read);
    row["bytes_written"] = count_json(w.bytes_written);
    row["origin"] = origin_json(op.origin);
    row["module"] = op.origin.module;
    row["label"] = detail::op_label(op);
    row["note"] = w.note;
    switch (op.kind()) {
      case ir::OpKind::Move:
        row["move_kind"] = std::string(ir::move_kind_name(op.move().kind));
        break;
      case ir::OpKind::Opaque:
        row["function"] = op.opaque().function;
        row["assumption"] = op.opaque().assumption;
        break;
      case ir::OpKind::Unanalyzed:
        row["framework_op"] = op.unanalyzed().framework_op;
        row["reason"] = op.unanalyzed().reason;
        break;
      case ir::OpKind::Repeat:
        row["trips"] = op.repeat().trips;
        row["body_ops"] = op.repeat().body->ops().size();
        break;
      case ir::OpKind::Collective:
        row["collective"] = std::string(ir::collective_kind_name(op.collective().kind));
        row["group"] = op.collective().group.name;
        row["group_size"] = op.collective().group.size;
        row["comm_bytes"] = count_json(w.total_comm_bytes());
        break;
      case ir::OpKind::Einsum:
        break;
    }
    json seconds = json::object(), bottleneck = json::object(), share = json::object(),
         terms = json::object(), unknown = json::object(), links = json::object();
    for (const bound::DeviceBounds& d : r.devices) {
      const bound::OpBound& b = d.per_op[op.id.value];
      seconds[d.device_id] = number(b.seconds);
      bottleneck[d.device_id] = b.bottleneck;
      share[d.device_id] = number(b.share);
      terms[d.device_id] = terms_json(b.terms);
      if (!b.unknown.empty()) unknown[d.device_id] = b.unknown;
      if (!b.links.empty()) links[d.device_id] = detail::op_links_json(b.links);
    }
    if (!links.empty()) row["links"] = std::move(links);
    row["seconds"] = std::move(seconds);
    row["bottleneck"] = std::move(bottleneck);
    row["share"] = std::move(share);
    row["terms"] = std::move(terms);
    if (!unknown.empty()) row["unknown"] = std::move(unknown);
    // The op's part of each available cache-aware level: its traffic and its share.
    json ca_traffic = json::object(), ca_share = json::object();
    for (std::size_t di = 0; di < r.cache_aware.size(); ++di) {
      const bound::CacheAwareBound& c = r.cache_aware[di];
      if (!c.available) continue;
      const std::string& id = r.devices[di].device_id;
      ca_traffic[id] = count_json(c.op_traffic_bytes[op.id.value]);
      ca_share[id] = c.op_share.empty() ? json(nullptr) : number(c.op_share[op.id.value]);
    }
    if (!ca_traffic.empty()) {
      row["cache_aware_traffic_bytes"] = std::move(ca_traffic);
      row["cache_aware_share"] = std::move(ca_share);
    }
    ops.push_back(std::move(row));
  }
  j["ops"] = std::move(ops);
  if (!r.kernels.empty()) {
    // The framework kernels in graph order, each with the ids of its ops (indexes of ops[]).
    json kernels = json::array();
    for (std::size_t k = 0; k < r.kernels.size(); ++k) {
      const FrameworkKernel& fk = r.kernels[k];
      json seconds = json::object();
      for (std::size_t di = 0; di < r.framework.size(); ++di)
        seconds[r.devices[di].device_id] = number(r.framework[di].kernel_seconds[k]);
      kernels.push_back(json{{"op", fk.op},
                             {"module", fk.module},
                             {"ops", fk.ops},
                             {"free", fk.free},
                             {"seconds", std::move(seconds)}});
    }
    j["kernels"] = std::move(kernels);
  }
  j["modules"] = module_tree_json(module_tree(r));
  return j;
}

}  // namespace solar::report
