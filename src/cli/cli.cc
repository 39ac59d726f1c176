#include "solar/cli/cli.h"

#include <cxxabi.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <initializer_list>
#include <iostream>
#include <optional>
#include <string_view>
#include <typeinfo>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "solar/bound/inverse.h"
#include "solar/bound/policy.h"
#include "solar/cost/graph_cost.h"
#include "solar/hw/database.h"
#include "solar/hw/system.h"
#include "solar/interop/export.h"
#include "solar/ir/json.h"
#include "solar/ir/unroll.h"
#include "solar/report/modules.h"
#include "solar/report/report.h"
#include "solar/tiling/fusion.h"
#include "solar/util/errors.h"
#include "solar/util/output_file.h"

namespace solar::cli {
namespace {

struct AnalyzeArgs {
  std::string graph;
  std::vector<std::string> archs;
  std::string json_path;  // empty: no JSON; "-": JSON on stdout instead of the table
  std::string policy = "pytorch-default";
  std::string cache_state = "cold";
  int top = 10;
  std::string by = "module";  // the text report's breakdown: module, line or op
  int depth = 3;              // module rows down to this depth
  std::string mode = "attainable";
  bool no_cache_aware = false;
  bool unroll = false;         // repeat ops expanded into their unrolled graph first
  std::string ski_slope_path;  // empty: no chart
  std::uint64_t max_mappings = report::LevelOptions::kDefaultMaxMappings;
  std::string system;          // empty: no system (docs/parallel.md)
  std::optional<int> nodes;    // --nodes: the system's scale-up domains
};

struct InverseArgs {
  std::string graph;
  std::vector<std::string> archs;
  std::string json_path;
  std::string policy = "pytorch-default";
  std::string mode = "attainable";
  std::optional<double> target_ms;
  std::optional<double> rate_hz;
  std::optional<double> bandwidth_gbps;
  std::uint64_t max_mappings = report::LevelOptions::kDefaultMaxMappings;
};

struct ExportArgs {
  std::string graph;
  std::string format;
  std::string out;
};

struct ArchShowArgs {
  std::string id;
  bool json = false;
};

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

std::size_t edit_distance(std::string_view a, std::string_view b);

// "; did you mean 'tf32'?" for the choice at most two edits from `value` (case ignored), the
// closest; "" when none is that close.
std::string closest(const std::string& value, std::initializer_list<std::string_view> choices) {
  std::string_view best;
  std::size_t best_distance = 3;
  for (std::string_view c : choices) {
    const std::size_t d = edit_distance(lower(value), c);
    if (d < best_distance) best = c, best_distance = d;
  }
  return best.empty() ? "" : fmt::format("; did you mean '{}'?", best);
}

bound::MathPolicy parse_policy_arg(const std::string& name) {
  std::optional<bound::MathPolicy> policy = bound::parse_policy(name);
  if (!policy)
    throw UserError(UserError::Kind::BadArgument,
                    fmt::format("unknown --policy '{}'{} (expected pytorch-default, tf32 or "
                                "strict-fp32)",
                                name, closest(name, {"pytorch-default", "tf32", "strict-fp32"})));
  return *policy;
}

tiling::TrafficMode parse_mode_arg(const std::string& name) {
  std::optional<tiling::TrafficMode> mode = tiling::parse_traffic_mode(name);
  if (!mode)
    throw UserError(UserError::Kind::BadArgument,
                    fmt::format("unknown --mode '{}'{} (expected attainable or provable)", name,
                                closest(name, {"attainable", "provable"})));
  return *mode;
}

// Every --arch resolved (a device named twice is kept once); `fallback` when none is given.
std::vector<const hw::Device*> resolve_devices(const hw::DeviceDb& db,
                                               const std::vector<std::string>& archs,
                                               const std::vector<std::string>& fallback) {
  std::vector<const hw::Device*> devices;
  for (const std::string& id : archs.empty() ? fallback : archs) {
    const hw::Device* d = &db.get(id);
    // `--arch h100_sxm --arch H100_SXM` names one device: bound it once.
    bool seen = std::any_of(devices.begin(), devices.end(),
                            [&](const hw::Device* e) { return lower(e->id) == lower(d->id); });
    if (!seen) devices.push_back(d);
  }
  return devices;
}

bound::Options parse_options(const AnalyzeArgs& a) {
  bound::Options options;
  std::optional<bound::MathPolicy> policy = parse_policy_arg(a.policy);
  std::optional<bound::CacheState> cache = bound::parse_cache_state(a.cache_state);
  if (!cache)
    throw UserError(UserError::Kind::BadArgument,
                    fmt::format("unknown --cache-state '{}'{} (expected cold or warm)",
                                a.cache_state, closest(a.cache_state, {"cold", "warm"})));
  options.policy = *policy;
  options.cache_state = *cache;
  return options;
}

int run_analyze(const AnalyzeArgs& a, std::ostream& out) {
  bound::Options options = parse_options(a);
  report::LevelOptions levels;
  levels.mode = parse_mode_arg(a.mode);
  levels.cache_aware = !a.no_cache_aware;
  levels.ski_slope = !a.no_cache_aware;
  levels.max_mappings = a.max_mappings;
  report::TableOptions table_options;
  table_options.top_ops = a.top;
  table_options.depth = a.depth;
  std::optional<report::Breakdown> by = report::parse_breakdown(a.by);
  if (!by)
    throw UserError(UserError::Kind::BadArgument,
                    fmt::format("unknown --by '{}'{} (expected module, line or op)", a.by,
                                closest(a.by, {"module", "line", "op"})));
  table_options.by = *by;
  if (a.no_cache_aware && !a.ski_slope_path.empty())
    throw UserError(UserError::Kind::BadArgument,
                    "--ski-slope needs the cache-aware level: drop --no-cache-aware");

  // Every device is resolved before the graph is read, so an unknown id fails (exit 6)
  // before any work is done or any output written.
  hw::DeviceDb db = hw::DeviceDb::load_default();
  std::optional<hw::System> system;
  if (!a.system.empty()) {
    system = hw::resolve_system(a.system, a.nodes, db, hw::SystemDb::builtin());
  } else if (a.nodes) {
    throw UserError(UserError::Kind::BadArgument,
                    "--nodes needs --system (the scale-up domain it multiplies)");
  }
  std::vector<const hw::Device*> devices;
  if (system) {
    // --system sets the device of the analysis; each --arch adds a single-device column.
    std::vector<std::string> ids = {system->device};
    ids.insert(ids.end(), a.archs.begin(), a.archs.end());
    devices = resolve_devices(db, ids, {});
  } else {
    devices = resolve_devices(db, a.archs, {"H100_SXM"});
  }
  // So is every output, before the graph is read: none may replace the graph or another
  // output, and each must be writable (exit 3 otherwise, with nothing written).
  check_outputs({{"GRAPH", a.graph}}, {{"--json", a.json_path}, {"--ski-slope", a.ski_slope_path}});

  ir::Graph g = ir::load_graph_file(a.graph);
  if (a.unroll) g = ir::unroll(g);
  report::Report r = report::analyze(g, devices, options, levels, system ? &*system : nullptr);

  // Files are written before anything is printed: when one cannot be written the run fails
  // with exit 3 and prints nothing that looks like success.
  if (!a.ski_slope_path.empty()) write_file_atomically(a.ski_slope_path, report::ski_slope_svg(r));
  if (a.json_path == "-") {
    out << report::to_json(r).dump(2) << '\n';
    return kOk;
  }
  if (!a.json_path.empty()) write_file_atomically(a.json_path, report::to_json(r).dump(2) + "\n");
  std::string table = report::to_table(r, table_options);
  if (!table.empty() && table.back() != '\n') table += '\n';
  out << table;
  return kOk;
}

// The target time T from exactly one of --target-ms and --rate-hz.
double target_seconds(const InverseArgs& a) {
  if (a.target_ms && a.rate_hz)
    throw UserError(UserError::Kind::BadArgument,
                    "give one target: --target-ms T or --rate-hz F, not both");
  if (!a.target_ms && !a.rate_hz)
    throw UserError(UserError::Kind::BadArgument,
                    "missing target: give --target-ms T (milliseconds per run) or --rate-hz F "
                    "(runs per second)");
  double v = a.target_ms ? *a.target_ms : *a.rate_hz;
  if (!(v > 0) || !std::isfinite(v))
    throw UserError(UserError::Kind::BadArgument,
                    fmt::format("{} must be a positive number, got {}",
                                a.target_ms ? "--target-ms" : "--rate-hz", v));
  return a.target_ms ? *a.target_ms * 1e-3 : 1.0 / *a.rate_hz;
}

int run_inverse(const InverseArgs& a, std::ostream& out) {
  bound::InverseOptions options;
  options.target_seconds = target_seconds(a);
  options.policy = parse_policy_arg(a.policy);
  options.mode = parse_mode_arg(a.mode);
  if (a.bandwidth_gbps) {
    if (!(*a.bandwidth_gbps > 0) || !std::isfinite(*a.bandwidth_gbps))
      throw UserError(UserError::Kind::BadArgument,
                      fmt::format("--bandwidth must be a positive number of GB/s, got {}",
                                  *a.bandwidth_gbps));
    options.bandwidth = *a.bandwidth_gbps * 1e9;  // decimal GB/s, as vendors publish
  }
  hw::DeviceDb db = hw::DeviceDb::load_default();
  // Every device of the database by default; `host` only when named (detecting it probes
  // this machine's memory, which says nothing about a target to provision).
  std::vector<std::string> all;
  for (const std::string& id : db.ids())
    if (lower(id) != "host") all.push_back(id);
  std::vector<const hw::Device*> devices = resolve_devices(db, a.archs, all);
  check_outputs({{"GRAPH", a.graph}}, {{"--json", a.json_path}});

  ir::Graph g = ir::load_graph_file(a.graph);
  cost::GraphCost cost = cost::graph_cost(g);
  tiling::GraphCurveOptions curve_options;
  curve_options.einsum.max_evaluations = a.max_mappings;
  tiling::GraphTrafficModel model(g, cost, curve_options);
  bound::InverseResult r = bound::inverse_roofline(g, cost, model, devices, options);
  if (a.json_path == "-") {
    out << report::inverse_to_json(g, r).dump(2) << '\n';
    return kOk;
  }
  if (!a.json_path.empty())
    write_file_atomically(a.json_path, report::inverse_to_json(g, r).dump(2) + "\n");
  out << report::inverse_table(g, r);
  return kOk;
}

// `solar export`: the graph's einsums as an accelerator modeler's workload (docs/export.md).
int run_export(const ExportArgs& a, std::ostream& out) {
  std::optional<interop::Format> format = interop::parse_format(a.format);
  if (!format)
    throw UserError(UserError::Kind::BadArgument,
                    fmt::format("unknown --format '{}'{} (expected accelforge or timeloop)",
                                a.format, closest(a.format, {"accelforge", "timeloop"})));
  // The folder is checked before the graph is read: new, empty, or an earlier export's.
  const std::vector<NamedPath> inputs = {{"GRAPH", a.graph}};
  interop::check_export_folder(a.out, inputs);
  ir::Graph g = ir::load_graph_file(a.graph);
  out << interop::export_summary(interop::export_to(g, *format, a.out, inputs), *format, a.out);
  return kOk;
}

int run_arch_list(std::ostream& out) {
  hw::DeviceDb db = hw::DeviceDb::load_default();
  out << device_list_table(db) << '\n' << system_list_table(hw::SystemDb::builtin());
  return kOk;
}

int run_arch_show(const ArchShowArgs& a, std::ostream& out) {
  hw::DeviceDb db = hw::DeviceDb::load_default();
  // A system id or the inline form NxDEVICE shows a system; anything else a device.
  hw::SystemDb systems = hw::SystemDb::builtin();
  if (systems.find(a.id) != nullptr || hw::is_system_spec(a.id)) {
    hw::System s = hw::resolve_system(a.id, std::nullopt, db, systems);
    if (a.json)
      out << system_to_json(s).dump(2) << '\n';
    else
      out << system_text(s);
    return kOk;
  }
  const hw::Device* d = nullptr;
  try {
    d = &db.get(a.id);
  } catch (const UserError& e) {
    if (e.kind() != UserError::Kind::UnknownDevice) throw;
    std::string known;
    for (const std::string& id : systems.ids()) known += (known.empty() ? "" : ", ") + id;
    throw UserError(e.kind(), e.message() + "; known systems: " + known + " (or NxDEVICE)");
  }
  if (a.json)
    out << device_to_json(*d).dump(2) << '\n';
  else
    out << device_text(*d);
  return kOk;
}

// The extra lines --debug prints after the error line: the exception's type and origin.
void print_debug(const std::exception& e, std::ostream& err) {
  int status = 0;
  char* readable = abi::__cxa_demangle(typeid(e).name(), nullptr, nullptr, &status);
  err << "solar: debug: exception type " << (status == 0 ? readable : typeid(e).name()) << '\n';
  std::free(readable);
  if (const auto* se = dynamic_cast<const Error*>(&e)) {
    const Origin& o = se->origin();
    err << fmt::format("solar: debug: message: {}\nsolar: debug: origin: file '{}', line {}, op '{}'\n",
                       se->message(), o.file, o.line, o.op);
  }
}

// Edit distance between two short words (a mistyped command).
std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1] ? 1 : 0)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// The error for a first argument that is no command (`solar anlyze g.solar`), naming the
// closest command, instead of CLI11's "A subcommand is required"; nullopt when it is one,
// or an option.
std::optional<std::string> unknown_command(const CLI::App& app, const std::vector<std::string>& args) {
  if (args.size() < 2 || args[1].empty() || args[1][0] == '-') return std::nullopt;
  const std::string& word = args[1];
  std::string best;
  std::size_t best_distance = 3;  // at most two edits away
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
    if (sub->get_name() == word) return std::nullopt;
    const std::size_t d = edit_distance(word, sub->get_name());
    if (d < best_distance) best = sub->get_name(), best_distance = d;
  }
  if (best.empty()) return fmt::format("unknown command '{}'", word);
  return fmt::format("unknown command '{}': did you mean 'solar {}'?", word, best);
}

int fail(const std::exception& e, bool debug, std::ostream& err) {
  err << "solar: error: " << e.what() << '\n';
  if (debug) print_debug(e, err);
  return exit_code_for(e);
}

}  // namespace

ExitCode exit_code_for(const std::exception& e) {
  if (const auto* u = dynamic_cast<const UserError*>(&e)) {
    switch (u->kind()) {
      case UserError::Kind::Io: return kIoError;
      case UserError::Kind::Parse: return kParseError;
      case UserError::Kind::InvalidGraph: return kInvalidGraph;
      case UserError::Kind::UnknownDevice: return kUnknownDevice;
      case UserError::Kind::BadArgument: return kUsage;
      case UserError::Kind::OutsideLanguage: return kOutsideLanguage;
      case UserError::Kind::NotAffine: return kNotAffine;
      case UserError::Kind::DataDependent: return kDataDependent;
      case UserError::Kind::UnknownIntrinsic: return kUnknownIntrinsic;
      case UserError::Kind::ShapeMismatch: return kShapeMismatch;
      case UserError::Kind::Undeclared: return kUndeclared;
      case UserError::Kind::NonConstantBound: return kNonConstantBound;
    }
    return kInternal;
  }
  if (dynamic_cast<const Unsupported*>(&e)) return kUnsupported;
  // A JSON library error escaping a parser is still malformed input, not a crash.
  if (dynamic_cast<const nlohmann::json::parse_error*>(&e)) return kParseError;
  return kInternal;
}

int run(const std::vector<std::string>& args) {
  int code = run(args, std::cout, std::cerr);
  // The Python console script shares the process: its own prints must not overtake ours.
  std::cout.flush();
  return code;
}

int run(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  CLI::App app{"Solar: speed-of-light performance analysis of deep-learning programs.", "solar"};
  app.set_version_flag("--version", std::string("solar ") + kVersion);
  app.require_subcommand(1);
  bool debug = false;
  app.add_flag("--debug", debug, "On error, also print the exception's type and origin");
  // Accepted as the console script's is (its programs report progress; a graph's analysis
  // takes a second at most and prints none), so one command line serves both.
  bool quiet = false;

  AnalyzeArgs analyze_args;
  CLI::App* analyze =
      app.add_subcommand("analyze", "Cost a graph and bound it on one or more devices");
  analyze->add_option("GRAPH", analyze_args.graph, "Graph file: text form or JSON (solar.graph.v1)")
      ->required();
  analyze
      ->add_option("--arch", analyze_args.archs,
                   "Device id (repeatable, or comma-separated); default H100_SXM. "
                   "`solar arch list` shows the ids")
      ->allow_extra_args(false)
      ->delimiter(',');
  analyze->add_option("--json", analyze_args.json_path,
                      "Write the JSON report (solar.report.v1) to PATH; `-` writes it to "
                      "stdout instead of the table");
  analyze->add_option("--policy", analyze_args.policy,
                      "Math policy: pytorch-default, tf32 or strict-fp32")
      ->capture_default_str();
  analyze->add_option("--cache-state", analyze_args.cache_state, "Cache state: cold or warm")
      ->capture_default_str();
  analyze->add_option("--top", analyze_args.top, "Rows of the top-ops and source-line tables")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  analyze->add_option("--by", analyze_args.by,
                      "Text breakdown: module (the module tree; op when the graph names no "
                      "module), line (source lines) or op (top ops)")
      ->capture_default_str();
  analyze->add_option("--depth", analyze_args.depth, "Module-tree rows down to this depth")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  analyze->add_option("--mode", analyze_args.mode,
                      "Cache-aware level: attainable (best schedule of the fusion/tiling "
                      "mapspace) or provable (communication lower bound)")
      ->capture_default_str();
  analyze->add_flag("--no-cache-aware", analyze_args.no_cache_aware,
                    "Skip the cache-aware level and the ski-slope (huge graphs)");
  analyze->add_flag("--unroll", analyze_args.unroll,
                    "Expand every repeat op into its iterations first (the same counts, one op "
                    "per iteration; docs/ir-text.md, \"Repeat\")");
  analyze->add_option("--ski-slope", analyze_args.ski_slope_path,
                      "Write the ski-slope chart (SVG, log-log Q(S)) to PATH");
  analyze
      ->add_option("--max-mappings", analyze_args.max_mappings,
                   "Mappings each einsum's tiling search evaluates before thinning its tiles")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  analyze->add_option("--system", analyze_args.system,
                      "Run the graph as one rank of a system: a built-in id (DGX_H100; `solar "
                      "arch list`), a solar.system.v1 file (.yaml) or NxDEVICE (8xH100_SXM); "
                      "its device is the analysis's, its links price the collectives");
  analyze->add_option("--nodes", analyze_args.nodes,
                      "Scale-up domains of the --system, joined by its NICs")
      ->check(CLI::PositiveNumber);
  analyze->add_flag("--debug", debug, "On error, also print the exception's type and origin");
  analyze->add_flag("--quiet", quiet, "No progress on stderr (a graph's analysis reports none)");

  InverseArgs inverse_args;
  CLI::App* inverse = app.add_subcommand(
      "inverse", "Inverse roofline: the least compute, bandwidth and capacity a target time needs");
  inverse->add_option("GRAPH", inverse_args.graph, "Graph file: text form or JSON (solar.graph.v1)")
      ->required();
  inverse->add_option("--target-ms", inverse_args.target_ms, "Target time per run, milliseconds");
  inverse->add_option("--rate-hz", inverse_args.rate_hz,
                      "Target rate, runs per second (T = 1/F), e.g. a 500 Hz control loop");
  inverse
      ->add_option("--arch", inverse_args.archs,
                   "Device id to compare (repeatable, or comma-separated); default: every "
                   "device of the database except host")
      ->allow_extra_args(false)
      ->delimiter(',');
  inverse->add_option("--bandwidth", inverse_args.bandwidth_gbps,
                      "DRAM bandwidth in GB/s (decimal): also report the least on-chip capacity "
                      "that meets the target at it");
  inverse->add_option("--json", inverse_args.json_path,
                      "Write the JSON result (solar.inverse.v1) to PATH; `-` to stdout instead "
                      "of the text");
  inverse->add_option("--policy", inverse_args.policy,
                      "Math policy: pytorch-default, tf32 or strict-fp32")
      ->capture_default_str();
  inverse->add_option("--mode", inverse_args.mode, "Q(S) for devices: attainable or provable")
      ->capture_default_str();
  inverse
      ->add_option("--max-mappings", inverse_args.max_mappings,
                   "Mappings each einsum's tiling search evaluates before thinning its tiles")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  inverse->add_flag("--debug", debug, "On error, also print the exception's type and origin");
  inverse->add_flag("--quiet", quiet, "No progress on stderr (a graph's analysis reports none)");

  ExportArgs export_args;
  CLI::App* export_cmd = app.add_subcommand(
      "export", "Write the graph's einsums as an AccelForge or Timeloop workload");
  export_cmd->add_option("GRAPH", export_args.graph, "Graph file: text form or JSON (solar.graph.v1)")
      ->required();
  export_cmd->add_option("--format", export_args.format, "accelforge or timeloop")->required();
  export_cmd
      ->add_option("--out", export_args.out,
                   "Output folder: new (created), empty, or an earlier export's (whose files "
                   "are replaced; nothing else of the folder is touched)")
      ->required();
  export_cmd->add_flag("--debug", debug, "On error, also print the exception's type and origin");
  export_cmd->add_flag("--quiet", quiet, "No progress on stderr (a graph's analysis reports none)");

  CLI::App* arch = app.add_subcommand("arch", "The device database");
  arch->require_subcommand(1);
  CLI::App* arch_list = arch->add_subcommand("list", "List the known devices and systems");
  ArchShowArgs show_args;
  CLI::App* arch_show = arch->add_subcommand(
      "show", "Show every number of a device or system with its source");
  arch_show->add_option("ID", show_args.id, "Device id, system id, or NxDEVICE")->required();
  arch_show->add_flag("--json", show_args.json,
                      "Print as JSON (solar.device.v1, or solar.system.v1 for a system)");
  arch_show->add_flag("--debug", debug, "On error, also print the exception's type and origin");

  // Commands the Python console script adds (they need the frontends): listed so that
  // `solar --help` shows the whole tool. Set after the subcommands are added, because CLI11
  // copies a parent's footer into each subcommand made after it (every help page would end
  // with this block).
  app.footer(
      "Python programs (the `solar` console script that `pip install .` installs):\n"
      "  analyze PROGRAM.py   capture a PyTorch or JAX program, lower, analyze (--train, "
      "--validate)\n"
      "  validate PROGRAM.py  run the program and its lowered graph, compare the outputs\n"
      "  inverse PROGRAM.py   the inverse roofline of a program (as `inverse GRAPH`)\n"
      "  export PROGRAM.py    a program's einsums for AccelForge or Timeloop (as `export GRAPH`)\n"
      "  bench PROGRAM.py     time the program here beside its SOL (headroom, violations)\n"
      "  suite DIR            every program of a folder (--timings FILE for headroom)\n"
      "  sweep SPEC           programs x devices x --set grids on a Dask cluster (Parquet/CSV)\n"
      "  translate SOURCE     any source into the loop language by a language model\n"
      "  analyze hf:NAME      a Hugging Face model from its configuration (--phase decode)\n"
      "  models list          the model registry: names, tasks, published sizes, sources\n"
      "  server start         keep the frameworks imported: later commands skip the imports\n"
      "See docs/cli.md.");

  if (std::optional<std::string> message = unknown_command(app, args)) {
    err << "solar: error: " << *message << " (run `solar --help` for usage)\n";
    return kUsage;
  }
  // CLI11 takes the arguments without the program name, last first.
  std::vector<std::string> rest;
  for (std::size_t i = args.size(); i-- > 1;) rest.push_back(args[i]);
  try {
    app.parse(rest);
  } catch (const CLI::CallForHelp&) {
    out << app.help();  // delegates to the subcommand that asked for it
    return kOk;
  } catch (const CLI::CallForAllHelp&) {
    out << app.help("", CLI::AppFormatMode::All);
    return kOk;
  } catch (const CLI::CallForVersion& e) {
    out << e.what() << '\n';
    return kOk;
  } catch (const CLI::ParseError& e) {
    err << "solar: error: " << e.what() << " (run `solar --help` for usage)\n";
    return kUsage;
  }

  try {
    if (analyze->parsed()) return run_analyze(analyze_args, out);
    if (inverse->parsed()) return run_inverse(inverse_args, out);
    if (export_cmd->parsed()) return run_export(export_args, out);
    if (arch_list->parsed()) return run_arch_list(out);
    if (arch_show->parsed()) return run_arch_show(show_args, out);
    SOLAR_UNREACHABLE("no subcommand ran");
  } catch (const std::exception& e) {
    return fail(e, debug, err);
  }
}

}  // namespace solar::cli
