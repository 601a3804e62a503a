// Reading and writing whole files safely: reads are bounded (a module, config.json or cost
// file that never ends, such as /dev/zero, is refused once it passes a limit) and writes never
// leave a damaged or half-written file behind.
#pragma once

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <string>

namespace mpk {

// The whole file at PATH, or an Error naming WHAT and PATH: missing, a directory, unreadable,
// or longer than MAX_BYTES ("WHAT 'PATH' is larger than N MiB").
std::string read_file_bounded(const std::string& path, int64_t max_bytes, const std::string& what);

// Writes PATH through WRITE. For a regular or missing PATH the bytes go to a temporary file in
// the same folder, which is flushed, fsync'ed and renamed over PATH only when WRITE returns and
// every byte is on disk; on any error the temporary file is removed and PATH is untouched. A
// PATH that exists and is not a regular file (/dev/null, a pipe, a terminal) is written in place
// and never replaced. Errors name PATH and the reason.
void write_file_safely(const std::string& path, const std::function<void(std::ostream&)>& write);

// write_file_safely with a fixed content.
void write_file_safely(const std::string& path, const std::string& content);

}  // namespace mpk
