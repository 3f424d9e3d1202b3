//! The `-ot` pattern matcher in the browser: ECMAScript's own `RegExp`, the
//! grammar llama.cpp compiles `-ot` patterns with (`std::regex`'s default,
//! src/llama-model-loader.cpp), installed into `shared` in place of the Rust
//! matcher the native crates use (`shared/src/engines/llamacpp/pattern.rs`,
//! left out of the page's wasm: docs/measurements.md).

/// Installs the browser's matcher; every wasm bundle that plans calls it
/// before its first plan (natively, `shared` has its own matcher).
pub fn install() {
    #[cfg(target_arch = "wasm32")]
    shared::engines::llamacpp::set_search(search);
}

/// `new RegExp(pattern).test(name)`; a pattern `RegExp` refuses gives its
/// `SyntaxError`'s reason (V8: "Invalid regular expression: /(/: Unterminated group").
#[cfg(target_arch = "wasm32")]
fn search(pattern: &str, name: &str) -> Result<bool, String> {
    use wasm_bindgen::JsCast;
    let ctor =
        js_sys::Reflect::get(&js_sys::global(), &"RegExp".into()).map_err(|_| "cannot be checked".to_string())?;
    let args = js_sys::Array::of1(&wasm_bindgen::JsValue::from_str(pattern));
    match js_sys::Reflect::construct(ctor.unchecked_ref::<js_sys::Function>(), &args) {
        Ok(re) => Ok(re.unchecked_into::<js_sys::RegExp>().test(name)),
        Err(e) => {
            let why = String::from(e.unchecked_into::<js_sys::Error>().message());
            Err(format!("is not a regex llama.cpp reads ({})", why.rsplit(": ").next().unwrap_or_default()))
        }
    }
}
