// The verifier on the fused operator forms (docs/ir.md): the toy step of test_modules.h
// rewritten by hand into a swiglu linear, a fused attention (qk-normed) and an lm_head
// with a norm and an argmax is accepted; each malformed variant is refused with a
// message naming the problem; task kinds follow the forms.
#include <gtest/gtest.h>

#include "ir/text.h"
#include "ir/verifier.h"
#include "tests/ir/test_modules.h"

namespace mpk {
namespace {

Operator& op(Module& m, const std::string& name) { return m.program.ops.at(m.program.find_op(name)); }
TensorId t(const Module& m, const std::string& name) { return m.program.find_tensor(name); }

void erase_ops(Module& m, const std::vector<std::string>& names) {
  for (const std::string& n : names) m.program.ops.erase(m.program.ops.begin() + m.program.find_op(n));
}

// The toy step with every block fused, and no tasks.
Module fused_module() {
  Module m = testing::tiny_module();
  m.graph = TaskGraph{};
  Operator& gate = op(m, "L0.gate_proj");
  gate.name = "L0.gate_proj_swiglu";
  gate.inputs = {t(m, "h_mid.0"), t(m, "model.layers.0.mlp.gate_proj.weight"),
                 t(m, "model.layers.0.mlp.up_proj.weight"), t(m, "model.layers.0.post_attention_layernorm.weight")};
  gate.outputs = {t(m, "act.0")};
  gate.attrs = {{"activation", std::string("swiglu")}, {"eps", 1e-6}};
  Operator& att = op(m, "L0.attention");
  att.inputs = {t(m, "q.0"),       t(m, "k.0"), t(m, "v.0"), t(m, "k_cache.0"), t(m, "v_cache.0"),
                t(m, "model.layers.0.self_attn.q_norm.weight"), t(m, "model.layers.0.self_attn.k_norm.weight")};
  att.outputs = {t(m, "attn.0"), t(m, "k_cache.0"), t(m, "v_cache.0")};
  for (const auto& [key, value] : op(m, "L0.q_rope").attrs) att.attrs[key] = value;
  att.attrs["eps"] = 1e-6;
  Operator& head = op(m, "lm_head");
  head.inputs = {t(m, "h.1"), t(m, "model.embed_tokens.weight"), t(m, "model.norm.weight")};
  head.outputs = {t(m, "logits"), t(m, "tokens")};
  head.attrs = {{"eps", 1e-6}};
  erase_ops(m, {"L0.up_proj", "L0.silu_mul", "L0.post_norm", "L0.q_norm", "L0.k_norm", "L0.q_rope", "L0.k_rope",
                "L0.kv_append", "final_norm", "argmax"});
  testing::drop_unused_tensors(m.program);
  return m;
}

std::string signature_problem(const Module& m) {
  const std::vector<Diagnostic> d = verify_module(m);
  if (d.empty()) return "accepted";
  EXPECT_EQ(d[0].rule, "structure.op-signature") << d[0].message;
  return d[0].message;
}

TEST(VerifierFused, FusedFormsAreAccepted) {
  const Module m = fused_module();
  const std::vector<Diagnostic> d = verify_module(m);
  EXPECT_TRUE(d.empty()) << d[0].rule << ": " << d[0].message;
  const LinearForm sw = linear_form(op(const_cast<Module&>(m), "L0.gate_proj_swiglu"));
  EXPECT_TRUE(sw.swiglu());
  EXPECT_EQ(sw.up, t(m, "model.layers.0.mlp.up_proj.weight"));
  EXPECT_EQ(sw.norm, t(m, "model.layers.0.post_attention_layernorm.weight"));
  EXPECT_EQ(linear_extra(op(const_cast<Module&>(m), "L0.gate_proj_swiglu")), LinearExtra::kNorm);
  const LinearForm lm = linear_form(op(const_cast<Module&>(m), "lm_head"));
  EXPECT_EQ(lm.norm, t(m, "model.norm.weight"));
  EXPECT_EQ(lm.tokens, t(m, "tokens"));
  const AttentionForm a = attention_form(op(const_cast<Module&>(m), "L0.attention"));
  EXPECT_TRUE(a.fused());
  EXPECT_EQ(a.k_norm, t(m, "model.layers.0.self_attn.k_norm.weight"));
  // The forms survive the text form.
  EXPECT_EQ(print_module(parse_module(print_module(m), "fused")), print_module(m));
}

TEST(VerifierFused, MalformedFusedFormsAreRefused) {
  struct Case {
    std::string name;
    void (*mutate)(Module&);
    std::string piece;
  };
  const std::vector<Case> cases = {
      {"swiglu_arity", [](Module& m) { op(m, "L0.gate_proj_swiglu").inputs.push_back(t(m, "h.0")); },
       "expects 4 inputs and 1 outputs, has 5 and 1"},
      {"swiglu_weights",
       [](Module& m) { op(m, "L0.gate_proj_swiglu").inputs[2] = t(m, "model.layers.0.self_attn.o_proj.weight"); },
       "Wu 'model.layers.0.self_attn.o_proj.weight' [8, 8] and Wg 'model.layers.0.mlp.gate_proj.weight' [16, 8] "
       "must have the same shape"},
      {"swiglu_activation",
       [](Module& m) { op(m, "L0.gate_proj_swiglu").attrs["activation"] = std::string("gelu"); },
       "attribute 'activation' = \"gelu\" is not \"swiglu\""},
      {"swiglu_residual", [](Module& m) { op(m, "L0.gate_proj_swiglu").attrs.erase("eps"); },
       "a swiglu linear takes no residual"},
      {"swiglu_in_place",
       [](Module& m) {
         Operator& sw = op(m, "L0.gate_proj_swiglu");
         const TensorId wo = t(m, "model.layers.0.self_attn.o_proj.weight");
         sw.inputs = {t(m, "attn.0"), wo, wo, sw.inputs[3]};
         sw.outputs = {t(m, "attn.0")};
       },
       "'attn.0' is both an input and an output"},
      {"lm_head_norm_size",
       [](Module& m) { op(m, "lm_head").inputs[2] = t(m, "model.layers.0.self_attn.q_norm.weight"); },
       "norm_w dimension 0 (K) is 4, expected 8"},
      {"lm_head_residual", [](Module& m) { op(m, "lm_head").attrs.erase("eps"); }, "an lm_head takes no residual"},
      {"lm_head_tokens_dtype", [](Module& m) { op(m, "lm_head").outputs[1] = t(m, "h_mid.0"); },
       "tokens 'h_mid.0' must have rank 1, has shape [1, 8]"},
      {"lm_head_tokens_length",
       [](Module& m) {
         op(m, "lm_head").outputs[1] = m.program.add_tensor(Tensor{"two", DType::kI32, {2}, TensorRole::kOutput});
       },
       "tokens length (batch) is 2, expected 1"},
      {"lm_head_tokens_i32",
       [](Module& m) {
         op(m, "lm_head").outputs[1] = m.program.add_tensor(Tensor{"f", DType::kF32, {1}, TensorRole::kOutput});
       },
       "tokens 'f' must be i32, is f32"},
      {"attention_arity", [](Module& m) { op(m, "L0.attention").inputs.pop_back(); },
       "expects 5 inputs and 3 outputs, has 6 and 3"},
      {"attention_norm_size",
       [](Module& m) { op(m, "L0.attention").inputs[5] = t(m, "model.norm.weight"); },
       "q_norm_w length (head_dim) is 8, expected 4"},
      {"attention_outputs", [](Module& m) { op(m, "L0.attention").outputs[2] = t(m, "k_cache.0"); },
       "outputs 1 and 2 must be the caches it reads (inputs 3 and 4)"},
      {"attention_k_is_a_cache", [](Module& m) { op(m, "L0.attention").inputs[1] = t(m, "v_cache.0"); },
       "only the caches may be both read and written; 'v_cache.0' is a cache"},
      {"attention_rope", [](Module& m) { op(m, "L0.attention").attrs.erase("theta"); },
       "missing attribute 'theta'"},
      {"attention_eps", [](Module& m) { op(m, "L0.attention").attrs.erase("eps"); }, "missing attribute 'eps'"},
      {"attention_k_width", [](Module& m) { op(m, "L0.attention").inputs[1] = t(m, "q.0"); },
       "v 'v.0' [1, 4] and k 'q.0' [1, 8] must have the same shape"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Module m = fused_module();
    c.mutate(m);
    const std::string msg = signature_problem(m);
    EXPECT_NE(msg.find(c.piece), std::string::npos) << msg;
  }
}

TEST(VerifierFused, TaskKindsFollowTheForm) {
  Module m = fused_module();
  auto task = [&](const std::string& op_name, TaskKind kind) {
    Task tk;
    tk.op = m.program.find_op(op_name);
    tk.kind = kind;
    m.graph.tasks.push_back(tk);
  };
  task("L0.attention", TaskKind::kKvAppend);
  task("lm_head", TaskKind::kArgmaxReduce);
  for (const Diagnostic& d : verify_structure(m)) EXPECT_NE(d.rule, "structure.task-kind") << d.message;
  Module plain = testing::tiny_module();
  plain.graph.tasks[10].kind = TaskKind::kKvAppend;  // L0.attention, not fused
  plain.graph.tasks[20].kind = TaskKind::kArgmaxReduce;  // lm_head without an argmax
  const std::vector<Diagnostic> d = verify_structure(plain);
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0].rule, "structure.task-kind");
  EXPECT_NE(d[0].message.find("task 10 of kind kv_append belongs to operator 'L0.attention'"), std::string::npos)
      << d[0].message;
  EXPECT_NE(d[1].message.find("task 20 of kind argmax_reduce belongs to operator 'lm_head'"), std::string::npos)
      << d[1].message;
}

}  // namespace
}  // namespace mpk
