// libFuzzer target: the JSON form. Any input either fails with a clear user error or reads
// into a graph whose JSON form reads back to the same JSON, and whose text form prints
// stably.
#include <cstdint>
#include <exception>
#include <nlohmann/json.hpp>
#include <string_view>

#include "fuzz_common.h"
#include "graph_equal.h"
#include "solar/ir/json.h"
#include "solar/ir/text.h"
#include "solar/ir/verify.h"

namespace {

constexpr const char* kTarget = "fuzz_json_graph";

[[noreturn]] void bug(const char* what, const std::string& detail) {
  solar::fuzz::bug(kTarget, what, detail);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace solar::ir;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  std::optional<Graph> parsed =
      solar::fuzz::parse_or_reject(kTarget, [&] { return parse_graph_json(text, "fuzz.json"); });
  if (!parsed) return 0;
  const Graph& g = *parsed;
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
