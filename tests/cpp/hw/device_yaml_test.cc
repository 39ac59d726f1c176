// parse_device_yaml: unit conversions of a valid file, and every rejection with its message
// and file:line.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "solar/hw/database.h"
#include "solar/util/errors.h"

namespace solar::hw {
namespace {

using ir::DType;

// Line numbers matter: the error cases below name the line they expect.
const std::string kToy = R"(schema: solar.device.v1
id: Toy
name: Toy accelerator
vendor: Nobody
kind: gpu
sms: {value: 4, source: sheet, flag: V}
sources: {sheet: "https://example.com/toy", calc: "arithmetic"}
units:
  - name: tc
    kind: tensor
    clock_mhz: {value: 1000, source: sheet, flag: V}
    peak:
      bf16: {tflops: 8, source: sheet, flag: V}
      i8: {tops: 16, source: sheet, flag: V}
  - name: sfu
    kind: special
    peak: {f32: {tops: 0.064, source: calc, flag: D, note: "4 SM x 16 x 1 GHz"}}
memory:
  - name: dram
    capacity: {gib: 16, source: sheet, flag: V}
    bandwidth: {gb_per_s: 500, source: sheet, flag: V}
  - name: smem
    capacity: {kib_per_sm: 100, source: sheet, flag: V}
)";

TEST(DeviceYaml, ParsesAndConvertsToBaseUnits) {
  Device d = parse_device_yaml(kToy, "toy.yaml");
  EXPECT_EQ(d.id, "Toy");
  EXPECT_EQ(d.kind, "gpu");
  EXPECT_EQ(d.file, "toy.yaml");
  EXPECT_EQ(d.num_sms, 4);
  EXPECT_EQ(d.sources.at("sheet"), "https://example.com/toy");
  ASSERT_EQ(d.units.size(), 2u);
  EXPECT_EQ(d.units[0].kind, UnitKind::Tensor);
  EXPECT_EQ(d.units[0].clock_mhz->value, 1000);                      // MHz, as written
  EXPECT_DOUBLE_EQ(d.units[0].peak.at(DType::BF16).value, 8e12);     // 8 TFLOP/s
  EXPECT_DOUBLE_EQ(d.units[0].peak.at(DType::I8).value, 16e12);      // 16 TOPS
  EXPECT_EQ(d.units[0].peak.at(DType::BF16).source, "sheet");
  EXPECT_EQ(d.units[0].peak.at(DType::BF16).flag, "V");
  EXPECT_DOUBLE_EQ(d.units[1].peak.at(DType::F32).value, 0.064e12);
  EXPECT_EQ(d.units[1].peak.at(DType::F32).note, "4 SM x 16 x 1 GHz");
  EXPECT_DOUBLE_EQ(d.dram().capacity->value, 16.0 * 1024 * 1024 * 1024);  // 16 GiB
  EXPECT_DOUBLE_EQ(d.dram().bandwidth->value, 500e9);                      // 500 GB/s
  const MemorySpec* smem = d.memory_level(MemoryLevel::Smem);
  ASSERT_NE(smem, nullptr);
  EXPECT_DOUBLE_EQ(smem->capacity->value, 4 * 100 * 1024.0);  // SMs x 100 KiB
  EXPECT_NE(smem->capacity->note.find("per SM: 100 KiB x 4 SMs"), std::string::npos);
}

TEST(DeviceYaml, ReadsTwoFourSparsePeaksOfATensorUnit) {
  std::string text = kToy;
  text.replace(text.find("  - name: sfu"), 0,
               "    sparse_2_4_peak:\n"
               "      bf16: {tflops: 16, source: sheet, flag: V, note: \"with sparsity\"}\n");
  Device d = parse_device_yaml(text, "toy.yaml");
  const ComputeUnit& tc = d.units[0];
  ASSERT_EQ(tc.sparse_2_4_peak.size(), 1u);
  EXPECT_DOUBLE_EQ(tc.sparse_2_4_peak.at(DType::BF16).value, 16e12);  // 2 x dense 8 TFLOP/s
  EXPECT_EQ(tc.sparse_2_4_peak.at(DType::BF16).note, "with sparsity");
  EXPECT_DOUBLE_EQ(*d.sparse_2_4_peak(UnitKind::Tensor, DType::BF16), 16e12);
  EXPECT_FALSE(d.sparse_2_4_peak(UnitKind::Tensor, DType::I8).has_value());  // dense only
  EXPECT_FALSE(d.sparse_2_4_peak(UnitKind::Tensor, DType::F16).has_value());  // no unit
  // The dense peak is unchanged.
  EXPECT_DOUBLE_EQ(*d.peak(UnitKind::Tensor, DType::BF16), 8e12);
}

TEST(DeviceYaml, AcceptsDtypeAliases) {
  std::string text = kToy;
  text.replace(text.find("bf16: {tflops"), 4, "bfloat16");
  Device d = parse_device_yaml(text, "toy.yaml");
  EXPECT_TRUE(d.units[0].peak.count(DType::BF16));
}

struct Bad {
  const char* name;
  std::string find;     // text of kToy to replace ("" appends)
  std::string replace;
  std::string message;  // a substring of the error
  int line;             // the 1-based line the error names
};

std::string mutate(const Bad& b) {
  std::string text = kToy;
  if (b.find.empty()) return text + b.replace;
  size_t at = text.find(b.find);
  EXPECT_NE(at, std::string::npos) << b.find;
  return text.replace(at, b.find.size(), b.replace);
}

class DeviceYamlError : public ::testing::TestWithParam<Bad> {};

TEST_P(DeviceYamlError, NamesTheProblemAndItsLine) {
  const Bad& b = GetParam();
  try {
    parse_device_yaml(mutate(b), "bad.yaml");
    FAIL() << "accepted: " << b.name;
  } catch (const UserError& e) {
    EXPECT_EQ(e.kind(), UserError::Kind::Parse);
    EXPECT_NE(std::string(e.what()).find(b.message), std::string::npos) << e.what();
    EXPECT_EQ(e.origin().file, "bad.yaml");
    EXPECT_EQ(e.origin().line, b.line) << e.what();
    EXPECT_NE(std::string(e.what()).find("bad.yaml:" + std::to_string(b.line) + ":"),
              std::string::npos)
        << e.what();
  }
}

const std::string kBf16 = "bf16: {tflops: 8, source: sheet, flag: V}";
const std::string kI8 = "      i8: {tops: 16, source: sheet, flag: V}\n";
const std::string kSparse = "    sparse_2_4_peak:\n";

INSTANTIATE_TEST_SUITE_P(
    Rejections, DeviceYamlError,
    ::testing::Values(
        Bad{"MissingSource", kBf16, "bf16: {tflops: 8, flag: V}", "missing key 'source'", 13},
        Bad{"UnknownSource", kBf16, "bf16: {tflops: 8, source: wiki, flag: V}",
            "unknown source 'wiki'", 13},
        Bad{"MissingFlag", kBf16, "bf16: {tflops: 8, source: sheet}", "missing key 'flag'", 13},
        Bad{"UnknownFlag", kBf16, "bf16: {tflops: 8, source: sheet, flag: X}",
            "unknown flag 'X'", 13},
        Bad{"DerivedWithoutNote", kBf16, "bf16: {tflops: 8, source: sheet, flag: D}",
            "flag D needs a 'note'", 13},
        Bad{"UnknownTopLevelKey", "", "color: red\n", "unknown key 'color'", 24},
        Bad{"UnknownUnitKey", "    kind: tensor\n", "    kind: tensor\n    cores: 4\n",
            "unknown key 'cores'", 11},
        Bad{"UnknownNumberKey", kBf16, "bf16: {tflops: 8, source: sheet, flag: V, sparse: 16}",
            "unknown key 'sparse'", 13},
        Bad{"UnknownDtype", kBf16, "bf17: {tflops: 8, source: sheet, flag: V}",
            "unknown dtype 'bf17'", 13},
        Bad{"DtypeTwiceViaAlias", "i8: {tops: 16", "bfloat16: {tflops: 16",
            "dtype bf16 given twice", 14},
        Bad{"NegativeValue", kBf16, "bf16: {tflops: -8, source: sheet, flag: V}",
            "must be positive", 13},
        Bad{"ZeroValue", "{gb_per_s: 500", "{gb_per_s: 0", "must be positive", 21},
        Bad{"NotANumber", kBf16, "bf16: {tflops: 8 TF, source: sheet, flag: V}",
            "is not a number", 13},
        Bad{"WrongUnitForFloat", kBf16, "bf16: {tops: 8, source: sheet, flag: V}",
            "'tops' is not a unit for this number; give one of tflops", 13},
        Bad{"WrongUnitForInt", "i8: {tops: 16", "i8: {tflops: 16",
            "'tflops' is not a unit for this number; give one of tops", 14},
        Bad{"NoDramBandwidth", "    bandwidth: {gb_per_s: 500, source: sheet, flag: V}\n", "",
            "memory 'dram': missing bandwidth", 19},
        Bad{"DramNotFirst", "  - name: dram", "  - name: l2", "starting with dram", 19},
        Bad{"UnknownMemoryLevel", "name: smem", "name: shmem", "unknown level 'shmem'", 22},
        Bad{"UnknownCapacityUnit", "kib_per_sm", "kilobytes", "unknown key 'kilobytes'", 23},
        Bad{"WrongSchema", "solar.device.v1", "solar.device.v2", "unsupported schema", 1},
        Bad{"MissingId", "id: Toy\n", "", "missing key 'id'", 1},
        Bad{"ReservedId", "id: Toy", "id: Host", "reserved", 2},
        Bad{"BadDeviceKind", "kind: gpu", "kind: fpga", "must be gpu, tpu or cpu", 5},
        Bad{"BadUnitKind", "kind: tensor", "kind: matrix", "tensor, vector or special", 10},
        Bad{"DuplicateKey", "vendor: Nobody\n", "vendor: Nobody\nvendor: Somebody\n",
            "duplicate key 'vendor'", 5},
        Bad{"DuplicateUnitName", "  - name: sfu", "  - name: tc", "duplicate unit name 'tc'", 15},
        Bad{"FractionalSms", "{value: 4,", "{value: 4.5,", "whole count", 6},
        // A 2:4 sparse peak lies in (dense, 2 x dense] of the same unit and dtype (line 16:
        // the sparse map's entry after the i8 dense peak).
        Bad{"SparseAboveTwiceDense", kI8, kI8 + kSparse + "      bf16: {tflops: 16.1, source: "
            "sheet, flag: V}\n", "sparse_2_4_peak bf16 = 16.1 tflops is above 2x the dense peak 8 "
            "tflops", 16},
        Bad{"SparseWithoutDensePeak", kI8, kI8 + kSparse + "      f8e4m3: {tflops: 16, source: "
            "sheet, flag: V}\n", "sparse_2_4_peak f8e4m3 has no dense peak of the same dtype", 16},
        Bad{"SparseNotAboveDense", kI8, kI8 + kSparse + "      i8: {tops: 16, source: sheet, "
            "flag: V}\n", "sparse_2_4_peak i8 = 16 tops is not above the dense peak 16 tops", 16},
        Bad{"SparseOnASpecialUnit", "    kind: special\n", "    kind: special\n" + kSparse +
            "      f32: {tops: 0.1, source: calc, flag: D, note: \"x\"}\n",
            "sparse_2_4_peak on a special unit", 17},
        Bad{"SparseWithoutSource", kI8, kI8 + kSparse + "      bf16: {tflops: 16, flag: V}\n",
            "unit 'tc': sparse_2_4_peak bf16: missing key 'source'", 16},
        // yaml-cpp reports an unclosed flow sequence on the line where it notices it.
        Bad{"MalformedYaml", "    peak:\n", "    peak: {bf16: [\n", "malformed YAML", 14}),
    [](const auto& info) { return std::string(info.param.name); });

// The full example in docs/devices.md is a valid file.
TEST(DeviceYaml, DocsExampleParses) {
  std::ifstream in(std::string(SOLAR_SOURCE_DIR) + "/docs/devices.md");
  ASSERT_TRUE(in);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string doc = ss.str();
  size_t begin = doc.find("```yaml\n");
  ASSERT_NE(begin, std::string::npos);
  begin += 8;
  size_t end = doc.find("```", begin);
  Device d = parse_device_yaml(doc.substr(begin, end - begin), "docs/devices.md");
  EXPECT_EQ(d.id, "H100_SXM");
  EXPECT_DOUBLE_EQ(*d.peak(UnitKind::Tensor, DType::BF16), 989.4e12);
  EXPECT_DOUBLE_EQ(*d.peak(UnitKind::Tensor, DType::F64), 66.9e12);
  EXPECT_DOUBLE_EQ(*d.sparse_2_4_peak(UnitKind::Tensor, DType::BF16), 1978.8e12);  // 2 x dense
  EXPECT_DOUBLE_EQ(d.memory_level(MemoryLevel::Smem)->capacity->value, 132.0 * 228 * 1024);
}

TEST(DeviceYaml, RejectsANonMapping) {
  EXPECT_THROW(parse_device_yaml("- just\n- a list\n", "list.yaml"), UserError);
  EXPECT_THROW(parse_device_yaml("", "empty.yaml"), UserError);
}

// ---- interconnect ---------------------------------------------------------------------------

// kToy with an interconnect section appended (from line 24).
std::string with_interconnect(const std::string& section) { return kToy + section; }

const std::string kSwitched = R"(interconnect:
  scale_up:
    fabric: "ToyLink to a toy switch"
    topology: switched
    bandwidth: {gb_per_s: 300, source: sheet, flag: D, note: "600 bidirectional / 2"}
    links: {value: 12, source: sheet, flag: V}
    max_devices: {value: 8, source: sheet, flag: V}
    in_network_reduction: {name: "Toy SHARP", source: sheet, flag: V}
    latency: {ns: 500, source: sheet, flag: V}
  scale_out:
    fabric: "one NIC"
    bandwidth: {gb_per_s: 25, source: calc, flag: D, note: "200 Gb/s / 8"}
)";

TEST(DeviceYamlInterconnect, ReadsScaleUpAndScaleOut) {
  Device d = parse_device_yaml(with_interconnect(kSwitched), "toy.yaml");
  ASSERT_TRUE(d.interconnect.has_value());
  const DeviceScaleUp& up = *d.interconnect->scale_up;
  EXPECT_EQ(up.link.topology, Topology::Switched);
  EXPECT_EQ(up.link.fabric, "ToyLink to a toy switch");
  EXPECT_DOUBLE_EQ(up.link.bandwidth.value, 300e9);  // bytes/s per direction
  EXPECT_EQ(up.link.links->value, 12);
  EXPECT_EQ(up.max_devices->value, 8);
  EXPECT_EQ(up.link.reduction->name, "Toy SHARP");
  EXPECT_EQ(up.link.reduction->min_group(), 2);  // no from_devices: any group
  EXPECT_DOUBLE_EQ(up.link.latency->value, 500e-9);
  EXPECT_DOUBLE_EQ(d.interconnect->scale_out->bandwidth.value, 25e9);
  EXPECT_FALSE(parse_device_yaml(kToy, "toy.yaml").interconnect.has_value());
}

TEST(DeviceYamlInterconnect, TorusAxesAndWraparound) {
  Device d = parse_device_yaml(with_interconnect(R"(interconnect:
  scale_up:
    fabric: ICI
    topology: torus
    bandwidth: {gb_per_s: 600, source: sheet, flag: V}
    link_bandwidth: {gb_per_s: 100, source: sheet, flag: V}
    torus:
      axes: {value: 3, source: sheet, flag: V}
      wraparound_from: {value: 4, source: calc, flag: E, note: "full cubes"}
      wraparound_scope: slice
)"), "toy.yaml");
  const DeviceScaleUp& up = *d.interconnect->scale_up;
  EXPECT_EQ(up.torus_axes->value, 3);
  EXPECT_EQ(up.wraparound_from->value, 4);
  EXPECT_EQ(up.wraparound_scope, WrapScope::Slice);
  EXPECT_FALSE(d.interconnect->scale_out.has_value());
}

struct BadLink {
  const char* name;
  std::string find;
  std::string replace;
  std::string message;
  int line;
};

class DeviceYamlInterconnectError : public ::testing::TestWithParam<BadLink> {};

TEST_P(DeviceYamlInterconnectError, NamesTheProblemAndItsLine) {
  const BadLink& b = GetParam();
  std::string text = with_interconnect(kSwitched);
  size_t at = text.find(b.find);
  ASSERT_NE(at, std::string::npos) << b.find;
  text.replace(at, b.find.size(), b.replace);
  try {
    parse_device_yaml(text, "bad.yaml");
    FAIL() << "accepted: " << b.name;
  } catch (const UserError& e) {
    EXPECT_EQ(e.kind(), UserError::Kind::Parse);
    EXPECT_NE(std::string(e.what()).find(b.message), std::string::npos) << e.what();
    EXPECT_EQ(e.origin().line, b.line) << e.what();
  }
}

INSTANTIATE_TEST_SUITE_P(
    Rejections, DeviceYamlInterconnectError,
    ::testing::Values(
        BadLink{"UnknownKey", "    links:", "    ports:", "unknown key 'ports'", 29},
        BadLink{"BandwidthWithoutSource", "{gb_per_s: 300, source: sheet, flag: D,",
                "{gb_per_s: 300, flag: D,", "interconnect: scale_up: bandwidth: missing key 'source'",
                28},
        BadLink{"BandwidthAsACount", "{gb_per_s: 300,", "{value: 300,",
                "'value' is not a unit for this number; give one of tb_per_s, gb_per_s", 28},
        BadLink{"ZeroBandwidth", "{gb_per_s: 25,", "{gb_per_s: 0,", "must be positive", 35},
        BadLink{"UnknownTopology", "topology: switched", "topology: ring", "topology must be", 27},
        BadLink{"ReductionWithoutASwitch", "topology: switched", "topology: pcie",
                "'in_network_reduction' needs a switch", 31},
        BadLink{"ReductionWithoutSource", "{name: \"Toy SHARP\", source: sheet, flag: V}",
                "{name: \"Toy SHARP\", flag: V}", "in_network_reduction: missing key 'source'", 31},
        BadLink{"Empty", "  scale_up:", "  scale_upp:", "unknown key 'scale_upp'", 25},
        BadLink{"ScaleOutWithoutFabric", "    fabric: \"one NIC\"\n", "",
                "interconnect: scale_out: missing key 'fabric'", 34}),
    [](const auto& info) { return std::string(info.param.name); });

// A torus without its axes, and a mesh whose peers need more than the device's bandwidth (the
// reduction line of kSwitched removed: no mesh or torus has one).
TEST(DeviceYamlInterconnect, TopologyKeysMustAgree) {
  std::string base = with_interconnect(kSwitched);
  base.erase(base.find("    in_network_reduction:"), base.find("    latency:") - base.find("    in_network_reduction:"));
  auto error = [&](const std::string& topology) {
    std::string text = base;
    text.replace(text.find("topology: switched\n"), 19, topology);
    try {
      parse_device_yaml(text, "bad.yaml");
    } catch (const UserError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_NE(error("topology: torus\n    link_bandwidth: {gb_per_s: 50, source: sheet, flag: V}\n")
                .find("bad.yaml:26: interconnect: scale_up: a torus needs 'torus: {axes: ...}'"),
            std::string::npos);
  EXPECT_NE(error("topology: mesh\n    peer_bandwidth: {gb_per_s: 50, source: sheet, flag: V}\n")
                .find("bad.yaml:28: interconnect: scale_up: 7 x peer_bandwidth = 350 GB/s is more "
                      "than the device's bandwidth 300 GB/s"),
            std::string::npos);
  EXPECT_EQ(error("topology: mesh\n    peer_bandwidth: {gb_per_s: 40, source: sheet, flag: V}\n"),
            "accepted");  // 7 x 40 = 280 <= 300
}

}  // namespace
}  // namespace solar::hw
