//! The page's view model and share links, tested natively.

mod golden_links;
mod tidy;
