//! Ctrl-C (SIGINT, SIGTERM) for long commands: one handler per process, the process-wide
//! "interrupted" flag that code waiting outside the engine's reach polls (a script's statement
//! on a server that does not answer, a TPC-H stream), and the cleanups an immediate exit still
//! runs (a client network namespace), since a second interrupt exits without destructors.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

/// Set by the first interrupt.
static INTERRUPTED: AtomicBool = AtomicBool::new(false);

/// What an exit on the second interrupt still does, in the order registered.
static AT_EXIT: Mutex<Vec<fn()>> = Mutex::new(Vec::new());

/// True once this process has been interrupted.
pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}

/// Registers `cleanup` to run when a second interrupt exits the process at once.
pub fn at_immediate_exit(cleanup: fn()) {
    if let Ok(mut list) = AT_EXIT.lock() {
        if !list.contains(&cleanup) {
            list.push(cleanup);
        }
    }
}

/// Installs the handler of a long command: the first interrupt sets [`interrupted`], prints
/// `stopping` and calls `stop`, so what is finished is kept; a second one runs the registered
/// cleanups and exits at once with [`crate::exit::INTERRUPTED`], saying `second`. Installed
/// rather than left to the default action, so that a command also stops when its parent started
/// it with SIGINT ignored (a background job of a script). Only the first call in a process
/// installs a handler (later calls are ignored, as the `ctrlc` crate allows one).
pub fn on_interrupt(stopping: &'static str, second: &'static str, mut stop: impl FnMut() + Send + 'static) {
    let mut hits = 0;
    let _ = ctrlc::set_handler(move || {
        hits += 1;
        if hits > 1 {
            eprintln!("\nSecond interrupt: {second}.");
            let cleanups = AT_EXIT.lock().map(|l| l.clone()).unwrap_or_default();
            for cleanup in cleanups {
                cleanup();
            }
            std::process::exit(i32::from(crate::exit::INTERRUPTED));
        }
        INTERRUPTED.store(true, Ordering::SeqCst);
        eprintln!("\n{stopping} (interrupt again to exit now)...");
        stop();
    });
}
