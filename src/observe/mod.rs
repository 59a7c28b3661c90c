//! What an operator sees of a lock: tracing events, spans and metrics.
//!
//! Tracing events carry the lock path and node, at the levels one would choose (lost at `warn`,
//! timed out and revocation at `info`, the rest at `debug`), spans named per recipe, and the
//! metrics of [`metrics`].
//!
//! Events (target `zklock`): `acquired` (`waited_ms`, `fencing_token`), `released`
//! (`held_ms`), `timed out` (`waited_ms`), `lost` (`reason`), `revocation requested`; each with
//! `recipe`, `path` and, once there is one, `node`. A leader election adds `leadership taken` and
//! `leadership ended` (`end`) at `info`, with `id` and `fencing_token`, and `left the election` (`error`)
//! at `warn`.

pub(crate) mod events;
pub(crate) mod label;
pub mod metrics;
#[cfg(feature = "metrics")]
mod path_labels;
pub(crate) mod series;
