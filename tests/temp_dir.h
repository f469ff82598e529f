// A fresh directory for one test, removed with everything in it afterwards.

#ifndef HALFSPACE_TESTS_TEMP_DIR_H_
#define HALFSPACE_TESTS_TEMP_DIR_H_

#include <stdlib.h>

#include <filesystem>
#include <string>

class TempDir {
 public:
  TempDir() {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "halfspace-test-XXXXXX")
            .string();
    path_ = mkdtemp(pattern.data());
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  std::string File(const std::string& name) const {
    return (std::filesystem::path(path_) / name).string();
  }

 private:
  std::string path_;
};

#endif  // HALFSPACE_TESTS_TEMP_DIR_H_
