// The `solar` command line: shared by the C++ executable and the Python console script.
#pragma once

#include <exception>
#include <iosfwd>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "solar/hw/database.h"
#include "solar/hw/device.h"
#include "solar/hw/system.h"

namespace solar::cli {

// The release of Solar; pyproject.toml and the top-level CMakeLists.txt carry the same
// number (tests check it).
inline constexpr const char* kVersion = "0.1.0";

// Exit codes (docs/cli.md).
enum ExitCode : int {
  kOk = 0,
  kUsage = 2,          // bad command line
  kIoError = 3,        // missing or unreadable file, unwritable output
  kParseError = 4,     // malformed JSON / text / YAML
  kInvalidGraph = 5,   // verifier rejected the graph
  kUnknownDevice = 6,
  kUnsupported = 7,    // a construct Solar cannot model (with --strict)
  kValidationFailed = 8,  // the lowered graph's outputs differ from the program's (validate)
  kProgramError = 9,      // the user's program raised while it was loaded, captured or run
  kBoundViolated = 10,    // solar bench: a measured run beat a SOL bound (a bug to report)
  // A loop program refused (docs/loop-language.md, "Refusals"), one code per rule:
  kOutsideLanguage = 11,
  kNotAffine = 12,
  kDataDependent = 13,
  kUnknownIntrinsic = 14,
  kShapeMismatch = 15,
  kUndeclared = 16,
  kNonConstantBound = 17,
  kInternal = 70,      // a bug
};

// Runs the CLI with argv-style arguments (args[0] is the program name); returns the exit
// code. Writes results to stdout, one clear error line to stderr.
int run(const std::vector<std::string>& args);

// The same, writing results to `out` and errors to `err` (tests capture both).
int run(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

// The exit code for an exception thrown while running a command (UserError kinds map to
// 2..6, Unsupported to 7, anything else to kInternal).
ExitCode exit_code_for(const std::exception& e);

// A device as JSON ("solar.device.v1"): every number with its unit, source and flag.
nlohmann::json device_to_json(const hw::Device& d);

// `solar arch show ID`: every number of the device with its source and flag, readable.
std::string device_text(const hw::Device& d);

// `solar arch list`: one row per device (id, name, key dense peaks, DRAM bandwidth). The
// run-time `host` is listed without being detected (detection probes the memory).
std::string device_list_table(const hw::DeviceDb& db);

// A system as JSON ("solar.system.v1"): every rate with its unit (bytes/s per device per
// direction, seconds), source and flag.
nlohmann::json system_to_json(const hw::System& s);

// `solar arch show ID` for a system: its domains and every number with its source and flag.
std::string system_text(const hw::System& s);

// `solar arch list`, after the devices: one row per built-in system (id, name, devices, domain,
// scale-up and scale-out bandwidth per device per direction, in-network reduction).
std::string system_list_table(const hw::SystemDb& db);

// Writes `contents` to `path` atomically: into a temporary file in the same folder, renamed
// over `path` only when complete (removed on failure), so no partial file is ever left. An
// existing `path` keeps its mode; a read-only one is refused. Throws UserError(Io) when the
// folder is missing or not writable (solar/util/output_file.h, StagedFile).
void write_file_atomically(const std::string& path, const std::string& contents);

}  // namespace solar::cli
