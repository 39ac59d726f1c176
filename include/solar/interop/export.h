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

namespace solar::interop {

enum class Format { AccelForge, Timeloop };
std::string_view format_name(Format f);  // accelforge timeloop
std::optional<Format> parse_format(std::string_view name);

// The manifest's schema name (solar-export.json).
inline constexpr std::string_view kExportSchema = "solar.export.v1";

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
};

// Costs `g`, builds its workload, formats it and writes it under `dir` (write_export): the
// whole of `solar export GRAPH`, shared by the C++ CLI and the Python console script.
ExportResult export_to(const ir::Graph& g, Format f, const std::string& dir);

// The lines `solar export` prints: einsums, operations and MACs exported, the files, and
// how many ops were left out.
std::string export_summary(const ExportResult& r, Format f, const std::string& dir);

// The manifest of `w` as written in solar-export.json (`files`: the other files' paths).
nlohmann::json export_manifest(const Workload& w, Format f, const std::vector<std::string>& files,
                               const std::vector<std::string>& skipped);

// Writes the files under `dir` (created, with its subfolders, when missing; its parent must
// exist). Every file is first written to a temporary file beside its target and only then
// renamed over it, all renames after all writes, so a failure leaves no partial file and
// no earlier export half-replaced. Throws UserError(Io) naming the path.
void write_export(const std::string& dir, const std::vector<ExportFile>& files);

}  // namespace solar::interop
