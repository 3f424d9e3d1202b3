//! The calculator page.
