//! `--plan LINK`: the plan a share link describes, as the figures a finding
//! is compared with (`shared::live::PlanFacts`).

use anyhow::{Context as _, bail};
use shared::link::{self, ModelSource};
use shared::live::PlanFacts;
use shared::model::Model;

use super::super::checkpoint;

/// The plan of a share link (the page's whole URL, or its query).
pub fn from_link(text: &str) -> anyhow::Result<PlanFacts> {
    let query = text.trim().split_once('?').map_or(text.trim(), |(_, q)| q);
    let query = query.split_once('#').map_or(query, |(q, _)| q);
    let decoded = link::decode(query);
    for notice in &decoded.notices {
        eprintln!("note: --plan: {notice}");
    }
    let state = decoded.state;
    let model = match &state.model {
        ModelSource::Preset(id) => Model::preset(id).with_context(|| format!("--plan: preset `{id}`"))?,
        ModelSource::Config(json) => Model::from_config_json("pasted config.json", json)
            .context("--plan: the link's config")?
            .with_checkpoint_bytes(state.checkpoint_bytes),
        ModelSource::Hub(repo) => {
            let hub = checkpoint::hub::Hub::new(repo)?;
            let gguf = hub.gguf_file(None)?;
            checkpoint::model(repo.clone(), &hub, gguf.as_deref(), None)?
        }
        ModelSource::Params(_) => {
            bail!("--plan: the link names only a parameter count; open it in the page, or share a link with a model")
        }
        ModelSource::Local(name) => {
            bail!("--plan: the link's model is local files ({name}); run `headroom estimate --checkpoint` on them")
        }
    };
    let scenario = state.scenario_for(&model).map_err(|e| anyhow::anyhow!("--plan: {e}"))?;
    let estimate = shared::estimate::estimate(&model, scenario);
    Ok(PlanFacts::of(&model, &estimate))
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_page_link_gives_its_plan() {
        let plan =
            super::from_link("https://headroom.example/?model=llama-2-7b&w=fp16&gpu=rtx-4090&p=1024&n=256&c=4#x")
                .unwrap();
        assert_eq!(plan.model, "Llama 2 7B");
        assert_eq!(plan.concurrency, 4);
        assert_eq!(plan.kv_bytes_per_token, 512 * 1024);
        assert!(super::from_link("?params=7000000000").is_err());
    }
}
