// Output files written without loss: the checks an output path passes before a command does
// any work, and the atomic write that replaces a file.
//
// The rules (docs/cli.md, "Output files"):
//   - an output never replaces an input of its command, nor another output of it: two paths
//     name one file when they have the same (st_dev, st_ino) (hard links and symlinks
//     included) or, for a file still to be created, the same real path;
//   - an output is written to a temporary file beside it and renamed over it when complete,
//     so a failure leaves no partial file and an earlier file stays as it was;
//   - an existing output keeps its mode; one with no write bit is refused, whoever runs
//     the command (root's access() would let it through: the mode bits are read instead);
//   - the folder must accept a new file, which is tested by creating one there.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace solar {

// A path of a command line with what it is to the command: an option (`--json`), or an
// input's role (`GRAPH`, `PROGRAM`, `--timings`).
struct NamedPath {
  std::string what;
  std::string path;
};

// Whether `a` and `b` name one file: the same (st_dev, st_ino) when both exist, else the
// same absolute path once the existing part of each is resolved (realpath).
bool same_file(const std::string& a, const std::string& b);

// Why a file cannot be written at `path` by replacing it atomically, or nullopt. The reasons:
// `path` is empty or a folder; its folder is missing or no folder; `path` exists with no
// write bit (read-only) or is not writable by this user; its folder refuses a new file (a
// probe file is created there and removed). The reason does not repeat `path`.
std::optional<std::string> why_not_writable(const std::string& path);

// why_not_writable without the probe of the folder: for many files of one folder, whose
// folder is probed once.
std::optional<std::string> why_not_replaceable(const std::string& path);

// Why no new file can be created in `folder` (its errno text), or nullopt: a probe file is
// created there and removed, which is the test that binds an unprivileged user and a
// read-only file system alike.
std::optional<std::string> why_folder_refuses_files(const std::string& folder);

// Checks every output before any work: none names an input or an earlier output (the same
// file), and each can be written (why_not_writable). Outputs that are empty or `-` (stdout)
// are skipped. Throws UserError(Io) "cannot write 'PATH': why", PATH as the user gave it.
void check_outputs(const std::vector<NamedPath>& inputs, const std::vector<NamedPath>& outputs);

// A file's new contents, written to a temporary file beside its target (`.NAME.PID.N.tmp`,
// created exclusively) and renamed over the target by commit(); the destructor removes the
// temporary unless it was committed. The temporary gets the target's mode when the target
// exists (and its owner when this user may give it), else 0666 less the umask, as any new
// file. A symlink target is followed: the file it points to is replaced, the link stays.
// Errors are UserError(Io) naming `path` as given, never the temporary.
class StagedFile {
 public:
  StagedFile(const std::string& path, const std::string& contents);
  StagedFile(const StagedFile&) = delete;
  StagedFile& operator=(const StagedFile&) = delete;
  StagedFile(StagedFile&& other) noexcept;
  StagedFile& operator=(StagedFile&&) = delete;
  ~StagedFile();

  // Renames the temporary over the target.
  void commit();
  const std::string& path() const { return path_; }

 private:
  std::string path_;    // as the user gave it (messages)
  std::string target_;  // the file replaced: path_, or what its symlink points to
  std::string temp_;    // empty once committed or moved from
};

}  // namespace solar
