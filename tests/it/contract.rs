//! The lock contract, written once and run for every lock (Curator's
//! `TestInterProcessMutexBase` with its abstract `makeLock`), and for the leader latch and
//! selector, whose terms of leadership are holds: at most one holder across sessions and
//! processes with increasing fencing tokens, no node left by a give-up, a dropped release or a
//! hold dropped on a thread with no runtime,
//! crashed holders handing over, losses signalled (and short disconnections and operators'
//! deletions survived); tasks sharing one participant exclude each other too (and pass
//! the hold between them, with local handoff). Each (lock, contract) pair is its own test, named
//! `{lock}::{contract}`. The recipes' own rules follow in `*_rules` modules.

#[path = "contract/exclusion.rs"]
mod exclusion;
#[path = "contract/future_size.rs"]
mod future_size;
#[path = "contract/ghost.rs"]
mod ghost;
#[path = "contract/give_up.rs"]
mod give_up;
#[path = "contract/leader.rs"]
mod leader;
#[path = "contract/lock.rs"]
mod lock;
#[path = "contract/loss.rs"]
mod loss;
#[path = "contract/support.rs"]
mod support;

/// One module per lock, one test per contract; `[...]` lists the extra contracts a lock takes
/// part in.
macro_rules! contracts {
    ($($lock:ident: $under_test:ty [$($extra:ident),*]),* $(,)?) => {$(
        mod $lock {
            use super::*;

            /// This test's name as the test harness knows it, to run it again as a child.
            fn named(contract: &str) -> String {
                crate::common::harness_name(module_path!(), contract)
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn at_most_one_holder_across_sessions() {
                exclusion::across_sessions::<$under_test>().await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn at_most_one_holder_across_tasks() {
                exclusion::across_tasks::<$under_test>().await;
            }

            #[tokio::test]
            async fn at_most_one_holder_across_processes() {
                exclusion::across_processes::<$under_test>(&named("at_most_one_holder_across_processes")).await;
            }

            #[tokio::test]
            async fn a_waiter_whose_node_was_deleted_never_holds_on_it() {
                ghost::a_waiter_whose_node_was_deleted_never_holds_on_it::<$under_test>().await;
            }

            #[tokio::test]
            async fn a_waiter_deleted_with_its_predecessor_never_holds_on_it() {
                ghost::a_waiter_deleted_with_its_predecessor_never_holds_on_it::<$under_test>().await;
            }

            #[tokio::test]
            async fn timeouts_leave_only_the_holders_nodes() {
                give_up::timeouts_leave_only_the_holders_nodes::<$under_test>().await;
            }

            #[tokio::test]
            async fn cancelled_acquires_leave_only_the_holders_nodes() {
                give_up::cancelled_acquires_leave_only_the_holders_nodes::<$under_test>().await;
            }

            #[tokio::test]
            async fn an_acquire_dropped_between_polls_leaves_no_node() {
                give_up::an_acquire_dropped_between_polls_leaves_no_node::<$under_test>().await;
            }

            #[tokio::test]
            async fn a_release_dropped_after_its_first_poll_still_frees_the_lock() {
                give_up::a_release_dropped_after_its_first_poll_still_frees_the_lock::<$under_test>().await;
            }

            #[tokio::test]
            async fn an_acquire_dropped_on_a_plain_thread_leaves_no_node() {
                give_up::an_acquire_dropped_on_a_plain_thread_leaves_no_node::<$under_test>().await;
            }

            #[tokio::test]
            async fn a_hold_dropped_on_a_plain_thread_frees_the_lock() {
                give_up::a_hold_dropped_on_a_plain_thread_frees_the_lock::<$under_test>().await;
            }

            #[tokio::test]
            async fn a_release_dropped_while_partitioned_is_sent_after_the_partition() {
                give_up::a_release_dropped_while_partitioned_is_sent_after_the_partition::<$under_test>().await;
            }

            #[tokio::test]
            async fn a_waiter_survives_its_successor_or_its_predecessor_being_deleted() {
                ghost::a_waiter_survives_its_successor_or_its_predecessor_being_deleted::<$under_test>().await;
            }

            #[tokio::test]
            async fn the_lock_path_deleted_during_contention_is_survived_and_signalled() {
                ghost::the_lock_path_deleted_during_contention_is_survived_and_signalled::<$under_test>().await;
            }

            #[tokio::test]
            async fn a_killed_holder_process_hands_over() {
                loss::a_killed_holder_process_hands_over::<$under_test>(&named("a_killed_holder_process_hands_over"))
                    .await;
            }

            #[tokio::test]
            async fn an_expired_holder_hands_over() {
                loss::an_expired_holder_hands_over::<$under_test>().await;
            }

            #[tokio::test]
            async fn lost_on_session_expiry() {
                loss::lost_on_session_expiry::<$under_test>().await;
            }

            #[tokio::test]
            async fn lost_on_node_deletion() {
                loss::lost_on_node_deletion::<$under_test>().await;
            }

            #[tokio::test]
            async fn a_release_that_finds_its_node_deleted_reports_the_loss() {
                loss::a_release_that_finds_its_node_deleted_reports_the_loss::<$under_test>().await;
            }

            #[tokio::test]
            async fn lost_on_a_long_disconnection() {
                loss::lost_on_a_long_disconnection::<$under_test>().await;
            }

            #[tokio::test]
            async fn a_deleted_node_is_noticed_without_asking_once_held_a_while() {
                loss::a_deleted_node_is_noticed_without_asking_once_held_a_while::<$under_test>().await;
            }

            #[tokio::test]
            async fn a_short_disconnection_keeps_the_hold() {
                loss::a_short_disconnection_keeps_the_hold::<$under_test>().await;
            }

            #[tokio::test]
            async fn a_short_disconnection_does_not_disturb_a_waiter() {
                loss::a_short_disconnection_does_not_disturb_a_waiter::<$under_test>().await;
            }

            #[tokio::test]
            async fn a_lost_create_reply_finds_our_node_instead_of_orphaning_it() {
                loss::a_lost_create_reply_finds_our_node_instead_of_orphaning_it::<$under_test>().await;
            }

            $(
                #[tokio::test]
                async fn $extra() {
                    loss::$extra::<$under_test>().await;
                }
            )*
        }
    )*};
}

contracts! {
    mutex: lock::Mutex [
        lost_at_once_under_the_strict_policy,
        a_timed_acquire_returns_in_time_while_partitioned,
        a_try_answers_while_cut_off_and_leaves_no_node
    ],
    mutex_with_local_handoff: lock::HandoffMutex [
        lost_at_once_under_the_strict_policy,
        a_timed_acquire_returns_in_time_while_partitioned,
        a_try_answers_while_cut_off_and_leaves_no_node
    ],
    write_side: lock::WriteSide [
        lost_at_once_under_the_strict_policy,
        a_timed_acquire_returns_in_time_while_partitioned,
        a_try_answers_while_cut_off_and_leaves_no_node
    ],
    read_side: lock::ReadSide [
        lost_at_once_under_the_strict_policy,
        a_timed_acquire_returns_in_time_while_partitioned,
        a_try_answers_while_cut_off_and_leaves_no_node
    ],
    kazoo_write_side: lock::KazooWriteSide [
        lost_at_once_under_the_strict_policy,
        a_timed_acquire_returns_in_time_while_partitioned,
        a_try_answers_while_cut_off_and_leaves_no_node
    ],
    kazoo_read_side: lock::KazooReadSide [
        lost_at_once_under_the_strict_policy,
        a_timed_acquire_returns_in_time_while_partitioned,
        a_try_answers_while_cut_off_and_leaves_no_node
    ],
    semaphore_mutex: lock::SemaphoreMutex [
        lost_at_once_under_the_strict_policy,
        a_timed_acquire_returns_in_time_while_partitioned,
        a_try_answers_while_cut_off_and_leaves_no_node
    ],
    semaphore_of_one: lock::SemaphoreOfOne [
        lost_at_once_under_the_strict_policy,
        a_timed_acquire_returns_in_time_while_partitioned,
        a_try_answers_while_cut_off_and_leaves_no_node
    ],
    kazoo_semaphore_of_one: lock::KazooSemaphoreOfOne [
        lost_at_once_under_the_strict_policy,
        a_timed_acquire_returns_in_time_while_partitioned,
        a_try_answers_while_cut_off_and_leaves_no_node
    ],
    multi_lock: lock::MultiOfTwo [
        lost_at_once_under_the_strict_policy,
        a_timed_acquire_returns_in_time_while_partitioned,
        a_try_answers_while_cut_off_and_leaves_no_node
    ],
    // A term of leadership is the hold (see contract/leader.rs). Joining an election is not
    // bounded by a timeout, so a timed acquire cut off from the server is a lock's contract.
    leader_latch: leader::Latch [lost_at_once_under_the_strict_policy],
    leader_selector: leader::Selector [lost_at_once_under_the_strict_policy],
    kazoo_leader_selector: leader::KazooSelector [lost_at_once_under_the_strict_policy],
}

#[tokio::test]
async fn a_semaphore_taker_whose_mutex_node_was_deleted_starts_over() {
    ghost::a_semaphore_taker_whose_mutex_node_was_deleted_starts_over().await;
}

#[path = "contract/multi.rs"]
mod multi_lock_rules;
#[path = "contract/read_write.rs"]
mod read_write_rules;
#[path = "contract/semaphore.rs"]
mod semaphore_rules;
