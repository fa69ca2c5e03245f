// A folder one process writes at a time: a training run's folder. Two runs given the same folder
// (a second terminal, a job a scheduler started twice) would interleave checkpoints, metrics and
// reports; the second stops at once instead, naming the first.
//
// The owner holds an open-file-description lock (fcntl F_OFD_SETLK, a write lock) on
// <dir>/streamline.lock for as long as it runs, and writes into that file who it is (pid, host,
// start time, command). The kernel drops the lock when the process ends, however it ends, so a
// run killed outright never blocks its own resume; the file itself stays (its content is only
// read to name the holder). On a filesystem whose locks do not reach other hosts (NFS with
// `nolock`, SMB with `nobrl`: graph/atomic_file.h) two hosts can still share a folder unseen.
#pragma once
#include <memory>
#include <string>

namespace sl {

inline constexpr const char* kFolderLockName = "streamline.lock";

class FolderLock {
 public:
  // Creates `dir` if needed and locks it for this process, recording `command`. Within one process
  // the folder's lock is shared: a second acquire of the same folder returns the first's (the CLI
  // and the trainer it runs both take it). Throws sl::Error "<dir>: in use by another run (pid N on
  // HOST since TIME: COMMAND); ..." when another process holds it, and naming the folder when it
  // cannot be created or the lock file cannot be opened. Where the filesystem has no such locks,
  // the folder is not locked and note() says so.
  static std::shared_ptr<FolderLock> acquire(const std::string& dir, const std::string& command);
  ~FolderLock();
  FolderLock(const FolderLock&) = delete;
  FolderLock& operator=(const FolderLock&) = delete;

  const std::string& dir() const { return dir_; }
  const std::string& note() const { return note_; }  // "" when locked

 private:
  FolderLock() = default;
  int fd_ = -1;
  std::string dir_, key_, note_;
};

}  // namespace sl
