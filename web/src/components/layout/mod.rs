//! The frame of the page: header with its toggles, notices (and the offer of
//! newer engine rules), footer.

mod copy_link;
mod engine_update;
mod footer;
mod header;
mod notices;
mod skip_link;
mod theme_toggle;
mod units_toggle;

pub use copy_link::CopyLink;
pub use engine_update::EngineUpdate;
pub use footer::Footer;
pub use header::Header;
pub use notices::Notices;
pub use skip_link::{SkipLink, focus_id};
pub use theme_toggle::ThemeToggle;
pub use units_toggle::UnitsToggle;
