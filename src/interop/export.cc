// export_files / write_export: the formats' files, the manifest, and their atomic writing.
#include "solar/interop/export.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include "common.h"
#include "solar/interop/accelforge.h"
#include "solar/interop/timeloop.h"
#include "solar/ir/dtype.h"
#include "solar/ir/text.h"
#include "solar/util/errors.h"

namespace solar::interop {
namespace {

namespace fs = std::filesystem;

// An exact count: a JSON integer, or a decimal string past 64 bits (report-json.md's rule).
nlohmann::json count_json(Count c) {
  if (c.fits_u64()) return c.to_u64();
  return c.str();
}

UserError io_error(const std::string& path, const std::string& why) {
  return UserError(UserError::Kind::Io, fmt::format("cannot write '{}': {}", path, why));
}

}  // namespace

std::string_view format_name(Format f) {
  switch (f) {
    case Format::AccelForge: return "accelforge";
    case Format::Timeloop: return "timeloop";
  }
  return "";
}

std::optional<Format> parse_format(std::string_view name) {
  if (name == "accelforge") return Format::AccelForge;
  if (name == "timeloop") return Format::Timeloop;
  return std::nullopt;
}

nlohmann::json export_manifest(const Workload& w, Format f, const std::vector<std::string>& files,
                               const std::vector<std::string>& skipped) {
  using nlohmann::json;
  json m;
  m["schema"] = kExportSchema;
  m["format"] = format_name(f);
  m["graph"] = {{"name", w.graph_name}, {"frontend", w.frontend}, {"source", w.source}};
  m["files"] = files;
  m["conventions"] = {
      {"operations", "points of an einsum's iteration box that satisfy its mask (Solar's live "
                     "points); for a contraction, its MACs (1 MAC = 2 FLOP)"},
      {"footprint", "distinct in-range elements of the tensor an access touches (docs/cost.md)"},
      {"padding", "padding points are operations; a padded operand's projection leaves its "
                  "tensor there"}};
  m["totals"] = {{"einsums", w.einsums.size()},
                 {"operations", count_json(w.total_operations())},
                 {"macs", count_json(w.total_macs())}};
  json tensors = json::array();
  for (const WorkloadTensor& t : w.tensors) {
    json j = {{"name", t.name},       {"solar", t.solar_name}, {"dtype", ir::dtype_name(t.dtype)},
              {"bits", ir::dtype_bits(t.dtype)}, {"shape", t.shape}, {"ranks", t.ranks}};
    if (!t.alias_of.empty()) j["alias_of"] = t.alias_of;
    tensors.push_back(std::move(j));
  }
  m["tensors"] = std::move(tensors);
  json einsums = json::array();
  for (const WorkloadEinsum& e : w.einsums) {
    json indices = json::array();
    for (std::size_t i = 0; i < e.indices.size(); ++i)
      indices.push_back({{"name", e.indices[i].name},
                         {"rank_variable", e.rank_variables[i]},
                         {"extent", e.indices[i].extent}});
    json mask = json::array();
    for (const ir::AffineConstraint& c : e.mask)
      mask.push_back(ir::print_affine(c.expr, e.indices) + " >= 0");
    json accesses = json::array();
    for (const WorkloadAccess& a : e.accesses) {
      json proj = json::array();
      for (const ir::AffineExpr& x : a.projection) proj.push_back(isl_affine(x, e.rank_variables));
      json j = {{"tensor", w.tensor_of(a).name}, {"output", a.output}, {"projection", proj},
                {"footprint", count_json(a.footprint)}};
      if (a.pad) j["pad"] = fmt::format("{}", *a.pad);
      if (!a.folded.empty()) j["folded"] = a.folded;
      accesses.push_back(std::move(j));
    }
    json j = {{"name", e.name},
              {"op", e.solar_name},
              {"class", detail::contraction_name(e.contraction)},
              {"operations", count_json(e.live_points)},
              {"box", count_json(e.box_points)},
              {"counted", e.counted},
              {"macs", count_json(e.macs)},
              {"combine", e.combine},
              {"reduce", e.reduce},
              {"mask", mask},
              {"indices", indices},
              {"accesses", accesses}};
    if (!e.framework_op.empty()) j["framework_op"] = e.framework_op;
    if (f == Format::Timeloop) {
      std::string path = fmt::format("problems/{}.yaml", e.name);
      j["timeloop_problem"] =
          std::find(files.begin(), files.end(), path) != files.end() ? json(path) : json(nullptr);
    }
    einsums.push_back(std::move(j));
  }
  m["einsums"] = std::move(einsums);
  m["folded"] = w.folded;
  json left = json::array();
  for (const LeftOut& l : w.left_out)
    left.push_back({{"op", l.op}, {"kind", l.kind}, {"reason", l.reason}});
  m["left_out"] = std::move(left);
  if (f == Format::Timeloop) m["timeloop_skipped"] = skipped;
  return m;
}

std::vector<ExportFile> export_files(const Workload& w, Format f) {
  std::vector<ExportFile> files;
  std::vector<std::string> skipped;
  switch (f) {
    case Format::AccelForge: files.push_back({"workload.yaml", accelforge_yaml(w)}); break;
    case Format::Timeloop: files = timeloop_files(w, &skipped); break;
  }
  std::vector<std::string> paths;
  for (const ExportFile& file : files) paths.push_back(file.path);
  files.push_back({"solar-export.json", export_manifest(w, f, paths, skipped).dump(2) + "\n"});
  return files;
}

std::vector<ExportFile> export_graph(const ir::Graph& g, Format f) {
  return export_files(build_workload(g, cost::graph_cost(g)), f);
}

ExportResult export_to(const ir::Graph& g, Format f, const std::string& dir) {
  ExportResult r;
  r.workload = build_workload(g, cost::graph_cost(g));
  r.files = export_files(r.workload, f);
  write_export(dir, r.files);
  return r;
}

std::string export_summary(const ExportResult& r, Format f, const std::string& dir) {
  const Workload& w = r.workload;
  std::string out = fmt::format("exported {} einsum{} of '{}' ({} operations, {} MACs) as {} "
                                "to {}/:",
                                w.einsums.size(), w.einsums.size() == 1 ? "" : "s",
                                w.graph_name, w.total_operations().str(), w.total_macs().str(),
                                format_name(f), dir);
  for (const ExportFile& file : r.files) out += " " + file.path;
  out += "\n";
  if (!w.left_out.empty())
    out += fmt::format("left out: {} op{} (data movement, opaque, unanalyzed or dead), each "
                       "with its reason in solar-export.json\n",
                       w.left_out.size(), w.left_out.size() == 1 ? "" : "s");
  return out;
}

void write_export(const std::string& dir, const std::vector<ExportFile>& files) {
  fs::path root(dir);
  std::error_code ec;
  if (dir.empty()) throw io_error(dir, "no output folder given");
  if (fs::exists(root, ec) && !fs::is_directory(root, ec))
    throw io_error(dir, "it exists and is not a folder");
  fs::path parent = root.parent_path();
  if (!fs::exists(root, ec) && !parent.empty() && !fs::is_directory(parent, ec))
    throw io_error(dir, fmt::format("folder '{}' does not exist", parent.string()));

  std::vector<std::pair<fs::path, fs::path>> staged;  // (temporary, target)
  auto remove_staged = [&]() {
    for (const auto& [temp, target] : staged) {
      std::error_code ignored;
      fs::remove(temp, ignored);
    }
  };
  try {
    for (const ExportFile& file : files) {
      fs::path rel(file.path);
      if (rel.empty() || rel.is_absolute() || rel.lexically_normal().string().starts_with(".."))
        throw InternalError(fmt::format("export file path '{}' leaves the folder", file.path),
                            __FILE__, __LINE__);
      fs::path target = root / rel;
      fs::create_directories(target.parent_path(), ec);
      if (ec) throw io_error(target.string(), ec.message());
      if (fs::is_directory(target, ec)) throw io_error(target.string(), "it is a folder");
      // Beside the target, so that the rename stays on one file system (and is atomic).
      fs::path temp = target.parent_path() /
                      fmt::format(".{}.{}.tmp", target.filename().string(), ::getpid());
      staged.emplace_back(temp, target);
      std::ofstream out(temp, std::ios::binary | std::ios::trunc);
      if (!out) throw io_error(target.string(), std::strerror(errno));
      out.write(file.contents.data(), static_cast<std::streamsize>(file.contents.size()));
      out.close();
      if (!out) throw io_error(target.string(), "write failed (disk full?)");
    }
    for (const auto& [temp, target] : staged) {
      fs::rename(temp, target, ec);
      if (ec) throw io_error(target.string(), ec.message());
    }
  } catch (...) {
    remove_staged();
    throw;
  }
}

}  // namespace solar::interop
