// parse_system_yaml: a valid file in base units, every topology's keys, and every rejection
// with its message and file:line.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "solar/hw/system.h"
#include "solar/util/errors.h"

namespace solar::hw {
namespace {

// Line numbers matter: the error cases below name the line they expect.
const std::string kToy = R"(schema: solar.system.v1
id: TOY_8
name: Toy box
device: H100_SXM
nodes: 2
sources: {sheet: "https://example.com/toy", calc: "arithmetic"}
scale_up:
  fabric: "ToyLink to a toy switch"
  topology: switched
  devices: 8
  bandwidth: {gb_per_s: 450, source: sheet, flag: D, note: "900 bidirectional / 2"}
  links: {value: 18, source: sheet, flag: V}
  in_network_reduction:
    name: "Toy SHARP"
    source: sheet
    flag: V
    from_devices: {value: 5, source: calc, flag: E, note: "a guess"}
  latency: {us: 0.5, source: sheet, flag: V}
scale_out:
  fabric: "one toy NIC per device"
  bandwidth: {gb_per_s: 50, source: sheet, flag: V}
  latency: {ns: 900, source: calc, flag: E, note: "a guess"}
notes: A toy.
)";

TEST(SystemYaml, ParsesAndConvertsToBaseUnits) {
  System s = parse_system_yaml(kToy, "toy.yaml");
  EXPECT_EQ(s.id, "TOY_8");
  EXPECT_EQ(s.name, "Toy box");
  EXPECT_EQ(s.device, "H100_SXM");
  EXPECT_EQ(s.nodes, 2);
  EXPECT_EQ(s.scale_up.devices, 8);
  EXPECT_EQ(s.devices(), 16);  // nodes x devices per domain
  EXPECT_EQ(s.file, "toy.yaml");
  const ScaleUpLink& up = s.scale_up.link;
  EXPECT_EQ(up.topology, Topology::Switched);
  EXPECT_EQ(up.fabric, "ToyLink to a toy switch");
  EXPECT_DOUBLE_EQ(up.bandwidth.value, 450e9);  // bytes/s per direction
  EXPECT_EQ(up.bandwidth.flag, "D");
  EXPECT_EQ(up.bandwidth.note, "900 bidirectional / 2");
  EXPECT_EQ(up.links->value, 18);
  ASSERT_TRUE(up.reduction.has_value());
  EXPECT_EQ(up.reduction->name, "Toy SHARP");
  EXPECT_EQ(up.reduction->min_group(), 5);
  EXPECT_DOUBLE_EQ(up.latency->value, 0.5e-6);  // seconds
  ASSERT_TRUE(s.scale_out.has_value());
  EXPECT_DOUBLE_EQ(s.scale_out->bandwidth.value, 50e9);
  EXPECT_DOUBLE_EQ(s.scale_out->latency->value, 900e-9);
  EXPECT_EQ(s.sources.at("sheet"), "https://example.com/toy");
  EXPECT_EQ(s.notes, "A toy.");
}

TEST(SystemYaml, MeshAndTorusDomains) {
  std::string mesh = kToy;
  mesh.replace(mesh.find("topology: switched"), 18, "topology: mesh");
  mesh.replace(mesh.find("  in_network_reduction:"), mesh.find("  latency: {us") - mesh.find("  in_network_reduction:"),
               "  peer_bandwidth: {gb_per_s: 64, source: sheet, flag: V}\n");
  System m = parse_system_yaml(mesh, "mesh.yaml");
  EXPECT_EQ(m.scale_up.link.topology, Topology::Mesh);
  EXPECT_DOUBLE_EQ(m.scale_up.link.peer_bandwidth->value, 64e9);

  std::string torus = kToy;
  torus.replace(torus.find("topology: switched"), 18, "topology: torus");
  torus.replace(torus.find("  devices: 8\n"), 12,
                "  torus: {dims: [2, 4], wraparound: [false, true]}\n"
                "  link_bandwidth: {gb_per_s: 100, source: sheet, flag: V}\n");
  torus.replace(torus.find("  in_network_reduction:"), torus.find("  latency: {us") - torus.find("  in_network_reduction:"), "");
  System t = parse_system_yaml(torus, "torus.yaml");
  EXPECT_EQ(t.scale_up.devices, 8);  // 2 x 4
  EXPECT_EQ(t.scale_up.torus_dims, (std::vector<int>{2, 4}));
  EXPECT_EQ(t.scale_up.wraparound, (std::vector<bool>{false, true}));
  EXPECT_DOUBLE_EQ(t.scale_up.link.link_bandwidth->value, 100e9);
}

struct Bad {
  const char* name;
  std::string find;  // text of kToy to replace ("" appends)
  std::string replace;
  std::string message;
  int line;
};

std::string mutate(const Bad& b) {
  std::string text = kToy;
  if (b.find.empty()) return text + b.replace;
  size_t at = text.find(b.find);
  EXPECT_NE(at, std::string::npos) << b.find;
  return text.replace(at, b.find.size(), b.replace);
}

class SystemYamlError : public ::testing::TestWithParam<Bad> {};

TEST_P(SystemYamlError, NamesTheProblemAndItsLine) {
  const Bad& b = GetParam();
  try {
    parse_system_yaml(mutate(b), "bad.yaml");
    FAIL() << "accepted: " << b.name;
  } catch (const UserError& e) {
    EXPECT_EQ(e.kind(), UserError::Kind::Parse);
    EXPECT_NE(std::string(e.what()).find(b.message), std::string::npos) << e.what();
    EXPECT_EQ(e.origin().file, "bad.yaml");
    EXPECT_EQ(e.origin().line, b.line) << e.what();
  }
}

const std::string kUpBw = "bandwidth: {gb_per_s: 450, source: sheet, flag: D, note: \"900 bidirectional / 2\"}";

INSTANTIATE_TEST_SUITE_P(
    Rejections, SystemYamlError,
    ::testing::Values(
        Bad{"WrongSchema", "solar.system.v1", "solar.device.v1", "unsupported schema", 1},
        Bad{"InlineLookingId", "id: TOY_8", "id: 8xTOY", "reads as the inline form", 2},
        Bad{"MissingDevice", "device: H100_SXM\n", "", "missing key 'device'", 1},
        Bad{"UnknownTopLevelKey", "", "color: red\n", "unknown key 'color'", 24},
        Bad{"ZeroNodes", "nodes: 2", "nodes: 0", "at least 1", 5},
        Bad{"MissingSourceOnBandwidth", kUpBw, "bandwidth: {gb_per_s: 450, flag: V}",
            "scale_up: bandwidth: missing key 'source'", 11},
        Bad{"UnknownSource", kUpBw, "bandwidth: {gb_per_s: 450, source: wiki, flag: V}",
            "unknown source 'wiki'", 11},
        Bad{"DerivedWithoutNote", kUpBw, "bandwidth: {gb_per_s: 450, source: sheet, flag: D}",
            "flag D needs a 'note'", 11},
        Bad{"BandwidthInTheWrongUnit", kUpBw, "bandwidth: {gb: 450, source: sheet, flag: V}",
            "'gb' is not a unit for this number", 11},
        Bad{"LatencyInTheWrongUnit", "latency: {us: 0.5", "latency: {gb_per_s: 0.5",
            "'gb_per_s' is not a unit for this number; give one of us, ns", 18},
        Bad{"UnknownTopology", "topology: switched", "topology: ring",
            "topology must be switched, mesh, torus or pcie", 9},
        Bad{"UnknownDomainKey", "  devices: 8\n", "  devices: 8\n  gpus: 8\n", "unknown key 'gpus'",
            11},
        Bad{"MissingDevices", "  devices: 8\n", "", "missing key 'devices'", 8},
        Bad{"PeerBandwidthOffAMesh", "  devices: 8\n",
            "  devices: 8\n  peer_bandwidth: {gb_per_s: 64, source: sheet, flag: V}\n",
            "'peer_bandwidth' is for a mesh, not a switched domain", 11},
        Bad{"MeshWithoutPeerBandwidth", "topology: switched\n", "topology: mesh\n",
            "a mesh needs 'peer_bandwidth'", 8},
        Bad{"TorusWithoutShape", "topology: switched\n", "topology: torus\n",
            "a torus needs 'link_bandwidth'", 8},
        Bad{"TorusKeyOnASwitch", "  devices: 8\n", "  devices: 8\n  torus: {dims: [8], wraparound: true}\n",
            "'torus' describes a torus, not a switched domain", 11},
        Bad{"ReductionOnAMesh", "topology: switched\n  devices: 8\n",
            "topology: mesh\n  devices: 8\n  peer_bandwidth: {gb_per_s: 50, source: sheet, flag: V}\n",
            "'in_network_reduction' needs a switch", 14},
        Bad{"ReductionWithoutFlag", "    flag: V\n    from_devices", "    from_devices",
            "in_network_reduction: missing key 'flag'", 14},
        Bad{"ReductionFromOne", "{value: 5, source: calc", "{value: 1, source: calc",
            "whole count of at least 2", 17},
        Bad{"PeerAboveDevice", "topology: switched\n  devices: 8\n",
            "topology: mesh\n  devices: 8\n  peer_bandwidth: {gb_per_s: 500, source: sheet, flag: V}\n",
            "is more than the device's bandwidth", 11},
        Bad{"NodesWithoutScaleOut", "scale_out:\n  fabric: \"one toy NIC per device\"\n"
            "  bandwidth: {gb_per_s: 50, source: sheet, flag: V}\n"
            "  latency: {ns: 900, source: calc, flag: E, note: \"a guess\"}\n", "",
            "need 'scale_out'", 5},
        Bad{"DuplicateKey", "name: Toy box\n", "name: Toy box\nname: Other\n", "duplicate key 'name'",
            4},
        // yaml-cpp reports an unclosed flow sequence on the line where it notices it.
        Bad{"MalformedYaml", "scale_up:\n", "scale_up: [\n", "malformed YAML", 9}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(SystemYamlTorus, ShapeAndRatesMustAgree) {
  const std::string base = R"(schema: solar.system.v1
id: T
name: T
device: TPU_v5p
sources: {s: "x"}
scale_up:
  fabric: ICI
  topology: torus
  devices: 8
  torus: {dims: [2, 2, 2], wraparound: [true, true]}
  bandwidth: {gb_per_s: 600, source: s, flag: V}
  link_bandwidth: {gb_per_s: 100, source: s, flag: V}
)";
  auto error = [](const std::string& text) -> std::string {
    try {
      parse_system_yaml(text, "t.yaml");
    } catch (const UserError& e) {
      return e.what();
    }
    return "accepted";
  };
  EXPECT_NE(error(base).find("wraparound lists 2 axes, dims 3"), std::string::npos);
  std::string fixed = base;
  fixed.replace(fixed.find("[true, true]"), 12, "true");
  EXPECT_EQ(parse_system_yaml(fixed, "t.yaml").scale_up.wraparound, std::vector<bool>(3, true));
  std::string wrong_count = fixed;
  wrong_count.replace(wrong_count.find("devices: 8"), 10, "devices: 9");
  EXPECT_NE(error(wrong_count).find("devices 9 is not the torus's 8"), std::string::npos);
  std::string fast_links = fixed;
  fast_links.replace(fast_links.find("gb_per_s: 100"), 13, "gb_per_s: 200");
  EXPECT_NE(error(fast_links).find("6 links x link_bandwidth 200 GB/s is more than"),
            std::string::npos);
}

// The example in docs/parallel.md is a valid file.
TEST(SystemYaml, DocsExampleParses) {
  std::ifstream in(std::string(SOLAR_SOURCE_DIR) + "/docs/parallel.md");
  ASSERT_TRUE(in);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string doc = ss.str();
  size_t begin = doc.find("```yaml\n");
  ASSERT_NE(begin, std::string::npos);
  begin += 8;
  const size_t end = doc.find("```", begin);
  System s = parse_system_yaml(doc.substr(begin, end - begin), "docs/parallel.md");
  EXPECT_EQ(s.device, "H100_SXM");
  EXPECT_DOUBLE_EQ(s.scale_up.link.bandwidth.value, 450e9);
}

}  // namespace
}  // namespace solar::hw
