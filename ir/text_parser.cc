// Parses the canonical text form (grammar in docs/ir.md, "Text form") back into a
// Module. A recursive-descent scanner over characters that tracks line and column, so
// every error reads "<source>:<line>:<col>: <what>". Names resolve to ids as they are
// read; ids that refer to tasks (events, workers) are left to the verifier.
#include <charconv>
#include <map>
#include <limits>
#include <unordered_map>

#include "ir/serialize.h"
#include "ir/text.h"

namespace mpk {
namespace {

bool is_word_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '.';
}

class Parser {
 public:
  Parser(std::string_view text, const std::string& source) : text_(text), source_(source) {}

  Module run() {
    skip_blank_lines();
    if (at_end()) fail("empty input: expected the header line 'mpk.module \"<name>\" ir_version=N'");
    header();
    while (true) {
      skip_blank_lines();
      if (at_end()) break;
      mark();
      const std::string kw = word("a line keyword");
      if (kw == "attrs") {
        once(seen_attrs_, "attrs");
        m_.attrs = attrs();
      } else if (kw == "provenance") {
        once(seen_provenance_, "provenance");
        provenance();
      } else if (kw == "machine") {
        once(seen_machine_, "machine");
        machine();
      } else if (kw == "tensor") {
        tensor();
      } else if (kw == "op") {
        op();
      } else if (kw == "task") {
        task();
      } else if (kw == "event") {
        event();
      } else if (kw == "schedule") {
        once(seen_schedule_, "schedule");
        m_.graph.schedule.policy = name("a schedule policy name");
        m_.graph.schedule.params = attrs();
      } else if (kw == "worker") {
        worker();
      } else {
        fail_at_mark("unknown line keyword '" + kw +
                     "' (expected attrs, provenance, machine, tensor, op, task, event, schedule "
                     "or worker)");
      }
      end_of_line();
    }
    m_.program.rebuild_use_lists();
    return std::move(m_);
  }

 private:
  // ---- scanning ----

  bool at_end() const { return pos_ >= text_.size(); }
  char peek() const { return at_end() ? '\0' : text_[pos_]; }

  void advance() {
    if (text_[pos_] == '\n') {
      ++line_;
      line_start_ = pos_ + 1;
    }
    ++pos_;
  }

  // Spaces, tabs and a trailing '#' comment; never a newline.
  void skip_spaces() {
    while (!at_end()) {
      const char c = peek();
      if (c == ' ' || c == '\t' || c == '\r') {
        ++pos_;
      } else if (c == '#') {
        while (!at_end() && peek() != '\n') ++pos_;
      } else {
        break;
      }
    }
  }

  void skip_blank_lines() {
    while (true) {
      skip_spaces();
      if (peek() != '\n') return;
      advance();
    }
  }

  void end_of_line() {
    skip_spaces();
    if (at_end()) return;
    if (peek() != '\n') fail("unexpected '" + std::string(1, peek()) + "', expected end of line");
    advance();
  }

  std::string where(int line, size_t col) const {
    return source_ + ":" + std::to_string(line) + ":" + std::to_string(col) + ": ";
  }
  [[noreturn]] void fail(const std::string& what) const {
    throw Error(where(line_, pos_ - line_start_ + 1) + what);
  }
  struct Pos {
    int line = 1;
    size_t col = 1;
  };
  // The start of the next token.
  Pos here() {
    skip_spaces();
    return {line_, pos_ - line_start_ + 1};
  }
  [[noreturn]] void fail_at(Pos p, const std::string& what) const {
    throw Error(where(p.line, p.col) + what);
  }
  // Marks the start of the token an error may later point at.
  void mark() { mark_ = here(); }
  [[noreturn]] void fail_at_mark(const std::string& what) const { fail_at(mark_, what); }

  void once(bool& seen, const std::string& what) {
    if (seen) fail_at_mark("second '" + what + "' line");
    seen = true;
  }

  void expect(char c) {
    skip_spaces();
    if (peek() != c) {
      const std::string got = at_end() ? "end of input" : peek() == '\n' ? "end of line"
                                                                         : "'" + std::string(1, peek()) + "'";
      fail("expected '" + std::string(1, c) + "', got " + got);
    }
    advance();
  }

  bool accept(char c) {
    skip_spaces();
    if (peek() != c) return false;
    advance();
    return true;
  }

  std::string word(const std::string& what) {
    skip_spaces();
    const size_t start = pos_;
    while (!at_end() && is_word_char(peek())) ++pos_;
    if (pos_ == start) fail("expected " + what);
    return std::string(text_.substr(start, pos_ - start));
  }

  // Attribute keys: [A-Za-z0-9_.-]+ (pass options are kebab-case).
  std::string key() {
    skip_spaces();
    const size_t start = pos_;
    while (!at_end() && (is_word_char(peek()) || peek() == '-')) ++pos_;
    if (pos_ == start) fail("expected an attribute key");
    return std::string(text_.substr(start, pos_ - start));
  }

  void keyword(std::string_view kw) {
    mark();
    const size_t start = pos_;
    while (!at_end() && is_word_char(peek())) ++pos_;
    if (text_.substr(start, pos_ - start) != kw) fail_at_mark("expected '" + std::string(kw) + "'");
  }

  std::string quoted() {
    expect('"');
    std::string s;
    while (true) {
      if (at_end()) fail("unterminated string");
      char c = peek();
      advance();
      if (c == '"') return s;
      if (c == '\\') {
        if (at_end()) fail("unterminated string");
        c = peek();
        if (c != '"' && c != '\\') fail("unknown escape '\\" + std::string(1, c) + "' in string");
        advance();
      }
      s += c;
    }
  }

  std::string name(const std::string& what) {
    skip_spaces();
    if (peek() == '"') return quoted();
    return word(what);
  }

  int64_t integer(const std::string& what) {
    mark();
    const size_t start = pos_;
    if (peek() == '-') ++pos_;
    while (!at_end() && peek() >= '0' && peek() <= '9') ++pos_;
    int64_t v = 0;
    auto [end, ec] = std::from_chars(text_.data() + start, text_.data() + pos_, v);
    if (pos_ == start || ec != std::errc() || end != text_.data() + pos_) {
      pos_ = start;
      fail("expected an integer " + what);
    }
    return v;
  }

  int32_t int32(const std::string& what) {
    const int64_t v = integer(what);
    if (v < std::numeric_limits<int32_t>::min() || v > std::numeric_limits<int32_t>::max())
      fail_at_mark(what + " " + std::to_string(v) + " does not fit in 32 bits");
    return static_cast<int32_t>(v);
  }

  AttrValue value() {
    mark();
    if (peek() == '"') return quoted();
    const size_t start = pos_;
    while (!at_end() && (is_word_char(peek()) || peek() == '-' || peek() == '+')) ++pos_;
    const std::string_view tok = text_.substr(start, pos_ - start);
    if (tok.empty()) fail("expected a value (integer, float or \"string\")");
    if (tok == "inf") return std::numeric_limits<double>::infinity();
    if (tok == "-inf") return -std::numeric_limits<double>::infinity();
    if (tok == "nan") return std::numeric_limits<double>::quiet_NaN();
    const bool is_float = tok.find_first_of(".eE") != std::string_view::npos;
    if (is_float) {
      double d = 0;
      auto [end, ec] = std::from_chars(tok.data(), tok.data() + tok.size(), d);
      if (ec != std::errc() || end != tok.data() + tok.size())
        fail_at_mark("malformed number '" + std::string(tok) + "'");
      return d;
    }
    int64_t i = 0;
    auto [end, ec] = std::from_chars(tok.data(), tok.data() + tok.size(), i);
    if (ec == std::errc::result_out_of_range)
      fail_at_mark("integer '" + std::string(tok) + "' does not fit in 64 bits");
    if (ec != std::errc() || end != tok.data() + tok.size())
      fail_at_mark("malformed value '" + std::string(tok) + "'");
    return i;
  }

  // {key=value, ...}
  Attrs attrs() {
    expect('{');
    Attrs a;
    if (accept('}')) return a;
    do {
      const Pos at = here();
      std::string k = key();
      expect('=');
      AttrValue v = value();
      if (!a.emplace(k, std::move(v)).second) fail_at(at, "duplicate attribute '" + k + "'");
    } while (accept(','));
    expect('}');
    return a;
  }

  // key=value pairs up to the end of the line, each key at most once, with where each
  // key and value starts.
  struct KeyValues {
    Attrs values;
    std::map<std::string, std::pair<Pos, Pos>> pos;
  };

  KeyValues key_values(const std::string& line_kind) {
    KeyValues kv;
    while (true) {
      skip_spaces();
      if (at_end() || peek() == '\n') return kv;
      const Pos key_at = here();
      std::string k = word("a key=value pair");
      expect('=');
      const Pos value_at = here();
      AttrValue v = value();
      if (!kv.values.emplace(k, std::move(v)).second)
        fail_at(key_at, "duplicate key '" + k + "' in " + line_kind);
      kv.pos[k] = {key_at, value_at};
    }
  }

  // Takes `key` out of `kv` (if present), type-checked.
  template <typename T>
  void take(KeyValues& kv, const std::string& key, T& out, const std::string& line_kind) {
    auto it = kv.values.find(key);
    if (it == kv.values.end()) return;
    const Pos at = kv.pos[key].second;
    if constexpr (std::is_same_v<T, std::string>) {
      if (!std::holds_alternative<std::string>(it->second))
        fail_at(at, line_kind + " " + key + " must be a string");
      out = std::get<std::string>(it->second);
    } else if constexpr (std::is_same_v<T, double>) {
      if (std::holds_alternative<std::string>(it->second))
        fail_at(at, line_kind + " " + key + " must be a number");
      out = attr_float(kv.values, key);
    } else {
      if (!std::holds_alternative<int64_t>(it->second))
        fail_at(at, line_kind + " " + key + " must be an integer");
      const int64_t v = std::get<int64_t>(it->second);
      if (v < std::numeric_limits<T>::min() || v > std::numeric_limits<T>::max())
        fail_at(at, line_kind + " " + key + " = " + std::to_string(v) + " is out of range");
      out = static_cast<T>(v);
    }
    kv.values.erase(it);
  }

  // The first key (in line order) that no take() consumed is an error.
  void no_leftover(KeyValues& kv, const std::string& line_kind, const std::string& known) {
    const std::string* first = nullptr;
    for (const auto& [k, v] : kv.values)
      if (!first || std::pair(kv.pos[k].first.line, kv.pos[k].first.col) <
                        std::pair(kv.pos[*first].first.line, kv.pos[*first].first.col))
        first = &k;
    if (first)
      fail_at(kv.pos[*first].first,
              "unknown key '" + *first + "' in " + line_kind + " (known: " + known + ")");
  }

  // ---- lines ----

  void header() {
    mark();
    const size_t start = pos_;
    while (!at_end() && is_word_char(peek())) ++pos_;
    if (text_.substr(start, pos_ - start) != "mpk.module")
      fail_at_mark("expected the header line 'mpk.module \"<name>\" ir_version=N'");
    m_.name = name("a module name");
    keyword("ir_version");
    expect('=');
    const int64_t v = integer("IR version");
    if (v > kIrVersion)
      fail_at_mark("written by a newer mpk: IR version " + std::to_string(v) +
                   ", this build reads up to " + std::to_string(kIrVersion));
    if (v < 1) fail_at_mark("invalid IR version " + std::to_string(v));
    end_of_line();
  }

  void provenance() {
    KeyValues kv = key_values("provenance");
    take(kv, "source", m_.provenance.source, "provenance");
    take(kv, "pipeline", m_.provenance.pipeline, "provenance");
    take(kv, "tool", m_.provenance.tool_version, "provenance");
    no_leftover(kv, "provenance", "source, pipeline, tool");
  }

  void machine() {
    KeyValues kv = key_values("machine");
    MachineModel& mm = m_.machine;
    take(kv, "name", mm.name, "machine");
    take(kv, "sm_count", mm.sm_count, "machine");
    take(kv, "smem_per_sm", mm.smem_per_sm, "machine");
    take(kv, "mem_bandwidth", mm.mem_bandwidth, "machine");
    take(kv, "clock_ghz", mm.clock_ghz, "machine");
    take(kv, "event_latency_ns", mm.event_latency_ns, "machine");
    take(kv, "task_overhead_ns", mm.task_overhead_ns, "machine");
    no_leftover(kv, "machine",
                "name, sm_count, smem_per_sm, mem_bandwidth, clock_ghz, event_latency_ns, "
                "task_overhead_ns");
  }

  TensorId tensor_ref() {
    mark();
    const Pos at = mark_;
    const std::string n = name("a tensor name");
    auto it = tensor_ids_.find(n);
    if (it == tensor_ids_.end()) fail_at(at, "unknown tensor '" + n + "'");
    return it->second;
  }

  void tensor() {
    mark();
    const Pos at = mark_;
    Tensor t;
    t.name = name("a tensor name");
    if (tensor_ids_.count(t.name))
      fail_at(at, "duplicate tensor name '" + t.name + "'");
    expect(':');
    mark();
    const std::string dt = word("a dtype");
    auto dtype = parse_dtype(dt);
    if (!dtype) fail_at_mark("unknown dtype '" + dt + "' (expected bf16, f16, f32 or i32)");
    t.dtype = *dtype;
    expect('[');
    if (!accept(']')) {
      do t.shape.push_back(integer("dimension"));
      while (accept(','));
      expect(']');
    }
    mark();
    const std::string r = word("a tensor role");
    auto role = parse_tensor_role(r);
    if (!role)
      fail_at_mark("unknown tensor role '" + r +
                   "' (expected weight, activation, kv_cache, input, output or scratch)");
    t.role = *role;
    tensor_ids_.emplace(t.name, static_cast<TensorId>(m_.program.tensors.size()));
    m_.program.tensors.push_back(std::move(t));
  }

  std::vector<TensorId> tensor_refs() {
    std::vector<TensorId> ids;
    expect('(');
    if (accept(')')) return ids;
    do ids.push_back(tensor_ref());
    while (accept(','));
    expect(')');
    return ids;
  }

  void op() {
    mark();
    const Pos at = mark_;
    Operator op;
    op.name = name("an operator name");
    if (op_ids_.count(op.name))
      fail_at(at, "duplicate operator name '" + op.name + "'");
    expect('=');
    mark();
    const std::string k = word("an operator kind");
    auto kind = parse_op_kind(k);
    if (!kind) fail_at_mark("unknown operator kind '" + k + "'");
    op.kind = *kind;
    op.inputs = tensor_refs();
    expect('-');
    expect('>');
    op.outputs = tensor_refs();
    keyword("layer");
    expect('=');
    op.layer = int32("layer");
    op.attrs = attrs();
    op_ids_.emplace(op.name, static_cast<OpId>(m_.program.ops.size()));
    m_.program.ops.push_back(std::move(op));
  }

  Region region() {
    Region r;
    r.tensor = tensor_ref();
    expect('[');
    if (!accept(']')) {
      do {
        Range d;
        d.lo = integer("range start");
        expect(':');
        d.hi = integer("range end");
        r.dims.push_back(d);
      } while (accept(','));
      expect(']');
    }
    return r;
  }

  std::vector<Region> regions(std::string_view kw) {
    keyword(kw);
    expect('(');
    std::vector<Region> rs;
    if (accept(')')) return rs;
    do rs.push_back(region());
    while (accept(','));
    expect(')');
    return rs;
  }

  void consecutive_id(size_t expected, const std::string& what) {
    const int64_t id = integer(what + " id");
    if (id != static_cast<int64_t>(expected))
      fail_at_mark(what + " ids must be consecutive from 0: expected " + std::to_string(expected) +
                   ", got " + std::to_string(id));
  }

  void task() {
    consecutive_id(m_.graph.tasks.size(), "task");
    expect('=');
    mark();
    const Pos at = mark_;
    const std::string op_name = name("an operator name");
    auto it = op_ids_.find(op_name);
    if (it == op_ids_.end()) fail_at(at, "unknown operator '" + op_name + "'");
    Task t;
    t.op = it->second;
    expect(':');
    mark();
    const std::string k = word("a task kind");
    auto kind = parse_task_kind(k);
    if (!kind) fail_at_mark("unknown task kind '" + k + "'");
    t.kind = *kind;
    t.reads = regions("reads");
    t.writes = regions("writes");
    keyword("bytes");
    expect('=');
    t.bytes = integer("bytes");
    keyword("flops");
    expect('=');
    t.flops = integer("flops");
    t.attrs = attrs();
    m_.graph.tasks.push_back(std::move(t));
  }

  std::vector<TaskId> task_ids(std::string_view kw) {
    keyword(kw);
    expect('(');
    std::vector<TaskId> ids;
    if (accept(')')) return ids;
    do ids.push_back(int32("task id"));
    while (accept(','));
    expect(')');
    return ids;
  }

  void event() {
    consecutive_id(m_.graph.events.size(), "event");
    Event e;
    keyword("target");
    expect('=');
    e.target = integer("target");
    keyword("distance");
    expect('=');
    e.step_distance = int32("distance");
    skip_spaces();
    if (text_.substr(pos_).starts_with("all_ranks")) {
      keyword("all_ranks");
      e.all_ranks = true;
    }
    e.producers = task_ids("producers");
    e.consumers = task_ids("consumers");
    m_.graph.events.push_back(std::move(e));
  }

  void worker() {
    if (!seen_schedule_) fail_at_mark("'worker' line before the 'schedule' line");
    consecutive_id(m_.graph.schedule.workers.size(), "worker");
    expect(':');
    std::vector<TaskId> list;
    while (true) {
      skip_spaces();
      if (at_end() || peek() == '\n') break;
      list.push_back(int32("task id"));
    }
    m_.graph.schedule.workers.push_back(std::move(list));
  }

  std::string_view text_;
  std::string source_;
  size_t pos_ = 0;
  int line_ = 1;
  size_t line_start_ = 0;
  Pos mark_;
  bool seen_attrs_ = false, seen_provenance_ = false, seen_machine_ = false, seen_schedule_ = false;
  Module m_;
  std::unordered_map<std::string, TensorId> tensor_ids_;
  std::unordered_map<std::string, OpId> op_ids_;
};

}  // namespace

Module parse_module(std::string_view text, const std::string& source) {
  return Parser(text, source).run();
}

}  // namespace mpk
