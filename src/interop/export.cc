// export_files / write_export: the formats' files, the manifest, and their atomic writing.
#include "solar/interop/export.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <sys/stat.h>

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

// The folder `dir` names (`out/` is `out`).
fs::path folder_path(const std::string& dir) {
  fs::path root(dir);
  return root.has_filename() ? root : root.parent_path();
}

// Whether `path` lies strictly inside `root` (both resolved).
bool is_under(const fs::path& path, const fs::path& root) {
  auto [r, p] = std::mismatch(root.begin(), root.end(), path.begin(), path.end());
  return r == root.end() && p != path.end();
}

// Whether relative `rel` stays inside its folder on its own: not empty, not absolute, no `..`.
bool stays_inside(const std::string& rel) {
  fs::path p(rel);
  if (rel.empty() || p.is_absolute() || p.has_root_name()) return false;
  for (const fs::path& part : p.lexically_normal())
    if (part == "..") return false;
  return true;
}

std::string normal(const std::string& rel) {
  return fs::path(rel).lexically_normal().generic_string();
}

// The files an earlier export's manifest lists (normalized), or UserError(Io) saying why the
// manifest is none of ours.
std::vector<std::string> manifest_files(const fs::path& manifest, const std::string& dir) {
  auto refuse = [&](const std::string& why) {
    return io_error(dir, fmt::format("its {} is not a Solar export manifest ({}); give an empty "
                                     "or new folder",
                                     kManifestName, why));
  };
  std::ifstream in(manifest, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  if (!in) throw refuse("it cannot be read");
  nlohmann::json m = nlohmann::json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (m.is_discarded() || !m.is_object()) throw refuse("not a JSON object");
  if (!m.contains("schema") || m["schema"] != kExportSchema)
    throw refuse(fmt::format("its schema is not {}", kExportSchema));
  if (!m.contains("files") || !m["files"].is_array()) throw refuse("no `files` list");
  std::vector<std::string> files;
  for (const nlohmann::json& f : m["files"]) {
    if (!f.is_string()) throw refuse("a `files` entry is not a path");
    const std::string rel = f.get<std::string>();
    if (!stays_inside(rel) || normal(rel) == kManifestName || normal(rel) == ".")
      throw io_error(dir, fmt::format("its {} lists '{}', which is not a file inside the folder; "
                                      "give an empty or new folder",
                                      kManifestName, rel));
    files.push_back(normal(rel));
  }
  return files;
}

// The input of `inputs` that `target` (an existing file) is, or nullptr.
const NamedPath* input_at(const fs::path& target, const std::vector<NamedPath>& inputs) {
  struct stat st;
  if (::stat(target.c_str(), &st) != 0) return nullptr;
  for (const NamedPath& in : inputs) {
    struct stat si;
    if (!in.path.empty() && ::stat(in.path.c_str(), &si) == 0 && same_file(target, in.path))
      return &in;
  }
  return nullptr;
}

UserError replaces_input(const fs::path& target, const NamedPath& in) {
  return io_error(target.string(),
                  fmt::format("the export would replace the input {}{}; give another folder",
                              in.what,
                              fs::path(in.path) == target
                                  ? ""
                                  : fmt::format(" '{}' (the same file)", in.path)));
}

// Removes an earlier export's file the new one does not write (a file or link; a folder
// there is the user's), then the folders below `root` that this leaves empty.
bool remove_stale(const fs::path& root, const std::string& rel) {
  fs::path target = root / rel;
  std::error_code ec;
  fs::file_status st = fs::symlink_status(target, ec);
  if (!fs::is_regular_file(st) && !fs::is_symlink(st)) return false;
  if (!fs::remove(target, ec)) return false;
  for (fs::path p = target.parent_path(); p != root && is_under(p, root); p = p.parent_path())
    if (!fs::is_empty(p, ec) || ec || !fs::remove(p, ec)) break;
  return true;
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
  files.push_back(
      {std::string(kManifestName), export_manifest(w, f, paths, skipped).dump(2) + "\n"});
  return files;
}

std::vector<ExportFile> export_graph(const ir::Graph& g, Format f) {
  return export_files(build_workload(g, cost::graph_cost(g)), f);
}

ExportResult export_to(const ir::Graph& g, Format f, const std::string& dir,
                       const std::vector<NamedPath>& inputs) {
  ExportResult r;
  r.workload = build_workload(g, cost::graph_cost(g));
  r.files = export_files(r.workload, f);
  r.removed = write_export(dir, r.files, inputs);
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
  if (!r.removed.empty()) {
    // A few names, then the count: a 30-einsum Timeloop export replaced is one line.
    constexpr std::size_t kNamed = 4;
    out += fmt::format("removed {} file{} of the earlier export that this one does not write:",
                       r.removed.size(), r.removed.size() == 1 ? "" : "s");
    for (std::size_t i = 0; i < r.removed.size() && i < kNamed; ++i) out += " " + r.removed[i];
    if (r.removed.size() > kNamed) out += fmt::format(" and {} more", r.removed.size() - kNamed);
    out += "\n";
  }
  if (!w.left_out.empty())
    out += fmt::format("left out: {} op{} (data movement, opaque, unanalyzed or dead), each "
                       "with its reason in solar-export.json\n",
                       w.left_out.size(), w.left_out.size() == 1 ? "" : "s");
  return out;
}

std::vector<std::string> check_export_folder(const std::string& dir,
                                             const std::vector<NamedPath>& inputs) {
  if (dir.empty()) throw io_error(dir, "no output folder given");
  const fs::path root = folder_path(dir);
  std::error_code ec;
  fs::file_status st = fs::status(root, ec);
  if (fs::exists(st) && !fs::is_directory(st)) throw io_error(dir, "it exists and is not a folder");
  if (!fs::exists(st)) {
    fs::path parent = root.parent_path().empty() ? fs::path(".") : root.parent_path();
    fs::file_status ps = fs::status(parent, ec);
    if (!fs::exists(ps))
      throw io_error(dir, fmt::format("folder '{}' does not exist", parent.string()));
    if (!fs::is_directory(ps))
      throw io_error(dir, fmt::format("'{}' is not a folder", parent.string()));
    if (std::optional<std::string> why = why_folder_refuses_files(parent.string()))
      throw io_error(dir, fmt::format("folder '{}' does not accept a new folder ({})",
                                      parent.string(), *why));
    return {};
  }
  if (std::optional<std::string> why = why_folder_refuses_files(root.string()))
    throw io_error(dir, fmt::format("the folder does not accept new files ({})", *why));
  fs::directory_iterator it(root, ec);
  if (ec) throw io_error(dir, ec.message());
  if (it == fs::directory_iterator()) return {};
  const fs::path manifest = root / kManifestName;
  if (!fs::is_regular_file(fs::symlink_status(manifest, ec)))
    throw io_error(dir, fmt::format("the folder is not empty and holds no Solar export (no {}); "
                                    "an export replaces only an earlier export's files: give "
                                    "an empty or new folder",
                                    kManifestName));
  std::vector<std::string> listed = manifest_files(manifest, dir);
  listed.push_back(std::string(kManifestName));
  const fs::path real_root = fs::canonical(root, ec);
  if (ec) throw io_error(dir, ec.message());
  std::set<fs::path> probed = {root};  // each folder is probed once, not once per file
  for (const std::string& rel : listed) {
    const fs::path target = root / rel;
    // A link (or a linked subfolder) that leads out of the folder is not the export's.
    fs::path real = fs::weakly_canonical(target, ec);
    if (ec || !is_under(real, real_root))
      throw io_error(dir, fmt::format("its {} lists '{}', which leads outside the folder; give "
                                      "an empty or new folder",
                                      kManifestName, rel));
    if (!fs::exists(fs::symlink_status(target, ec))) continue;  // gone already
    if (const NamedPath* in = input_at(target, inputs)) throw replaces_input(target, *in);
    if (std::optional<std::string> why = why_not_replaceable(target.string()))
      throw io_error(target.string(), *why);
    const fs::path folder = target.parent_path();
    if (probed.insert(folder).second)
      if (std::optional<std::string> why = why_folder_refuses_files(folder.string()))
        throw io_error(target.string(), fmt::format("folder '{}' does not accept new files ({})",
                                                    folder.string(), *why));
  }
  return listed;
}

std::vector<std::string> write_export(const std::string& dir, const std::vector<ExportFile>& files,
                                      const std::vector<NamedPath>& inputs) {
  const std::vector<std::string> earlier = check_export_folder(dir, inputs);
  const std::set<std::string> earlier_set(earlier.begin(), earlier.end());
  const fs::path root = folder_path(dir);

  // The manifest is renamed last: until then the folder still describes the earlier export.
  std::vector<const ExportFile*> order;
  const ExportFile* manifest = nullptr;
  std::set<std::string> written;
  for (const ExportFile& file : files) {
    SOLAR_CHECK(stays_inside(file.path),
                fmt::format("export file path '{}' leaves the folder", file.path));
    const std::string rel = normal(file.path);
    written.insert(rel);
    if (rel == kManifestName) {
      manifest = &file;
      continue;
    }
    order.push_back(&file);
  }
  if (manifest) order.push_back(manifest);
  for (const ExportFile* file : order) {
    const fs::path target = root / file->path;
    std::error_code ec;
    if (fs::exists(fs::symlink_status(target, ec)) && !earlier_set.count(normal(file->path)))
      throw io_error(target.string(),
                     fmt::format("it is not a file of the earlier export ({} does not list it); "
                                 "remove it or give another folder",
                                 kManifestName));
    if (const NamedPath* in = input_at(target, inputs)) throw replaces_input(target, *in);
  }

  std::vector<fs::path> created;  // folders made here, outermost first
  auto make_folder = [&](const fs::path& folder) {
    std::vector<fs::path> missing;
    std::error_code ec;
    for (fs::path p = folder; !p.empty() && !fs::exists(p, ec); p = p.parent_path()) {
      missing.push_back(p);
      if (p == p.parent_path()) break;
    }
    for (auto m = missing.rbegin(); m != missing.rend(); ++m) {
      if (!fs::create_directory(*m, ec) && ec) throw io_error(m->string(), ec.message());
      created.push_back(*m);
    }
  };
  std::vector<StagedFile> staged;
  staged.reserve(order.size());
  try {
    make_folder(root);
    for (const ExportFile* file : order) {
      const fs::path target = root / file->path;
      make_folder(target.parent_path());
      staged.emplace_back(target.string(), file->contents);
    }
  } catch (...) {
    staged.clear();  // removes the temporaries
    for (auto c = created.rbegin(); c != created.rend(); ++c) {
      std::error_code ignored;
      fs::remove(*c, ignored);  // only an empty folder goes
    }
    throw;
  }
  const std::size_t last = manifest ? staged.size() - 1 : staged.size();
  for (std::size_t i = 0; i < last; ++i) staged[i].commit();
  std::vector<std::string> removed;
  for (const std::string& rel : earlier)
    if (rel != kManifestName && !written.count(rel) && remove_stale(root, rel))
      removed.push_back(rel);
  if (manifest) staged.back().commit();
  return removed;
}

}  // namespace solar::interop
