//! Expected parameter counts of real checkpoints, each with where it comes from.
//!
//! These figures are an independent check on the counts derived from the preset
//! configs: each one was read from the checkpoint itself (the Hugging Face
//! safetensors metadata, a `model.safetensors.index.json` `total_size`, a
//! safetensors header census, `model.num_parameters()` logs) or from the model
//! card, never computed from the config here. Counts are *unique* parameters:
//! a tied input embedding / output head counts once. Multimodal checkpoints
//! count the language model plus the vision tower and projector.

/// Exact totals: `(preset id, parameters, source)`.
#[allow(dead_code)] // read by the parameter-count tests
pub(crate) const EXPECTED: &[(&str, u64, &str)] = &[
    // ---- Llama 2 (FP16 checkpoints) ----
    (
        "llama-2-7b",
        6_738_415_616,
        "hub safetensors metadata: 6,738,415,616 params (FP16); same figure as PEFT print_trainable_parameters 'all params' for meta-llama/Llama-2-7b-hf",
    ),
    ("llama-2-13b", 13_015_864_320, "hub safetensors metadata: total 13,015,864,320 params (FP16)"),
    (
        "llama-2-70b",
        68_976_648_192,
        "model.safetensors.index.json metadata.total_size 137,953,296,384 bytes / 2 (fp16) = 68,976,648,192",
    ),
    // ---- Llama 3.x (BF16) ----
    ("llama-3-8b", 8_030_261_248, "hub safetensors metadata: 8,030,261,248 params (BF16), meta-llama/Meta-Llama-3-8B"),
    (
        "llama-3.1-8b",
        8_030_261_248,
        "hub safetensors metadata: 8,030,261,248 params (BF16), meta-llama/Llama-3.1-8B-Instruct",
    ),
    ("llama-3.1-70b", 70_553_706_496, "hub safetensors metadata: 70,553,706,496 params (BF16); model card 70.6B"),
    (
        "llama-3.3-70b",
        70_553_706_496,
        "hub API safetensors {BF16: 70,553,706,496} for meta-llama/Llama-3.3-70B-Instruct",
    ),
    (
        "llama-3.1-405b",
        405_853_388_800,
        "hub API safetensors.total 405,853,388,800 params (BF16) for meta-llama/Llama-3.1-405B (same shapes as -Instruct)",
    ),
    (
        "llama-3.2-1b",
        1_235_814_400,
        "model.safetensors tensor payload 2,471,628,800 bytes BF16 = 1,235,814,400 params (tied head stored once)",
    ),
    ("llama-3.2-3b", 3_212_749_824, "hub safetensors metadata: 3,212,749,824 params (BF16)"),
    (
        "llama-3.2-11b-vision",
        10_670_220_835,
        "model.num_parameters() of MllamaForConditionalGeneration = 10,670,220,835 (text + vision + projector); NVIDIA model spec lists the same",
    ),
    // ---- Mistral / Mixtral ----
    ("mistral-7b-v0.1", 7_241_732_096, "hub safetensors metadata: total 7,241,732,096 params (BF16)"),
    (
        "mistral-7b-v0.3",
        7_248_023_552,
        "safetensors header census: 291 BF16 tensors, 7,248,023,552 params, 14,496,047,104 tensor bytes",
    ),
    (
        "mistral-nemo-12b",
        12_247_782_400,
        "hub safetensors metadata: 12,247,782,400 params (BF16), Mistral-Nemo-Base/Instruct-2407",
    ),
    (
        "mixtral-8x7b",
        46_702_792_704,
        "hub safetensors metadata: 46,702,792,704 params (BF16); model card 46.7B total / 12.9B active",
    ),
    // ---- Qwen ----
    ("qwen2-7b", 7_615_616_512, "hub safetensors metadata: 7,615,616,512 params (BF16); 4 shards, 339 tensors"),
    (
        "qwen2.5-0.5b",
        494_032_768,
        "safetensors header census: 290 BF16 tensors, 494,032,768 elements, 988,065,536 payload bytes (tied head stored once)",
    ),
    (
        "qwen2.5-1.5b",
        1_543_714_304,
        "safetensors header census: 338 BF16 tensors, 1,543,714,304 elements, 3,087,428,608 bytes",
    ),
    ("qwen2.5-7b", 7_615_616_512, "hub API safetensors.total 7,615,616,512 params (BF16) for Qwen/Qwen2.5-7B-Instruct"),
    ("qwen2.5-14b", 14_770_033_664, "hub safetensors metadata: 14,770,033,664 params (BF16)"),
    (
        "qwen2.5-32b",
        32_763_876_352,
        "model.safetensors.index.json total_size 65,527,752,704 bytes / 2 (bf16) = 32,763,876,352; 771 tensors",
    ),
    ("qwen2.5-72b", 72_706_203_648, "hub safetensors metadata: 72,706,203,648 params (BF16); 37 shards, 963 tensors"),
    (
        "qwen2.5-vl-7b",
        8_292_166_656,
        "model.safetensors.index.json total_size 16,584,333,312 bytes / 2 (bf16) = 8,292,166,656 (LM + vision tower + merger)",
    ),
    (
        "qwen3-0.6b",
        596_049_920,
        "unique params 596,049,920 (model.num_parameters(), tie_word_embeddings=true); note the safetensors file also stores a copy of lm_head.weight, so its header totals 751,632,384 elements",
    ),
    (
        "qwen3-8b",
        8_190_735_360,
        "safetensors header census: 399 BF16 tensors, 8,190,735,360 params, 16,381,470,720 bytes",
    ),
    ("qwen3-32b", 32_762_123_264, "hub safetensors metadata: 32,762,123,264 params (BF16)"),
    (
        "qwen1.5-moe-a2.7b",
        14_315_784_192,
        "hub API safetensors 14,315,784,192 params (BF16) for Qwen/Qwen1.5-MoE-A2.7B(-Chat)",
    ),
    (
        "qwen3-vl-30b-a3b",
        31_070_754_032,
        "the checkpoint's 882 tensors, 31,070,754,032 parameters (text 30,532,122,624 + vision 538,631,408), as a public \
         model-information report of Qwen/Qwen3-VL-30B-A3B-Instruct lists them (stored-code id 62501178117)",
    ),
    (
        "qwen3-30b-a3b",
        30_532_122_624,
        "model.safetensors.index.json metadata: total parameters 30,532,122,624 (BF16, 18,867 tensors)",
    ),
    (
        "qwen3-235b-a22b",
        235_093_634_560,
        "model.safetensors.index.json total_size 470,187,269,120 bytes / 2 (bf16) = 235,093,634,560",
    ),
    // ---- Gemma ----
    ("gemma-7b", 8_537_680_896, "hub safetensors metadata: total 8,537,680,896 params (tied head stored once)"),
    ("gemma-2-2b", 2_614_341_888, "hub safetensors metadata: 2,614,341,888 params (google/gemma-2-2b and -it)"),
    (
        "gemma-2-9b",
        9_241_705_984,
        "hub safetensors metadata: 9,241,705,984 params (F32 upload of google/gemma-2-9b; BF16 -it identical count)",
    ),
    ("gemma-2-27b", 27_227_128_320, "hub safetensors metadata: 27,227,128,320 params"),
    ("gemma-3-1b", 999_885_952, "hub safetensors metadata: 999,885,952 params (BF16), google/gemma-3-1b-it"),
    (
        "gemma-3-4b",
        4_300_079_472,
        "hub safetensors metadata: 4,300,079,472 params (BF16), text + SigLIP vision tower + projector",
    ),
    (
        "gemma-3-12b",
        12_187_325_040,
        "hub safetensors metadata: 12,187,325,040 params (BF16), text + SigLIP vision tower + projector",
    ),
    (
        "gemma-3-27b",
        27_432_406_640,
        "hub safetensors metadata: 27,432,406,640 params (BF16), text + SigLIP vision tower + projector",
    ),
    // ---- Phi ----
    (
        "phi-3-mini-4k",
        3_821_079_552,
        "hub safetensors metadata: 3,821,079,552 params (microsoft/Phi-3-mini-4k-instruct)",
    ),
    ("phi-4", 14_659_507_200, "hub API safetensors 14,659,507,200 params, all BF16 (microsoft/phi-4)"),
    // ---- DeepSeek ----
    (
        "deepseek-v2-lite",
        15_706_484_224,
        "hub safetensors metadata: 15,706,484,224 BF16 params; 31,413,626,576 bytes across 4 shards",
    ),
    (
        "deepseek-v2",
        235_741_434_880,
        "checkpoint census: 235,741,434,880 params, all BF16 (card: 236B total, 21B active)",
    ),
    // ---- GPT-2 ----
    ("gpt2", 124_439_808, "hub safetensors metadata: 124,439,808 params (openai-community/gpt2, tied head once)"),
    ("gpt2-xl", 1_557_611_200, "hub safetensors metadata: 1,557,611,200 params (openai-community/gpt2-xl)"),
    // ---- Pythia (GPT-NeoX, untied embed_in / embed_out) ----
    (
        "pythia-160m",
        162_322_944,
        "Pythia README / model card table 'Total params' 162,322,944; meta-device count of the HF checkpoint agrees",
    ),
    (
        "pythia-1.4b",
        1_414_647_808,
        "Pythia README / model card table 'Total params' 1,414,647,808; loaded checkpoint reports the same",
    ),
    ("pythia-12b", 11_846_072_320, "Pythia README / EleutherAI/pythia-12b model card 'Total params' 11,846,072,320"),
    // ---- OPT ----
    ("opt-125m", 125_239_296, "hub safetensors metadata: 125,239,296 params (facebook/opt-125m)"),
    ("opt-1.3b", 1_315_758_080, "model.num_parameters() of facebook/opt-1.3b = 1,315,758,080"),
];

/// Rounded figures only (model cards, papers): compare with a tolerance.
#[allow(dead_code)] // read by the parameter-count tests
pub(crate) const APPROXIMATE: &[(&str, u64, &str)] = &[
    (
        "phi-3-medium-4k",
        14_000_000_000,
        "model card: 14B parameters (one training log reports 13,960,238,080, not independently confirmed)",
    ),
    ("mixtral-8x22b", 141_000_000_000, "Mistral AI announcement / model card: 141B total parameters, 39B active"),
    (
        "deepseek-v3",
        671_000_000_000,
        "model card / paper: 671B main-model parameters, EXCLUDING the MTP module; the HF checkpoint holds 685B = 671B main + 14B MTP (num_nextn_predict_layers = 1)",
    ),
    (
        "kimi-k2",
        1_000_000_000_000,
        "model card: 1T total parameters, 32B activated; no MTP layers in the checkpoint (num_nextn_predict_layers = 0)",
    ),
    ("falcon-7b", 7_000_000_000, "model card: 7B parameters"),
    ("falcon-40b", 40_000_000_000, "model card: 40B parameters"),
    ("opt-30b", 30_000_000_000, "OPT paper (Zhang et al. 2022) Table 1: 30B"),
];
