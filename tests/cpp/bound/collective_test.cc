// Collective lower bounds: the bytes per device per direction on each link for every kind on
// every topology (switched with and without in-switch reduction, mesh, torus with and without
// wraparound, PCIe), hierarchical groups across scale-up and scale-out, latency floors, and
// the refusals. Expected values are the formulas of docs/parallel.md.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "solar/bound/collective.h"
#include "solar/hw/system.h"
#include "solar/util/errors.h"

namespace solar::bound {
namespace {

using ::testing::HasSubstr;
using CK = CollectiveKind;

constexpr double S = 1e9;  // payload: 1 GB
constexpr double kB = 450e9, kNic = 50e9, kPeer = 64e9, kLink = 100e9;

hw::Sourced rate(double v) { return hw::Sourced{v, "spec", "V", ""}; }

// A switched domain of `devices` at kB, `nodes` domains over kNic NICs; the switch reduces from
// `reduce_from` devices (0: it does not reduce).
hw::System switched(int devices, int nodes, int reduce_from) {
  hw::System s;
  s.id = "SW";
  s.device = "toy";
  s.nodes = nodes;
  s.scale_up.devices = devices;
  s.scale_up.link.topology = hw::Topology::Switched;
  s.scale_up.link.bandwidth = rate(kB);
  if (reduce_from > 0) {
    s.scale_up.link.reduction = hw::InNetworkReduction{"SHARP", "spec", "V", "", std::nullopt};
    s.scale_up.link.reduction->from_devices = rate(reduce_from);
  }
  s.scale_out = hw::ScaleOutLink{"NIC", rate(kNic), std::nullopt, std::nullopt};
  return s;
}

hw::System mesh(int devices) {
  hw::System s;
  s.id = "MESH";
  s.scale_up.devices = devices;
  s.scale_up.link.topology = hw::Topology::Mesh;
  s.scale_up.link.bandwidth = rate((devices - 1) * kPeer);
  s.scale_up.link.peer_bandwidth = rate(kPeer);
  return s;
}

hw::System torus(std::vector<int> dims, bool wrap) {
  hw::System s;
  s.id = "TORUS";
  s.scale_up.torus_dims = dims;
  s.scale_up.wraparound.assign(dims.size(), wrap);
  s.scale_up.devices = 1;
  for (int e : dims) s.scale_up.devices *= e;
  s.scale_up.link.topology = hw::Topology::Torus;
  s.scale_up.link.bandwidth = rate(2 * dims.size() * kLink);
  s.scale_up.link.link_bandwidth = rate(kLink);
  return s;
}

GroupLayout in_domain(int g) { return GroupLayout{g, 1, {}}; }

const CK kAllKinds[] = {CK::AllReduce, CK::AllGather, CK::ReduceScatter,
                        CK::AllToAll,  CK::SendRecv,  CK::Broadcast};

TEST(CollectiveKinds, NamesRoundTrip) {
  for (CK k : kAllKinds) EXPECT_EQ(parse_collective_kind(collective_kind_name(k)), k);
  EXPECT_EQ(collective_kind_name(CK::AllReduce), "all_reduce");
  EXPECT_FALSE(parse_collective_kind("allreduce").has_value());
  EXPECT_EQ(link_kind_name(LinkKind::ScaleUp), "scale_up");
  EXPECT_EQ(link_kind_name(LinkKind::ScaleOut), "scale_out");
}

TEST(PointToPointBytes, TheNcclTestsFactors) {
  for (int n : {2, 3, 8, 64}) {
    SCOPED_TRACE(n);
    EXPECT_DOUBLE_EQ(point_to_point_bytes(CK::AllReduce, n, S), 2.0 * (n - 1) / n * S);
    EXPECT_DOUBLE_EQ(point_to_point_bytes(CK::AllGather, n, S), (n - 1.0) / n * S);
    EXPECT_DOUBLE_EQ(point_to_point_bytes(CK::ReduceScatter, n, S), (n - 1.0) / n * S);
    EXPECT_DOUBLE_EQ(point_to_point_bytes(CK::AllToAll, n, S), (n - 1.0) / n * S);
    EXPECT_DOUBLE_EQ(point_to_point_bytes(CK::Broadcast, n, S), S);
  }
  EXPECT_DOUBLE_EQ(point_to_point_bytes(CK::SendRecv, 2, S), S);
  for (CK k : kAllKinds) EXPECT_EQ(point_to_point_bytes(k, 1, S), 0);  // nothing to move
}

// ---- switched ------------------------------------------------------------------------------

TEST(SwitchedDomain, EveryKindAtTheFullPerDeviceRate) {
  const hw::System sys = switched(8, 1, 0);  // no in-switch reduction
  for (CK k : kAllKinds) {
    SCOPED_TRACE(std::string(collective_kind_name(k)));
    const int n = k == CK::SendRecv ? 2 : 8;
    CollectiveBound b = collective_bound(sys, k, in_domain(n), S);
    ASSERT_EQ(b.terms.size(), 1u);
    const LinkTerm& t = b.terms[0];
    EXPECT_EQ(t.link, LinkKind::ScaleUp);
    EXPECT_DOUBLE_EQ(t.bytes, point_to_point_bytes(k, n, S));
    EXPECT_DOUBLE_EQ(t.bandwidth, kB);  // any subset of a switched domain gets the full rate
    EXPECT_DOUBLE_EQ(t.seconds, t.bytes / kB);
    EXPECT_DOUBLE_EQ(b.seconds, t.seconds);
    EXPECT_FALSE(t.implemented_bytes.has_value());
    EXPECT_EQ(b.term(LinkKind::ScaleOut), nullptr);
    EXPECT_FALSE(b.latency_seconds.has_value());  // no latency published
  }
  EXPECT_DOUBLE_EQ(collective_bound(sys, CK::AllReduce, in_domain(8), S).seconds,
                   2.0 * 7 / 8 * S / kB);  // ring: 1.75 S per direction
}

TEST(SwitchedDomain, InSwitchReductionMovesTheBufferOncePerDirection) {
  const hw::System sys = switched(8, 1, 5);
  CollectiveBound b = collective_bound(sys, CK::AllReduce, in_domain(8), S);
  const LinkTerm& t = b.terms.at(0);
  EXPECT_DOUBLE_EQ(t.bytes, S);                       // ideal: send S, receive S
  EXPECT_DOUBLE_EQ(t.seconds, S / kB);
  EXPECT_DOUBLE_EQ(*t.implemented_bytes, S * 9 / 8);  // NCCL NVLS: S (n + 1) / n
  EXPECT_EQ(t.algorithm, "in-network reduction");
  // The bound never exceeds what the switch achieves, nor the ring's.
  EXPECT_LE(t.bytes, *t.implemented_bytes);
  EXPECT_LE(t.bytes, point_to_point_bytes(CK::AllReduce, 8, S));

  // Below the group size the source gives, the ring bound.
  const LinkTerm small = collective_bound(sys, CK::AllReduce, in_domain(4), S).terms.at(0);
  EXPECT_DOUBLE_EQ(small.bytes, 2.0 * 3 / 4 * S);
  EXPECT_EQ(small.algorithm, "ring");
  EXPECT_DOUBLE_EQ(collective_bound(sys, CK::AllReduce, in_domain(5), S).terms.at(0).bytes, S);

  // Reduce-scatter and all-gather gain nothing: their per-direction bound is on the other side
  // of the device's link (what it must send, or receive).
  for (CK k : {CK::ReduceScatter, CK::AllGather, CK::AllToAll, CK::Broadcast})
    EXPECT_DOUBLE_EQ(collective_bound(sys, k, in_domain(8), S).terms.at(0).bytes,
                     point_to_point_bytes(k, 8, S))
        << collective_kind_name(k);
}

TEST(PcieDomain, IsSwitchedAtThePcieRate) {
  hw::System sys = switched(4, 1, 0);
  sys.scale_up.link.topology = hw::Topology::Pcie;
  sys.scale_up.link.bandwidth = rate(31.5e9);
  for (CK k : kAllKinds) {
    const int n = k == CK::SendRecv ? 2 : 4;
    CollectiveBound b = collective_bound(sys, k, in_domain(n), S);
    EXPECT_DOUBLE_EQ(b.seconds, point_to_point_bytes(k, n, S) / 31.5e9)
        << collective_kind_name(k);
  }
  EXPECT_DOUBLE_EQ(collective_bound(sys, CK::AllGather, in_domain(4), S).seconds,
                   3.0 / 4 * S / 31.5e9);
}

// ---- mesh ----------------------------------------------------------------------------------

TEST(MeshDomain, AGroupOfKGetsKMinusOnePeerLinks) {
  const hw::System sys = mesh(8);
  for (int k : {2, 4, 8}) {
    for (CK kind : kAllKinds) {
      if (kind == CK::SendRecv && k != 2) continue;
      SCOPED_TRACE(std::to_string(k) + " " + std::string(collective_kind_name(kind)));
      const LinkTerm t = collective_bound(sys, kind, in_domain(k), S).terms.at(0);
      EXPECT_DOUBLE_EQ(t.bandwidth, (k - 1) * kPeer);
      EXPECT_DOUBLE_EQ(t.bytes, point_to_point_bytes(kind, k, S));
      EXPECT_DOUBLE_EQ(t.seconds, t.bytes / ((k - 1) * kPeer));
    }
  }
  // A pair exchanges at one peer link: 64 GB/s, not the device's 448.
  EXPECT_DOUBLE_EQ(collective_bound(sys, CK::SendRecv, in_domain(2), S).seconds, S / kPeer);
}

// ---- torus ---------------------------------------------------------------------------------

TEST(TorusDomain, AGroupAlongDAxesGetsTwoDLinks) {
  const hw::System sys = torus({4, 4, 4}, true);
  struct Case {
    std::vector<int> extent;
    int axes;
  };
  for (const Case& c : {Case{{4, 1, 1}, 1}, Case{{4, 4, 1}, 2}, Case{{4, 4, 4}, 3}}) {
    int n = c.extent[0] * c.extent[1] * c.extent[2];
    for (CK kind : {CK::AllReduce, CK::AllGather, CK::ReduceScatter, CK::Broadcast}) {
      SCOPED_TRACE(std::to_string(n) + " " + std::string(collective_kind_name(kind)));
      const LinkTerm t = collective_bound(sys, kind, GroupLayout{n, 1, c.extent}, S).terms.at(0);
      EXPECT_DOUBLE_EQ(t.bandwidth, 2 * c.axes * kLink);  // wraparound: 2 links per axis
      EXPECT_DOUBLE_EQ(t.bytes, point_to_point_bytes(kind, n, S));
      EXPECT_DOUBLE_EQ(t.seconds, t.bytes / (2 * c.axes * kLink));  // injection binds
    }
  }
  // The whole 4x4x4 all-reduce: 2 (64 - 1)/64 S over 6 links.
  EXPECT_DOUBLE_EQ(collective_bound(sys, CK::AllReduce, GroupLayout{64, 1, {4, 4, 4}}, S).seconds,
                   2.0 * 63 / 64 * S / (6 * kLink));
}

TEST(TorusDomain, AllToAllIsBoundByTheBisection) {
  // A 16x16 pod with wraparound: a cut across axis 0 has 2 x 16 links per direction, and half
  // of the 256 ranks send 1/256 of S to each rank of the other half: 128 x 128 x S/256 = 64 S.
  const hw::System sys = torus({16, 16}, true);
  const LinkTerm t = collective_bound(sys, CK::AllToAll, GroupLayout{256, 1, {16, 16}}, S).terms.at(0);
  EXPECT_DOUBLE_EQ(t.bytes, 255.0 / 256 * S);  // what each device sends
  EXPECT_DOUBLE_EQ(t.bandwidth, 4 * kLink);
  EXPECT_DOUBLE_EQ(t.seconds, 128.0 * 128 * (S / 256) / (2 * 16 * kLink));  // 2 S / link
  EXPECT_GT(t.seconds, t.bytes / t.bandwidth);
  EXPECT_EQ(t.algorithm, "bisection of axis 0");
  // A ring of 4 with wraparound: the cut carries 2 x 2 x S/4 = S over 2 links, more than
  // injection (3/4 S over 2 links); a ring of 3 is even: (1 x 2 x S/3) / 2 links = 2/3 S / 2.
  const hw::System ring4 = torus({4}, true), ring3 = torus({3}, true);
  EXPECT_DOUBLE_EQ(collective_bound(ring4, CK::AllToAll, GroupLayout{4, 1, {4}}, S).seconds,
                   S / (2 * kLink));
  EXPECT_DOUBLE_EQ(collective_bound(ring3, CK::AllToAll, GroupLayout{3, 1, {3}}, S).seconds,
                   2.0 / 3 * S / (2 * kLink));
}

TEST(TorusDomain, ALineWithoutWraparoundIsBoundByItsMiddleLink) {
  // 4 chips of an 8-chip axis (a line): all-gather needs half the array through one link.
  const hw::System sys = torus({8, 1}, true);
  const LinkTerm ag = collective_bound(sys, CK::AllGather, GroupLayout{4, 1, {4, 1}}, S).terms.at(0);
  EXPECT_DOUBLE_EQ(ag.bandwidth, 2 * kLink);               // interior chips have 2 links
  EXPECT_DOUBLE_EQ(ag.bytes, 3.0 / 4 * S);
  EXPECT_DOUBLE_EQ(ag.seconds, 0.5 * S / kLink);           // S/2 across the middle link
  EXPECT_EQ(ag.algorithm, "bisection of axis 0");
  // An all-reduce needs S across it each way.
  EXPECT_DOUBLE_EQ(collective_bound(sys, CK::AllReduce, GroupLayout{4, 1, {4, 1}}, S).seconds,
                   S / kLink);
  // The whole axis without wraparound: the same cut, S/2 over one link.
  const hw::System line = torus({8}, false);
  EXPECT_DOUBLE_EQ(collective_bound(line, CK::AllGather, GroupLayout{8, 1, {8}}, S).seconds,
                   0.5 * S / kLink);
  // With wraparound, injection binds: 7/8 S over 2 links (the cut: S/2 over 2 links).
  const hw::System ring = torus({8}, true);
  EXPECT_DOUBLE_EQ(collective_bound(ring, CK::AllGather, GroupLayout{8, 1, {8}}, S).seconds,
                   7.0 / 8 * S / (2 * kLink));
}

TEST(TorusDomain, APairWithoutWraparoundHasOneLink) {
  const hw::System sys = torus({4, 4, 4}, true);
  const LinkTerm t = collective_bound(sys, CK::SendRecv, GroupLayout{2, 1, {2, 1, 1}}, S).terms.at(0);
  EXPECT_DOUBLE_EQ(t.bandwidth, kLink);
  EXPECT_DOUBLE_EQ(t.seconds, S / kLink);
}

TEST(TorusDomain, EmptyExtentsFillAxesInOrder) {
  const hw::System sys = torus({4, 4, 4}, true);
  EXPECT_DOUBLE_EQ(collective_bound(sys, CK::AllReduce, GroupLayout{16, 1, {}}, S).terms.at(0).bandwidth,
                   4 * kLink);  // {4, 4, 1}: two axes
}

// ---- hierarchical --------------------------------------------------------------------------

TEST(Hierarchical, ScaleUpThenOneGthOfThePayloadOverTheNics) {
  const hw::System sys = switched(8, 2, 0);  // 2 nodes of 8, no reduction anywhere
  const int g = 8, m = 2;
  const GroupLayout group{g, m, {}};
  struct Case {
    CK kind;
    double up, out;  // bytes per device per direction
  };
  const Case cases[] = {
      {CK::AllReduce, 2.0 * (g - 1) / g * S, 2.0 * (m - 1) / m * S / g},
      {CK::AllGather, (g - 1.0) / g * S, (m - 1.0) / m * S / g},
      {CK::ReduceScatter, (g - 1.0) / g * S, (m - 1.0) / m * S / g},
      {CK::AllToAll, (g - 1.0) / g * S / m, (m - 1.0) / m * S},  // a remote block crosses a NIC
      {CK::Broadcast, S, S / g},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(collective_kind_name(c.kind)));
    CollectiveBound b = collective_bound(sys, c.kind, group, S);
    ASSERT_EQ(b.terms.size(), 2u);
    EXPECT_DOUBLE_EQ(b.term(LinkKind::ScaleUp)->bytes, c.up);
    EXPECT_DOUBLE_EQ(b.term(LinkKind::ScaleOut)->bytes, c.out);
    EXPECT_DOUBLE_EQ(b.term(LinkKind::ScaleOut)->bandwidth, kNic);
    EXPECT_DOUBLE_EQ(b.seconds, std::max(c.up / kB, c.out / kNic));  // the links overlap
  }
  // The all-to-all across nodes is limited by the NIC, not NVLink.
  CollectiveBound a2a = collective_bound(sys, CK::AllToAll, group, S);
  EXPECT_DOUBLE_EQ(a2a.seconds, 0.5 * S / kNic);
}

TEST(Hierarchical, InSwitchReductionInsideTheDomain) {
  const hw::System sys = switched(8, 4, 5);
  CollectiveBound b = collective_bound(sys, CK::AllReduce, GroupLayout{8, 4, {}}, S);
  EXPECT_DOUBLE_EQ(b.term(LinkKind::ScaleUp)->bytes, S);
  EXPECT_DOUBLE_EQ(b.term(LinkKind::ScaleOut)->bytes, 2.0 * 3 / 4 * S / 8);
  // With a reducing network too, each NIC carries its 1/g share once.
  hw::System sharp = sys;
  sharp.scale_out->reduction = hw::InNetworkReduction{"IB SHARP", "spec", "V", "", std::nullopt};
  const CollectiveBound both = collective_bound(sharp, CK::AllReduce, GroupLayout{8, 4, {}}, S);
  const LinkTerm* out = both.term(LinkKind::ScaleOut);
  EXPECT_DOUBLE_EQ(out->bytes, S / 8);
  EXPECT_DOUBLE_EQ(*out->implemented_bytes, S / 8 * 5 / 4);
}

TEST(Hierarchical, OneRankPerDomainUsesOnlyTheNics) {
  const hw::System sys = switched(8, 4, 5);
  CollectiveBound dp = collective_bound(sys, CK::AllReduce, GroupLayout{1, 4, {}}, S);
  ASSERT_EQ(dp.terms.size(), 1u);
  EXPECT_EQ(dp.terms[0].link, LinkKind::ScaleOut);
  EXPECT_DOUBLE_EQ(dp.terms[0].bytes, 2.0 * 3 / 4 * S);
  CollectiveBound send = collective_bound(sys, CK::SendRecv, GroupLayout{1, 2, {}}, S);
  EXPECT_DOUBLE_EQ(send.seconds, S / kNic);
}

TEST(Hierarchical, GroupOfOneMovesNothing) {
  CollectiveBound b = collective_bound(switched(8, 1, 5), CK::AllReduce, in_domain(1), S);
  EXPECT_TRUE(b.terms.empty());
  EXPECT_EQ(b.seconds, 0);
}

// ---- latency -------------------------------------------------------------------------------

TEST(LatencyFloor, HopsTimesThePublishedLatencyApartFromTheBandwidthTime) {
  hw::System sys = switched(8, 2, 0);
  sys.scale_up.link.latency = rate(1e-6);
  sys.scale_out->latency = rate(5e-6);
  CollectiveBound one = collective_bound(sys, CK::AllReduce, in_domain(8), S);
  EXPECT_DOUBLE_EQ(*one.latency_seconds, 1e-6);      // one hop through the switch
  EXPECT_DOUBLE_EQ(one.seconds, 2.0 * 7 / 8 * S / kB);  // not added to the bandwidth term
  CollectiveBound two = collective_bound(sys, CK::AllReduce, GroupLayout{8, 2, {}}, S);
  EXPECT_DOUBLE_EQ(*two.latency_seconds, 5e-6);      // max: the two links' phases overlap

  hw::System t = torus({4, 4}, true);
  t.scale_up.link.latency = rate(1e-6);
  // Diameter of a 4x4 torus with wraparound: 2 + 2 hops.
  EXPECT_DOUBLE_EQ(*collective_bound(t, CK::AllReduce, GroupLayout{16, 1, {4, 4}}, S).latency_seconds,
                   4e-6);
  hw::System line = torus({4}, false);
  line.scale_up.link.latency = rate(1e-6);
  EXPECT_DOUBLE_EQ(*collective_bound(line, CK::AllGather, GroupLayout{4, 1, {4}}, S).latency_seconds,
                   3e-6);  // end to end of a line of 4
  EXPECT_DOUBLE_EQ(*collective_bound(line, CK::Broadcast, GroupLayout{4, 1, {4}}, S).latency_seconds,
                   2e-6);  // from the middle
}

// ---- layouts and refusals ------------------------------------------------------------------

TEST(ContiguousGroup, FillsADomainThenWholeDomains) {
  const hw::System sys = switched(8, 4, 5);
  GroupLayout a = contiguous_group(sys, 4);
  EXPECT_EQ(a.ranks_per_domain, 4);
  EXPECT_EQ(a.domains, 1);
  GroupLayout b = contiguous_group(sys, 16);
  EXPECT_EQ(b.ranks_per_domain, 8);
  EXPECT_EQ(b.domains, 2);
  EXPECT_EQ(b.size(), 16);
  const hw::System t = torus({4, 4, 4}, true);
  EXPECT_EQ(contiguous_group(t, 8).torus_extent, (std::vector<int>{4, 2, 1}));
  EXPECT_EQ(contiguous_group(t, 16).torus_extent, (std::vector<int>{4, 4, 1}));
  EXPECT_EQ(contiguous_group(t, 64).torus_extent, (std::vector<int>{4, 4, 4}));
}

void expect_bad(const std::function<void()>& f, const std::string& message) {
  try {
    f();
    FAIL() << "accepted; expected: " << message;
  } catch (const UserError& e) {
    EXPECT_EQ(e.kind(), UserError::Kind::BadArgument);
    EXPECT_THAT(e.what(), HasSubstr(message));
  }
}

TEST(CollectiveBound, RefusesGroupsThatDoNotFit) {
  const hw::System sys = switched(8, 2, 5);
  expect_bad([&] { contiguous_group(sys, 12); }, "neither within one scale-up domain");
  expect_bad([&] { contiguous_group(sys, 32); }, "does not fit SW (16 devices)");
  expect_bad([&] { collective_bound(sys, CK::AllReduce, GroupLayout{9, 1, {}}, S); },
             "9 ranks per domain");
  expect_bad([&] { collective_bound(sys, CK::AllReduce, GroupLayout{8, 3, {}}, S); },
             "over 3 domains");
  expect_bad([&] { collective_bound(sys, CK::SendRecv, in_domain(3), S); }, "between 2 ranks");
  expect_bad([&] { collective_bound(sys, CK::AllReduce, in_domain(2), -1); }, "not negative");
  expect_bad([&] { collective_bound(sys, CK::AllReduce, GroupLayout{2, 1, {2}}, S); },
             "torus extents for SW");
  const hw::System t = torus({4, 4}, true);
  expect_bad([&] { collective_bound(t, CK::AllReduce, GroupLayout{8, 1, {4, 4}}, S); },
             "multiply to 16");
  expect_bad([&] { collective_bound(t, CK::AllReduce, GroupLayout{4, 1, {4}}, S); },
             "needs 2 torus extents");
  expect_bad([&] { contiguous_group(t, 6); }, "axis by axis");
  hw::System no_nics = switched(8, 2, 5);
  no_nics.scale_out.reset();
  expect_bad([&] { collective_bound(no_nics, CK::AllReduce, GroupLayout{8, 2, {}}, S); },
             "no scale-out link");
}

// ---- the built-in systems ------------------------------------------------------------------

TEST(BuiltinSystems, AllReduceOfAWholeDomain) {
  const hw::SystemDb db = hw::SystemDb::builtin();
  auto all_reduce = [&](const char* id) {
    const hw::System& s = db.get(id);
    return collective_bound(s, CK::AllReduce, contiguous_group(s, s.devices()), S).seconds;
  };
  EXPECT_DOUBLE_EQ(all_reduce("DGX_A100"), 2.0 * 7 / 8 * S / 300e9);  // ring over NVLink 3
  EXPECT_DOUBLE_EQ(all_reduce("DGX_H100"), S / 450e9);                // NVLink SHARP
  EXPECT_DOUBLE_EQ(all_reduce("HGX_H200"), S / 450e9);
  EXPECT_DOUBLE_EQ(all_reduce("DGX_B200"), S / 900e9);
  EXPECT_DOUBLE_EQ(all_reduce("GB200_NVL72"), S / 900e9);
  EXPECT_DOUBLE_EQ(all_reduce("MI300X_8"), 2.0 * 7 / 8 * S / (7 * 64e9));
  EXPECT_DOUBLE_EQ(all_reduce("TPU_v5p_4x4x4"), 2.0 * 63 / 64 * S / (6 * 100e9));
  EXPECT_DOUBLE_EQ(all_reduce("TPU_v5e_16x16"), 2.0 * 255 / 256 * S / (4 * 50e9));
  // Two DGX H100: NVLink SHARP inside, S/8 through each 50 GB/s NIC (2(m-1)/m = 1).
  const hw::System two = hw::with_nodes(db.get("DGX_H100"), 2);
  CollectiveBound b = collective_bound(two, CK::AllReduce, contiguous_group(two, 16), S);
  EXPECT_DOUBLE_EQ(b.term(LinkKind::ScaleUp)->seconds, S / 450e9);
  EXPECT_DOUBLE_EQ(b.term(LinkKind::ScaleOut)->seconds, S / 8 / 50e9);
  EXPECT_DOUBLE_EQ(b.seconds, S / 400e9);
  EXPECT_FALSE(b.latency_seconds.has_value());  // no built-in publishes a hop latency
}

}  // namespace
}  // namespace solar::bound
