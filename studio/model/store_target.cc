// The side file: picked beside the input (or in the temporary directory), checked to
// continue the open trace when it exists, copied from the open trace when it does not,
// and opened in its place.
#include "studio/model/store_target.h"

#include <unistd.h>

#include <filesystem>

#include "ir/error.h"
#include "studio/model/state.h"

namespace mpk::studio {
namespace {

namespace fs = std::filesystem;

constexpr const char* kSideSuffix = ".studio.db";

// Writable by us, and not marked read-only (no write bit: root may write it, but the
// user said not to).
bool writable(const fs::path& p) {
  std::error_code ec;
  const fs::perms perms = fs::status(p, ec).permissions();
  const fs::perms any_write = fs::perms::owner_write | fs::perms::group_write | fs::perms::others_write;
  return !ec && (perms & any_write) != fs::perms::none && ::access(p.c_str(), W_OK) == 0;
}

fs::path folder_of(const std::string& path) {
  const fs::path dir = fs::path(path).parent_path();
  return dir.empty() ? fs::path(".") : dir;
}

// True when the trace at `path` holds `runs` (the open trace's) under the same ids, with
// the same kind, model, schedule, steps and executions: a copy that the studio went on
// writing.
bool continues(const std::string& path, const std::vector<RunRecord>& runs) {
  try {
    const std::vector<RunRecord> theirs = TraceReader(path).runs();
    if (theirs.size() < runs.size()) return false;
    for (size_t i = 0; i < runs.size(); ++i) {
      const RunRecord &a = runs[i], &b = theirs[i];
      if (a.id != b.id || a.kind != b.kind || a.model != b.model || a.policy != b.policy ||
          a.pipeline != b.pipeline || a.steps != b.steps || a.num_executions != b.num_executions ||
          a.duration_ns != b.duration_ns)
        return false;
    }
    return true;
  } catch (const Error&) {
    return false;  // not a trace.db
  }
}

// Reads `path` in place of the open trace, keeping the current run, its model and the
// view (the runs keep their ids).
void switch_to(StudioState& s, const std::string& path) {
  auto reader = std::make_unique<TraceReader>(path);
  std::vector<RunRecord> runs = reader->runs();
  if (s.trace_is_temporary) {
    s.reader.reset();
    std::error_code ec;
    fs::remove(s.trace_path, ec);
    s.trace_is_temporary = false;
  }
  s.reader = std::move(reader);
  s.runs = std::move(runs);
  s.trace_path = path;
  s.trace_is_side = true;
  s.pipeline.trace_path = path;  // the pipeline view's runs and modules stay valid
}

void check_writable(const std::string& path) {
  if (!writable(path))
    throw Error(path + " is read-only: new runs cannot be stored in it" +
                " (store them in a side file instead: turn off 'store in the opened file')");
  if (!writable(folder_of(path)))
    throw Error(path + ": its folder " + folder_of(path).string() +
                " is read-only (SQLite writes a journal beside the file)");
}

}  // namespace

bool is_side_trace(const std::string& path) {
  const std::string name = fs::path(path).filename().string();
  const std::string suffix(kSideSuffix);
  return name.size() > suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string side_path(const std::string& input, const std::string& suffix) {
  const fs::path dir = folder_of(input);
  const std::string name = fs::path(input).stem().string() + suffix;
  return ((writable(dir) ? dir : fs::temp_directory_path()) / name).string();
}

std::string prepare_store(StudioState& s) {
  if (!s.reader) throw Error("nothing is open");
  if (s.trace_is_side || (s.write_into_input && !s.trace_is_temporary)) {
    check_writable(s.trace_path);
    return s.trace_path;
  }
  const std::string first = side_path(s.input_path, kSideSuffix);
  const std::string stem = first.substr(0, first.size() - std::string(kSideSuffix).size());
  for (int i = 1; i <= 9; ++i) {
    const std::string path = i == 1 ? first : stem + ".studio-" + std::to_string(i) + ".db";
    std::error_code ec;
    if (fs::exists(path, ec)) {
      if (!continues(path, s.runs) || !writable(path)) continue;
      switch_to(s, path);
      return path;
    }
    fs::copy_file(s.trace_path, path, ec);
    if (!ec)
      fs::permissions(path, fs::perms::owner_read | fs::perms::owner_write, fs::perm_options::add, ec);
    if (ec) {
      const std::string why = ec.message();
      fs::remove(path, ec);
      throw Error("cannot store new runs: copying " + s.trace_path + " to " + path + " failed: " + why);
    }
    switch_to(s, path);
    return path;
  }
  throw Error("cannot store new runs: " + first + " and the next eight side files hold other runs");
}

std::string store_description(const StudioState& s) {
  if (!s.reader) return "";
  if (s.trace_is_side || (s.write_into_input && !s.trace_is_temporary))
    return "new runs go to " + s.trace_path;
  return "new runs go to a side file, " + side_path(s.input_path, kSideSuffix) + " (made on the first)";
}

}  // namespace mpk::studio
