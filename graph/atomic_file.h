// Writing output files so that a crash, a full disk or Ctrl-C never leaves a half-written file:
// the bytes go to "<path>.tmp.sl<pid>", are fsync'ed, then renamed over <path>. Every write, fsync,
// close and rename is checked; a failure throws sl::WriteError (graph/error.h). A file size limit
// (RLIMIT_FSIZE, `ulimit -f`) kills the process with SIGXFSZ unless that signal is ignored, as the
// CLI does: then the write fails with EFBIG and is reported like a full disk.
// A process killed outright (SIGKILL, the out-of-memory killer, a power cut) cannot remove its
// temporary file: the first write into a folder in a process removes the "<name>.tmp.sl<pid>" files
// there whose process is gone (no such pid) and that are over a minute old, so a crashed run's
// leftovers go with the next run that writes there (a live writer's are never touched, nor any
// other program's: "sl" marks ours, where a shell script's "out.tmp.$$" has digits only).
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

// The sweep above for one folder (done once per folder per process by write_file_atomic; exposed
// for tests): removes the stale "<name>.tmp.sl<pid>" files in `dir`, returns how many.
size_t remove_stale_temp_files(const std::string& dir);

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
