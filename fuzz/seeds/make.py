"""Writes the binary seeds of the gguf and safetensors targets: tiny models
with the tensor names and metadata keys of real ones (a dense llama, a
qwen3moe with experts, a gemma2 with sliding windows; safetensors of a
llama, a Mixtral-style MoE, a DeepSeek-style MLA and a GPTQ llama), so the
fuzzer starts from inputs that reach inference and every engine.

Run once with the PyPI packages `gguf`, `safetensors` and `numpy`
(`python3 fuzz/seeds/make.py`); the files are committed, nothing runs it in CI.
"""

import os

import numpy as np
from gguf import GGUFWriter
from safetensors.numpy import save_file

HERE = os.path.dirname(os.path.abspath(__file__))
H, HEADS, KV, HD, FF, VOCAB, LAYERS = 16, 4, 2, 4, 32, 32, 2


def z(*shape, dtype=np.float16):
    return np.zeros(shape, dtype=dtype)


def gguf_file(name, arch, extra, tensors):
    w = GGUFWriter(os.path.join(HERE, "gguf", name), arch)
    w.add_block_count(LAYERS)
    w.add_embedding_length(H)
    w.add_feed_forward_length(FF)
    w.add_head_count(HEADS)
    w.add_head_count_kv(KV)
    w.add_context_length(4096)
    w.add_file_type(1)
    for key, value in extra:
        if isinstance(value, int):
            w.add_uint32(f"{arch}.{key}", value)
    for t, shape in tensors:
        w.add_tensor(t, z(*shape))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def dense_blocks(i):
    return [
        (f"blk.{i}.attn_norm.weight", (H,)),
        (f"blk.{i}.attn_q.weight", (HEADS * HD, H)),
        (f"blk.{i}.attn_k.weight", (KV * HD, H)),
        (f"blk.{i}.attn_v.weight", (KV * HD, H)),
        (f"blk.{i}.attn_output.weight", (H, HEADS * HD)),
        (f"blk.{i}.ffn_norm.weight", (H,)),
    ]


common = [("token_embd.weight", (VOCAB, H)), ("output_norm.weight", (H,)), ("output.weight", (VOCAB, H))]
llama = list(common)
for i in range(LAYERS):
    llama += dense_blocks(i) + [
        (f"blk.{i}.ffn_gate.weight", (FF, H)),
        (f"blk.{i}.ffn_up.weight", (FF, H)),
        (f"blk.{i}.ffn_down.weight", (H, FF)),
    ]
gguf_file("llama.gguf", "llama", [], llama)

moe = list(common)
for i in range(LAYERS):
    moe += dense_blocks(i) + [
        (f"blk.{i}.ffn_gate_inp.weight", (4, H)),
        (f"blk.{i}.ffn_gate_exps.weight", (4, 8, H)),
        (f"blk.{i}.ffn_up_exps.weight", (4, 8, H)),
        (f"blk.{i}.ffn_down_exps.weight", (4, H, 8)),
    ]
gguf_file("qwen3moe.gguf", "qwen3moe", [("expert_count", 4), ("expert_used_count", 2)], moe)
gguf_file("gemma2.gguf", "gemma2", [("attention.sliding_window", 1024)], llama)

layers = lambda i: f"model.layers.{i}"
st = {"model.embed_tokens.weight": z(VOCAB, H), "model.norm.weight": z(H), "lm_head.weight": z(VOCAB, H)}
for i in range(LAYERS):
    p = layers(i)
    st |= {
        f"{p}.input_layernorm.weight": z(H),
        f"{p}.self_attn.q_proj.weight": z(HEADS * HD, H),
        f"{p}.self_attn.k_proj.weight": z(KV * HD, H),
        f"{p}.self_attn.v_proj.weight": z(KV * HD, H),
        f"{p}.self_attn.o_proj.weight": z(H, HEADS * HD),
        f"{p}.post_attention_layernorm.weight": z(H),
    }
dense = dict(st)
for i in range(LAYERS):
    p = layers(i)
    dense |= {f"{p}.mlp.{m}.weight": z(FF, H) for m in ("gate_proj", "up_proj")} | {f"{p}.mlp.down_proj.weight": z(H, FF)}
save_file(dense, os.path.join(HERE, "safetensors", "llama.safetensors"))

mixtral = dict(st)
for i in range(LAYERS):
    p = layers(i)
    mixtral[f"{p}.block_sparse_moe.gate.weight"] = z(4, H)
    for e in range(4):
        mixtral |= {f"{p}.block_sparse_moe.experts.{e}.w{k}.weight": z(8, H) for k in (1, 3)}
        mixtral[f"{p}.block_sparse_moe.experts.{e}.w2.weight"] = z(H, 8)
save_file(mixtral, os.path.join(HERE, "safetensors", "mixtral.safetensors"))

mla = {k: v for k, v in dense.items() if "k_proj" not in k and "v_proj" not in k}
for i in range(LAYERS):
    p = layers(i)
    mla[f"{p}.self_attn.kv_a_proj_with_mqa.weight"] = z(8 + 4, H)
    mla[f"{p}.self_attn.kv_a_layernorm.weight"] = z(8)
    mla[f"{p}.self_attn.kv_b_proj.weight"] = z(HEADS * 2 * HD, 8)
save_file(mla, os.path.join(HERE, "safetensors", "deepseek-mla.safetensors"))

gptq = dict(st)
for i in range(LAYERS):
    p = layers(i)
    for m, (o, n) in {"gate_proj": (FF, H), "up_proj": (FF, H), "down_proj": (H, FF)}.items():
        gptq[f"{p}.mlp.{m}.qweight"] = z(n // 8, o, dtype=np.int32)
        gptq[f"{p}.mlp.{m}.qzeros"] = z(n // 8, o // 8, dtype=np.int32)
        gptq[f"{p}.mlp.{m}.scales"] = z(n // 8, o)
        gptq[f"{p}.mlp.{m}.g_idx"] = z(n, dtype=np.int32)
save_file(gptq, os.path.join(HERE, "safetensors", "llama-gptq.safetensors"))
