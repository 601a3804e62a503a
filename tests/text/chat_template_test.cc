// Chat templates: the families are recognised from real and representative templates and
// rendered as those templates specify, written out by hand here. Qwen3's real template
// comes from the reference package (the reference's own Jinja cannot parse it); Llama 3's
// is also checked against the reference's apply_chat_template in reference_test.cc.
#include <gtest/gtest.h>

#include "ir/error.h"
#include "reference.h"
#include "text/chat_template.h"
#include "text/tokenizer.h"

namespace mpk::text::testing {
namespace {

const std::vector<ChatMessage> kSystemAndUser = {{"system", "Be brief."}, {"user", "Why is the sky blue?"}};
const std::vector<ChatMessage> kUser = {{"user", "Why is the sky blue?"}};

TEST(ChatTemplateTest, Qwen3RendersChatMlAsItsTemplateSpecifies) {
  const Tokenizer tok = Tokenizer::load(reference_model_dir("qwen3"));
  const ChatTemplate t = ChatTemplate::recognise(tok.chat_template(), tok.chat_template_source());
  EXPECT_EQ(t.family(), "chatml");
  // The template: a system message as '<|im_start|>system\n' + content + '<|im_end|>\n', each
  // user message as '<|im_start|>' + role + '\n' + content + '<|im_end|>' + '\n', and the
  // generation prompt '<|im_start|>assistant\n' (enable_thinking undefined: nothing more).
  EXPECT_EQ(t.render(kSystemAndUser, tok.bos_token(), "x"),
            "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nWhy is the sky blue?<|im_end|>\n"
            "<|im_start|>assistant\n");
  EXPECT_EQ(t.render({{"user", "  spaces kept  "}}, tok.bos_token(), "x"),
            "<|im_start|>user\n  spaces kept  <|im_end|>\n<|im_start|>assistant\n");
  EXPECT_EQ(tok.eos_ids(), (std::vector<int32_t>{151645}));  // <|im_end|>
}

TEST(ChatTemplateTest, ChatMlWritesTheTemplatesDefaultSystemTurn) {
  // Qwen2.5's: a default system message when the first message is not a system one.
  const std::string tpl =
      "{%- if messages[0]['role'] == 'system' %}\n{{- '<|im_start|>system\\n' + messages[0]['content'] + "
      "'<|im_end|>\\n' }}\n{%- else %}\n{{- '<|im_start|>system\\nYou are Qwen, created by Alibaba Cloud. You are "
      "a helpful assistant.<|im_end|>\\n' }}\n{%- endif %}{{ '<|im_start|>' + message.role }}";
  const ChatTemplate t = ChatTemplate::recognise(tpl, "qwen2.5");
  EXPECT_EQ(t.render(kUser, "", ""),
            "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n"
            "<|im_start|>user\nWhy is the sky blue?<|im_end|>\n<|im_start|>assistant\n");
  EXPECT_EQ(t.render(kSystemAndUser, "", "").rfind("<|im_start|>system\nBe brief.<|im_end|>\n", 0), 0u);
}

// The parts of Llama 3.1's and 3.2's templates that shape a system + user chat.
const std::string kLlama31 =
    "{{- bos_token }}\n{%- if not date_string is defined %}\n    {%- set date_string = \"26 Jul 2024\" %}\n"
    "{%- endif %}\n{{- \"<|start_header_id|>system<|end_header_id|>\\n\\n\" }}\n"
    "{{- \"Cutting Knowledge Date: December 2023\\n\" }}\n{{- \"Today Date: \" + date_string + \"\\n\\n\" }}\n"
    "{{- system_message }}\n{{- \"<|eot_id|>\" }}\n{{- '<|start_header_id|>' + message['role'] + "
    "'<|end_header_id|>\\n\\n'+ message['content'] | trim + '<|eot_id|>' }}";

TEST(ChatTemplateTest, Llama31WritesTheKnowledgeAndDateLinesBeforeTheSystemMessage) {
  const ChatTemplate t = ChatTemplate::recognise(kLlama31, "llama3.1");
  EXPECT_EQ(t.family(), "llama3.1");
  EXPECT_FALSE(t.uses_today());
  EXPECT_EQ(t.render({{"system", " Be brief.\n"}, {"user", "Why is the sky blue? "}}, "<|begin_of_text|>", "1 Jan 2030"),
            "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nCutting Knowledge Date: December 2023\n"
            "Today Date: 26 Jul 2024\n\nBe brief.<|eot_id|><|start_header_id|>user<|end_header_id|>\n\n"
            "Why is the sky blue?<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n");
  EXPECT_EQ(t.render(kUser, "<|begin_of_text|>", "x"),
            "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nCutting Knowledge Date: December 2023\n"
            "Today Date: 26 Jul 2024\n\n<|eot_id|><|start_header_id|>user<|end_header_id|>\n\n"
            "Why is the sky blue?<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n");
  // Llama 3.2's asks for today's date when strftime_now is defined (transformers defines it).
  std::string llama32 = kLlama31;
  llama32.replace(llama32.find("{%- set date_string"), 0,
                  "{%- if strftime_now is defined %}{%- set date_string = strftime_now(\"%d %b %Y\") %}{%- else %}");
  const ChatTemplate t32 = ChatTemplate::recognise(llama32, "llama3.2");
  EXPECT_TRUE(t32.uses_today());
  EXPECT_NE(t32.render(kUser, "", "27 Nov 2026").find("Today Date: 27 Nov 2026\n\n"), std::string::npos);
  EXPECT_EQ(today_for_chat().size(), 11u);  // "27 Nov 2026"
}

TEST(ChatTemplateTest, UnknownOrMissingTemplatesAreRefused) {
  const auto error_of = [](const std::string& tpl) {
    try {
      ChatTemplate::recognise(tpl, "dir/tokenizer_config.json");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  EXPECT_NE(error_of("").find("has no chat template"), std::string::npos);
  EXPECT_NE(error_of("{{ bos_token }}[INST] {{ message }} [/INST]").find("is of no family mpk renders"),
            std::string::npos);
}

TEST(ChatTemplateTest, TrimIsPythonsStrip) {
  EXPECT_EQ(jinja_trim(" \t\n x y \r\n"), "x y");
  EXPECT_EQ(jinja_trim("\xE3\x80\x80x\xC2\xA0"), "x");  // ideographic and no-break spaces
  EXPECT_EQ(jinja_trim("\xE4\xBD\xA0"), "\xE4\xBD\xA0");
  EXPECT_EQ(jinja_trim("   "), "");
}

}  // namespace
}  // namespace mpk::text::testing
