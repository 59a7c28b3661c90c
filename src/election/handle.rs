//! The handle's methods that a `LeaderLatch` and a `LeaderSelector` share.
//!
//! Written once as a macro each expands in its own file: the handle's methods on the election
//! (`engine.rs`) it drives.

/// What a [`LeaderLatch`](crate::LeaderLatch) and a [`LeaderSelector`](crate::LeaderSelector)
/// say alike, written once: each is a handle on the [`Election`](crate::election::engine::Election) in its field `election`, and
/// dropping it leaves the election in the background.
macro_rules! election_handle {
    ($handle:ident) => {
        impl $handle {
            /// Whether this participant leads now, as far as this process knows. No request.
            pub fn has_leadership(&self) -> bool {
                self.election.leadership().is_some()
            }

            /// The current term, if this participant leads. No request.
            pub fn leadership(&self) -> Option<crate::election::leadership::Leadership> {
                self.election.leadership()
            }

            /// Every participant (zklock's and Curator's) in queue order, the leader first (as
            /// Curator's `getParticipants`, whose `isLeader` is the first's): one listing, then
            /// one read of every node's data. A participant's id is its node's
            /// [`id`](crate::queue::QueueNode::id).
            ///
            /// # Errors
            /// [`Error::SessionExpired`](crate::Error::SessionExpired),
            /// [`Error::SessionClosed`](crate::Error::SessionClosed) or
            /// [`Error::ZooKeeper`](crate::Error::ZooKeeper).
            ///
            /// # Cancel safety
            /// Cancel safe: it only reads.
            pub async fn participants(&self) -> crate::error::Result<Vec<crate::queue::QueueNode>> {
                self.election.participants().await
            }

            /// The leader, if anyone leads; as [`participants`](Self::participants).
            ///
            /// # Errors
            /// As [`participants`](Self::participants).
            ///
            /// # Cancel safety
            /// Cancel safe: it only reads.
            pub async fn leader(&self) -> crate::error::Result<Option<crate::queue::QueueNode>> {
                Ok(self.participants().await?.into_iter().next())
            }

            /// Leaves the election for good: ends the current term at once (its
            /// [`Leadership::ended`](crate::election::Leadership::ended) resolves with
            /// [`TermEnd::Closed`](crate::election::TermEnd::Closed) before our node goes; a
            /// selector's work is dropped), deletes our node and returns once it is gone: ZooKeeper
            /// confirmed the delete, or the session ended, which took the node with it. From the
            /// first poll on, the participant reads as closed
            /// ([`Error::ElectionClosed`](crate::Error::ElectionClosed) from waiting for leadership
            /// and from `start`). Closing again does nothing.
            ///
            /// Bounded in a partition: while the client cannot reach ZooKeeper, `close` waits at
            /// most one (negotiated) session timeout of disconnection, counted from the later of
            /// its call and the disconnection. The server expires a session it has not heard from
            /// for that long, and the client heard from it before either, so by then the session
            /// and our node are gone, and `close` returns `Ok` (the delete goes on in the
            /// background until the client learns of the expiry).
            ///
            /// # Errors
            /// - [`Error::ElectionNotStarted`](crate::Error::ElectionNotStarted);
            /// - the error that had ended the election by itself before `close` was called (for
            ///   example [`Error::SessionExpired`](crate::Error::SessionExpired)), once; a session
            ///   that ends while we leave is no error, since we have left;
            /// - [`Error::ZooKeeper`](crate::Error::ZooKeeper) when our node could not be deleted.
            ///
            /// # Cancel safety
            /// The participant leaves in any case, from the first poll: dropping the future only
            /// stops waiting for our node to go.
            pub async fn close(&self) -> crate::error::Result<()> {
                self.election.close().await
            }

            /// This participant's id.
            pub fn id(&self) -> &str {
                self.election.id()
            }

            /// The election's path.
            pub fn path(&self) -> &str {
                self.election.path()
            }
        }

        impl std::fmt::Debug for $handle {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.debug_struct(stringify!($handle))
                    .field("path", &self.path())
                    .field("id", &self.id())
                    .field("has_leadership", &self.has_leadership())
                    .finish()
            }
        }

        impl Drop for $handle {
            /// Leaves the election in the background: the term ends at once
            /// ([`TermEnd::Dropped`](crate::election::TermEnd::Dropped)) and our node is deleted.
            fn drop(&mut self) {
                self.election.stop(crate::election::term_end::TermEnd::Dropped);
            }
        }
    };
}

pub(crate) use election_handle;
