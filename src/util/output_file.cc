// Output files: the checks before any work, and StagedFile (write beside, rename over).
#include "solar/util/output_file.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <utility>

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include "solar/util/errors.h"

namespace solar {
namespace {

namespace fs = std::filesystem;

UserError io_error(const std::string& path, const std::string& why) {
  return UserError(UserError::Kind::Io, fmt::format("cannot write '{}': {}", path, why));
}

// The file a write to `path` replaces: `path`, or the end of its chain of symlinks (a link
// is written through, as `>` does, never replaced by a file).
fs::path followed(const std::string& path) {
  fs::path p(path);
  std::error_code ec;
  for (int hops = 0; hops < 40 && fs::is_symlink(fs::symlink_status(p, ec)); ++hops) {
    fs::path to = fs::read_symlink(p, ec);
    if (ec) break;
    p = to.is_absolute() ? to : p.parent_path() / to;
  }
  return p;
}

// The folder a file is created in, as shown to the user ("." for a bare name).
fs::path folder_of(const fs::path& p) {
  fs::path folder = p.parent_path();
  return folder.empty() ? fs::path(".") : folder;
}

// Why `target` (symlinks already followed) cannot be replaced by a new file, without the
// probe of its folder; `shown` is the folder named in messages.
std::optional<std::string> why_not_replaceable(const fs::path& target, const fs::path& shown) {
  std::error_code ec;
  fs::file_status folder = fs::status(folder_of(target), ec);
  if (!fs::exists(folder)) return fmt::format("folder '{}' does not exist", shown.string());
  if (!fs::is_directory(folder)) return fmt::format("'{}' is not a folder", shown.string());
  struct stat st;
  if (::stat(target.c_str(), &st) != 0) {
    if (errno == ENOENT) return std::nullopt;
    return std::string(std::strerror(errno));
  }
  if (S_ISDIR(st.st_mode)) return std::string("it is a folder");
  if (!S_ISREG(st.st_mode))
    return std::string("it is not a regular file (a device, pipe or socket); give a file path, "
                       "or `-` for stdout where the option takes it");
  // The mode bits, not access(): root may write anything, and a file its owner made
  // read-only is still one to keep.
  if ((st.st_mode & 0222) == 0)
    return fmt::format("the file is read-only (mode {:04o}); make it writable (chmod u+w) or "
                       "give another path",
                       st.st_mode & 07777);
  if (::faccessat(AT_FDCWD, target.c_str(), W_OK, AT_EACCESS) != 0)
    return fmt::format("the file is not writable by this user ({})", std::strerror(errno));
  return std::nullopt;
}

// A name for a temporary file beside `target` (dot-prefixed; the name is cut so that the
// temporary stays within the file system's 255-byte limit where the target does).
fs::path temp_name(const fs::path& target, const char* kind, int n) {
  std::string name = target.filename().string();
  if (name.size() > 200) name.resize(200);
  return folder_of(target) / fmt::format(".{}.{}.{}.{}", name, ::getpid(), n, kind);
}

// Creates a new file beside `target` exclusively (never an existing file or link); its
// descriptor and path, or the errno of the failure.
std::pair<int, fs::path> create_beside(const fs::path& target, const char* kind) {
  for (int n = 0; n < 1000; ++n) {
    fs::path p = temp_name(target, kind, n);
    // 0666: the kernel takes the umask (and a default ACL) off, as for any new file.
    int fd = ::open(p.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd >= 0) return {fd, p};
    if (errno != EEXIST) return {-1, {}};
  }
  errno = EEXIST;
  return {-1, {}};
}

}  // namespace

bool same_file(const std::string& a, const std::string& b) {
  struct stat sa, sb;
  const bool ea = ::stat(a.c_str(), &sa) == 0;
  const bool eb = ::stat(b.c_str(), &sb) == 0;
  if (ea && eb) return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
  if (ea || eb) return false;
  std::error_code ec1, ec2;
  fs::path ra = fs::weakly_canonical(fs::absolute(followed(a)), ec1);
  fs::path rb = fs::weakly_canonical(fs::absolute(followed(b)), ec2);
  return !ec1 && !ec2 && ra == rb;
}

std::optional<std::string> why_folder_refuses_files(const std::string& folder) {
  auto [fd, probe] = create_beside(fs::path(folder.empty() ? "." : folder) / "probe", "probe");
  if (fd < 0) return std::string(std::strerror(errno));
  ::close(fd);
  ::unlink(probe.c_str());
  return std::nullopt;
}

std::optional<std::string> why_not_replaceable(const std::string& path) {
  if (path.empty()) return std::string("no path given");
  const fs::path given(path);
  const fs::path target = followed(path);
  return why_not_replaceable(target, folder_of(target == given ? given : target));
}

std::optional<std::string> why_not_writable(const std::string& path) {
  if (std::optional<std::string> why = why_not_replaceable(path)) return why;
  const fs::path given(path);
  const fs::path target = followed(path);
  const fs::path shown = folder_of(target == given ? given : target);
  if (std::optional<std::string> why = why_folder_refuses_files(folder_of(target).string()))
    return fmt::format("folder '{}' does not accept new files ({})", shown.string(), *why);
  return std::nullopt;
}

void check_outputs(const std::vector<NamedPath>& inputs, const std::vector<NamedPath>& outputs) {
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    const NamedPath& out = outputs[i];
    if (out.path.empty() || out.path == "-") continue;
    struct stat st;
    const bool exists = ::stat(out.path.c_str(), &st) == 0;
    for (const NamedPath& in : inputs) {
      // Only an existing file can be replaced: a missing input fails when it is read.
      if (!exists || in.path.empty() || in.path == "-" || !same_file(out.path, in.path)) continue;
      const std::string same =
          in.path == out.path ? "" : fmt::format(" '{}' (the same file)", in.path);
      throw io_error(out.path, fmt::format("{} would replace the input {}{}; give another path",
                                           out.what, in.what, same));
    }
    for (std::size_t j = 0; j < i; ++j) {
      const NamedPath& earlier = outputs[j];
      if (earlier.path.empty() || earlier.path == "-" || !same_file(out.path, earlier.path))
        continue;
      throw io_error(out.path, fmt::format("{} and {} name the same file; give each output its "
                                           "own path",
                                           earlier.what, out.what));
    }
    if (std::optional<std::string> why = why_not_writable(out.path)) throw io_error(out.path, *why);
  }
}

StagedFile::StagedFile(const std::string& path, const std::string& contents) : path_(path) {
  if (path.empty()) throw io_error(path, "no path given");
  const fs::path given(path);
  const fs::path target = followed(path);
  if (given.filename().empty() || target.filename().empty())
    throw io_error(path, "the path names a folder, not a file");
  target_ = target.string();
  if (std::optional<std::string> why =
          why_not_replaceable(target, folder_of(target == given ? given : target)))
    throw io_error(path, *why);
  auto [fd, temp] = create_beside(target, "tmp");
  if (fd < 0) {
    std::string why = std::strerror(errno);
    throw io_error(path, fmt::format("folder '{}' does not accept new files ({})",
                                     folder_of(target == given ? given : target).string(), why));
  }
  temp_ = temp.string();
  struct stat old;
  if (::stat(target.c_str(), &old) == 0) {
    // An existing output keeps its owner (where this user may give it: root) and its mode.
    if ((old.st_uid != ::geteuid() || old.st_gid != ::getegid()) &&
        ::fchown(fd, old.st_uid, old.st_gid) != 0) {
      // Not this user's to give: the new file stays this user's, with the old mode.
    }
    ::fchmod(fd, old.st_mode & 0777);
  }
  const char* data = contents.data();
  std::size_t left = contents.size();
  int error = 0;
  while (left > 0) {
    ssize_t n = ::write(fd, data, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      error = errno;
      break;
    }
    data += n;
    left -= static_cast<std::size_t>(n);
  }
  if (::close(fd) != 0 && error == 0) error = errno;  // a full disk may show up at close
  if (error != 0) {
    ::unlink(temp_.c_str());
    temp_.clear();
    throw io_error(path, fmt::format("write failed ({})", std::strerror(error)));
  }
}

StagedFile::StagedFile(StagedFile&& other) noexcept
    : path_(std::move(other.path_)),
      target_(std::move(other.target_)),
      temp_(std::move(other.temp_)) {
  other.temp_.clear();
}

StagedFile::~StagedFile() {
  if (!temp_.empty()) ::unlink(temp_.c_str());
}

void StagedFile::commit() {
  if (temp_.empty()) return;
  if (::rename(temp_.c_str(), target_.c_str()) != 0) throw io_error(path_, std::strerror(errno));
  temp_.clear();
}

}  // namespace solar
