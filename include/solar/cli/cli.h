// The `solar` command line: shared by the C++ executable and the Python console script.
#pragma once

#include <string>
#include <vector>

namespace solar::cli {

// Exit codes (docs/cli.md).
enum ExitCode : int {
  kOk = 0,
  kUsage = 2,          // bad command line
  kIoError = 3,        // missing or unreadable file, unwritable output
  kParseError = 4,     // malformed JSON / text / YAML
  kInvalidGraph = 5,   // verifier rejected the graph
  kUnknownDevice = 6,
  kUnsupported = 7,    // a construct Solar cannot model (with --strict)
  kInternal = 70,      // a bug
};

// Runs the CLI with argv-style arguments (args[0] is the program name); returns the exit
// code. Writes results to stdout, one clear error line to stderr.
int run(const std::vector<std::string>& args);

}  // namespace solar::cli
