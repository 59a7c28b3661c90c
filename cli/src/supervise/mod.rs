//! Running the command under a hold: its process group and watchdog, its stops as a shell job,
//! the stop a signal asks for, and the watchdog's own program.

pub mod group;
pub mod job;
pub mod stop;
pub mod supervision;
pub mod watchdog;
pub mod watchdog_process;
