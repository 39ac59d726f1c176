// The module tree (include/solar/report/modules.h): ops grouped by the module path of their
// origin, each level's counts, boundary bytes and SOL levels.
#include "solar/report/modules.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <unordered_map>
#include <unordered_set>

#include <nlohmann/json.hpp>

#include "format.h"
#include "group_tree.h"
#include "solar/cost/work.h"
#include "solar/ir/attrs.h"
#include "solar/util/errors.h"

namespace solar::report {
namespace {

// The tree as a flat list while it is built: parents before children.
struct Flat {
  ModuleNode node;  // without children
  int parent = -1;
  int depth = 0;
  std::vector<int> children;
};

class Builder {
 public:
  // `paths`: each op's group path (by op id); null: the module path of its origin, and a
  // module's fused time capped at its parent's.
  Builder(const Report& r, const std::vector<std::string>* paths)
      : r_(r), g_(*r.graph), paths_(paths) {
    nodes_.emplace_back();
    index_[""] = 0;
  }

  ModuleNode build() {
    const std::size_t nd = r_.devices.size();
    compute_.assign(1, std::vector<std::map<std::string, double>>(nd));
    op_node_.assign(g_.ops().size(), -1);
    for (const ir::Op& op : g_.ops()) {
      const cost::Work& w = r_.cost.per_op[op.id.value];
      if (w.dead) continue;
      int n = node_for(paths_ ? (*paths_)[op.id.value] : op.origin.module);
      op_node_[op.id.value] = n;
      nodes_[n].node.own_ops.push_back(op.id.value);
      for (int k = n; k >= 0; k = nodes_[k].parent) add_op(k, op, w);
    }
    boundary_bytes();
    finish_levels();
    return nest(0);
  }

 private:
  // The node of a module path, made (with its missing ancestors) on first use.
  int node_for(const std::string& path) {
    if (auto it = index_.find(path); it != index_.end()) return it->second;
    std::size_t dot = path.rfind('.');
    int parent = dot == std::string::npos ? 0 : node_for(path.substr(0, dot));
    int n = static_cast<int>(nodes_.size());
    nodes_.emplace_back();
    Flat& f = nodes_.back();
    f.node.path = path;
    f.node.name = dot == std::string::npos ? path : path.substr(dot + 1);
    f.parent = parent;
    f.depth = nodes_[parent].depth + 1;
    nodes_[parent].children.push_back(n);
    compute_.emplace_back(r_.devices.size());
    index_[path] = n;
    return n;
  }

  void add_op(int k, const ir::Op& op, const cost::Work& w) {
    ModuleNode& m = nodes_[k].node;
    m.ops += 1;
    if (!w.analyzed) return;
    m.macs += w.total_macs();
    m.flops += w.flops();
    m.bytes_unfused += w.bytes();
    for (std::size_t d = 0; d < r_.devices.size(); ++d) {
      const bound::OpBound& b = r_.devices[d].per_op[op.id.value];
      if (m.devices.size() < r_.devices.size()) m.devices.resize(r_.devices.size());
      m.devices[d].unfused_seconds += b.seconds;
      for (const bound::Term& t : b.terms)
        if (!t.memory) compute_[k][d][t.resource] += t.seconds;
      if (d < r_.cache_aware.size() && r_.cache_aware[d].available &&
          !r_.cache_aware[d].op_share.empty()) {
        double part = r_.cache_aware[d].op_share[op.id.value] * r_.cache_aware[d].seconds;
        m.devices[d].cache_aware_seconds = m.devices[d].cache_aware_seconds.value_or(0) + part;
      }
    }
  }

  // Each tensor, seen through free views, crosses the boundary of every module that holds
  // one of its readers but not its producer (a read) or its producer but not one of its
  // readers (a write); a graph output is written out of every module holding its producer.
  // A crossing moves what is read of the tensor: through a free view, the elements the view
  // names (a reshape or a broadcast its whole source, a slice that does not copy its part);
  // the parts of one tensor a module moves add up to the whole tensor at most.
  void boundary_bytes() {
    const auto& tensors = g_.tensors();
    std::vector<std::uint32_t> root(tensors.size());
    std::vector<Count> named(tensors.size());  // the bytes of its root a tensor names
    for (std::size_t t = 0; t < tensors.size(); ++t) {
      root[t] = static_cast<std::uint32_t>(t);
      named[t] = tensors[t].size_bytes();
    }
    auto is_view = [](const ir::Op& op) { return ir::is_free_view(op) && !op.inputs.empty(); };
    std::vector<int> producer(tensors.size(), -1);  // the producing node; -1 outside all
    for (const ir::Op& op : g_.ops()) {
      if (is_view(op)) {
        const std::uint32_t in = op.inputs[0].value;
        for (ir::TensorId o : op.outputs) {
          root[o.value] = root[in];
          named[o.value] = std::min(named[o.value], named[in]);
        }
        continue;
      }
      if (op_node_[op.id.value] < 0) continue;
      for (ir::TensorId o : op.outputs) producer[o.value] = op_node_[op.id.value];
    }
    auto key = [](int n, std::uint32_t t) { return (std::uint64_t(n) << 32) | t; };
    // (node, tensor) pairs counted, so that a tensor read twice counts once per side; per
    // (node, root) the bytes moved of it (the root's are the compulsory traffic: finish_levels).
    std::unordered_set<std::uint64_t> read_mark, write_mark;
    std::unordered_map<std::uint64_t, Count> moved;
    auto depth = [&](int n) { return n < 0 ? -1 : nodes_[n].depth; };
    auto parent = [&](int n) { return nodes_[n].parent; };
    // Nodes from `a` up to (not including) the lowest common ancestor with `b`.
    auto below_common = [&](int a, int b, auto&& visit) {
      int x = a, y = b;
      std::vector<int> path;
      while (depth(x) > depth(y)) { path.push_back(x); x = parent(x); }
      while (depth(y) > depth(x)) y = parent(y);
      while (x != y) { path.push_back(x); x = parent(x); y = parent(y); }
      for (int n : path) visit(n);
    };
    auto add = [&](std::unordered_set<std::uint64_t>& mark, int n, std::uint32_t t) {
      if (n <= 0 || !mark.insert(key(n, t)).second) return;
      moved[key(n, root[t])] += named[t];
    };
    // A source a gather reads (an embedding table) is read where gathered, as the program's
    // compulsory traffic counts it (docs/cost.md): per module, the largest such read.
    std::unordered_map<std::uint64_t, Count> gathered;
    for (const ir::Op& op : g_.ops()) {
      int c = op_node_[op.id.value];
      if (c < 0 || is_view(op)) continue;
      const bool gather = op.kind() == ir::OpKind::Move && op.move().kind == ir::MoveKind::Gather;
      for (std::size_t k = 0; k < op.inputs.size(); ++k) {
        const std::uint32_t v = op.inputs[k].value, t = root[v];
        int p = producer[t];
        if (p < 0 && gather && k == 0 && !op.outputs.empty()) {
          const Count bytes = std::min(named[v], cost::tensor_bytes(tensors[t], std::min(
              g_.tensor(op.outputs[0]).num_elements(), tensors[t].num_elements())));
          for (int n = c; n > 0; n = parent(n)) {
            Count& b = gathered[key(n, t)];
            b = std::max(b, bytes);
          }
          continue;
        }
        if (p < 0) {  // a graph source: read into every module holding the reader
          for (int n = c; n > 0; n = parent(n)) add(read_mark, n, v);
          continue;
        }
        below_common(c, p, [&](int n) { add(read_mark, n, v); });
        below_common(p, c, [&](int n) { add(write_mark, n, v); });
      }
    }
    for (std::size_t t = 0; t < tensors.size(); ++t) {
      if (tensors[t].role != ir::Role::Output) continue;
      for (int n = producer[root[t]]; n > 0; n = parent(n))
        add(write_mark, n, static_cast<std::uint32_t>(t));
    }
    for (const auto& [k, bytes] : gathered) moved[k] += bytes;
    for (const auto& [k, bytes] : moved) {
      const Count whole = tensors[k & 0xFFFFFFFFu].size_bytes();
      nodes_[k >> 32].node.bytes_fused += std::min(bytes, whole);
    }
  }

  void finish_levels() {
    const std::size_t nd = r_.devices.size();
    for (std::size_t k = 0; k < nodes_.size(); ++k) {
      ModuleNode& m = nodes_[k].node;
      m.devices.resize(nd);
      if (auto it = g_.module_types.find(m.path); it != g_.module_types.end()) m.type = it->second;
      for (std::size_t d = 0; d < nd; ++d) {
        const bound::DeviceBounds& db = r_.devices[d];
        ModuleNode::Device& md = m.devices[d];
        md.id = db.device_id;
        if (k == 0) {  // the whole program: the report's own levels
          m.bytes_fused = r_.cost.compulsory_bytes();
          md.unfused_seconds = db.unfused.seconds;
          md.fused_seconds = db.fused.seconds;
          md.cache_aware_seconds.reset();
          if (d < r_.cache_aware.size() && r_.cache_aware[d].available)
            md.cache_aware_seconds = r_.cache_aware[d].seconds;
        } else {
          double fused = 0;
          for (const auto& [res, s] : compute_[k][d]) {
            fused = std::max(fused, s);
            if (s > 0) md.fused_terms.push_back(bound::Term{res, s});
          }
          if (db.dram_bandwidth && *db.dram_bandwidth > 0) {
            const double dram = m.bytes_fused.to_double() / *db.dram_bandwidth;
            fused = std::max(fused, dram);
            if (dram > 0) md.fused_terms.push_back(bound::Term::of_memory(hw::MemoryLevel::Dram, dram));
          }
          std::stable_sort(md.fused_terms.begin(), md.fused_terms.end(),
                           [](const bound::Term& a, const bound::Term& b) { return a.seconds > b.seconds; });
          // A module inside a kernel that runs its parent is no slower than the parent, so
          // its bound is capped at the parent's (its own boundary may cross bytes the parent
          // keeps on chip): child <= parent <= program. Parents come first in nodes_.
          const std::vector<ModuleNode::Device>& up = nodes_[nodes_[k].parent].node.devices;
          if (!paths_ && d < up.size()) fused = std::min(fused, up[d].fused_seconds);
          // One kernel is at least as fast as its ops run apart (a boundary can count a
          // whole tensor its ops read in part: a KV cache's slots).
          if (!paths_) fused = std::min(fused, md.unfused_seconds);
          md.fused_seconds = fused;
        }
        md.share = db.unfused.seconds > 0 ? md.unfused_seconds / db.unfused.seconds : 0;
      }
    }
  }

  ModuleNode nest(int k) {
    ModuleNode m = std::move(nodes_[k].node);
    for (int c : nodes_[k].children) m.children.push_back(nest(c));
    return m;
  }

  const Report& r_;
  const ir::Graph& g_;
  const std::vector<std::string>* paths_;
  std::vector<Flat> nodes_;
  std::unordered_map<std::string, int> index_;
  std::vector<int> op_node_;  // by op id; -1 for a dead op
  // By node, by device: each compute resource's summed seconds (for the fused level).
  std::vector<std::vector<std::map<std::string, double>>> compute_;
};

nlohmann::json seconds_json(double v) {
  return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr);
}

}  // namespace

ModuleNode module_tree(const Report& r) {
  SOLAR_CHECK(r.graph != nullptr, "report without a graph");
  SOLAR_CHECK(r.cost.per_op.size() == r.graph->ops().size(), "report cost does not match its graph");
  return Builder(r, nullptr).build();
}

namespace detail {

ModuleNode group_tree(const Report& r, const std::vector<std::string>& path_by_op) {
  SOLAR_CHECK(r.graph != nullptr, "report without a graph");
  SOLAR_CHECK(path_by_op.size() == r.graph->ops().size(), "group paths do not match the graph");
  return Builder(r, &path_by_op).build();
}

}  // namespace detail

nlohmann::json module_tree_json(const ModuleNode& m) {
  nlohmann::json j;
  j["path"] = m.path;
  j["name"] = m.name;
  j["type"] = m.type;
  j["ops"] = m.ops;
  j["macs"] = detail::count_json(m.macs);
  j["flops"] = detail::count_json(m.flops);
  j["bytes_unfused"] = detail::count_json(m.bytes_unfused);
  j["bytes_fused"] = detail::count_json(m.bytes_fused);
  nlohmann::json devices = nlohmann::json::object();
  for (const ModuleNode::Device& d : m.devices) {
    nlohmann::json dj{{"unfused_seconds", seconds_json(d.unfused_seconds)},
                      {"fused_seconds", seconds_json(d.fused_seconds)}};
    if (d.cache_aware_seconds) dj["cache_aware_seconds"] = seconds_json(*d.cache_aware_seconds);
    dj["share"] = seconds_json(d.share);
    devices[d.id] = std::move(dj);
  }
  j["devices"] = std::move(devices);
  nlohmann::json children = nlohmann::json::array();
  for (const ModuleNode& c : m.children) children.push_back(module_tree_json(c));
  j["children"] = std::move(children);
  return j;
}

}  // namespace solar::report
