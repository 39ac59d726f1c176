// libFuzzer target: the JSON form. Any input either fails with a clear user error or reads
// into a graph whose JSON form reads back to the same JSON, and whose text form prints
// stably.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <nlohmann/json.hpp>
#include <string_view>

#include "graph_equal.h"
#include "solar/ir/json.h"
#include "solar/ir/text.h"
#include "solar/ir/verify.h"

namespace {

[[noreturn]] void bug(const char* what, const std::string& detail) {
  std::fprintf(stderr, "fuzz_json_graph: %s\n%s\n", what, detail.c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace solar::ir;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  Graph g;
  try {
    g = parse_graph_json(text, "fuzz.json");
  } catch (const solar::UserError&) {
    return 0;
  } catch (const solar::Unsupported&) {
    return 0;
  } catch (const std::exception& e) {
    bug("parse_graph_json threw a non-user error", e.what());
  }
  try {
    if (std::optional<std::string> why = why_invalid(g)) bug("read graph does not verify", *why);
    nlohmann::json j = graph_to_json(g);
    Graph g2 = parse_graph_json(j.dump(), "fuzz.json");
    std::string diff = testing::graph_diff(g, g2);
    if (!diff.empty()) bug("JSON round trip differs", diff + "\n" + j.dump());
    if (graph_to_json(g2) != j) bug("JSON writing is not stable", j.dump());
    // The text form may renumber tensors declared out of order; it must still read back and
    // print the same text.
    std::string printed = print_graph(g);
    Graph g3 = parse_graph(printed, "printed.txt");
    if (print_graph(g3) != printed) bug("text of a JSON graph is not stable", printed);
  } catch (const std::exception& e) {
    bug("round trip of a valid graph threw", e.what());
  }
  return 0;
}
