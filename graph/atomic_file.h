// Writing output files so that a crash, a full disk or Ctrl-C never leaves a half-written file:
// the bytes go to "<path>.tmp.sl<pid>", are fsync'ed, then renamed over <path>. Every write, fsync,
// close and rename is checked; a failure throws sl::WriteError (graph/error.h). A file size limit
// (RLIMIT_FSIZE, `ulimit -f`) kills the process with SIGXFSZ unless that signal is ignored, as the
// CLI does: then the write fails with EFBIG and is reported like a full disk.
//
// A process killed outright (SIGKILL, the out-of-memory killer, a power cut) cannot remove its
// temporary file. Its writer holds an open-file-description lock (fcntl F_OFD_SETLKW, a write
// lock over the whole file) on the temporary file from its creation until after the rename, and
// the kernel drops that lock the moment the process dies, however it dies: a "<name>.tmp.sl<pid>"
// file nobody holds a lock on is stale, whatever its age or whichever process now has that pid.
// The commands sweep the folders they own when they start (remove_stale_temp_files), and the
// first write into a folder in a process sweeps that folder too. Only names ending ".tmp.sl" and
// digits are ours ("sl"; a shell script's "out.tmp.$$" has digits only) and only those are touched.
//
// Writers on other hosts: on a local filesystem (ext4, xfs, btrfs, tmpfs, overlayfs...) only this
// host writes, and the lock is the whole answer. On a network or cluster filesystem (NFS, SMB/CIFS,
// FUSE such as sshfs, Ceph, Lustre, GPFS, 9p, AFS...) a lock may not reach the host that holds it
// (NFS mounted with `nolock` or `local_lock`, SMB with `nobrl`, FUSE without lock support), so a
// live writer elsewhere can look unlocked from here: on those, an unlocked temporary file is also
// left alone while it changed within the last minute (a live writer's file changes as it is written).
#pragma once
#include <sys/types.h>

#include <string>
#include <string_view>

namespace sl {

// Throws sl::WriteError naming the path and the reason (e.g. "No space left on device"); on failure
// the previous file at `path`, if any, is left intact and the temporary file is removed.
void write_file_atomic(const std::string& path, std::string_view bytes);
// Same, with the content given as several pieces (avoids concatenating large buffers).
void write_file_atomic(const std::string& path, const std::string_view* pieces, size_t count);

// The sweep above: removes the stale "<name>.tmp.sl<pid>" files in `dir` (and in its subfolders
// when `recursive`), returns how many. A folder that does not exist holds none. Called by each
// command for the folders it owns when it starts; write_file_atomic does it once per folder per
// process for the folder it writes into.
size_t remove_stale_temp_files(const std::string& dir, bool recursive = false);
// One file: removes `path` when no writer holds its lock (and, when `shared_fs`, it is also over
// a minute old); true when removed. For the sweep and its tests.
bool remove_temp_file_if_stale(const std::string& path, bool shared_fs);
// The name of `dir`'s filesystem when it is one whose locks may not reach other hosts ("nfs",
// "smb", "fuse", ...), "" for a local one.
std::string shared_filesystem_of(const std::string& dir);

// Reads a whole regular file; throws sl::Error naming the path when it is missing, a
// directory, or unreadable.
std::string read_file(const std::string& path);

// A file that grows a line at a time (the trainer's metrics, JSON Lines): each line is written
// and checked at once (nothing waits in a stream buffer to be lost or to fail unseen); a line
// that cannot be written whole is taken back, so the file never ends in half a line. Throws
// sl::WriteError naming the path and the reason.
class AppendFile {
 public:
  AppendFile() = default;
  ~AppendFile();
  AppendFile(const AppendFile&) = delete;
  AppendFile& operator=(const AppendFile&) = delete;
  // Creates the file or appends to it (truncate: empties it first). An unfinished last line (a
  // run killed while writing it) is dropped.
  void open(const std::string& path, bool truncate);
  void append(std::string_view line);  // the whole line, or nothing
  void sync();                         // fsync: the lines so far are on the disk, or it throws
  void close();                        // sync, then close
  bool is_open() const { return fd_ >= 0; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  int fd_ = -1;
  off_t size_ = 0;
  bool regular_ = true;
};

}  // namespace sl
