//! Starts child processes that cannot outlive the test process.
//!
//! Linux's parent-death signal fires when the *thread* that forked the child exits, and test
//! threads come and go; so every child is forked from one thread that lives until the process
//! exits, and is killed by the kernel then, even if no destructor runs.

use std::io;
use std::process::{Child, Command};
use std::sync::mpsc;
use std::sync::{Mutex, OnceLock};

type SpawnRequest = (Command, mpsc::Sender<io::Result<Child>>);

static SPAWNER: OnceLock<Mutex<mpsc::Sender<SpawnRequest>>> = OnceLock::new();

/// Spawns `command` so that it receives `SIGKILL` when this process exits, however it exits:
/// every server process, and (through `__private`) the child processes of zklock's own tests
/// and benchmarks.
///
/// # Errors
///
/// Those of [`Command::spawn`], and an error when the spawner thread is gone.
pub fn spawn_tied_to_process(mut command: Command) -> io::Result<Child> {
    use std::os::unix::process::CommandExt;
    let parent = std::process::id() as libc::pid_t;
    // SAFETY: prctl, getppid and _exit are async-signal-safe, as pre_exec requires.
    unsafe {
        command.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(io::Error::last_os_error());
            }
            // The parent may have died between fork and prctl.
            if libc::getppid() != parent {
                libc::_exit(1);
            }
            Ok(())
        });
    }
    let spawner = SPAWNER.get_or_init(|| {
        let (sender, receiver) = mpsc::channel::<SpawnRequest>();
        std::thread::Builder::new()
            .name("zk-spawner".into())
            .spawn(move || {
                for (mut command, reply) in receiver {
                    let _ = reply.send(command.spawn());
                }
                // Never return: the children's parent-death signal is tied to this thread.
                loop {
                    std::thread::park();
                }
            })
            .expect("spawn the zk-spawner thread");
        Mutex::new(sender)
    });
    let (reply, result) = mpsc::channel();
    spawner
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .send((command, reply))
        .map_err(|_| io::Error::other("the spawner thread is gone"))?;
    result.recv().map_err(|_| io::Error::other("the spawner thread is gone"))?
}
