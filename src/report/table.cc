// The readable report: header, coverage, totals, per-device SOL levels, top ops by share.
#include <algorithm>
#include <numeric>

#include <fmt/format.h>

#include "format.h"
#include "system.h"
#include "solar/report/modules.h"
#include "solar/report/report.h"
#include "solar/util/errors.h"

namespace solar::report {

namespace {

enum class Align { Left, Right };

// A plain-text table whose columns are as wide as their widest cell, separated by two spaces.
class TextTable {
 public:
  TextTable(std::vector<std::string> header, std::vector<Align> align)
      : header_(std::move(header)), align_(std::move(align)) {}
  void add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }

  std::string render(const std::string& indent = "") const {
    std::vector<std::size_t> width(header_.size(), 0);
    auto widen = [&](const std::vector<std::string>& row) {
      for (std::size_t i = 0; i < row.size() && i < width.size(); ++i)
        width[i] = std::max(width[i], row[i].size());
    };
    widen(header_);
    for (const auto& row : rows_) widen(row);
    std::string out;
    auto line = [&](const std::vector<std::string>& row) {
      std::string l = indent;
      for (std::size_t i = 0; i < width.size(); ++i) {
        const std::string& cell = i < row.size() ? row[i] : std::string();
        if (i > 0) l += "  ";
        l += align_[i] == Align::Right ? fmt::format("{:>{}}", cell, width[i])
                                       : fmt::format("{:<{}}", cell, width[i]);
      }
      while (!l.empty() && l.back() == ' ') l.pop_back();
      out += l + "\n";
    };
    line(header_);
    std::vector<std::string> rule;
    for (std::size_t w : width) rule.push_back(std::string(w, '-'));
    line(rule);
    for (const auto& row : rows_) line(row);
    return out;
  }

 private:
  std::vector<std::string> header_;
  std::vector<Align> align_;
  std::vector<std::vector<std::string>> rows_;
};

std::string by_dtype(const std::map<ir::DType, Count>& m, const std::string& unit) {
  std::string out;
  for (const auto& [d, c] : m) {
    if (c == Count(0)) continue;
    if (!out.empty()) out += ", ";
    out += fmt::format("{} {}", ir::dtype_name(d), detail::si(c, unit));
  }
  return out;
}

// The marks of the device rows: a SOL cell that leaves work out, and a device whose DRAM
// cannot hold the program (each explained under the table).
constexpr const char* kIncomplete = "*";
constexpr const char* kNoFit = " (!)";

// Why the program does not fit a device's DRAM; "" when it fits or the capacity is unknown.
std::string memory_warning(const MemoryFit& m) {
  if (!m.fits || *m.fits) return "";
  std::string cap = detail::si(*m.capacity_bytes, "B");
  std::vector<std::string> why;
  if (m.footprint_bytes > *m.capacity_bytes)
    why.push_back(fmt::format("its inputs, weights and constants take {} (and the run needs "
                              "more), its DRAM holds {}",
                              detail::si(m.footprint_bytes, "B"), cap));
  if (m.largest_tensor_bytes > *m.capacity_bytes)
    why.push_back(fmt::format("tensor '{}' alone takes {}, its DRAM holds {}", m.largest_tensor,
                              detail::si(m.largest_tensor_bytes, "B"), cap));
  std::string out;
  for (const std::string& s : why) out += (out.empty() ? "" : "; ") + s;
  return out;
}

// The cache-aware level, one row per device with its mode, S and Q(S); the reason for each
// device without one.
std::string cache_aware_rows(const Report& r) {
  std::string mode(tiling::traffic_mode_name(r.levels.mode));
  if (r.cache_aware.empty())
    return fmt::format("cache-aware SOL ({}): {}\n", mode,
                       r.cache_aware_skipped.empty() ? "not computed" : r.cache_aware_skipped);
  std::string what = r.levels.mode == tiling::TrafficMode::Provable
                         ? "a communication lower bound: a hard lower bound"
                         : "the best schedule of the fusion/tiling mapspace: an estimate";
  std::string out = fmt::format("\ncache-aware SOL, mode {} ({}), S = on-chip capacity\n", mode, what);
  TextTable t({"device", "mode", "cache-aware SOL", "bottleneck", "S (on chip)", "Q(S)",
               "cache-aware/fused", "unfused/fused"},
              {Align::Left, Align::Left, Align::Right, Align::Left, Align::Right, Align::Right,
               Align::Right, Align::Right});
  std::vector<std::string> reasons;
  for (std::size_t i = 0; i < r.cache_aware.size(); ++i) {
    const bound::CacheAwareBound& c = r.cache_aware[i];
    const std::string& id = r.devices[i].device_id;
    if (!c.available) {
      t.add({id, mode, "-", "-", "-", "-", "-", "-"});
      reasons.push_back(fmt::format("  {}: {}\n", id, c.reason));
      continue;
    }
    auto ratio = [](const std::optional<double>& v) {
      return v ? fmt::format("{:.2f}x", *v) : std::string("-");
    };
    t.add({id, mode, detail::human_seconds(c.seconds) + (c.unknown.empty() ? "" : kIncomplete),
           c.bottleneck,
           detail::si(*c.capacity.bytes, "B"), detail::si(c.traffic_bytes, "B"),
           ratio(c.tiling_gap), ratio(c.fusion_gap)});
  }
  out += t.render();
  if (!reasons.empty()) {
    out += "no cache-aware level:\n";
    for (const std::string& s : reasons) out += s;
  }
  return out;
}

// The re-associations that save at least 5 % of a group's MACs (docs/insight.md).
std::string reassociation_lines(const Report& r) {
  std::string out;
  for (const ReassociationInsight& in : r.reassociation) {
    if (in.saving() < 1.05) continue;
    const insight::Reassociation& q = in.group;
    if (out.empty()) out = "\nre-association: the same math in fewer MACs (docs/insight.md)\n";
    out += fmt::format("  {}: {} contractions, {} as written -> {} ({:.2f}x) as {}{}\n",
                       r.graph->tensor(q.output).name, q.contractions,
                       detail::si(q.macs_as_written, "MAC"), detail::si(q.macs_least, "MAC"),
                       in.saving(), q.order,
                       q.macs_absorbed == Count(0)
                           ? ""
                           : fmt::format(" (' absorbed: {} once, offline)",
                                         detail::si(q.macs_absorbed, "MAC")));
    for (const ReassociationInsight::Device& d : in.devices) {
      out += fmt::format("    {}: fused SOL {} -> {}", d.id, detail::human_seconds(d.fused_before),
                         detail::human_seconds(d.fused_after));
      if (d.cache_aware_before && d.cache_aware_after)
        out += fmt::format(", cache-aware {} -> {}", detail::human_seconds(*d.cache_aware_before),
                           detail::human_seconds(*d.cache_aware_after));
      out += "\n";
    }
  }
  return out;
}

}  // namespace

std::string to_table(const Report& r, const TableOptions& options) {
  const int top_ops = options.top_ops;
  SOLAR_CHECK(r.graph != nullptr, "report without a graph");
  const ir::Graph& g = *r.graph;
  SOLAR_CHECK(r.cost.per_op.size() == g.ops().size(), "report cost does not match its graph");
  std::string out;

  out += fmt::format("Solar SOL report: {}  (frontend {}{})\n", g.name, g.frontend,
                     g.source.empty() ? "" : ", source " + g.source);
  std::vector<const ir::Op*> unanalyzed;
  for (const ir::Op& op : g.ops())
    if (!r.cost.per_op[op.id.value].analyzed) unanalyzed.push_back(&op);
  std::size_t num_ops = g.ops().size();
  out += fmt::format("ops: {}  analyzed: {}  coverage: {}\n", num_ops,
                     num_ops - unanalyzed.size(),
                     unanalyzed.empty() ? "complete" : "INCOMPLETE");
  if (r.cost.num_dead > 0) {
    const cost::Work& d = r.cost.dead_total;
    out += fmt::format("dead ops: {} ({}, {} unfused): no result reaches an output, not counted\n",
                       r.cost.num_dead, detail::si(d.total_macs(), "MAC"),
                       detail::si(d.bytes(), "B"));
  }
  out += fmt::format("policy: {}  cache: {}  1 MAC = 2 FLOP  (times at dense peak rates)\n",
                     bound::policy_name(r.options.policy),
                     bound::cache_state_name(r.options.cache_state));
  if (!unanalyzed.empty()) {
    out += fmt::format(
        "\n!!! {} of {} ops are UNANALYZED: their work and bytes are NOT in any number below\n",
        unanalyzed.size(), num_ops);
    std::size_t shown = 0;
    for (const ir::Op* op : unanalyzed) {
      if (shown++ == 10) {
        out += fmt::format("!!!   ... and {} more (see coverage.unanalyzed_ops in the JSON)\n",
                           unanalyzed.size() - 10);
        break;
      }
      const cost::Work& w = r.cost.per_op[op->id.value];
      std::string reason = detail::unanalyzed_reason(*op, w);
      out += fmt::format("!!!   {} ({}){}{}; about {} in and out\n", op->name,
                         detail::unanalyzed_framework_op(*op), reason.empty() ? "" : ": ", reason,
                         detail::si(detail::unanalyzed_bytes_estimate(g, *op), "B"));
    }
  }

  const cost::Work& t = r.cost.total;
  out += "\ntotals\n";
  std::string macs_detail = by_dtype(t.macs, "MAC");
  std::string vec_detail = by_dtype(t.vector_flops, "FLOP");
  out += fmt::format("  MACs          {}{}\n", detail::si(t.total_macs(), "MAC"),
                     macs_detail.empty() ? "" : "  (" + macs_detail + ")");
  // Shown only for programs with masked contractions (the JSON always has it). What an
  // implementation computing the masked points too would run where the mask cuts off work
  // (causal attention); where the mask is the op's window (a transposed convolution in gather
  // form) no implementation runs it, so the line says what it counts, not who runs it.
  if (t.macs_dense != t.total_macs())
    out += fmt::format("    dense        {}  (whole iteration boxes, masks ignored)\n",
                       detail::si(t.macs_dense, "MAC"));
  // Shown only for programs with 2:4 work (the JSON always has it).
  if (t.total_macs_2_4() != Count(0))
    out += fmt::format("    of which 2:4 {}  (at the 2:4 sparse peak where a device has one)\n",
                       detail::si(t.total_macs_2_4(), "MAC"));
  out += fmt::format("  FLOPs         {}  (2*MACs + vector {}{})\n", detail::si(t.flops(), "FLOP"),
                     detail::si(t.total_vector_flops(), "FLOP"),
                     vec_detail.empty() ? "" : ": " + vec_detail);
  out += fmt::format("  special ops   {}\n", detail::si(t.special_ops, "op"));
  out += fmt::format("  bytes         unfused {}  fused (compulsory) {}\n",
                     detail::si(t.bytes(), "B"), detail::si(r.cost.compulsory_bytes(), "B"));
  // Shown only for programs with collectives (the JSON has it then too).
  if (!t.comm_bytes.empty()) {
    std::string kinds;
    for (const auto& [kind, bytes] : t.comm_bytes)
      kinds += fmt::format("{}{} {}", kinds.empty() ? "" : ", ", ir::collective_kind_name(kind),
                           detail::si(bytes, "B"));
    out += fmt::format("  comm bytes    {} per rank over links  ({})\n",
                       detail::si(t.total_comm_bytes(), "B"), kinds);
  }

  if (r.devices.empty()) return out;

  out += "\n";
  // framework SOL: one kernel per framework op (framework.h), the eager reference.
  const bool framework = r.framework.size() == r.devices.size();
  TextTable devices = framework
      ? TextTable({"device", "unfused SOL", "bottleneck", "framework SOL", "bottleneck",
                   "fused SOL", "bottleneck", "unfused/fused"},
                  {Align::Left, Align::Right, Align::Left, Align::Right, Align::Left,
                   Align::Right, Align::Left, Align::Right})
      : TextTable({"device", "unfused SOL", "bottleneck", "fused SOL", "bottleneck",
                   "unfused/fused"},
                  {Align::Left, Align::Right, Align::Left, Align::Right, Align::Left,
                   Align::Right});
  std::vector<std::pair<std::string, std::vector<std::string>>> notes;
  std::vector<std::string> memory_warnings;
  for (std::size_t i = 0; i < r.devices.size(); ++i) {
    const bound::DeviceBounds& d = r.devices[i];
    // A level that leaves work out (no published rate for it) is marked in its cell: its
    // time is a bound on the rest of the program only.
    auto sol = [](const bound::LevelBound& l) {
      return detail::human_seconds(l.seconds) + (l.unknown.empty() ? "" : kIncomplete);
    };
    std::string id = d.device_id;
    if (i < r.memory.size()) {
      std::string warning = memory_warning(r.memory[i]);
      if (!warning.empty()) {
        id += kNoFit;
        memory_warnings.push_back(fmt::format("{}: {}", d.device_id, warning));
      }
    }
    std::vector<std::string> cells{id, sol(d.unfused), d.unfused.bottleneck};
    if (framework) {
      const FrameworkLevel& f = r.framework[i];
      cells.push_back(detail::human_seconds(f.seconds) + (f.unknown.empty() ? "" : kIncomplete));
      cells.push_back(f.bottleneck);
    }
    cells.insert(cells.end(), {sol(d.fused), d.fused.bottleneck,
                               d.fused.seconds > 0
                                   ? fmt::format("{:.2f}x", d.unfused.seconds / d.fused.seconds)
                                   : "-"});
    devices.add(std::move(cells));
    // The fused level's sentences say how much their work could move it; the unfused
    // level's join where they are not the start of one of those (its memory sentences).
    std::vector<std::string> unknown = d.fused.unknown;
    for (const std::string& s : d.unfused.unknown)
      if (std::none_of(unknown.begin(), unknown.end(),
                       [&](const std::string& f) { return f.rfind(s, 0) == 0; }))
        unknown.push_back(s);
    if (!unknown.empty()) notes.emplace_back(d.device_id, std::move(unknown));
  }
  out += devices.render();
  if (framework)
    out += "levels: unfused: every einsum op its own kernel through DRAM; fused: the whole "
           "program as one kernel;\n        framework: one kernel per framework op (an aten op, "
           "a jaxpr equation, a loop nest, a graph op), the eager reference\n";
  if (!notes.empty()) {
    out += fmt::format("{} incomplete: leaves out work the device publishes no rate for (the "
                       "true SOL may be higher):\n",
                       kIncomplete);
    for (const auto& [id, lines] : notes)
      for (const std::string& s : lines) out += fmt::format("  {}: {}\n", id, s);
  }
  // Work priced at a ceiling keeps the level complete: one line names it (docs/bounds.md,
  // "Unknown rates"; the sentences are the JSON's `ceiling`).
  std::string ceilings;
  for (const bound::DeviceBounds& d : r.devices)
    for (const std::string& s : d.fused.ceiling)
      ceilings += fmt::format("{}{}: {}", ceilings.empty() ? "" : "; ", d.device_id,
                              s.substr(0, s.find(':')));
  if (!ceilings.empty())
    out += "priced at a ceiling rate (no published rate; one no unit exceeds): " + ceilings +
           "\n";
  if (!memory_warnings.empty()) {
    out += fmt::format("!!!{} does not fit the device's DRAM:\n", kNoFit);
    for (const std::string& s : memory_warnings) out += "!!!   " + s + "\n";
  }
  out += cache_aware_rows(r);
  out += detail::system_rows(r);

  // The module or line breakdown (modules.h) replaces the top ops when asked for.
  if (std::string view = breakdown_table(r, options); !view.empty())
    return out + view + reassociation_lines(r);
  // Top ops by share of the first device's unfused SOL.
  const bound::DeviceBounds& first = r.devices.front();
  std::vector<std::size_t> order(num_ops);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return first.per_op[a].seconds > first.per_op[b].seconds;
  });
  std::size_t shown = 0;
  // Ops by the module that ran them and the framework op they come from (op_label).
  const bool modules = std::any_of(g.ops().begin(), g.ops().end(),
                                   [](const ir::Op& op) { return !op.origin.module.empty(); });
  TextTable top = modules
      ? TextTable({"module", "op", "class", "MACs", "bytes", "time", "share", "bottleneck"},
                  {Align::Left, Align::Left, Align::Left, Align::Right, Align::Right,
                   Align::Right, Align::Right, Align::Left})
      : TextTable({"op", "class", "MACs", "bytes", "time", "share", "bottleneck"},
                  {Align::Left, Align::Left, Align::Right, Align::Right, Align::Right,
                   Align::Right, Align::Left});
  for (std::size_t i : order) {
    if (static_cast<int>(shown) >= top_ops) break;
    const bound::OpBound& b = first.per_op[i];
    const cost::Work& w = r.cost.per_op[i];
    if (!w.analyzed || !(b.seconds > 0)) continue;
    const ir::Op& op = g.ops()[i];
    std::vector<std::string> cells;
    if (modules) cells.push_back(op.origin.module.empty() ? "(program)" : op.origin.module);
    cells.insert(cells.end(), {detail::op_label(op), detail::op_class(op, w),
                               detail::si(w.total_macs(), "MAC"), detail::si(w.bytes(), "B"),
                               detail::human_seconds(b.seconds),
                               fmt::format("{:.1f}%", 100 * b.share), b.bottleneck});
    top.add(std::move(cells));
    ++shown;
  }
  if (shown > 0) {
    out += fmt::format("\ntop ops by share on {} (unfused SOL {})\n", first.device_id,
                       detail::human_seconds(first.unfused.seconds));
    out += top.render();
    std::size_t timed = 0;
    for (const bound::OpBound& b : first.per_op) timed += b.seconds > 0 ? 1 : 0;
    if (timed > shown) out += fmt::format("... and {} more ops\n", timed - shown);
  }
  out += reassociation_lines(r);
  return out;
}

}  // namespace solar::report
