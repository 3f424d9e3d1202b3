//! A stand-in model for when only a parameter count is known (`params=`): a
//! Llama-shaped decoder whose width and depth follow published models of that
//! size, with the MLP width solved so the parameter count matches. Weights are
//! then right to within rounding; the KV cache and activations are a guess,
//! and the model carries a warning that says so.

use shared::model::Model;
use shared::units::decimal;

/// (up to this many parameters, hidden, layers, heads, kv heads, intermediate, vocab, tied)
type Shape = (u64, u64, u64, u64, u64, u64, u64, bool);

/// Shapes of real models by size: GPT-2/Qwen2.5-0.5B, Llama 3.2 1B/3B, Llama 3.1 8B,
/// Qwen2.5 14B/32B, Llama 3.1 70B, Llama 3.1 405B.
const SHAPES: &[Shape] = &[
    (400_000_000, 896, 24, 14, 2, 4864, 32_000, true),
    (2_000_000_000, 2048, 16, 32, 8, 8192, 128_256, true),
    (5_000_000_000, 3072, 28, 24, 8, 8192, 128_256, true),
    (11_000_000_000, 4096, 32, 32, 8, 14_336, 128_256, false),
    (20_000_000_000, 5120, 48, 40, 8, 13_824, 152_064, false),
    (45_000_000_000, 5120, 64, 40, 8, 27_648, 152_064, false),
    (150_000_000_000, 8192, 80, 64, 8, 28_672, 128_256, false),
    (u64::MAX, 16_384, 126, 128, 8, 53_248, 128_256, false),
];

fn config(shape: &Shape, layers: u64, intermediate: u64) -> String {
    let &(_, hidden, _, heads, kv, _, vocab, tied) = shape;
    // Written out rather than with `serde_json::json!`: smaller wasm.
    format!(
        "{{\"model_type\":\"llama\",\"architectures\":[\"LlamaForCausalLM\"],\"hidden_size\":{hidden},\
         \"num_hidden_layers\":{layers},\"num_attention_heads\":{heads},\"num_key_value_heads\":{kv},\
         \"intermediate_size\":{intermediate},\"vocab_size\":{vocab},\"tie_word_embeddings\":{tied},\
         \"torch_dtype\":\"bfloat16\"}}"
    )
}

fn count(shape: &Shape, layers: u64, intermediate: u64) -> Option<u64> {
    Model::from_config_json("", &config(shape, layers, intermediate)).ok().map(|m| m.parameters())
}

/// A Llama-shaped model with about `params` parameters.
pub fn model_with_params(params: u64) -> Result<Model, String> {
    let shape = SHAPES.iter().find(|s| params <= s.0).unwrap_or(&SHAPES[SHAPES.len() - 1]);
    let &(_, _, _, _, _, base_inter, _, _) = shape;
    let invalid = || "the stand-in shape is invalid".to_owned();
    // Depth first: parameters outside the layers, and per layer at the reference width.
    let one = count(shape, 1, base_inter).ok_or_else(invalid)?;
    let per_layer = count(shape, 2, base_inter).ok_or_else(invalid)?.saturating_sub(one).max(1);
    let outside = one.saturating_sub(per_layer);
    let layers = (params.saturating_sub(outside) as f64 / per_layer as f64).round().clamp(1.0, 200.0) as u64;
    // Then the MLP width, whose parameters are linear in it.
    let p0 = count(shape, layers, base_inter).ok_or_else(invalid)?;
    let p1 = count(shape, layers, base_inter + 1024).ok_or_else(invalid)?;
    let slope = p1.saturating_sub(p0) as f64 / 1024.0;
    let inter = (base_inter as f64 + (params as f64 - p0 as f64) / slope.max(1.0)).round().max(1.0) as u64;
    let mut model =
        Model::from_config_json(stand_in_name(params), &config(shape, layers, inter)).map_err(|e| e.to_string())?;
    model.arch.warnings.push(format!(
        "only the parameter count is known: the architecture is a Llama-shaped stand-in ({layers} layers, hidden {}, {} KV heads), so the KV cache and activations are rough",
        shape.1, shape.4
    ));
    Ok(model)
}

/// The stand-in's name: `custom 8.03B parameters`.
pub fn stand_in_name(params: u64) -> String {
    format!("custom {} parameters", shorten_count(params))
}

/// 8030261248 → `8.03B`.
pub fn shorten_count(n: u64) -> String {
    let f = n as f64;
    if f >= 1e12 {
        format!("{}T", decimal(f / 1e12, 2))
    } else if f >= 1e9 {
        format!("{}B", decimal(f / 1e9, 2))
    } else if f >= 1e6 {
        format!("{}M", decimal(f / 1e6, 1))
    } else {
        n.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_the_asked_count_closely() {
        for target in [
            500_000_000u64,
            1_000_000_000,
            3_000_000_000,
            8_000_000_000,
            32_000_000_000,
            70_000_000_000,
            405_000_000_000,
            1_000_000_000_000,
        ] {
            let m = model_with_params(target).expect("builds");
            let got = m.parameters() as f64;
            let err = (got - target as f64).abs() / target as f64;
            assert!(err < 0.005, "{target}: got {got} ({:.3} %)", err * 100.0);
            assert!(!m.arch.warnings.is_empty());
        }
        // Tiny counts still give a model (the embeddings dominate; the count is then approximate).
        assert!(model_with_params(1_000_000).is_ok());
    }

    #[test]
    fn shortens_counts() {
        assert_eq!(shorten_count(8_030_261_248), "8.03B");
        assert_eq!(shorten_count(124_000_000), "124.0M");
        assert_eq!(shorten_count(1_500_000_000_000), "1.50T");
    }
}
