// The streaming decoder (text/stream_decoder.h).
#include "text/stream_decoder.h"

#include "text/utf8.h"

namespace mpk::text {

std::string StreamDecoder::push(int32_t id) {
  if (!tokenizer_.has_id(id)) return "";
  pending_ += tokenizer_.token_bytes(id);
  const size_t hold = incomplete_utf8_tail(pending_);
  std::string ready = repair_utf8(std::string_view(pending_).substr(0, pending_.size() - hold)).text;
  pending_.erase(0, pending_.size() - hold);
  return ready;
}

std::string StreamDecoder::finish() {
  std::string rest = repair_utf8(pending_).text;
  pending_.clear();
  return rest;
}

}  // namespace mpk::text
