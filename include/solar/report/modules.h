// The module tree of a report (docs/report-json.md, `modules`): every live op counted under
// the module path its origin names ("blocks.3.attn.qkv"), each level summed, with each
// device's SOL levels and share. Also the text views `--by module|line|op` of `solar analyze`.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "solar/report/report.h"
#include "solar/util/count.h"

namespace solar::report {

struct ModuleNode {
  std::string path;  // "blocks.3.attn"; "" for the root (the whole program)
  std::string name;  // the last component ("attn"); "" for the root
  std::string type;  // the module's class ("CausalSelfAttention"); "" unknown
  std::size_t ops = 0;  // live ops in the subtree (dead ops are in no level)
  Count macs, flops;
  Count bytes_unfused;  // the subtree's ops' own traffic, summed
  // The bytes of the tensors crossing the module's boundary (read from outside it, written
  // for a reader outside it or as a graph output), each once at full size through free
  // views: what the module must move at least. The root's is the fused level's
  // compulsory traffic.
  Count bytes_fused;
  struct Device {
    std::string id;
    double unfused_seconds = 0;  // the subtree's per-op rooflines, summed
    // The subtree as one kernel: max(each compute resource's summed seconds, bytes_fused
    // over the DRAM bandwidth), capped at the parent's (a module's boundary can cross bytes
    // its parent keeps on chip; inside its parent's kernel it is no slower than the parent)
    // and at its unfused_seconds (one kernel is no slower than its ops apart): a child's
    // fused time is at most its parent's, the top level's at most the program's. The root's
    // is the report's fused level.
    double fused_seconds = 0;
    // The terms of fused_seconds: each compute (and link) resource's summed seconds and the
    // boundary bytes' DRAM seconds, largest first. Empty for the root (the report's fused
    // level has them).
    std::vector<bound::Term> fused_terms;
    // The subtree's part of the cache-aware level (its ops' cache-aware shares times the
    // level), when the report has the level and a split of it for this device.
    std::optional<double> cache_aware_seconds;
    double share = 0;  // unfused_seconds / the whole program's unfused SOL
  };
  std::vector<Device> devices;        // in the report's device order
  std::vector<ModuleNode> children;   // in first-use order
  std::vector<std::uint32_t> own_ops;  // ops whose module is exactly this path (op ids)
};

// The module tree of r's graph. Ops with no module sit directly under the root.
ModuleNode module_tree(const Report& r);
// One node (and its subtree) in the report JSON's form.
nlohmann::json module_tree_json(const ModuleNode& root);

// What the text report breaks the program down by after its device tables.
enum class Breakdown { Module, Line, Op };
std::optional<Breakdown> parse_breakdown(std::string_view name);  // module line op
struct TableOptions {
  int top_ops = 10;                    // rows of the op and line views
  Breakdown by = Breakdown::Module;    // a graph whose ops name no module falls back to Op
  int depth = 3;                       // module rows down to this depth (1: top level)
};

// The readable report with the chosen breakdown (to_table(r, top) is the op view).
std::string to_table(const Report& r, const TableOptions& options);

// The breakdown section alone: "" when `by` is Op or when the module view has no modules
// (the caller prints its top-ops table then).
std::string breakdown_table(const Report& r, const TableOptions& options);

}  // namespace solar::report
