//! llama.cpp's tensor placement: `-ot` overrides on the real tensor names,
//! the layer split over several GPUs (`--tensor-split`, `--split-mode`,
//! `--main-gpu`) and the `--mmproj` projector, against figures derived by
//! hand from src/llama-model.cpp and src/llama-model-loader.cpp (llama.cpp
//! as vendored by llama-cpp-python 0.3.36) and a real two-GPU log.

use crate::llamacpp::{model, report, scenario, small_moe_gguf};
use shared::engines::llamacpp::{Options, SplitMode, TensorOverrides, TensorSplit};
use shared::engines::{Engine, llamacpp};
use shared::estimate::{GpuSlot, Scenario};
use shared::model::Model;
use shared::units::{GIB, MIB};

fn ot(text: &str) -> TensorOverrides {
    TensorOverrides::parse(text).unwrap_or_else(|e| panic!("{text}: {e}"))
}

fn ts(text: &str) -> TensorSplit {
    TensorSplit::parse(text).unwrap_or_else(|e| panic!("{text}: {e}"))
}

/// On a GGUF header each device's model buffer is the sum of the tensors
/// placed there. 4 layers + the output layer over two GPUs with `-ts 1,1`:
/// the k-th of the 5 offloaded goes to `upper_bound([0.5, 1], k / 5)`, so
/// layers 0–2 on CUDA0, layer 3 and the output on CUDA1. Then
/// `blk\.[23]\.ffn_down_exps=CPU` and `blk\.0\.attn_.*=CUDA1` move tensors.
#[test]
fn overrides_move_exactly_the_named_tensors() {
    let (m, _, tensors) = small_moe_gguf();
    let sum = |keep: &dyn Fn(&str) -> bool| tensors.iter().filter(|t| keep(&t.0)).map(|t| t.1).sum::<u64>();
    let layer = |l: u32| move |n: &str| n.starts_with(&format!("blk.{l}."));
    let o = Options {
        n_ctx: Some(4096),
        tensor_split: ts("1,1"),
        tensor_overrides: ot(r"blk\.[23]\.ffn_down_exps=CPU,blk\.0\.attn_.*=CUDA1"),
        ..Default::default()
    };
    let s = Scenario { weights: m.default_format(), ..scenario(o, 2, 24) };
    let (r, e) = report(&m, s);
    let attn0 = sum(&|n| n.starts_with("blk.0.attn_"));
    let down = |l: u32| sum(&|n| n == format!("blk.{l}.ffn_down_exps.weight"));
    let gpu0 = sum(&layer(0)) + sum(&layer(1)) + sum(&layer(2)) - attn0 - down(2);
    let gpu1 = sum(&layer(3)) - down(3) + sum(&|n| n.starts_with("output")) + attn0;
    assert_eq!(r.gpu_weight_bytes, [gpu0, gpu1]);
    assert_eq!(e.per_gpu[0].budget.weight_bytes, gpu0);
    assert_eq!(e.per_gpu[1].budget.weight_bytes, gpu1);
    assert_eq!(r.cpu_weight_bytes, sum(&|n| n == "token_embd.weight") + down(2) + down(3));
    assert_eq!(r.cpu_expert_bytes, down(2) + down(3));
    // 5 attention tensors of layer 0 and two expert tensors moved.
    assert_eq!(r.overridden_count, 7);
    assert_eq!((r.gpu_layers.as_slice(), r.output_gpu), ([3, 1].as_slice(), Some(1)));
    assert!(r.log_lines.iter().any(|l| l == &format!("CUDA1 model buffer size = {:.2} MiB", gpu1 as f64 / MIB as f64)));

    // The first matching rule wins: layer 3's down experts go to CUDA0.
    let o = Options { tensor_overrides: ot(r"blk\.3\.ffn_down_exps=CUDA0,blk\.[23]\.ffn_down_exps=CPU"), ..o };
    let (r2, _) = report(&m, Scenario { weights: m.default_format(), ..scenario(o, 2, 24) });
    let base1 = sum(&layer(3)) + sum(&|n| n.starts_with("output"));
    assert_eq!(r2.gpu_weight_bytes[1], base1 - down(3));
    assert_eq!(r2.cpu_weight_bytes, sum(&|n| n == "token_embd.weight") + down(2));
}

/// `-ot exps=CPU` on llama.cpp's names for the layout's groups is
/// `--cpu-moe`; `--n-cpu-moe N` is `blk\.(0|…|N-1)\.ffn_…_exps=CPU`.
#[test]
fn ot_on_the_layouts_names_equals_cpu_moe() {
    let m = model("qwen3-30b-a3b");
    let base = Options { n_ctx: Some(4096), ..Default::default() };
    let (cpu_moe, _) = report(&m, scenario(Options { n_cpu_moe: u64::from(u32::MAX), ..base }, 1, 80));
    let (exps, _) = report(&m, scenario(Options { tensor_overrides: ot("exps=CPU"), ..base }, 1, 80));
    assert_eq!(exps.gpu_weight_bytes, cpu_moe.gpu_weight_bytes);
    assert_eq!(exps.cpu_expert_bytes, cpu_moe.cpu_expert_bytes);
    assert!(exps.cpu_expert_bytes > 0);
    let (n3, _) = report(&m, scenario(Options { n_cpu_moe: 3, ..base }, 1, 80));
    let (ot3, _) = report(
        &m,
        scenario(
            Options { tensor_overrides: ot(r"blk\.(0|1|2)\.ffn_(up|down|gate|gate_up)_(ch|)exps=CPU"), ..base },
            1,
            80,
        ),
    );
    assert_eq!(ot3.gpu_weight_bytes, n3.gpu_weight_bytes);
    // Only the gate half of the gated experts: half of the up group.
    let (gate, _) = report(&m, scenario(Options { tensor_overrides: ot("ffn_gate_exps=CPU"), ..base }, 1, 80));
    assert!(gate.cpu_expert_bytes > 0 && gate.cpu_expert_bytes < exps.cpu_expert_bytes / 2);
    // A rule that matches nothing is said so.
    let e = crate::estimate(&m, scenario(Options { tensor_overrides: ot("nothing_here=CPU"), ..base }, 1, 80));
    assert!(e.warnings.iter().any(|w| w.contains("no tensor of this model matches")), "{:?}", e.warnings);
}

fn command_r() -> Model {
    let config = r#"{"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 8192,
        "num_attention_heads": 64, "num_key_value_heads": 64, "num_hidden_layers": 40,
        "intermediate_size": 22528, "vocab_size": 256000, "max_position_embeddings": 131072}"#;
    Model::from_config_json("command-r-like", config).unwrap_or_else(|e| panic!("{e}"))
}

fn gpus(gib: &[u64]) -> Vec<GpuSlot> {
    gib.iter().enumerate().map(|(i, g)| GpuSlot::custom(format!("gpu{i}"), g * GIB)).collect()
}

/// ggml-org/llama.cpp#6122 (shared/tests/fixtures/startup/
/// llamacpp-old-two-gpus.txt) logs 1536 and 3584 MiB of KV on its two GPUs:
/// 12 and 28 of Command-R's 40 layers (128 MiB each at n_ctx 4096, f16).
/// `-ts 12,29` places exactly that (the output layer is the 41st offloaded,
/// on CUDA1). Without a split the ratios are the GPUs' memory: 40 and 80
/// GiB give `[1/3, 1]`, and k / 41 < 1/3 for k ≤ 13: 14 layers on CUDA0.
#[test]
fn layers_split_by_ratio_as_load_tensors_does() {
    let m = command_r();
    let f16 = Some(llamacpp::CacheType::F16);
    let o = Options { n_ctx: Some(4096), cache_type_k: f16, tensor_split: ts("12,29"), ..Default::default() };
    let s = Scenario { gpus: gpus(&[80, 80]), ..scenario(o, 2, 80) };
    let (r, e) = report(&m, s);
    assert_eq!(e.per_gpu[0].budget.kv_cache_bytes, 1536 * MIB);
    assert_eq!(e.per_gpu[1].budget.kv_cache_bytes, 3584 * MIB);
    assert_eq!((r.gpu_layers.as_slice(), r.output_gpu), ([12, 28].as_slice(), Some(1)));

    let o = Options { tensor_split: TensorSplit::default(), ..o };
    let (r, e) = report(&m, Scenario { gpus: gpus(&[40, 80]), ..scenario(o, 2, 80) });
    assert_eq!(r.gpu_layers, [14, 26]);
    assert_eq!(e.per_gpu[0].budget.kv_cache_bytes, 14 * 128 * MIB);
    // The output head goes with the output layer, on CUDA1.
    assert!(r.gpu_weight_bytes[1] > r.gpu_weight_bytes[0] * 26 / 14);
}

/// The split a log ran with, from its per-GPU KV buffers: the Command-R
/// log's 1536 / 3584 MiB of 40 equal layers are 12 and 28, and it offloaded
/// the output layer (`offloaded 41/41`), so `-ts 12,29`; the plan rebuilt
/// with it matches every logged KV buffer.
#[test]
fn a_log_gives_the_split_it_ran_with() {
    let l = crate::startup::log("llamacpp-old-two-gpus");
    assert_eq!(shared::startup::llamacpp_layer_split(&l, 40).as_deref(), Some("12,29"));
    let m = command_r();
    let o = Options {
        n_ctx: Some(4096),
        cache_type_k: Some(llamacpp::CacheType::F16),
        tensor_split: ts("12,29"),
        ..Default::default()
    };
    let e = crate::estimate(&m, Scenario { gpus: gpus(&[80, 80]), ..scenario(o, 2, 80) });
    let checks = shared::startup::llamacpp_buffers(&l, &e);
    let kv: Vec<_> = checks.iter().filter(|c| c.buffer == "kv").collect();
    assert_eq!(kv.len(), 2);
    assert!(kv.iter().all(|c| c.predicted_bytes == Some(c.logged_bytes)), "{kv:?}");
    // One GPU's log: no split to take.
    assert_eq!(shared::startup::llamacpp_layer_split(&crate::startup::log("llamacpp-mistral-7b-2k"), 32), None);
}

/// An iSWA model's log prints two caches, each its buffers then its
/// summary: gpt-oss-20b on eight Ascend NPUs at b6115 (the CANN log, 24
/// layers, 12 of each kind) puts 512 / 256 MiB of the full cache (256 MiB a
/// layer at 131,072 cells) and 3.00 / 1.50 MiB of the window's (1.50 MiB a
/// layer at 768) on alternate devices, so CANN0 holds 2 + 2 layers and CANN7
/// 1 + 1. Both caches' bytes together are not proportional to the layers;
/// each cache's are, and the output layer (`offloaded 25/25`) goes with the
/// last device. (Before, a device's second buffer stopped the split: no
/// split read, every layer planned on CANN0.)
#[test]
fn a_log_of_two_caches_gives_each_devices_layers_cache_by_cache() {
    let l = crate::startup::log("llamacpp-b6115-cann-8x-ascend910b4-gptoss20b-mxfp4-131k");
    assert_eq!(shared::startup::llamacpp_layer_split(&l, 24).as_deref(), Some("4,3,3,3,3,3,3,3"));
}

/// `--split-mode none`: the main GPU alone; the other is not used at all.
/// `--split-mode row`: matrices split by rows over both GPUs, the KV cache
/// with its layers.
#[test]
fn split_modes_none_and_row() {
    let m = model("llama-3-8b");
    let base = Options { n_ctx: Some(8192), ..Default::default() };
    let (one, e1) = report(&m, scenario(base, 1, 80));
    let (none, e) = report(&m, scenario(Options { split_mode: SplitMode::None, main_gpu: 1, ..base }, 2, 80));
    assert_eq!(e.per_gpu[0].budget.total_bytes(), 0);
    assert_eq!(e.per_gpu[1].budget, e1.per_gpu[0].budget);
    assert_eq!(none.gpu_weight_bytes, [0, one.gpu_weight_bytes[0]]);

    // Layer split 1:1 of 33 offloaded: k / 33 < 0.5 for k ≤ 16.
    let row = Options { split_mode: SplitMode::Row, tensor_split: ts("1,1"), ..base };
    let (r, e) = report(&m, scenario(row, 2, 80));
    assert_eq!(r.gpu_layers, [17, 15]);
    let per_layer_kv = e1.per_gpu[0].budget.kv_cache_bytes / 32;
    assert_eq!(e.per_gpu[0].budget.kv_cache_bytes, 17 * per_layer_kv);
    // The matrices (all but the norms) are half on each GPU.
    let [a, b] = [r.gpu_weight_bytes[0], r.gpu_weight_bytes[1]];
    assert_eq!(a + b, one.gpu_weight_bytes[0]);
    assert!(a.abs_diff(b) < MIB, "{a} vs {b}");
}

/// `--mmproj`: the tower and projector (not in the text GGUF) on the first
/// GPU (tools/mtmd/clip.cpp), or on the CPU with `--no-mmproj-offload`.
#[test]
fn the_projector_goes_to_the_first_gpu_or_the_cpu() {
    let m = model("qwen2.5-vl-7b");
    let base = Options { n_ctx: Some(4096), ..Default::default() };
    let (text, _) = report(&m, scenario(base, 1, 80));
    let (gpu, _) = report(&m, scenario(Options { mmproj: true, ..base }, 1, 80));
    let (cpu, _) = report(&m, scenario(Options { mmproj: true, no_mmproj_offload: true, ..base }, 1, 80));
    assert!(gpu.mmproj_bytes > 100 * MIB, "{}", gpu.mmproj_bytes);
    assert_eq!(gpu.gpu_weight_bytes[0], text.gpu_weight_bytes[0] + gpu.mmproj_bytes);
    assert_eq!((gpu.mmproj_gpu, cpu.mmproj_gpu), (Some(0), None));
    assert_eq!(cpu.cpu_weight_bytes, text.cpu_weight_bytes + cpu.mmproj_bytes);
    assert_eq!(text.mmproj_bytes, 0);
}

#[test]
fn bad_overrides_and_devices_are_refused() {
    for (text, why) in [
        ("exps", "not PATTERN=BUFFER"),
        ("exps=GPU", "unknown buffer type"),
        (r"(a)\1=CPU", "back-reference"),
        ("blk\\.{1,2}=CPU", "not PATTERN=BUFFER"),
    ] {
        let e = TensorOverrides::parse(text).err().unwrap_or_else(|| panic!("{text} parsed"));
        assert!(e.contains(why), "{text}: {e}");
    }
    assert!(TensorSplit::parse("3,x").is_err());
    assert!(TensorSplit::parse("-1,1").is_err());
    for (o, why) in [
        (Options { tensor_overrides: ot("exps=CUDA2"), ..Default::default() }, "GPU 2"),
        (Options { main_gpu: 2, ..Default::default() }, "--main-gpu 2"),
        (Options { tensor_split: ts("0,0,1"), ..Default::default() }, "nothing"),
        (
            Options { split_mode: SplitMode::None, tensor_overrides: ot("exps=CUDA1"), ..Default::default() },
            "only GPU 0 is used",
        ),
    ] {
        let e = scenario(o, 2, 80).validate().err().map(|e| e.to_string()).unwrap_or_default();
        assert!(e.contains(why), "{e}");
    }
}

#[test]
fn the_command_line_and_links_carry_the_new_knobs() {
    use shared::link::{LinkState, decode, encode};
    let m = model("llama-3-8b");
    let o = Options {
        tensor_overrides: ot(r"blk\.(0|1)\.ffn_up=CPU"),
        tensor_split: ts("3,1"),
        split_mode: SplitMode::Row,
        main_gpu: 1,
        mmproj: true,
        no_mmproj_offload: true,
        ..Default::default()
    };
    let s = scenario(o, 2, 80);
    let cmd = llamacpp::server_command(&m, &s);
    assert!(
        cmd.ends_with(r" -ot 'blk\.(0|1)\.ffn_up=CPU' -sm row -ts 3,1 -mg 1 --mmproj mmproj.gguf --no-mmproj-offload"),
        "{cmd}"
    );
    let state = LinkState { engine: Engine::LlamaCpp(o), ..LinkState::default() };
    let link = encode(&state);
    for key in ["ts=3,1", "sm=row", "mg=1", "mmproj=cpu", "ot="] {
        assert!(link.contains(key), "{link}");
    }
    let d = decode(&link);
    assert_eq!(d.state, state);
    assert!(d.notices.is_empty(), "{:?}", d.notices);
    assert!(!decode("?e=llama.cpp&ot=exps%3DGPU").notices.is_empty());
}

/// Two GPUs, the second small, split 1:1: the second overflows. The fixes
/// are a `--tensor-split` by memory, and an `-ot` that keeps the routed
/// experts of the second GPU's first layers on the CPU (`--n-cpu-moe` would
/// take the first GPU's layers first); the fewest such layers, each a plan
/// that loads.
#[test]
fn fixes_split_by_memory_or_move_the_full_gpus_experts() {
    let m = model("qwen3-30b-a3b");
    let o = Options { n_ctx: Some(8192), tensor_split: ts("1,1"), ..Default::default() };
    let s = Scenario { gpus: gpus(&[24, 5]), ..scenario(o, 2, 24) };
    let e = crate::estimate(&m, s.clone());
    assert!(e.per_gpu[0].fits && !e.per_gpu[1].fits, "the test needs the second GPU to overflow");
    let fixes = shared::fixes::fixes(&m, &s);
    let split = fixes
        .iter()
        .find(|f| f.kind == shared::fixes::FixKind::SplitLayers)
        .unwrap_or_else(|| panic!("{:?}", fixes.iter().map(|f| &f.code).collect::<Vec<_>>()));
    assert!(split.fits && split.code.contains(" -ts "), "{}", split.code);
    let Engine::LlamaCpp(so) = split.scenario.engine else { panic!("llama.cpp") };
    assert_eq!(so.tensor_split.ratios().iter().sum::<f64>(), 49.0, "48 layers and the output layer");
    let moved = fixes.iter().find(|f| f.code.contains(" -ot ")).unwrap_or_else(|| panic!("no -ot fix"));
    assert!(moved.fits, "{}", moved.code);
    let Engine::LlamaCpp(oo) = moved.scenario.engine else { panic!("llama.cpp") };
    // The rule names layers from 25 (the second GPU's first: 49 offloaded,
    // k / 49 < 1/2 for k ≤ 24) on, and one layer fewer does not load.
    let rule = oo.tensor_overrides.as_str().to_owned();
    assert!(rule.starts_with(r"blk\.(25|26|"), "{rule}");
    let layers: Vec<&str> = rule.split('(').nth(1).unwrap_or("").split(')').next().unwrap_or("").split('|').collect();
    let fewer = rule.replace(&format!("|{}", layers[layers.len() - 1]), "");
    let mut t = s.clone();
    t.engine = Engine::LlamaCpp(Options { tensor_overrides: ot(&fewer), ..o });
    assert!(!crate::estimate(&m, t).fits, "{fewer}");
}

/// llama.cpp's `--fit` gives up when the user placed layers or tensors
/// (common/fit.cpp throws "… already set by user, abort" and the model
/// loads as told): a plan that does not fit says which flag stops it.
#[test]
fn fit_gives_up_on_placements_the_user_set() {
    let m = model("qwen3-30b-a3b");
    let base = Options { n_ctx: Some(4096), ..Default::default() };
    let gave_up = |o: Options, gpus: usize, gib: u64| -> Vec<String> {
        let e = crate::estimate(&m, scenario(o, gpus, gib));
        e.warnings.into_iter().filter(|w| w.contains("--fit gives up")).collect()
    };
    assert_eq!(gave_up(base, 1, 8), Vec::<String>::new(), "nothing set: --fit may still place it");
    let ngl = gave_up(Options { n_gpu_layers: Some(99), ..base }, 1, 8);
    assert!(
        ngl.len() == 1 && ngl[0].contains("with -ngl set") && ngl[0].contains("n_gpu_layers already set"),
        "{ngl:?}"
    );
    let moe = gave_up(Options { n_cpu_moe: 3, ..base }, 1, 8);
    assert!(moe.len() == 1 && moe[0].contains("--n-cpu-moe") && moe[0].contains("tensor_buft_overrides"), "{moe:?}");
    let one = gave_up(Options { tensor_overrides: ot(r"blk\.0\.ffn_down_exps=CPU"), ..base }, 1, 8);
    assert!(one.len() == 1 && one[0].contains("with -ot set"), "{one:?}");
    // Every expert on the CPU: the rest fits, nothing to fit.
    assert_eq!(gave_up(Options { tensor_overrides: ot("exps=CPU"), ..base }, 1, 8), Vec::<String>::new());
    let row = gave_up(Options { split_mode: SplitMode::Row, ..base }, 2, 8);
    assert!(row.len() == 1 && row[0].contains("LLAMA_SPLIT_MODE_ROW"), "{row:?}");
    // A split over one GPU is no split; a plan that fits needs no fitting.
    assert_eq!(gave_up(Options { tensor_split: ts("1"), ..base }, 1, 8), Vec::<String>::new());
    assert_eq!(gave_up(Options { n_gpu_layers: Some(99), ..base }, 1, 80), Vec::<String>::new());
}
