//! The calculator page in a real headless Chromium, driven through
//! chromedriver (`fantoccini`), against the built `dist/` served by a small
//! static server started here, compared figure by figure with what the
//! `headroom estimate --json` CLI prints for the same inputs.
//!
//! Without Chromium or chromedriver the tests print why and pass, unless
//! `CI=true`, where a missing browser is an error (`cargo xtask test` installs
//! both first).

mod a11y;
mod bench;
mod browser;
mod cli;
mod engines;
mod fleet;
mod links;
mod live;
mod page;
mod server;
mod ux;
