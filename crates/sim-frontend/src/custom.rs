//! Where the policies a program registers ([`registry::register`](crate::registry::register))
//! are kept: apart from the registry, so the `--set` keys ([`knobs`](crate::knobs)) can list
//! their knobs without importing the registry, which imports the knobs.

use hybridland_policy::CustomPolicy;
use std::sync::OnceLock;

/// Policies written outside this crate, registered by a program that uses `hybrid-sim` as a
/// library.
pub(crate) static CUSTOM: OnceLock<Vec<CustomPolicy>> = OnceLock::new();

/// The registered custom policies (none unless [`register`](crate::registry::register) was
/// called).
pub fn custom_policies() -> &'static [CustomPolicy] {
    CUSTOM.get().map_or(&[], Vec::as_slice)
}
