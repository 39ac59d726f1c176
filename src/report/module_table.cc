// The text views of `solar analyze --by module|line|op` (include/solar/report/modules.h):
// a FlopCounterMode-style module table and a per-source-line table, on the first device.
#include <algorithm>
#include <map>
#include <numeric>

#include <fmt/format.h>

#include "format.h"
#include "solar/report/modules.h"

namespace solar::report {
namespace {

// Columns as wide as their widest cell; the first `left` left-aligned, the rest right-aligned.
std::string render(const std::vector<std::vector<std::string>>& rows, std::size_t left) {
  std::vector<std::size_t> width;
  for (const auto& row : rows) {
    width.resize(std::max(width.size(), row.size()), 0);
    for (std::size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
  }
  std::string out;
  auto line = [&](const std::vector<std::string>& row) {
    std::string l;
    for (std::size_t i = 0; i < width.size(); ++i) {
      const std::string cell = i < row.size() ? row[i] : std::string();
      if (i > 0) l += "  ";
      l += i < left ? fmt::format("{:<{}}", cell, width[i]) : fmt::format("{:>{}}", cell, width[i]);
    }
    while (!l.empty() && l.back() == ' ') l.pop_back();
    out += l + "\n";
  };
  for (std::size_t k = 0; k < rows.size(); ++k) {
    line(rows[k]);
    if (k == 0) {
      std::vector<std::string> rule;
      for (std::size_t w : width) rule.push_back(std::string(w, '-'));
      line(rule);
    }
  }
  return out;
}

std::string percent(double share) { return fmt::format("{:.1f}%", 100 * share); }

bool has_modules(const ir::Graph& g) {
  return std::any_of(g.ops().begin(), g.ops().end(),
                     [](const ir::Op& op) { return !op.origin.module.empty(); });
}

std::string module_view(const Report& r, int depth) {
  ModuleNode root = module_tree(r);
  const bool cache_aware = !root.devices.empty() && root.devices[0].cache_aware_seconds.has_value();
  // The cache-aware level is a whole-program schedule: a module's part of it is the share of
  // the level its ops carry (their part of Q(S) and of the compute), printed as a share.
  const double ca_level = cache_aware ? *root.devices[0].cache_aware_seconds : 0;
  std::vector<std::string> header{"module", "class", "ops", "MACs", "FLOPs", "bytes",
                                  "fused bytes", "unfused SOL", "fused SOL"};
  if (cache_aware) header.push_back("cache-aware part");
  header.push_back("share");
  std::vector<std::vector<std::string>> rows{header};
  auto row = [&](const ModuleNode& m, const std::string& label, const std::string& type,
                 bool own) {
    std::vector<std::string> cells{label, type, std::to_string(m.ops), detail::si(m.macs, "MAC"),
                                   detail::si(m.flops, "FLOP"), detail::si(m.bytes_unfused, "B"),
                                   own ? "-" : detail::si(m.bytes_fused, "B")};
    const ModuleNode::Device* d = m.devices.empty() ? nullptr : &m.devices[0];
    cells.push_back(d ? detail::human_seconds(d->unfused_seconds) : "-");
    cells.push_back(d && !own ? detail::human_seconds(d->fused_seconds) : "-");
    if (cache_aware)
      cells.push_back(d && d->cache_aware_seconds && ca_level > 0
                          ? percent(*d->cache_aware_seconds / ca_level)
                          : "-");
    cells.push_back(d ? percent(d->share) : "-");
    rows.push_back(std::move(cells));
  };
  // The ops a module runs outside all of its submodules (attention's own einsums inside a
  // block), so that the rows under a module sum to it.
  auto own_row = [&](const ModuleNode& m, int level) {
    ModuleNode own;
    own.devices.resize(m.devices.size());
    for (std::uint32_t i : m.own_ops) {
      const cost::Work& w = r.cost.per_op[i];
      own.ops += 1;
      if (!w.analyzed) continue;
      own.macs += w.total_macs();
      own.flops += w.flops();
      own.bytes_unfused += w.bytes();
      for (std::size_t d = 0; d < r.devices.size() && d < own.devices.size(); ++d) {
        own.devices[d].unfused_seconds += r.devices[d].per_op[i].seconds;
        own.devices[d].share += r.devices[d].per_op[i].share;
        if (d < r.cache_aware.size() && r.cache_aware[d].available &&
            !r.cache_aware[d].op_share.empty())
          own.devices[d].cache_aware_seconds = own.devices[d].cache_aware_seconds.value_or(0) +
              r.cache_aware[d].op_share[i] * r.cache_aware[d].seconds;
      }
    }
    row(own, std::string(2 * static_cast<std::size_t>(level), ' ') + "(own ops)", "", true);
  };
  auto walk = [&](auto&& self, const ModuleNode& m, int level) -> void {
    std::string indent(2 * static_cast<std::size_t>(level), ' ');
    row(m, level == 0 ? "(program)" : indent + m.name, m.type, false);
    if (level >= depth) return;
    for (const ModuleNode& c : m.children) self(self, c, level + 1);
    // Own ops that are all free views (no work, no bytes) would be a row of zeros.
    const bool own_work = std::any_of(m.own_ops.begin(), m.own_ops.end(), [&](std::uint32_t i) {
      const cost::Work& w = r.cost.per_op[i];
      return !w.analyzed || w.bytes() != Count(0) || w.flops() != Count(0);
    });
    if (!m.children.empty() && own_work) own_row(m, level + 1);
  };
  walk(walk, root, 0);
  std::string device = r.devices.empty() ? "" : " on " + r.devices[0].device_id;
  return fmt::format(
             "\nmodules{} (depth {}; share of the unfused SOL; fused: the module as one kernel "
             "moving only its boundary bytes, at most its parent's{})\n",
             device, depth,
             cache_aware ? "; cache-aware part: the module's share of the cache-aware level" : "") +
         render(rows, 2);
}

std::string line_view(const Report& r, int top) {
  const ir::Graph& g = *r.graph;
  struct Line {
    std::size_t ops = 0;
    Count macs, flops, bytes;
    double seconds = 0, share = 0;
    std::size_t first = 0;  // first op, for a stable order among equal times
  };
  std::map<std::string, Line> lines;
  for (const ir::Op& op : g.ops()) {
    const cost::Work& w = r.cost.per_op[op.id.value];
    if (w.dead) continue;
    std::string key = op.origin.file.empty()
                          ? "(unknown line)"
                          : op.origin.line > 0 ? fmt::format("{}:{}", op.origin.file, op.origin.line)
                                               : op.origin.file;
    auto [it, fresh] = lines.try_emplace(key);
    Line& l = it->second;
    if (fresh) l.first = op.id.value;
    l.ops += 1;
    if (!w.analyzed) continue;
    l.macs += w.total_macs();
    l.flops += w.flops();
    l.bytes += w.bytes();
    if (!r.devices.empty()) {
      l.seconds += r.devices[0].per_op[op.id.value].seconds;
      l.share += r.devices[0].per_op[op.id.value].share;
    }
  }
  std::vector<const std::pair<const std::string, Line>*> order;
  for (const auto& e : lines) order.push_back(&e);
  std::stable_sort(order.begin(), order.end(), [](auto* a, auto* b) {
    if (a->second.seconds != b->second.seconds) return a->second.seconds > b->second.seconds;
    return a->second.first < b->second.first;
  });
  std::vector<std::vector<std::string>> rows{
      {"line", "ops", "MACs", "FLOPs", "bytes", "unfused SOL", "share"}};
  std::size_t shown = 0;
  for (const auto* e : order) {
    if (static_cast<int>(shown) >= top) break;
    const Line& l = e->second;
    rows.push_back({e->first, std::to_string(l.ops), detail::si(l.macs, "MAC"),
                    detail::si(l.flops, "FLOP"), detail::si(l.bytes, "B"),
                    detail::human_seconds(l.seconds), percent(l.share)});
    ++shown;
  }
  std::string device = r.devices.empty() ? "" : " on " + r.devices[0].device_id;
  std::string out = fmt::format("\nsource lines by share{}\n", device);
  out += render(rows, 1);
  if (order.size() > shown) out += fmt::format("... and {} more lines\n", order.size() - shown);
  return out;
}

}  // namespace

std::optional<Breakdown> parse_breakdown(std::string_view name) {
  if (name == "module") return Breakdown::Module;
  if (name == "line") return Breakdown::Line;
  if (name == "op") return Breakdown::Op;
  return std::nullopt;
}

std::string breakdown_table(const Report& r, const TableOptions& options) {
  switch (options.by) {
    case Breakdown::Op:
      return "";
    case Breakdown::Line:
      return line_view(r, options.top_ops);
    case Breakdown::Module:
      return has_modules(*r.graph) ? module_view(r, std::max(options.depth, 0)) : "";
  }
  return "";
}

std::string to_table(const Report& r, int top_ops) {
  TableOptions o;
  o.top_ops = top_ops;
  o.by = Breakdown::Op;
  return to_table(r, o);
}

}  // namespace solar::report
