//! Mounts the calculator page.

fn main() {
    leptos::mount::mount_to_body(web::App);
}
