#!/usr/bin/env python3
"""PyTorch prefill of the shapes `mpk bench --prompt-len N` times, on the same GPU: one
forward over an N-token prompt (transformers' Llama / Qwen3 with random bf16 weights,
SDPA causal attention, the KV cache written, logits of the last position only), eager and
with torch.compile. Prints the median of R forwards after warm-up, CUDA events.
Runs on the device (PyTorch and transformers; no download: the configs are written here).
Usage: torch_prefill_bench.py [--model llama-3.2-1b|qwen3-8b]... [--prompt-len N] [--reps R] [--no-compile]
"""
import argparse
import statistics

import torch
import transformers

# The presets' shapes (ir/import/config.cc).
SHAPES = {
    "llama-3.2-1b": (transformers.LlamaConfig, dict(
        hidden_size=2048, intermediate_size=8192, num_hidden_layers=16, num_attention_heads=32,
        num_key_value_heads=8, head_dim=64, vocab_size=128256, rope_theta=500000.0, tie_word_embeddings=True,
        max_position_embeddings=131072)),
    "qwen3-8b": (transformers.Qwen3Config, dict(
        hidden_size=4096, intermediate_size=12288, num_hidden_layers=36, num_attention_heads=32,
        num_key_value_heads=8, head_dim=128, vocab_size=151936, rope_theta=1000000.0, tie_word_embeddings=False,
        max_position_embeddings=40960)),
}


def time_forward(fn, reps, warmup=3):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    ms = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        ms.append(a.elapsed_time(b))
    return statistics.median(ms)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", action="append", choices=sorted(SHAPES))
    ap.add_argument("--prompt-len", type=int, default=512)
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--no-compile", action="store_true")
    a = ap.parse_args()
    print(f"torch {torch.__version__}, transformers {transformers.__version__}, {torch.cuda.get_device_name()}")
    for name in a.model or sorted(SHAPES):
        cls, kw = SHAPES[name]
        cfg = cls(**kw, torch_dtype=torch.bfloat16, attn_implementation="sdpa")
        torch.manual_seed(0)
        with torch.device("cuda"):
            model = transformers.AutoModelForCausalLM.from_config(cfg, torch_dtype=torch.bfloat16).eval()
        ids = torch.randint(0, cfg.vocab_size, (1, a.prompt_len), device="cuda")

        # The last position's logits only, where this transformers can (mpk needs no more).
        keep = {"logits_to_keep": 1}
        try:
            with torch.inference_mode():
                model(input_ids=ids[:, :8], use_cache=True, **keep)
        except TypeError:
            keep = {}

        def prefill(m):
            with torch.inference_mode():
                return m(input_ids=ids, use_cache=True, **keep).logits

        eager = time_forward(lambda: prefill(model), a.reps)
        line = f"{name:13s} prompt {a.prompt_len}: eager {eager:8.3f} ms"
        if not a.no_compile:
            compiled = torch.compile(model)
            line += f", torch.compile {time_forward(lambda: prefill(compiled), a.reps):8.3f} ms"
        print(line, flush=True)
        del model
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
