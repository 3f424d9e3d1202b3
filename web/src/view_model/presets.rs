//! The model presets as the family readers read them at build time
//! (`web/build.rs`, encoded with postcard): the first load gets a preset's model without carrying
//! the readers (they load on demand with `src/bin/reader.rs`) or the
//! presets' `config.json` texts. The test below holds the build-time reading
//! equal to the run-time one for every preset.

use shared::arch::Architecture;
use shared::catalog::ModelPreset;
use shared::model::Model;

include!(concat!(env!("OUT_DIR"), "/presets.rs"));

/// The model of a preset, from its build-time reading.
pub fn model(preset: &ModelPreset) -> Result<Model, String> {
    let (_, bytes) = PRESET_ARCHITECTURES
        .iter()
        .find(|(id, _)| *id == preset.id)
        .ok_or_else(|| format!("preset `{}` was not read at build time", preset.id))?;
    let arch = decode(bytes).map_err(|e| format!("preset `{}`: {e}", preset.id))?;
    let mut model = Model::from_architecture(preset.name, arch);
    model.repo = Some(preset.hf_repo.into());
    Ok(model)
}

/// An architecture as the build and the reader bundle encode it (postcard).
/// Without postcard's reason, as [`decode`]: it could only say that a type
/// of this build's does not serialise.
pub fn encode(arch: &Architecture) -> Result<Vec<u8>, String> {
    postcard::to_allocvec(arch).map_err(|_| "the architecture could not be encoded".to_string())
}

/// The inverse of [`encode`]. Without postcard's reason: its error texts
/// (0.4 kB gzip of the first load) would only describe bytes this build
/// wrote itself.
pub fn decode(bytes: &[u8]) -> Result<Architecture, String> {
    postcard::from_bytes(bytes).map_err(|_| "a broken encoded architecture".to_string())
}

/// A whole model (a checkpoint's exact layout with it) as the reader bundle
/// hands it to the page.
pub fn encode_model(model: &Model) -> Result<Vec<u8>, String> {
    postcard::to_allocvec(model).map_err(|_| "the model could not be encoded".to_string())
}

/// The inverse of [`encode_model`] (without postcard's reason, as [`decode`]).
pub fn decode_model(bytes: &[u8]) -> Result<Model, String> {
    postcard::from_bytes(bytes).map_err(|_| "a broken encoded model".to_string())
}

#[cfg(test)]
mod tests {
    use shared::catalog::MODEL_PRESETS;
    use shared::model::Model;

    #[test]
    fn the_build_time_reading_of_every_preset_is_the_readers_own() {
        assert_eq!(super::PRESET_ARCHITECTURES.len(), MODEL_PRESETS.len());
        for (p, (id, _)) in MODEL_PRESETS.iter().zip(super::PRESET_ARCHITECTURES) {
            assert_eq!(p.id, *id);
            let built = super::model(p).expect("a build-time reading");
            let read = Model::from_preset(p).expect("a preset reads");
            assert_eq!(built, read, "{}", p.id);
        }
    }
}
