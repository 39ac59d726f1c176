// libFuzzer target: the text form. Any input either fails with a clear user error or parses
// into a graph whose printed text parses back to the same graph (and whose JSON form reads
// back to the same graph).
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

constexpr const char* kTarget = "fuzz_text_graph";

[[noreturn]] void bug(const char* what, const std::string& detail) {
  solar::fuzz::bug(kTarget, what, detail);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace solar::ir;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  std::optional<Graph> parsed =
      solar::fuzz::parse_or_reject(kTarget, [&] { return parse_graph(text, "fuzz.txt"); });
  if (!parsed) return 0;
  const Graph& g = *parsed;
  try {
    if (std::optional<std::string> why = why_invalid(g)) bug("parsed graph does not verify", *why);
    std::string printed = print_graph(g);
    Graph g2 = parse_graph(printed, "printed.txt");
    std::string diff = testing::graph_diff(g, g2);
    if (!diff.empty()) bug("text round trip differs", diff + "\n" + printed);
    if (print_graph(g2) != printed) bug("printing is not stable", printed);
    nlohmann::json j = graph_to_json(g);
    Graph g3 = parse_graph_json(j.dump(), "fuzz.json");
    diff = testing::graph_diff(g, g3);
    if (!diff.empty()) bug("JSON round trip differs", diff + "\n" + j.dump());
  } catch (const std::exception& e) {
    bug("round trip of a valid graph threw", e.what());
  }
  return 0;
}
