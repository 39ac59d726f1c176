// What both parser fuzz targets share: the rule that a parser either accepts an input or
// rejects it with a clear user error, and the abort that reports a bug to libFuzzer.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <optional>
#include <string>

#include "solar/ir/graph.h"
#include "solar/util/errors.h"

namespace solar::fuzz {

[[noreturn]] inline void bug(const char* target, const char* what, const std::string& detail) {
  std::fprintf(stderr, "%s: %s\n%s\n", target, what, detail.c_str());
  std::abort();
}

// Runs `parse`; nullopt when it rejected the input as a user error or an unsupported
// construct; aborts on any other exception (a bug).
template <class Parse>
std::optional<ir::Graph> parse_or_reject(const char* target, Parse&& parse) {
  try {
    return parse();
  } catch (const UserError&) {
    return std::nullopt;
  } catch (const Unsupported&) {
    return std::nullopt;
  } catch (const std::exception& e) {
    bug(target, "the parser threw an error that is not a user error", e.what());
  }
}

}  // namespace solar::fuzz
