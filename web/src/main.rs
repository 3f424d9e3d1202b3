//! Mounts the calculator page: at once, or once the model reader has loaded
//! when the link carries a pasted config (`cfg=`), so that the link is read
//! as the CLI reads it.

fn main() {
    if web::state::reader::needed_by(&web::state::url::query()) {
        // wasm-bindgen's spawner: Leptos's own is set up by the mount.
        wasm_bindgen_futures::spawn_local(async {
            // A reader that fails to load leaves the config unchecked; the
            // model then says why it has no figures.
            let _ = web::state::reader::load().await;
            leptos::mount::mount_to_body(web::App);
        });
    } else {
        leptos::mount::mount_to_body(web::App);
    }
}
