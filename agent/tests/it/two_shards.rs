//! The two-shard safetensors checkpoint the checkpoint tests read, on disk
//! (`headroom estimate --checkpoint`), through the stand-in Hub (`--hf`) and
//! in the browser: a 2-layer model of embeddings and layer 0, then layer 1
//! and the head; `moe` gives each layer 4 experts instead of a dense MLP.
//! Only headers are written; the data is a hole of the right size.

use super::writer;

/// (name, dtype, shape) of one tensor.
pub type TensorSpec = (String, &'static str, Vec<u64>);

/// Both shards: (file name, tensors).
pub fn shards(moe: bool) -> Vec<(String, Vec<TensorSpec>)> {
    let mut first = vec![("model.embed_tokens.weight".to_owned(), "BF16", vec![32000, 64])];
    let mut second = vec![
        ("model.norm.weight".to_owned(), "BF16", vec![64]),
        ("lm_head.weight".to_owned(), "BF16", vec![32000, 64]),
    ];
    for l in 0..2 {
        let p = format!("model.layers.{l}");
        let shard = if l == 0 { &mut first } else { &mut second };
        let mut t = |name: &str, shape: Vec<u64>| shard.push((format!("{p}.{name}"), "BF16", shape));
        t("self_attn.q_proj.weight", vec![64, 64]);
        t("self_attn.k_proj.weight", vec![32, 64]);
        t("self_attn.v_proj.weight", vec![32, 64]);
        t("self_attn.o_proj.weight", vec![64, 64]);
        if moe {
            t("mlp.gate.weight", vec![4, 64]);
            t("mlp.experts.gate_up_proj", vec![4, 64, 256]);
            t("mlp.experts.down_proj", vec![4, 128, 64]);
        } else {
            t("mlp.gate_proj.weight", vec![128, 64]);
            t("mlp.up_proj.weight", vec![128, 64]);
            t("mlp.down_proj.weight", vec![64, 128]);
        }
        t("input_layernorm.weight", vec![64]);
        t("post_attention_layernorm.weight", vec![64]);
    }
    vec![("model-00001-of-00002.safetensors".into(), first), ("model-00002-of-00002.safetensors".into(), second)]
}

/// Every tensor's elements: the parameters (two bytes each in BF16).
pub fn elements(moe: bool) -> u64 {
    shards(moe).iter().flat_map(|(_, t)| t.iter().map(|(_, _, s)| s.iter().product::<u64>())).sum()
}

/// Each shard's header bytes and full size.
pub fn shard_files(moe: bool) -> Vec<(String, Vec<u8>, u64)> {
    shards(moe)
        .into_iter()
        .map(|(name, tensors)| {
            let refs: Vec<(&str, &str, &[u64])> =
                tensors.iter().map(|(n, d, s)| (n.as_str(), *d, s.as_slice())).collect();
            let (head, size) = writer::safetensors(&refs);
            (name, head, size)
        })
        .collect()
}

/// `model.safetensors.index.json` of the shards.
pub fn index(moe: bool) -> String {
    let map: Vec<String> =
        shards(moe).iter().flat_map(|(file, t)| t.iter().map(move |(n, _, _)| format!(r#""{n}":"{file}""#))).collect();
    format!(r#"{{"metadata":{{"total_size":{}}},"weight_map":{{{}}}}}"#, elements(moe) * 2, map.join(","))
}
