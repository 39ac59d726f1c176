// write_file_atomically: outputs appear whole or not at all.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>
#include <unistd.h>

#include "solar/cli/cli.h"
#include "solar/util/errors.h"

namespace solar::cli {
namespace {

namespace fs = std::filesystem;

// Removes the temporary file unless the rename succeeded; never throws.
class TempFile {
 public:
  explicit TempFile(fs::path path) : path_(std::move(path)) {}
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  ~TempFile() {
    if (!committed_) {
      std::error_code ignored;
      fs::remove(path_, ignored);
    }
  }
  const fs::path& path() const { return path_; }
  void commit() { committed_ = true; }

 private:
  fs::path path_;
  bool committed_ = false;
};

UserError io_error(const std::string& path, const std::string& why) {
  return UserError(UserError::Kind::Io, fmt::format("cannot write '{}': {}", path, why));
}

}  // namespace

void write_file_atomically(const std::string& path, const std::string& contents) {
  fs::path target(path);
  if (target.filename().empty()) throw io_error(path, "the path names a folder, not a file");
  fs::path folder = target.parent_path();
  std::error_code ec;
  if (!folder.empty() && !fs::is_directory(folder, ec))
    throw io_error(path, fmt::format("folder '{}' does not exist", folder.string()));
  if (fs::is_directory(target, ec)) throw io_error(path, "it is a folder");

  // The temporary lives in the target's folder so that the rename stays on one file system
  // (and so is atomic); the pid keeps concurrent runs apart.
  TempFile temp(folder / fmt::format(".{}.{}.tmp", target.filename().string(), ::getpid()));
  {
    std::ofstream f(temp.path(), std::ios::binary | std::ios::trunc);
    if (!f) throw io_error(path, std::strerror(errno));
    f.write(contents.data(), static_cast<std::streamsize>(contents.size()));
    f.close();  // closing flushes: a full disk shows up here
    if (!f) throw io_error(path, "write failed (disk full?)");
  }
  fs::rename(temp.path(), target, ec);
  if (ec) throw io_error(path, ec.message());
  temp.commit();
}

}  // namespace solar::cli
