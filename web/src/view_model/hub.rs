//! The state of a Hugging Face hub fetch (or of dropped local checkpoint
//! files), and the messages for its failures.

use shared::hub::HubRef;
use shared::link::ModelSource;

/// Where a `hf=` model (or a `file=` model) stands.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum HubState {
    #[default]
    Idle,
    Loading {
        id: String,
        /// Checkpoint headers read so far, of how many (once the files are known).
        read: Option<(u32, u32)>,
    },
    Loaded {
        /// The hub id, or for dropped files the model's name (`file=`).
        id: String,
        config: String,
        checkpoint_bytes: Option<u64>,
        /// The model read from the checkpoint's headers, encoded
        /// (`view_model::presets::encode_model`); empty when the weights
        /// are estimated from `config` (no safetensors on the hub).
        checkpoint: Vec<u8>,
    },
    Failed {
        id: String,
        message: String,
        /// The model the page went back to (the one before `id` was
        /// asked for), whose plan stays on screen; `None` when there was
        /// none (a `hf=` link opened as it is).
        kept: Option<ModelSource>,
    },
}

impl HubState {
    /// The state the diagnose bundle receives from the page: `id` is empty
    /// unless the model came from the hub (or dropped files), `config` is its
    /// config.json, `checkpoint` its safetensors total in bytes (empty when
    /// unknown) and `model` the model its headers give (empty when none).
    pub fn from_bundle_args(id: &str, config: &str, checkpoint: &str, model: &[u8]) -> Self {
        if id.is_empty() {
            return Self::Idle;
        }
        Self::Loaded {
            id: id.to_owned(),
            config: config.to_owned(),
            checkpoint_bytes: checkpoint.parse().ok(),
            checkpoint: model.to_vec(),
        }
    }
}

/// Why a hub request failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HubFailure {
    /// The request never got an answer (offline, DNS, CORS, blocked).
    Unreachable,
    /// An HTTP status other than 2xx.
    Status(u16),
    /// The body was not a readable config.
    Unreadable,
}

/// The model a person typed or pasted, in `shared::hub`'s grammar
/// (`owner/name[@revision][:Q4_K_M or :file.gguf]`, as `llama-server -hf`
/// and `ollama run hf.co/…` take it), or a model page's URL under Hugging
/// Face (`https://huggingface.co/owner/name`, `hf.co`) or the link's hub
/// mirror `base`, with or without a tail (`/tree/main`,
/// `/blob/main/config.json`, `?library=…`: the repository alone; mapping a
/// GGUF file's page to `:file` cost the first load ~0.5 kB gzip, over its
/// budget). `None` for anything else (a preset search such as `qwen 32`).
pub fn repo_from_text(text: &str, base: &str) -> Option<String> {
    let t = text.trim();
    let base = base.trim_end_matches('/');
    let path = ["https://huggingface.co/", "http://huggingface.co/", "https://hf.co/", "huggingface.co/", "hf.co/"]
        .iter()
        .find_map(|p| t.strip_prefix(p))
        .or_else(|| t.strip_prefix(base).and_then(|r| r.strip_prefix('/')));
    let id = match path {
        Some(path) => {
            let path = path.split(['?', '#']).next().unwrap_or_default();
            let mut parts = path.split('/');
            let (owner, name) = (parts.next()?, parts.next()?);
            [owner, "/", name].concat()
        }
        None if !t.contains(char::is_whitespace) && !t.contains("://") => {
            HubRef::parse(t).ok().filter(|r| r.repo.contains('/'))?;
            t.to_owned()
        }
        None => return None,
    };
    shared::link::parse_repo_id(&id).ok()
}

/// The URL of a file of the model `id` names (its revision, `main` by
/// default), under a hub base (`https://huggingface.co` or a mirror).
pub fn file_url(base: &str, id: &str, file: &str) -> String {
    match HubRef::parse(id) {
        Ok(named) => named.file_url(base, file),
        // Ids reach here parsed (`parse_repo_id`); name any other as typed.
        Err(_) => format!("{}/{id}/resolve/main/{file}", base.trim_end_matches('/')),
    }
}

/// A message a person can act on.
pub fn failure_message(base: &str, id: &str, failure: HubFailure) -> String {
    match failure {
        HubFailure::Unreachable => format!(
            "Could not reach {base}: you may be offline, or a proxy or the browser blocked the request. \
             Paste the model's config.json instead."
        ),
        HubFailure::Status(401 | 403) => format!(
            "`{id}` is gated or private: the page cannot send your Hugging Face token. \
             Accept the licence on the model page, download config.json and paste it here."
        ),
        HubFailure::Status(404) => {
            format!("`{id}` was not found on {base}, or it has no config.json. Check the id (owner/name).")
        }
        HubFailure::Status(code) => format!("{base} answered HTTP {code} for `{id}`; try again later."),
        HubFailure::Unreadable => format!("`{id}`'s config.json could not be read as a model config."),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builds_urls_and_messages() {
        assert_eq!(
            file_url("https://huggingface.co/", "Qwen/Qwen2.5-7B", "config.json"),
            "https://huggingface.co/Qwen/Qwen2.5-7B/resolve/main/config.json"
        );
        assert_eq!(
            file_url("http://h", "acme/m@refs/pr/1:Q4_K_M", "m.gguf"),
            "http://h/acme/m/resolve/refs%2Fpr%2F1/m.gguf"
        );
        assert!(failure_message("h", "a/b", HubFailure::Status(403)).contains("gated"));
        assert!(failure_message("h", "a/b", HubFailure::Status(404)).contains("not found"));
        assert!(failure_message("h", "a/b", HubFailure::Unreachable).contains("offline"));
        assert!(failure_message("h", "a/b", HubFailure::Status(500)).contains("500"));
    }

    #[test]
    fn reads_repo_ids_and_model_page_urls() {
        let hf = "https://huggingface.co";
        for text in [
            "Qwen/Qwen2.5-7B",
            " https://huggingface.co/Qwen/Qwen2.5-7B ",
            "https://huggingface.co/Qwen/Qwen2.5-7B/tree/main",
            "https://hf.co/Qwen/Qwen2.5-7B/blob/main/config.json",
            "huggingface.co/Qwen/Qwen2.5-7B?library=transformers",
            "http://127.0.0.1:9/hub/Qwen/Qwen2.5-7B",
        ] {
            assert_eq!(
                super::repo_from_text(text, if text.contains("127.0.0.1") { "http://127.0.0.1:9/hub" } else { hf })
                    .as_deref(),
                Some("Qwen/Qwen2.5-7B"),
                "{text}"
            );
        }
        for text in ["qwen 32", "llama", "https://example.com/a/b", "https://huggingface.co/Qwen", "a/b/c", "a/b:../x"]
        {
            assert_eq!(super::repo_from_text(text, hf), None, "{text}");
        }
        for (text, id) in [
            ("unsloth/Qwen3-30B-A3B-GGUF:Q4_K_M", "unsloth/Qwen3-30B-A3B-GGUF:Q4_K_M"),
            ("hf.co/unsloth/Qwen3-30B-A3B-GGUF:Q4_K_M", "unsloth/Qwen3-30B-A3B-GGUF:Q4_K_M"),
            ("acme/m@refs/pr/1:Q8_0/m-00001-of-00002.gguf", "acme/m@refs/pr/1:Q8_0/m-00001-of-00002.gguf"),
            ("https://huggingface.co/acme/m/blob/main/m-Q4_K_M.gguf", "acme/m"),
        ] {
            assert_eq!(super::repo_from_text(text, hf).as_deref(), Some(id), "{text}");
        }
    }
}
