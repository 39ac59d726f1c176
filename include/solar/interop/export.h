// `solar export`: a graph's einsum workload in the input format of an accelerator modeler
// (AccelForge or Timeloop), with a manifest of Solar's own figures, written atomically.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "solar/interop/workload.h"
#include "solar/ir/graph.h"
#include "solar/util/output_file.h"

namespace solar::interop {

enum class Format { AccelForge, Timeloop };
std::string_view format_name(Format f);  // accelforge timeloop
std::optional<Format> parse_format(std::string_view name);

// The manifest's schema name, and its file name in the export folder.
inline constexpr std::string_view kExportSchema = "solar.export.v1";
inline constexpr std::string_view kManifestName = "solar-export.json";

// The files of an export, paths relative to the output folder:
//   accelforge: workload.yaml, solar-export.json
//   timeloop:   problems/EINSUM.yaml (one classic problem per einsum), workload.yaml
//               (LoopTree), solar-export.json
// solar-export.json is the manifest: per einsum its operation count (live points), MACs,
// contraction class, combine/reduce/mask and per access the tensor, projection and
// footprint; the tensors with their dtypes and shapes; the movement ops folded into
// projections; the ops left out and why.
std::vector<ExportFile> export_files(const Workload& w, Format f);

// build_workload(g, graph_cost(g)), then export_files.
std::vector<ExportFile> export_graph(const ir::Graph& g, Format f);

// What `solar export` did: the workload and the files written.
struct ExportResult {
  Workload workload;
  std::vector<ExportFile> files;
  std::vector<std::string> removed;  // the earlier export's files this one does not write
};

// Costs `g`, builds its workload, formats it and writes it under `dir` (write_export): the
// whole of `solar export GRAPH`, shared by the C++ CLI and the Python console script.
ExportResult export_to(const ir::Graph& g, Format f, const std::string& dir,
                       const std::vector<NamedPath>& inputs = {});

// The lines `solar export` prints: einsums, operations and MACs exported, the files, the
// earlier export's files removed, and how many ops were left out.
std::string export_summary(const ExportResult& r, Format f, const std::string& dir);

// The manifest of `w` as written in solar-export.json (`files`: the other files' paths).
nlohmann::json export_manifest(const Workload& w, Format f, const std::vector<std::string>& files,
                               const std::vector<std::string>& skipped);

// The files of the earlier export in `dir`, paths relative to it (the manifest's `files`,
// then the manifest itself), after checking that `dir` can take an export without losing
// anything of the user's: it is missing (its parent must exist and accept a new folder),
// empty, or holds an earlier Solar export (solar-export.json, schema solar.export.v1, whose
// listed paths stay inside the folder); the folder accepts new files; and no file the
// manifest lists is read-only or one of `inputs` (the files the command reads). Throws
// UserError(Io) saying why; writes nothing. Any other non-empty folder is refused: it is
// not ours to fill.
std::vector<std::string> check_export_folder(const std::string& dir,
                                             const std::vector<NamedPath>& inputs = {});

// Writes the files under `dir` (created, with its subfolders, when missing; its parent must
// exist) after check_export_folder: a file of the new export that exists already must be
// one the earlier export wrote. Every file is first written to a temporary file beside its
// target (keeping the mode of the file it replaces), and only after all were written are
// they renamed over their targets, the manifest last; the earlier export's files that the
// new one does not write are removed before the manifest is renamed (with the folders that
// removal empties), and nothing else in `dir` is touched. A failure before the renames
// leaves no partial file, no earlier export half-replaced and no folder it created. Returns
// the earlier export's files it removed. Throws UserError(Io) naming the path.
std::vector<std::string> write_export(const std::string& dir, const std::vector<ExportFile>& files,
                                      const std::vector<NamedPath>& inputs = {});

}  // namespace solar::interop
