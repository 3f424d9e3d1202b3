//! The frame of the page: header with its toggles, notices, footer.

mod copy_link;
mod footer;
mod header;
mod notices;
mod theme_toggle;
mod units_toggle;

pub use copy_link::CopyLink;
pub use footer::Footer;
pub use header::Header;
pub use notices::Notices;
pub use theme_toggle::ThemeToggle;
pub use units_toggle::UnitsToggle;
