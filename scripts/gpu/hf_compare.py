# Compares mpk with Hugging Face transformers on a random tiny checkpoint of each family:
# transformers writes it (bf16 weights, biases and norms drawn wide so that they matter),
# decodes a prompt in f32 and in bf16, and mpk decodes the same prompt from the same
# directory on each backend given; prints the last position's logit difference against
# the f32 reference, relative to max|logit|, and whether the argmax agrees.
# Usage: python3 scripts/gpu/hf_compare.py MPK_BINARY OUT_DIR [BACKEND ...] (default: cpu gpu)
import json, os, subprocess, sys

import numpy as np
import torch
import transformers as tf

FAMILIES = {
    "llama": (tf.LlamaConfig, tf.LlamaForCausalLM, {}),
    "qwen2": (tf.Qwen2Config, tf.Qwen2ForCausalLM, {"use_sliding_window": False}),
    "qwen3": (tf.Qwen3Config, tf.Qwen3ForCausalLM, {"head_dim": 64, "use_sliding_window": False}),
}
PROMPT = [3, 17, 200, 5, 99, 42, 7, 311]


def write_model(family, out):
    config_class, model_class, extra = FAMILIES[family]
    torch.manual_seed(0)
    cfg = config_class(hidden_size=256, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                       intermediate_size=512, vocab_size=512, max_position_embeddings=2048, rope_theta=1e6,
                       rms_norm_eps=1e-6, tie_word_embeddings=True, **extra)
    m = model_class(cfg)
    with torch.no_grad():
        for name, p in m.named_parameters():
            if name.endswith(".bias"):
                p.uniform_(-0.5, 0.5)
            elif p.dim() == 2:
                bound = (3.0 / p.shape[1]) ** 0.5
                p.uniform_(-bound, bound)
            else:
                p.uniform_(0.9, 1.1)
    m = m.to(torch.bfloat16).eval()
    d = os.path.join(out, family + "-hf")
    m.save_pretrained(d)
    x = torch.tensor([PROMPT])
    with torch.no_grad():
        f32 = m.float()(x).logits[0, -1].double().numpy()
        bf16 = model_class.from_pretrained(d, dtype=torch.bfloat16).eval()(x).logits[0, -1].double().numpy()
    return d, f32, bf16


def mpk_logits(mpk, d, backend, out):
    path = os.path.join(out, "logits-%s-%s.f32" % (os.path.basename(d), backend))
    r = subprocess.run([mpk, "run", "--backend", backend, "--model", d, "--prompt-ids", ",".join(map(str, PROMPT)),
                        "--steps", str(len(PROMPT)), "--dump-logits", path], capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit("mpk run failed:\n" + r.stdout[-800:] + r.stderr[-800:])
    return np.fromfile(path, dtype=np.float32).astype(np.float64)


def main():
    mpk, out = sys.argv[1], sys.argv[2]
    backends = sys.argv[3:] or ["cpu", "gpu"]
    os.makedirs(out, exist_ok=True)
    print("%-6s %-14s %12s %10s %s" % ("family", "decoder", "max diff", "of max", "argmax (f32 ref)"))
    for family in FAMILIES:
        d, ref, bf16 = write_model(family, out)
        scale = np.abs(ref).max()
        rows = [("hf bf16", bf16)] + [("mpk " + b, mpk_logits(mpk, d, b, out)) for b in backends]
        for name, got in rows:
            diff = np.abs(got - ref).max()
            print("%-6s %-14s %12.5f %10.2e %d (%d)" % (family, name, diff, diff / scale, got.argmax(), ref.argmax()))


if __name__ == "__main__":
    main()
