#include "solar/hw/database.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "solar/hw/host.h"
#include "device_yaml.h"
#include "solar/util/errors.h"

namespace solar::hw {
namespace {

namespace fs = std::filesystem;

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

// Lowercase without separators, for suggestions only: "h100-sxm" ~ "H100_SXM".
std::string squash(std::string_view s) {
  std::string out;
  for (char c : lower(s))
    if (c != '_' && c != '-' && c != ' ' && c != '.') out += c;
  return out;
}

size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

// The ids an unknown `query` obviously meant: those it is a prefix of ("h100" -> H100_PCIe,
// H100_SXM), else the single closest one within a small edit distance ("mi300" -> MI300X).
std::vector<std::string> suggestions(std::string_view query, const std::vector<std::string>& ids) {
  std::string q = squash(query);
  std::vector<std::string> out;
  if (q.empty()) return out;
  for (const std::string& id : ids)
    if (squash(id).starts_with(q)) out.push_back(id);
  if (!out.empty()) return out;
  size_t best = SIZE_MAX;
  for (const std::string& id : ids) {
    size_t dist = edit_distance(q, squash(id));
    if (dist < best) {
      best = dist;
      out = {id};
    } else if (dist == best) {
      out.push_back(id);
    }
  }
  // Only an unambiguous, small edit is "obvious"; otherwise the list of ids says enough.
  if (out.size() != 1 || best > 2 || best * 2 >= q.size()) out.clear();
  return out;
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw UserError(UserError::Kind::Io,
                    fmt::format("cannot read device file '{}'", path.string()));
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A parsed file with its text, kept until the group is checked for duplicate ids.
struct Loaded {
  Device device;
  std::string text;
};

// Adds one group of files (the built-ins, or the user folders) to `db`; two files in one
// group with the same id are an error, a later group replaces an earlier one's device.
void add_group(DeviceDb& db, std::vector<Loaded> group) {
  for (size_t i = 0; i < group.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      if (lower(group[i].device.id) == lower(group[j].device.id))
        throw UserError(UserError::Kind::Parse,
                        fmt::format("duplicate device id '{}' (also defined in {})",
                                    group[i].device.id, group[j].device.file),
                        Origin{group[i].device.file, device_id_line(group[i].text), {}});
  for (Loaded& l : group) db.add(std::move(l.device));
}

// The detected host, once per process (detection runs the bandwidth probe).
const Device& host_device() {
  static const Device host = detect_host();
  return host;
}

}  // namespace

DeviceDb DeviceDb::load_default() {
  std::vector<std::string> folders;
  if (const char* path = std::getenv("SOLAR_ARCH_PATH")) {
    std::string_view rest = path;
    while (true) {
      size_t colon = rest.find(':');
      std::string_view part = rest.substr(0, colon);
      if (!part.empty()) folders.emplace_back(part);
      if (colon == std::string_view::npos) break;
      rest.remove_prefix(colon + 1);
    }
  }
  return load(folders);
}

DeviceDb DeviceDb::load(const std::vector<std::string>& user_folders) {
  DeviceDb db;
  std::vector<Loaded> builtins;
  for (const auto& [name, text] : builtin_arch_files())
    builtins.push_back({parse_device_yaml(text, fmt::format("builtin:arch/{}", name)),
                        std::string(text)});
  add_group(db, std::move(builtins));

  std::vector<Loaded> user;
  for (const std::string& folder : user_folders) {
    std::error_code ec;
    if (!fs::is_directory(folder, ec))
      throw UserError(UserError::Kind::Io,
                      fmt::format("SOLAR_ARCH_PATH folder '{}' does not exist or is not a folder",
                                  folder));
    std::vector<fs::path> files;
    for (const fs::directory_entry& e : fs::directory_iterator(folder, ec))
      if (e.path().extension() == ".yaml") files.push_back(e.path());
    if (ec)
      throw UserError(UserError::Kind::Io,
                      fmt::format("cannot list SOLAR_ARCH_PATH folder '{}': {}", folder,
                                  ec.message()));
    std::sort(files.begin(), files.end());
    for (const fs::path& p : files) {
      std::string text = read_file(p);
      user.push_back({parse_device_yaml(text, p.string()), text});
    }
  }
  add_group(db, std::move(user));
  return db;
}

void DeviceDb::add(Device d) {
  for (Device& e : devices_)
    if (lower(e.id) == lower(d.id)) {
      e = std::move(d);
      return;
    }
  devices_.push_back(std::move(d));
}

const Device& DeviceDb::get(std::string_view id) const {
  std::string want = lower(id);
  for (const Device& d : devices_)
    if (lower(d.id) == want) return d;
  if (want == "host") return host_device();

  std::vector<std::string> known = ids();
  std::string message = fmt::format("unknown device '{}'", id);
  std::vector<std::string> hint = suggestions(id, known);
  if (!hint.empty()) {
    message += "; did you mean ";
    for (size_t i = 0; i < hint.size(); ++i)
      message += (i == 0 ? "" : i + 1 == hint.size() ? " or " : ", ") + hint[i];
    message += "?";
  }
  message += "; known devices: ";
  for (size_t i = 0; i < known.size(); ++i) message += (i ? ", " : "") + known[i];
  message += " (add one with a YAML file in a SOLAR_ARCH_PATH folder; see docs/devices.md)";
  throw UserError(UserError::Kind::UnknownDevice, message);
}

std::vector<std::string> DeviceDb::ids() const {
  std::vector<std::string> out;
  for (const Device& d : devices_)
    if (lower(d.id) != "host") out.push_back(d.id);  // a device added as "host" is listed once
  std::sort(out.begin(), out.end(),
            [](const std::string& a, const std::string& b) { return lower(a) < lower(b); });
  out.emplace_back("host");
  return out;
}

}  // namespace solar::hw
