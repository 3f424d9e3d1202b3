//! A model on the Hugging Face Hub as people name it, and the pure parts of
//! reading it that the CLI (`--hf`) and the page (`hf=`) share: the URL of a
//! file, the repository's file list, and which GGUF file a tag names.
//!
//! The name is `ORG/NAME[@REVISION][:PICK]`: the revision as
//! `huggingface_hub` takes it (a branch, tag or commit; default `main`), and
//! after `:` either a `.gguf` file of the repository (a path, the first part
//! of a split model) or a quantisation tag as `llama-server -hf
//! ORG/NAME:Q4_K_M` and `ollama run hf.co/ORG/NAME:Q4_K_M` take it
//! (llama.cpp `common/arg.cpp`, `-hf`: "<user>/<model>[:quant]").

/// The longest repository name the Hub allows (`huggingface_hub`
/// `validate_repo_id`: at most 96 characters).
pub const MAX_REPO_ID: usize = 96;
/// The longest revision or file path kept (a commit is 40 hex digits; git
/// refs and file paths are far shorter in practice).
const MAX_PART: usize = 255;

/// A parsed `ORG/NAME[@REVISION][:PICK]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HubRef<'a> {
    pub repo: &'a str,
    pub revision: Option<&'a str>,
    /// A `.gguf` path or a quantisation tag.
    pub pick: Option<&'a str>,
}

/// Letters, digits and `-_.` (the Hub's repository names), or also `/`
/// (revisions such as `refs/pr/1`, file paths in folders); never `..`,
/// never empty, never a leading `/` or `.`.
fn ok_text(s: &str, slash: bool, max: usize) -> bool {
    !s.is_empty()
        && s.len() <= max
        && !s.contains("..")
        && !s.starts_with(['/', '.'])
        && !s.ends_with('/')
        && s.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') || (slash && c == '/'))
}

impl<'a> HubRef<'a> {
    pub fn parse(text: &'a str) -> Result<Self, String> {
        let (rest, pick) = match text.split_once(':') {
            Some((r, p)) => (r, Some(p)),
            None => (text, None),
        };
        let (repo, revision) = match rest.split_once('@') {
            Some((r, v)) => (r, Some(v)),
            None => (rest, None),
        };
        // One message for every part: each costs the page's first load bytes.
        if repo.len() <= MAX_REPO_ID
            && repo.split('/').count() <= 2
            && repo.split('/').all(|p| ok_text(p, false, MAX_REPO_ID))
            && revision.is_none_or(|v| ok_text(v, true, MAX_PART))
            && pick.is_none_or(|p| ok_text(p, true, MAX_PART))
        {
            return Ok(Self { repo, revision, pick });
        }
        Err("not a Hugging Face model like `org/name`, `org/name@revision` or `org/name:Q4_K_M`".into())
    }

    /// `main` unless a revision was given.
    pub fn revision(&self) -> &'a str {
        self.revision.unwrap_or("main")
    }

    /// `{base}/{repo}/resolve/{revision}/{file}`, `/` in the revision as
    /// `%2F` (`huggingface_hub.hf_hub_url` quotes it so).
    pub fn file_url(&self, base: &str, file: &str) -> String {
        let base = base.trim_end_matches('/');
        format!("{base}/{}/resolve/{}/{file}", self.repo, self.revision().replace('/', "%2F"))
    }

    /// The Hub API's recursive file list of the revision
    /// (`huggingface_hub.HfApi.list_repo_tree`:
    /// `GET /api/models/{repo}/tree/{revision}?recursive=true`).
    pub fn tree_url(&self, base: &str) -> String {
        let base = base.trim_end_matches('/');
        format!("{base}/api/models/{}/tree/{}?recursive=true", self.repo, self.revision().replace('/', "%2F"))
    }
}

/// Pages of a tree listing followed before a `Link` loop is assumed: our
/// bound, not a Hub figure (`huggingface_hub`'s `list_repo_tree` follows
/// every page); a model repository's files fit in far fewer.
pub const MAX_TREE_PAGES: usize = 100;

/// The next page of a listing: the `rel="next"` target of a `Link` header
/// (RFC 8288), as the Hub pages a tree listing.
pub fn next_page(link: &str) -> Option<String> {
    link.split(',').find_map(|entry| {
        let (target, params) = entry.split_once(';')?;
        let next = params.split(';').any(|p| p.replace(' ', "").eq_ignore_ascii_case("rel=\"next\""));
        let target = target.trim().strip_prefix('<')?.strip_suffix('>')?;
        next.then(|| target.to_owned())
    })
}

/// The file paths of a tree listing (the API's JSON array of
/// `{"type": "file", "path": …}` entries; folders are left out).
pub fn tree_files(json: &str) -> Result<Vec<String>, String> {
    #[derive(serde::Deserialize)]
    struct Entry {
        #[serde(rename = "type")]
        kind: String,
        path: String,
    }
    let entries: Vec<Entry> =
        serde_json::from_str(json).map_err(|e| format!("the file list is not the Hub's tree listing: {e}"))?;
    Ok(entries.into_iter().filter(|e| e.kind == "file").map(|e| e.path).collect())
}

/// The GGUF models of a repository's files: each `.gguf` file that is a
/// whole model or the first part of a split one, without the multimodal
/// projectors (`mmproj*.gguf`, which llama.cpp loads with `--mmproj`).
pub fn gguf_models(files: &[String]) -> Vec<&str> {
    files
        .iter()
        .map(String::as_str)
        .filter(|f| {
            let name = f.rsplit('/').next().unwrap_or(f).to_ascii_lowercase();
            name.ends_with(".gguf")
                && !name.starts_with("mmproj")
                && (!name.contains("-of-") || name.contains("-00001-of-"))
        })
        .collect()
}

/// Whether `tag` names `file`: it appears in the file's name (case aside)
/// between separators (`-`, `.`, `_`, `/` or the ends), so `Q4_K_M` picks
/// `Model-Q4_K_M.gguf` and `Q4_K_M/Model-Q4_K_M-00001-of-00002.gguf` but not
/// `Model-UD-Q4_K_XL.gguf` or `Model-IQ4_K_M.gguf`.
fn tag_names(tag: &str, file: &str) -> bool {
    let (tag, file) = (tag.to_ascii_lowercase(), file.to_ascii_lowercase());
    let edge = |c: Option<char>| c.is_none_or(|c| matches!(c, '-' | '.' | '_' | '/'));
    file.match_indices(&tag)
        .any(|(i, _)| edge(file[..i].chars().next_back()) && edge(file[i + tag.len()..].chars().next()))
}

/// Whether a `:PICK` is a file path (`….gguf`, any case) rather than a
/// quantisation tag: a path is read as given, a tag is looked up in the tree.
pub fn is_gguf_path(pick: &str) -> bool {
    pick.to_ascii_lowercase().ends_with(".gguf")
}

/// The GGUF file `pick` names among a repository's `files`: the path
/// itself when it ends in `.gguf`, else the one model whose name holds the
/// tag. Several or none is an error listing the models there are.
pub fn choose_gguf(repo: &str, files: &[String], pick: &str) -> Result<String, String> {
    let models = gguf_models(files);
    if is_gguf_path(pick) {
        if files.iter().any(|f| f == pick) {
            return Ok(pick.to_owned());
        }
        return Err(format!("`{repo}` has no file `{pick}`; {}", listing(&models)));
    }
    match models.iter().filter(|f| tag_names(pick, f)).collect::<Vec<_>>().as_slice() {
        [one] => Ok((**one).to_owned()),
        [] => Err(format!("no GGUF model of `{repo}` is tagged `{pick}`; {}", listing(&models))),
        many => Err(format!(
            "`{pick}` names several GGUF models of `{repo}`: {}; name the file after `:`",
            many.iter().map(|f| format!("`{f}`")).collect::<Vec<_>>().join(", ")
        )),
    }
}

/// The GGUF model of a repository without `config.json` when none is
/// picked: its only one (as `--checkpoint` takes a folder's only GGUF
/// file), else [`no_config`]'s message.
pub fn lone_gguf(repo: &str, files: &[String]) -> Result<String, String> {
    match gguf_models(files).as_slice() {
        [one] => Ok((*one).to_owned()),
        _ => Err(no_config(repo, files)),
    }
}

/// Why a repository without `config.json` gives no model unless a GGUF
/// file is chosen, listing its GGUF models.
pub fn no_config(repo: &str, files: &[String]) -> String {
    pick_instead(repo, files, "no config.json", "no config.json and no GGUF model")
}

/// Why a repository with `config.json` but neither an index nor
/// `model.safetensors` gives no checkpoint: its GGUF models, if any, are
/// what to choose instead (many GGUF repositories carry the original
/// config.json beside their quantisations).
pub fn no_safetensors(repo: &str, files: &[String]) -> String {
    pick_instead(
        repo,
        files,
        "no safetensors weights",
        "no model.safetensors.index.json, no model.safetensors and no GGUF model",
    )
}

/// `repo` has `lacks`: pick one of its GGUF models; or, with none, it has `lacks_all`.
fn pick_instead(repo: &str, files: &[String], lacks: &str, lacks_all: &str) -> String {
    let models = gguf_models(files);
    if models.is_empty() {
        return format!("`{repo}` has {lacks_all}");
    }
    format!(
        "`{repo}` has {lacks}: choose one of its GGUF models with `{repo}:TAG` or `{repo}:FILE`; {}",
        listing(&models)
    )
}

fn listing(models: &[&str]) -> String {
    match models {
        [] => "it has no GGUF model".to_owned(),
        _ => format!("its GGUF models: {}", models.iter().map(|f| format!("`{f}`")).collect::<Vec<_>>().join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_repo_a_revision_and_a_pick() {
        let r = HubRef::parse("unsloth/Qwen3-30B-A3B-GGUF@refs/pr/3:Q4_K_M").unwrap();
        assert_eq!((r.repo, r.revision, r.pick), ("unsloth/Qwen3-30B-A3B-GGUF", Some("refs/pr/3"), Some("Q4_K_M")));
        assert_eq!(
            r.file_url("https://huggingface.co/", "a.gguf"),
            "https://huggingface.co/unsloth/Qwen3-30B-A3B-GGUF/resolve/refs%2Fpr%2F3/a.gguf"
        );
        assert_eq!(
            HubRef::parse("gpt2").unwrap().tree_url("http://h"),
            "http://h/api/models/gpt2/tree/main?recursive=true"
        );
        for bad in
            ["", "a/b/c", "a/../b", "a/b@", "a/b:", "a/b@x:", "a/b@../x", "a/b:../x.gguf", "a/b:/x", "a b/c", ".a/b"]
        {
            assert!(HubRef::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_tag_picks_one_gguf_model() {
        let files: Vec<String> = [
            "README.md",
            "Qwen3-Q4_K_M.gguf",
            "Qwen3-UD-Q4_K_XL.gguf",
            "Qwen3-IQ4_K_M.gguf",
            "mmproj-F16.gguf",
            "Q8_0/Qwen3-Q8_0-00001-of-00002.gguf",
            "Q8_0/Qwen3-Q8_0-00002-of-00002.gguf",
        ]
        .map(str::to_owned)
        .to_vec();
        assert_eq!(choose_gguf("r", &files, "q4_k_m").unwrap(), "Qwen3-Q4_K_M.gguf");
        assert_eq!(choose_gguf("r", &files, "Q8_0").unwrap(), "Q8_0/Qwen3-Q8_0-00001-of-00002.gguf");
        assert_eq!(choose_gguf("r", &files, "Qwen3-UD-Q4_K_XL.gguf").unwrap(), "Qwen3-UD-Q4_K_XL.gguf");
        let none = choose_gguf("r", &files, "Q2_K").unwrap_err();
        assert!(
            none.contains("`Qwen3-Q4_K_M.gguf`") && !none.contains("mmproj") && !none.contains("00002-of-00002"),
            "{none}"
        );
        assert!(choose_gguf("r", &files, "Qwen3").unwrap_err().contains("several"));
        assert!(choose_gguf("r", &files, "missing.gguf").unwrap_err().contains("no file `missing.gguf`"));
        assert!(no_config("r", &files).contains("`r:TAG`"));
        let only = no_safetensors("r", &files);
        assert!(only.contains("no safetensors weights") && only.contains("`Qwen3-Q4_K_M.gguf`"), "{only}");
        assert!(no_safetensors("r", &files[..1]).ends_with("no model.safetensors and no GGUF model"));
        assert!(lone_gguf("r", &files).unwrap_err().contains("`Qwen3-IQ4_K_M.gguf`"));
        let one = ["config.txt", "mmproj-F16.gguf", "m-Q4_0.gguf"].map(str::to_owned);
        assert_eq!(lone_gguf("r", &one).unwrap(), "m-Q4_0.gguf");
        assert!(lone_gguf("r", &one[..2]).unwrap_err().contains("no GGUF model"));
    }

    #[test]
    fn reads_the_tree_listing() {
        let json = r#"[{"type":"directory","path":"Q8_0","oid":"x","size":0},
            {"type":"file","path":"Q8_0/a-00001-of-00002.gguf","size":5,"lfs":{"oid":"y","size":5}}]"#;
        assert_eq!(tree_files(json).unwrap(), vec!["Q8_0/a-00001-of-00002.gguf".to_owned()]);
        assert!(tree_files("<html>").is_err());
        let link =
            r#"<https://h/api/models/a/b/tree/main?recursive=true&cursor=x>; rel="next", <https://h/p>; rel="prev""#;
        assert_eq!(next_page(link).as_deref(), Some("https://h/api/models/a/b/tree/main?recursive=true&cursor=x"));
        assert_eq!(next_page(r#"<https://h/p>; rel="prev""#), None);
    }
}
