#include "solar/hw/database.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "solar/hw/host.h"
#include "device_yaml.h"
#include "suggest.h"
#include "yaml_reader.h"
#include "solar/util/errors.h"

namespace solar::hw {
namespace {

namespace fs = std::filesystem;
using yaml::lower;

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
  message += did_you_mean(suggestions(id, known));
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
