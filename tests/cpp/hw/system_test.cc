// Systems: the built-in arch/systems/*.yaml files against the vendors' figures, the inline
// form NxDEVICE from a device's interconnect section, --nodes, and what --system resolves to.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "solar/hw/system.h"
#include "solar/util/errors.h"

namespace solar::hw {
namespace {

using ::testing::HasSubstr;

constexpr double kG = 1e9;  // GB/s

const DeviceDb& devices() {
  static const DeviceDb db = DeviceDb::load({});
  return db;
}

const SystemDb& systems() {
  static const SystemDb db = SystemDb::builtin();
  return db;
}

TEST(BuiltinSystems, TheEightIdsLoadAndNameKnownDevices) {
  EXPECT_EQ(systems().ids(),
            (std::vector<std::string>{"DGX_A100", "DGX_B200", "DGX_H100", "GB200_NVL72",
                                      "HGX_H200", "MI300X_8", "TPU_v5e_16x16", "TPU_v5p_4x4x4"}));
  for (const auto& [name, text] : builtin_system_files()) {
    SCOPED_TRACE(std::string(name));
    System s = parse_system_yaml(text, name);
    EXPECT_EQ(std::string(name), s.id + ".yaml");
    EXPECT_NO_THROW(devices().get(s.device));
    EXPECT_FALSE(s.notes.empty());
    EXPECT_EQ(s.nodes, 1);
    ASSERT_TRUE(s.scale_out.has_value());  // every built-in can take --nodes
    // Every number names a source of the file and a flag; D and E say why.
    auto check = [&](const Sourced& n) {
      EXPECT_TRUE(s.sources.count(n.source)) << n.source;
      EXPECT_TRUE(n.flag == "V" || n.flag == "D" || n.flag == "E") << n.flag;
      if (n.flag != "V") EXPECT_FALSE(n.note.empty());
    };
    check(s.scale_up.link.bandwidth);
    if (s.scale_up.link.peer_bandwidth) check(*s.scale_up.link.peer_bandwidth);
    if (s.scale_up.link.link_bandwidth) check(*s.scale_up.link.link_bandwidth);
    if (s.scale_up.link.links) check(*s.scale_up.link.links);
    check(s.scale_out->bandwidth);
    // No built-in publishes a hop latency (none was found).
    EXPECT_FALSE(s.scale_up.link.latency.has_value());
    EXPECT_FALSE(s.scale_out->latency.has_value());
  }
}

// Per GPU per direction: half the vendors' bidirectional headlines.
TEST(BuiltinSystems, ReferenceNumbers) {
  struct Row {
    const char* id;
    const char* device;
    int devices;
    Topology topology;
    double up_gb, out_gb;
    int reduce_from;  // 0: no in-switch reduction
  };
  const Row rows[] = {
      {"DGX_A100", "A100_SXM_80GB", 8, Topology::Switched, 600 / 2.0, 200 / 8.0, 0},
      {"DGX_H100", "H100_SXM", 8, Topology::Switched, 900 / 2.0, 400 / 8.0, 5},
      {"HGX_H200", "H200", 8, Topology::Switched, 900 / 2.0, 400 / 8.0, 5},
      {"DGX_B200", "B200", 8, Topology::Switched, 1800 / 2.0, 400 / 8.0, 5},
      {"GB200_NVL72", "GB200", 72, Topology::Switched, 1800 / 2.0, 400 / 8.0, 5},
      {"MI300X_8", "MI300X", 8, Topology::Mesh, 7 * 128 / 2.0, 400 / 8.0, 0},
      {"TPU_v5p_4x4x4", "TPU_v5p", 64, Topology::Torus, 1200 / 2.0, 50 / 8.0, 0},
      {"TPU_v5e_16x16", "TPU_v5e", 256, Topology::Torus, 400 / 2.0, 2 * 100 / 8.0 / 8, 0},
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(r.id);
    const System& s = systems().get(r.id);
    EXPECT_EQ(s.device, r.device);
    EXPECT_EQ(s.scale_up.devices, r.devices);
    EXPECT_EQ(s.scale_up.link.topology, r.topology);
    EXPECT_DOUBLE_EQ(s.scale_up.link.bandwidth.value, r.up_gb * kG);
    EXPECT_DOUBLE_EQ(s.scale_out->bandwidth.value, r.out_gb * kG);
    EXPECT_EQ(s.scale_up.link.reduction.has_value(), r.reduce_from > 0);
    if (r.reduce_from > 0) EXPECT_EQ(s.scale_up.link.reduction->min_group(), r.reduce_from);
  }
  EXPECT_DOUBLE_EQ(systems().get("MI300X_8").scale_up.link.peer_bandwidth->value, 128 / 2.0 * kG);
  const System& v5p = systems().get("TPU_v5p_4x4x4");
  EXPECT_EQ(v5p.scale_up.torus_dims, (std::vector<int>{4, 4, 4}));
  EXPECT_EQ(v5p.scale_up.wraparound, std::vector<bool>(3, true));
  EXPECT_DOUBLE_EQ(v5p.scale_up.link.link_bandwidth->value, 1200 / 2.0 / 6 * kG);
  const System& v5e = systems().get("TPU_v5e_16x16");
  EXPECT_EQ(v5e.scale_up.torus_dims, (std::vector<int>{16, 16}));
  EXPECT_DOUBLE_EQ(v5e.scale_up.link.link_bandwidth->value, 400 / 2.0 / 4 * kG);
}

// A built-in system and the inline form of its device agree on every rate.
TEST(BuiltinSystems, AgreeWithTheirDevicesInterconnect) {
  for (const std::string& id : systems().ids()) {
    SCOPED_TRACE(id);
    const System& s = systems().get(id);
    const Device& d = devices().get(s.device);
    ASSERT_TRUE(d.interconnect && d.interconnect->scale_up);
    const DeviceScaleUp& up = *d.interconnect->scale_up;
    EXPECT_EQ(up.link.topology, s.scale_up.link.topology);
    EXPECT_DOUBLE_EQ(up.link.bandwidth.value, s.scale_up.link.bandwidth.value);
    EXPECT_EQ(up.link.reduction.has_value(), s.scale_up.link.reduction.has_value());
    if (up.link.peer_bandwidth)
      EXPECT_DOUBLE_EQ(up.link.peer_bandwidth->value, s.scale_up.link.peer_bandwidth->value);
    if (up.link.link_bandwidth)
      EXPECT_DOUBLE_EQ(up.link.link_bandwidth->value, s.scale_up.link.link_bandwidth->value);
    ASSERT_TRUE(up.max_devices.has_value());
    EXPECT_LE(s.scale_up.devices, up.max_devices->value);
    EXPECT_DOUBLE_EQ(d.interconnect->scale_out->bandwidth.value, s.scale_out->bandwidth.value);
    // The inline form with the system's shape gives the same domain.
    std::string spec;
    if (s.scale_up.link.topology == Topology::Torus) {
      for (int e : s.scale_up.torus_dims) spec += std::to_string(e) + "x";
    } else {
      spec = std::to_string(s.scale_up.devices) + "x";
    }
    System inl = parse_system_spec(spec + s.device, 1, devices());
    EXPECT_EQ(inl.scale_up.devices, s.scale_up.devices);
    EXPECT_EQ(inl.scale_up.wraparound, s.scale_up.wraparound);
  }
}

TEST(SystemSpec, OneDomainOfNDevicesWithTheDevicesLink) {
  System s = parse_system_spec("8xH100_SXM", 1, devices());
  EXPECT_EQ(s.id, "8xH100_SXM");
  EXPECT_EQ(s.device, "H100_SXM");
  EXPECT_EQ(s.nodes, 1);
  EXPECT_EQ(s.scale_up.devices, 8);
  EXPECT_EQ(s.scale_up.link.topology, Topology::Switched);
  EXPECT_DOUBLE_EQ(s.scale_up.link.bandwidth.value, 450 * kG);
  EXPECT_TRUE(s.scale_up.link.reduction.has_value());
  EXPECT_EQ(s.file, "inline:8xH100_SXM");
  // The device's sources that the links cite, and only those.
  EXPECT_TRUE(s.sources.count(s.scale_up.link.bandwidth.source));
  EXPECT_TRUE(s.sources.count(s.scale_up.link.reduction->source));
  EXPECT_TRUE(s.sources.count(s.scale_out->bandwidth.source));
  EXPECT_FALSE(s.sources.count("hpctech"));  // the datasheet of its compute figures

  System four = parse_system_spec("4xh100_sxm", 4, devices());  // ids are case-insensitive
  EXPECT_EQ(four.id, "4xH100_SXM");
  EXPECT_EQ(four.nodes, 4);
  EXPECT_EQ(four.devices(), 16);
  EXPECT_DOUBLE_EQ(four.scale_out->bandwidth.value, 50 * kG);
}

TEST(SystemSpec, TorusShapesAndTheirWraparound) {
  System v5p = parse_system_spec("4x4x8xTPU_v5p", 1, devices());
  EXPECT_EQ(v5p.scale_up.devices, 128);
  EXPECT_EQ(v5p.scale_up.wraparound, std::vector<bool>(3, true));  // full cubes
  EXPECT_EQ(parse_system_spec("2x2x4xTPU_v5p", 1, devices()).scale_up.wraparound,
            std::vector<bool>(3, false));  // not a cube: no optical wraparound
  EXPECT_EQ(parse_system_spec("8x16xTPU_v5e", 1, devices()).scale_up.wraparound,
            (std::vector<bool>{false, true}));  // v5e: the axis of 16 wraps
}

TEST(SystemSpec, Refusals) {
  auto error = [](const std::string& spec, int nodes) -> std::pair<UserError::Kind, std::string> {
    try {
      parse_system_spec(spec, nodes, devices());
    } catch (const UserError& e) {
      return {e.kind(), e.what()};
    }
    return {UserError::Kind::Io, "accepted"};
  };
  using K = UserError::Kind;
  auto [k1, m1] = error("8xV100_SXM2_32GB", 1);
  EXPECT_EQ(k1, K::BadArgument);
  EXPECT_THAT(m1, HasSubstr("device V100_SXM2_32GB has no interconnect.scale_up"));
  auto [k2, m2] = error("16xH100_SXM", 1);
  EXPECT_EQ(k2, K::BadArgument);
  EXPECT_THAT(m2, HasSubstr("at most 8 devices"));
  auto [k3, m3] = error("64xTPU_v5p", 1);
  EXPECT_THAT(m3, HasSubstr("3-axis torus: give the slice's shape, e.g. 4x4x4xTPU_v5p"));
  auto [k4, m4] = error("2x4xH100_SXM", 1);
  EXPECT_THAT(m4, HasSubstr("not a torus: give one count"));
  auto [k5, m5] = error("4xL40S", 2);
  EXPECT_EQ(k5, K::BadArgument);
  EXPECT_THAT(m5, HasSubstr("no scale-out link: --nodes 2"));
  auto [k6, m6] = error("8xZ9000", 1);
  EXPECT_EQ(k6, K::UnknownDevice);
  auto [k7, m7] = error("0xH100_SXM", 1);
  EXPECT_THAT(m7, HasSubstr("at least 1"));
  EXPECT_TRUE(is_system_spec("8xMI300X"));
  EXPECT_TRUE(is_system_spec("4x4x4xTPU_v5p"));
  EXPECT_FALSE(is_system_spec("DGX_H100"));
  EXPECT_FALSE(is_system_spec("8x"));
  EXPECT_FALSE(is_system_spec("MI300X"));
}

TEST(WithNodes, NeedsAScaleOutLinkForMoreThanOne) {
  System s = with_nodes(systems().get("DGX_H100"), 2);
  EXPECT_EQ(s.devices(), 16);
  try {
    with_nodes(s, 0);
    FAIL();
  } catch (const UserError& e) {
    EXPECT_EQ(e.kind(), UserError::Kind::BadArgument);
    EXPECT_THAT(e.what(), HasSubstr("at least 1 node"));
  }
}

TEST(ResolveSystem, BuiltinIdInlineFormOrFile) {
  System a = resolve_system("dgx_h100", std::nullopt, devices(), systems());
  EXPECT_EQ(a.id, "DGX_H100");
  System b = resolve_system("DGX_H100", 2, devices(), systems());
  EXPECT_EQ(b.nodes, 2);
  System c = resolve_system("8xMI300X", 3, devices(), systems());
  EXPECT_EQ(c.devices(), 24);
  EXPECT_EQ(c.scale_up.link.topology, Topology::Mesh);

  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "solar_system_test";
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "box.yaml").string();
  {
    std::ofstream out(path);
    out << "schema: solar.system.v1\nid: BOX\nname: Box\ndevice: l40s\nsources: {s: x}\n"
           "scale_up: {fabric: PCIe, topology: pcie, devices: 4,\n"
           "  bandwidth: {gb_per_s: 31.5, source: s, flag: V}}\n";
  }
  System f = resolve_system(path, std::nullopt, devices(), systems());
  EXPECT_EQ(f.id, "BOX");
  EXPECT_EQ(f.device, "L40S");  // as the device database spells it
  EXPECT_EQ(f.file, path);
  try {
    resolve_system(path, 2, devices(), systems());
    FAIL();
  } catch (const UserError& e) {
    EXPECT_THAT(e.what(), HasSubstr("no scale-out link"));
  }
  {
    std::ofstream out(path);
    out << "schema: solar.system.v1\nid: BOX\nname: Box\ndevice: Z9000\nsources: {s: x}\n"
           "scale_up: {fabric: PCIe, topology: pcie, devices: 4,\n"
           "  bandwidth: {gb_per_s: 31.5, source: s, flag: V}}\n";
  }
  try {
    resolve_system(path, std::nullopt, devices(), systems());
    FAIL();
  } catch (const UserError& e) {
    EXPECT_EQ(e.kind(), UserError::Kind::UnknownDevice);
    EXPECT_THAT(e.what(), HasSubstr("system 'BOX'"));
    EXPECT_THAT(e.what(), HasSubstr("unknown device 'Z9000'"));
  }
  std::filesystem::remove_all(dir);
  try {
    resolve_system(path, std::nullopt, devices(), systems());
    FAIL();
  } catch (const UserError& e) {
    EXPECT_EQ(e.kind(), UserError::Kind::Io);
  }
}

TEST(ResolveSystem, UnknownIdListsTheSystemsAndSuggests) {
  try {
    resolve_system("DGX_H10", std::nullopt, devices(), systems());
    FAIL();
  } catch (const UserError& e) {
    EXPECT_EQ(e.kind(), UserError::Kind::UnknownDevice);
    EXPECT_THAT(e.what(), HasSubstr("unknown system 'DGX_H10'; did you mean DGX_H100?"));
    EXPECT_THAT(e.what(), HasSubstr("known systems: DGX_A100, DGX_B200"));
    EXPECT_THAT(e.what(), HasSubstr("NxDEVICE"));
  }
}

}  // namespace
}  // namespace solar::hw
