#!/usr/bin/env python3
"""Parameter-count oracle for the architecture readers (developer tool, not CI).

Builds every fixture config under shared/tests/fixtures/arch/ with transformers
itself, on PyTorch's `meta` device (no memory is allocated for the weights), and
counts the model's unique parameters: `Module.parameters()` yields a tied
parameter once, so a tied input embedding / output head counts once, exactly as
`model.num_parameters()` does. The counts are written to
shared/tests/fixtures/arch/counts.json with the transformers and torch versions
that produced them; `shared/tests/it/arch.rs` checks each reader against them.

Set up once (CPU wheels are enough, nothing runs on a GPU):

    python3 -m venv /tmp/venv-oracle
    /tmp/venv-oracle/bin/pip install torch transformers   # transformers >= 5
    /tmp/venv-oracle/bin/python scripts/param-oracle.py --defaults   # (re)write the default fixtures
    /tmp/venv-oracle/bin/python scripts/param-oracle.py              # count every fixture

`--defaults` writes `defaults-<model_type>.json`: the `to_dict()` of the
transformers config class built with no arguments, i.e. the defaults the Rust
readers must reproduce when a key is absent. The other fixtures are real Hub
configs (their source is in sources.json).

Each count also records the parameters under each top-level child module (e.g.
`model.language_model`, `model.visual`, `lm_head`), so a test can explain a
difference (a vision tower, an MTP layer) without typing a figure.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import re
import sys

import torch
import transformers
from transformers import AutoConfig, AutoModelForCausalLM
from transformers.models.auto.configuration_auto import CONFIG_MAPPING

ROOT = pathlib.Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "shared" / "tests" / "fixtures" / "arch"

# The config classes whose defaults are committed as fixtures (model_type → class
# built with no arguments). Multimodal wrappers are listed by their own
# model_type; their defaults include the text and vision sub-configs.
DEFAULT_TYPES = [
    "gpt_oss",
    "llama4",
    "llama4_text",
    "qwen3_next",
    "qwen3_5",
    "qwen3_5_text",
    "qwen3_5_moe",
    "qwen3_5_moe_text",
    "glm4_moe",
    "glm_moe_dsa",
    "deepseek_v32",
    "gemma4",
    "gemma4_text",
    "minimax_m2",
    "nemotron_h",
    "granitemoehybrid",
    "falcon_h1",
    "jamba",
    "lfm2",
    "smollm3",
    "mistral3",
    "qwen3_vl",
    "qwen3_vl_moe",
    "glm4",
    "cohere2",
    "olmo2",
    "starcoder2",
    "granite",
    "granitemoe",
    "phimoe",
    "bloom",
    "exaone4",
    "mimo_v2_flash",
    "gemma3n",
    "gemma3n_text",
    # transformers 5.25's additions.
    "olmo3",
    "ministral3",
    "mistral4",
    "glm4_moe_lite",
    "kimi_k25",
    "olmoe",
    "ernie4_5",
    "ernie4_5_moe",
    "seed_oss",
    "arcee",
    "exaone_moe",
    "glm4v",
    "glm4v_moe",
    "apertus",
    "internvl",
    "llava",
    "llava_next",
    "llava_onevision",
    "paligemma",
    "idefics3",
    "smolvlm",
    "cohere",
    "minicpm3",
    "exaone",
]


def config_from_json(raw: dict):
    raw = dict(raw)
    # Quantised checkpoints: count the modules transformers builds for the
    # unquantised model (the parameter count is the same; only storage differs).
    raw.pop("quantization_config", None)
    model_type = raw.get("model_type")
    if model_type not in CONFIG_MAPPING:
        raise SystemExit(f"transformers {transformers.__version__} does not know model_type {model_type!r}")
    return CONFIG_MAPPING[model_type].from_dict(raw)


def model_class(config, raw: dict):
    for name in raw.get("architectures") or []:
        cls = getattr(transformers, name, None)
        if cls is not None:
            return cls
    from transformers import AutoModelForImageTextToText

    # Multimodal wrappers (a `vision_config` beside the text): the image-text
    # model, which builds the vision tower too; text configs: the causal LM.
    autos = [AutoModelForCausalLM, AutoModelForImageTextToText]
    if hasattr(config, "vision_config"):
        autos.reverse()
    for auto in autos:
        try:
            return auto._model_mapping[type(config)]
        except KeyError:
            continue
    raise SystemExit(f"no model class for {type(config).__name__}")


def unique_params(module: torch.nn.Module) -> int:
    return sum(p.numel() for p in module.parameters())


def count(path: pathlib.Path) -> dict:
    raw = json.loads(path.read_text())
    config = config_from_json(raw)
    cls = model_class(config, raw)
    with torch.device("meta"):
        model = cls._from_config(config, dtype=torch.bfloat16)
    parts: dict[str, int] = {}
    for name, child in model.named_children():
        for sub_name, sub in child.named_children() if name == "model" else [("", child)]:
            key = f"{name}.{sub_name}" if sub_name else name
            parts[key] = unique_params(sub)
    # Parameters directly on the `model` module (rare) are part of the total only.
    # Every parameter's module path, decoder-layer indices as `*` (the names a
    # device map must cover: `shared/tests/it/arch.rs`).
    # (tied ones under each name).
    # A parameter held directly by a module with children (LLaVA-NeXT's
    # `model.image_newline`) is placed by its own name.
    containers = {name for name, m in model.named_modules() if any(True for _ in m.children())}
    named = model.named_parameters(remove_duplicate=False)
    owners = (n if n.rsplit(".", 1)[0] in containers else n.rsplit(".", 1)[0] for n, _ in named)
    modules = sorted({re.sub(r"(^|\.)(layers|h)\.\d+\.", r"\1\2.*.", o) for o in owners})
    return {"class": cls.__name__, "total": unique_params(model), "parts": parts, "modules": modules}


def write_defaults() -> None:
    FIXTURES.mkdir(parents=True, exist_ok=True)
    for model_type in DEFAULT_TYPES:
        if model_type not in CONFIG_MAPPING:
            print(f"skip {model_type}: not in transformers {transformers.__version__}", file=sys.stderr)
            continue
        d = CONFIG_MAPPING[model_type]().to_dict()
        d["model_type"] = model_type
        for k in ("transformers_version", "_name_or_path"):
            d.pop(k, None)
        (FIXTURES / f"defaults-{model_type}.json").write_text(json.dumps(d, indent=1, sort_keys=True) + "\n")
        print(f"wrote defaults-{model_type}.json")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--defaults", action="store_true", help="write the config-class default fixtures")
    ap.add_argument("names", nargs="*", help="fixture names (default: all)")
    args = ap.parse_args()
    if args.defaults:
        write_defaults()
        return
    out = FIXTURES / "counts.json"
    previous = json.loads(out.read_text()) if out.exists() else {}
    counts = previous.get("counts", {}) if args.names else {}
    for path in sorted(FIXTURES.glob("*.json")):
        name = path.stem
        if name in ("counts", "sources") or (args.names and name not in args.names):
            continue
        try:
            counts[name] = count(path)
            print(f"{name}: {counts[name]['total']:,} ({counts[name]['class']})")
        except Exception as e:  # noqa: BLE001 - report and continue with the others
            print(f"{name}: FAILED {type(e).__name__}: {e}", file=sys.stderr)
            counts.pop(name, None)
    result = {
        "transformers": transformers.__version__,
        "torch": torch.__version__,
        "how": "scripts/param-oracle.py: model built on the meta device, sum of numel over Module.parameters() (tied once)",
        "counts": dict(sorted(counts.items())),
    }
    out.write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    AutoConfig  # imported for users extending the script
    main()
