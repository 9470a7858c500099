// SPDX-License-Identifier: BSD-3-Clause
#include "mini5d/core/replace_target.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <filesystem>

#include "mini5d/core/printable.hpp"

namespace fs = std::filesystem;

namespace mini5d {

namespace {
const char* kind_of(mode_t m) {
  if (S_ISDIR(m)) return "a directory";
  if (S_ISCHR(m)) return "a character device";
  if (S_ISBLK(m)) return "a block device";
  if (S_ISFIFO(m)) return "a FIFO";
  if (S_ISSOCK(m)) return "a socket";
  return "not a regular file";
}
// The kernel's own limit on links followed in one lookup (Linux: 40).
constexpr int kMaxLinks = 40;
}  // namespace

ReplaceTarget replace_target(const std::string& path_given, const std::string& field) {
  ReplaceTarget t{path_given, {}};
  const std::string path = printable_path(path_given);  // for messages only
  for (int hops = 0;; ++hops) {
    struct stat st {};
    if (::lstat(t.path.c_str(), &st) != 0) return t;  // not there yet: created new
    if (S_ISREG(st.st_mode)) return t;
    if (!S_ISLNK(st.st_mode)) {
      t.problem = path + ": " + field + " is " + kind_of(st.st_mode) +
                  (t.path == path_given ? std::string() : " (" + printable_path(t.path) + ", where its link leads)") +
                  "; mini5d writes it by renaming a new file over it, which would replace it: give a regular file";
      return t;
    }
    if (hops == kMaxLinks) {
      t.problem = path + ": " + field + ": more than " + std::to_string(kMaxLinks) + " symbolic links (a loop?)";
      return t;
    }
    std::error_code ec;
    const fs::path to = fs::read_symlink(t.path, ec);
    if (ec) {
      t.problem = path + ": " + field + ": cannot read the symbolic link: " + ec.message();
      return t;
    }
    t.path = (to.is_absolute() ? to : fs::path(t.path).parent_path() / to).string();
  }
}

}  // namespace mini5d
