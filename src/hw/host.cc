#include "solar/hw/host.h"

#include <algorithm>
#include <atomic>
#include <barrier>
#include <chrono>
#include <cmath>
#include <ctime>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "solar/util/errors.h"

#if defined(__linux__)
#include <sys/mman.h>
#include <unistd.h>
#endif

namespace solar::hw {
namespace {

constexpr double kMiB = 1048576.0;

std::string trim(std::string_view s) {
  size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string_view::npos) return "";
  size_t e = s.find_last_not_of(" \t\r\n");
  return std::string(s.substr(b, e - b + 1));
}

std::optional<std::string> read_text(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Sourced sourced(double value, std::string source, std::string flag, std::string note) {
  return Sourced{value, std::move(source), std::move(flag), std::move(note)};
}

// "0-3,8,10-11" -> {0,1,2,3,8,10,11}.
std::vector<int> parse_cpu_list(std::string_view list) {
  std::vector<int> out;
  std::stringstream ss{std::string(trim(list))};
  std::string part;
  while (std::getline(ss, part, ',')) {
    if (part.empty()) continue;
    size_t dash = part.find('-');
    int lo = std::stoi(part.substr(0, dash));
    int hi = dash == std::string::npos ? lo : std::stoi(part.substr(dash + 1));
    for (int c = lo; c <= hi; ++c) out.push_back(c);
  }
  return out;
}

// "48K" -> 49152 (sysfs cache sizes are binary).
double parse_cache_size(std::string_view text) {
  std::string s = trim(text);
  if (s.empty()) return 0;
  double mult = 1;
  switch (s.back()) {
    case 'K': mult = 1024; s.pop_back(); break;
    case 'M': mult = kMiB; s.pop_back(); break;
    case 'G': mult = 1024 * kMiB; s.pop_back(); break;
    default: break;
  }
  try {
    return std::stod(s) * mult;
  } catch (const std::exception&) {
    return 0;
  }
}

std::string mib_text(double bytes) {
  return bytes >= kMiB ? fmt::format("{:g} MiB", bytes / kMiB)
                       : fmt::format("{:g} KiB", bytes / 1024);
}

// /proc/cpuinfo, reduced to what the host device needs.
struct CpuInfo {
  std::string model_name, vendor_id, arch_features;
  int family = 0;
  std::set<std::string> flags;
  std::set<std::pair<std::string, std::string>> cores;  // (physical id, core id)
  int processors = 0;
  double max_cpu_mhz = 0;
};

CpuInfo parse_cpuinfo(const std::string& text) {
  CpuInfo info;
  std::stringstream ss(text);
  std::string line, physical_id;
  while (std::getline(ss, line)) {
    size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string key = trim(std::string_view(line).substr(0, colon));
    std::string value = trim(std::string_view(line).substr(colon + 1));
    if (key == "processor") {
      ++info.processors;
      physical_id.clear();
    } else if (key == "model name" && info.model_name.empty()) {
      info.model_name = value;
    } else if (key == "vendor_id" && info.vendor_id.empty()) {
      info.vendor_id = value;
    } else if (key == "cpu family" && info.family == 0) {
      info.family = std::atoi(value.c_str());
    } else if ((key == "flags" || key == "Features") && info.flags.empty()) {
      std::stringstream fs(value);
      std::string f;
      while (fs >> f) info.flags.insert(f);
    } else if (key == "physical id") {
      physical_id = value;
    } else if (key == "core id") {
      info.cores.insert({physical_id, value});
    } else if (key == "cpu MHz") {
      info.max_cpu_mhz = std::max(info.max_cpu_mhz, std::atof(value.c_str()));
    }
  }
  return info;
}

// The "2.10GHz" in "Intel(R) Xeon(R) Gold 6230 CPU @ 2.10GHz" in MHz; 0 when absent.
double model_name_mhz(const std::string& model) {
  size_t ghz = model.find("GHz");
  if (ghz == std::string::npos) return 0;
  size_t b = ghz;
  auto numeric = [](char c) { return std::isdigit(static_cast<unsigned char>(c)) || c == '.'; };
  while (b > 0 && numeric(model[b - 1])) --b;
  if (b == ghz) return 0;
  return std::atof(model.substr(b, ghz - b).c_str()) * 1000;
}

#if defined(__linux__)

std::vector<int> online_cpus() {
  if (auto text = read_text("/sys/devices/system/cpu/online")) {
    std::vector<int> cpus = parse_cpu_list(*text);
    if (!cpus.empty()) return cpus;
  }
  std::vector<int> cpus;
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  for (long i = 0; i < n; ++i) cpus.push_back(static_cast<int>(i));
  return cpus;
}

// Device totals of the data caches by level: each distinct (level, type, shared_cpu_list)
// across the online CPUs is one cache instance, so per-core caches count once per core and
// a shared L3 once per socket.
struct CacheTotal {
  double bytes = 0;
  int instances = 0;
  double instance_bytes = 0;
};
std::map<int, CacheTotal> read_caches() {
  std::map<int, CacheTotal> totals;
  std::set<std::string> seen;
  for (int cpu : online_cpus()) {
    for (int index = 0; index < 16; ++index) {
      std::string dir = fmt::format("/sys/devices/system/cpu/cpu{}/cache/index{}/", cpu, index);
      auto level = read_text(dir + "level");
      if (!level) break;
      auto type = read_text(dir + "type");
      auto size = read_text(dir + "size");
      auto shared = read_text(dir + "shared_cpu_list");
      if (!type || !size || trim(*type) == "Instruction") continue;
      // Without shared_cpu_list each CPU's cache is taken as its own (an overestimate of a
      // shared cache's capacity, which keeps cache-aware bounds optimistic, i.e. valid).
      std::string key = fmt::format("{}/{}/{}", trim(*level), trim(*type),
                                    shared ? trim(*shared) : std::to_string(cpu));
      if (!seen.insert(key).second) continue;
      CacheTotal& t = totals[std::atoi(level->c_str())];
      double bytes = parse_cache_size(*size);
      t.bytes += bytes;
      t.instance_bytes = bytes;
      ++t.instances;
    }
  }
  return totals;
}

std::optional<double> meminfo_bytes(const std::string& key) {
  auto text = read_text("/proc/meminfo");
  if (!text) return std::nullopt;
  std::stringstream ss(*text);
  std::string line;
  while (std::getline(ss, line))
    if (line.starts_with(key + ":")) return std::atof(line.c_str() + key.size() + 1) * 1024;  // kB
  return std::nullopt;
}

int physical_cores(const CpuInfo& info) {
  if (!info.cores.empty()) return static_cast<int>(info.cores.size());
  return static_cast<int>(online_cpus().size());
}

// Sums a chunk with independent accumulators so that the loop vectorizes and is bound by
// memory, not by the add latency.
std::uint64_t sum_chunk(const std::uint64_t* p, std::size_t n) {
  std::uint64_t a[8] = {};
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int k = 0; k < 8; ++k) a[k] += p[i + k];
  for (; i < n; ++i) a[0] += p[i];
  return a[0] + a[1] + a[2] + a[3] + a[4] + a[5] + a[6] + a[7];
}

MemoryProbe run_probe() {
  using Clock = std::chrono::steady_clock;
  auto start = Clock::now();
  MemoryProbe probe;

  std::optional<std::string> cpuinfo = read_text("/proc/cpuinfo");
  probe.threads = std::max(1, cpuinfo ? physical_cores(parse_cpuinfo(*cpuinfo))
                                      : static_cast<int>(online_cpus().size()));
  double llc = 0;
  std::map<int, CacheTotal> caches = read_caches();
  if (!caches.empty()) llc = caches.rbegin()->second.bytes;

  // Four times the last-level cache (so that no replacement policy keeps a useful part of
  // it), at least 256 MiB; at most half the available memory.
  double want = std::max(256 * kMiB, 4 * llc);
  double bytes = want;
  if (auto avail = meminfo_bytes("MemAvailable"); avail && bytes > *avail / 2) {
    bytes = *avail / 2;
    probe.caveat = fmt::format("buffer limited to half the available memory ({}), below the "
                               "wanted {}", mib_text(bytes), mib_text(want));
  }
  constexpr double kHugePage = 2 * kMiB;
  bytes = std::max(kHugePage, std::floor(bytes / kHugePage) * kHugePage);
  probe.buffer_bytes = static_cast<std::uint64_t>(bytes);

  void* mem = mmap(nullptr, probe.buffer_bytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED)
    throw Unsupported(fmt::format("cannot allocate {} for the DRAM bandwidth probe",
                                  mib_text(bytes)));
  // Huge pages make the first touch (page faults) several times cheaper; advisory only.
  madvise(mem, probe.buffer_bytes, MADV_HUGEPAGE);
  auto* data = static_cast<std::uint64_t*>(mem);
  const std::size_t n = probe.buffer_bytes / sizeof(std::uint64_t);
  const int threads = probe.threads;

  // Persistent threads, one per core; each first touches (so the pages are local to it)
  // and then reads its own chunk. The main thread times each pass between two barriers, so
  // thread start-up is not in the measurement.
  constexpr int kMaxPasses = 5, kMinPasses = 2;
  constexpr double kPassBudgetS = 0.35;  // the passes' share of the < 0.5 s target
  std::barrier sync(threads + 1);
  std::atomic<bool> more{true};
  std::atomic<std::uint64_t> sink{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      std::size_t b = n * t / threads, e = n * (t + 1) / threads;
      for (std::size_t i = b; i < e; ++i) data[i] = i;
      sync.arrive_and_wait();  // touched
      while (true) {
        sync.arrive_and_wait();  // pass start (or stop)
        if (!more.load()) break;
        sink.fetch_add(sum_chunk(data + b, e - b), std::memory_order_relaxed);
        sync.arrive_and_wait();  // pass end
      }
    });
  }
  sync.arrive_and_wait();
  double best = 0, spent = 0;
  while (true) {
    auto t0 = Clock::now();
    sync.arrive_and_wait();
    sync.arrive_and_wait();
    double s = std::chrono::duration<double>(Clock::now() - t0).count();
    ++probe.passes;
    spent += s;
    best = std::max(best, static_cast<double>(probe.buffer_bytes) / s);
    bool budget_left = spent + s <= kPassBudgetS;
    if (probe.passes >= kMaxPasses || (probe.passes >= kMinPasses && !budget_left)) break;
  }
  more.store(false);
  sync.arrive_and_wait();
  for (std::thread& th : pool) th.join();
  munmap(mem, probe.buffer_bytes);

  probe.bytes_per_s = best;
  probe.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  localtime_r(&now, &tm);
  char date[16];
  std::strftime(date, sizeof date, "%Y-%m-%d", &tm);
  probe.date = date;
  return probe;
}

#endif  // __linux__

constexpr std::uint64_t kClockChainIters = 100'000;  // x 32 = 3.2 M adds: ~1 ms at 3 GHz

#if defined(__x86_64__)
// Seconds for `iters` x 32 dependent instructions of the chain; the loop counter runs in
// parallel with the chain, which bounds the time.
template <bool kImul>
double time_chain(std::uint64_t iters) {
  using Clock = std::chrono::steady_clock;
  std::uint64_t x = 3;
  auto t0 = Clock::now();
  for (std::uint64_t i = 0; i < iters; ++i) {
    if constexpr (kImul)
      asm volatile(".rept 32\n\timulq %0, %0\n\t.endr" : "+r"(x));
    else
      asm volatile(".rept 32\n\taddq %0, %0\n\t.endr" : "+r"(x));
  }
  std::chrono::duration<double> dt = Clock::now() - t0;
  asm volatile("" : : "r"(x));
  return dt.count();
}

ClockProbe run_clock_probe() {
  constexpr std::uint64_t kIters = kClockChainIters;
  constexpr int kRuns = 21;  // best of many short runs: a run the scheduler preempts is dropped
  ClockProbe p;
  p.runs = kRuns;
  time_chain<false>(kIters * 10);  // warm-up: ~20 ms of busy core lets the clock ramp up
  double best_add = 1e30, best_imul = 1e30;
  for (int r = 0; r < kRuns; ++r) {
    best_add = std::min(best_add, time_chain<false>(kIters));
    best_imul = std::min(best_imul, time_chain<true>(kIters));
  }
  const double chain = 32.0 * static_cast<double>(kIters);
  p.add_chain_mhz = chain * 1 / best_add / 1e6;   // 1 cycle per add
  p.imul_chain_mhz = chain * 3 / best_imul / 1e6;  // 3 cycles per imul
  p.mhz = std::max(p.add_chain_mhz, p.imul_chain_mhz);
  return p;
}
#endif

}  // namespace

std::optional<ClockProbe> clock_probe() {
#if defined(__x86_64__)
  static const ClockProbe probe = run_clock_probe();
  return probe;
#else
  return std::nullopt;
#endif
}

const MemoryProbe& memory_probe() {
#if defined(__linux__)
  static const MemoryProbe probe = run_probe();
  return probe;
#else
  throw Unsupported("the DRAM bandwidth probe is implemented for Linux only");
#endif
}

double probe_memory_bandwidth() { return memory_probe().bytes_per_s; }

HostFacts read_host_facts() {
#if !defined(__linux__)
  throw Unsupported("host detection reads /proc and /sys and is implemented for Linux only; "
                    "describe this machine in a YAML file instead (docs/devices.md)");
#else
  std::optional<std::string> text = read_text("/proc/cpuinfo");
  if (!text) throw Unsupported("host detection: /proc/cpuinfo cannot be read");
  CpuInfo info = parse_cpuinfo(*text);

  HostFacts f;
  f.sources["proc-cpuinfo"] = "/proc/cpuinfo on this machine";
  f.model_name = !info.model_name.empty() ? info.model_name : "unknown CPU";
  f.vendor = info.vendor_id == "GenuineIntel"   ? "Intel"
             : info.vendor_id == "AuthenticAMD" ? "AMD"
             : !info.vendor_id.empty()          ? info.vendor_id
                                                : "unknown";
#if defined(__x86_64__) || defined(__i386__)
  f.arch = "x86_64";
#elif defined(__aarch64__)
  f.arch = "aarch64";
#else
  f.arch = "other";
#endif
  f.x86_family = info.family;
  f.flags = info.flags;

  int cores = physical_cores(info);
  f.cores = sourced(cores, "proc-cpuinfo", "M",
                    !info.cores.empty()
                        ? fmt::format("{} unique (physical id, core id) pairs in /proc/cpuinfo "
                                      "({} logical CPUs; SMT siblings count once)",
                                      cores, info.processors)
                        : fmt::format("no core ids in /proc/cpuinfo: {} online CPUs", cores));

  // Max clock: the largest of the cpufreq driver's maximum and the fastest clock measured
  // here (a hypervisor hides turbo from /proc/cpuinfo; the measurement sees it); without
  // either, the fastest current clock, else the nominal clock in the model name.
  std::optional<Sourced> cpufreq;
  if (auto khz = read_text("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq");
      khz && std::atof(khz->c_str()) > 0) {
    f.sources["sysfs-cpufreq"] =
        "/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq on this machine";
    cpufreq = sourced(std::atof(khz->c_str()) / 1000, "sysfs-cpufreq", "M",
                      "cpuinfo_max_freq: the maximum (turbo) clock the cpufreq driver reports; "
                      "sustained all-core vector clocks are lower, so peaks at this clock "
                      "overestimate (the SOL stays a lower bound)");
  }
  std::optional<Sourced> measured;
  if (std::optional<ClockProbe> probe = clock_probe(); probe && probe->mhz > 0) {
    f.sources["clock-probe"] = "solar::hw::clock_probe (src/hw/host.cc) on this machine";
    measured = sourced(
        probe->mhz, "clock-probe", "M",
        fmt::format("fastest single-thread clock measured: dependent chains of {} adds "
                    "(1 cycle each) -> {:.0f} MHz and imuls (3 cycles each) -> {:.0f} MHz, "
                    "best of {} runs after a warm-up, the larger kept; all-core and wide-"
                    "vector clocks are lower, so peaks at this clock overestimate (the SOL "
                    "stays a lower bound)",
                    32 * kClockChainIters, probe->add_chain_mhz, probe->imul_chain_mhz, probe->runs));
  }
  if (cpufreq || measured) {
    bool use_measured = measured && (!cpufreq || measured->value > cpufreq->value);
    f.clock_mhz = use_measured ? measured : cpufreq;
    if (info.max_cpu_mhz > f.clock_mhz->value)  // a reading above both: keep the largest
      f.clock_mhz = sourced(info.max_cpu_mhz, "proc-cpuinfo", "M",
                            "the largest 'cpu MHz' in /proc/cpuinfo, above the measured clock");
  } else if (info.max_cpu_mhz > 0) {
    f.clock_mhz = sourced(info.max_cpu_mhz, "proc-cpuinfo", "E",
                          "no cpufreq driver and no clock probe: the largest 'cpu MHz' in "
                          "/proc/cpuinfo, a current clock (under a hypervisor usually the "
                          "nominal clock). If the CPU turbos above it the peaks are "
                          "underestimated and a fast run may beat the SOL: describe the "
                          "machine with its max clock in a YAML file (docs/devices.md)");
  } else if (double mhz = model_name_mhz(info.model_name); mhz > 0) {
    f.clock_mhz = sourced(mhz, "proc-cpuinfo", "E",
                          "no cpufreq driver, no clock probe and no 'cpu MHz': the clock in the "
                          "model name, a nominal (base) clock; turbo may be higher, which would "
                          "make the peaks underestimates");
  } else {
    f.notes += "The clock could not be determined, so no compute peaks are given. ";
  }

  std::map<int, CacheTotal> caches = read_caches();
  if (!caches.empty())
    f.sources["sysfs-cache"] = "/sys/devices/system/cpu/cpu*/cache/index*/{level,type,size,"
                               "shared_cpu_list} on this machine";
  auto cache_level = [&](int level, std::string_view what) -> std::optional<Sourced> {
    auto it = caches.find(level);
    if (it == caches.end() || it->second.bytes <= 0) return std::nullopt;
    const CacheTotal& t = it->second;
    return sourced(t.bytes, "sysfs-cache", "M",
                   fmt::format("{}: {} instance{} x {}", what, t.instances,
                               t.instances == 1 ? "" : "s", mib_text(t.instance_bytes)));
  };
  f.l1d = cache_level(1, "L1 data caches (instruction caches excluded)");
  f.l2 = cache_level(2, "L2 caches");
  f.l3 = cache_level(3, "L3 caches (under a hypervisor, the whole socket's L3, shared with "
                        "other tenants)");
  if (caches.empty()) f.notes += "No cache sizes in /sys (no cache levels given). ";

  if (auto total = meminfo_bytes("MemTotal")) {
    f.sources["proc-meminfo"] = "/proc/meminfo on this machine";
    f.dram_capacity = sourced(*total, "proc-meminfo", "M",
                              "MemTotal: memory usable by the OS (slightly below installed)");
  }

  const MemoryProbe& p = memory_probe();
  f.sources["solar-probe"] = "Solar's multi-threaded DRAM read probe "
                             "(solar::hw::probe_memory_bandwidth, src/hw/host.cc)";
  f.dram_bandwidth = sourced(
      p.bytes_per_s, "solar-probe", "M",
      fmt::format("measured by Solar's probe on {}: best of {} passes over {} with {} threads "
                  "(read-only streaming sum; probe took {:.2f} s){}",
                  p.date, p.passes, mib_text(static_cast<double>(p.buffer_bytes)), p.threads,
                  p.seconds, p.caveat.empty() ? "" : "; " + p.caveat));
  return f;
#endif
}

Device host_device(const HostFacts& f) {
  Device d;
  d.id = "host";
  d.name = f.model_name;
  d.vendor = f.vendor;
  d.kind = "cpu";
  d.num_sms = static_cast<int>(f.cores.value);
  d.num_sms_source = f.cores;
  d.sources = f.sources;
  d.file = "detected";
  std::string notes = f.notes;
  const double cores = f.cores.value;

  if (f.clock_mhz && cores > 0) {
    const double hz = f.clock_mhz->value * 1e6;
    bool x86 = f.arch == "x86_64";
    auto has = [&](const char* flag) { return f.flags.count(flag) > 0; };

    // Vector width from the ISA flags, and FMA units per core (an assumption, flag E).
    int bits = 128;
    std::string isa = x86 ? "SSE (128-bit)" : "128-bit SIMD (NEON/ASIMD)";
    if (x86 && has("avx512f")) {
      bits = 512;
      isa = "AVX-512";
    } else if (x86 && has("avx2") && has("fma")) {
      bits = 256;
      isa = "AVX2+FMA";
    }
    std::string width_note;
    if (x86 && bits == 512 && f.vendor == "AMD" && f.x86_family == 25) {
      // Zen 4 executes AVX-512 on 256-bit datapaths (2 FMA pipes x 8 f32).
      bits = 256;
      width_note = " (Zen 4: AVX-512 runs on 256-bit datapaths)";
    }
    const int fma_units = x86 ? 2 : 4;
    d.sources["fma-assumption"] =
        x86 ? "Solar's assumption (docs/devices.md): 2 FMA units per core on x86 AVX2/AVX-512 "
              "server cores (Sapphire Rapids, Zen 4; hardware reference, x86 notes)"
            : "Solar's assumption (docs/devices.md): 4 x 128-bit FMA pipes per core on Arm "
              "(the widest current Neoverse/Apple cores)";
    std::string assumption = fmt::format(
        "{} FMA units per core assumed (E): parts with fewer (e.g. Xeon SKUs with one AVX-512 "
        "FMA unit) are overestimated, which keeps the SOL a valid lower bound", fma_units);

    ComputeUnit simd;
    simd.kind = UnitKind::Vector;
    simd.name = "simd_fma";
    simd.clock_mhz = f.clock_mhz;
    const double lanes = bits / 32.0;
    const double f32 = cores * fma_units * lanes * 2 * hz;
    auto note = [&](std::string_view extra, double value, std::string_view unit = "GFLOP/s") {
      return fmt::format("{:g} cores x {} FMA units x {:g} f32 lanes ({}{}) x 2 FLOP x {:g} MHz"
                         "{} = {:.4g} {}; clock flag {}; {}",
                         cores, fma_units, lanes, isa, width_note, f.clock_mhz->value, extra,
                         value / 1e9, unit, f.clock_mhz->flag, assumption);
    };
    simd.peak[ir::DType::F32] = sourced(f32, "fma-assumption", "E", note("", f32));
    simd.peak[ir::DType::F64] = sourced(f32 / 2, "fma-assumption", "E",
                                        note(" / 2 (half the lanes)", f32 / 2));
    if (x86 && has("avx512_bf16"))
      simd.peak[ir::DType::BF16] =
          sourced(2 * f32, "fma-assumption", "E",
                  note(" x 2 (AVX512_BF16 vdpbf16ps: two bf16 products per f32 lane)", 2 * f32));
    if (x86 && has("avx512_fp16"))
      simd.peak[ir::DType::F16] =
          sourced(2 * f32, "fma-assumption", "E",
                  note(" x 2 (AVX512-FP16: twice the f32 lanes)", 2 * f32));
    if (x86 && (has("avx512_vnni") || has("avx_vnni")))
      simd.peak[ir::DType::I8] = sourced(
          4 * f32, "fma-assumption", "E",
          note(" x 4 (VNNI vpdpbusd: four int8 products per 32-bit lane; estimate)", 4 * f32,
               "Gops/s"));
    d.units.push_back(std::move(simd));

    // AMX tiles (Sapphire Rapids and later): 1,024 bf16 FLOP and 2,048 int8 ops per cycle
    // per core.
    if (x86 && (has("amx_bf16") || has("amx_int8"))) {
      d.sources["amx-wiki"] = "https://artikel.siakadpt.com/en/Advanced_Matrix_Extensions "
                              "(Wikipedia copy: 2,048 INT8 / 1,024 BF16 ops per cycle per core)";
      ComputeUnit amx;
      amx.kind = UnitKind::Tensor;
      amx.name = "amx";
      amx.clock_mhz = f.clock_mhz;
      auto amx_note = [&](int per_clk, double value, std::string_view unit) {
        return fmt::format("{:g} cores x {} {}/clk/core x {:g} MHz = {:.4g} T{}/s; the clock "
                           "under AMX load is not published, so this is an upper-bound "
                           "estimate at the detected clock (flag {})",
                           cores, per_clk, unit, f.clock_mhz->value, value / 1e12,
                           unit == "FLOP" ? "FLOP" : "ops", f.clock_mhz->flag);
      };
      if (has("amx_bf16")) {
        double v = cores * 1024 * hz;
        amx.peak[ir::DType::BF16] = sourced(v, "amx-wiki", "D", amx_note(1024, v, "FLOP"));
      }
      if (has("amx_int8")) {
        double v = cores * 2048 * hz;
        amx.peak[ir::DType::I8] = sourced(v, "amx-wiki", "D", amx_note(2048, v, "ops"));
      }
      d.units.push_back(std::move(amx));
    }
  }
  notes += "No special-function unit: exp, log, tanh, ... run as instruction sequences on the "
           "vector unit (simd_fma), so their cost is vector work. ";
  notes += "Peaks assume every core runs at the detected clock with all FMA units busy.";
  d.notes = trim(notes);

  SOLAR_CHECK(f.dram_bandwidth.has_value(), "HostFacts without a DRAM bandwidth");
  MemorySpec dram;
  dram.level = MemoryLevel::Dram;
  dram.capacity = f.dram_capacity;
  dram.bandwidth = f.dram_bandwidth;
  d.memory.push_back(std::move(dram));
  // Cache bandwidths are not published for a CPU: each is derived as an upper bound, bytes
  // per clock per core at the widest current x86 cores (Golden Cove / Zen 5: two 64-byte
  // loads and one 64-byte store per clock from L1; one 64-byte line per clock into L1 from
  // L2; L3 taken at the same 64 bytes, above the 32 bytes per clock of Intel's mesh and
  // AMD's CCX), times cores and the max clock. Overestimating a bandwidth keeps the SOL a
  // lower bound; the figures are not meant to be reached.
  struct CacheRate {
    MemoryLevel level;
    const std::optional<Sourced>* capacity;
    int bytes_per_clock;
    const char* why;
  };
  for (const CacheRate& c : {
           CacheRate{MemoryLevel::L3, &f.l3, 64, "64 B/clk/core (an upper bound: Intel's mesh and AMD's "
                                      "CCX deliver 32)"},
           CacheRate{MemoryLevel::L2, &f.l2, 64, "64 B/clk/core (one cache line per clock into L1)"},
           CacheRate{MemoryLevel::L1, &f.l1d, 192, "192 B/clk/core (two 64-byte loads and one 64-byte "
                                        "store per clock)"}}) {
    if (!*c.capacity) continue;
    MemorySpec m;
    m.level = c.level;
    m.capacity = *c.capacity;
    if (f.clock_mhz && f.cores.value > 0) {
      const double bw = c.bytes_per_clock * f.cores.value * f.clock_mhz->value * 1e6;
      m.bandwidth = Sourced{bw, "cache-rate-assumption", "D",
                            fmt::format("{:g} cores x {} x {:g} MHz = {:.4g} GB/s; an upper "
                                        "bound (clock flag {})",
                                        f.cores.value, c.why, f.clock_mhz->value, bw / 1e9,
                                        f.clock_mhz->flag)};
      d.sources["cache-rate-assumption"] =
          "Solar's assumption (docs/devices.md, The host): cache bytes per clock per core of "
          "the widest current x86 cores, as upper bounds";
    }
    d.memory.push_back(std::move(m));
  }
  return d;
}

Device detect_host() { return host_device(read_host_facts()); }

}  // namespace solar::hw
