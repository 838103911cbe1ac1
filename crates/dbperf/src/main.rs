//! The `dbperf` binary: wiring only; see the library's `cli` module.

fn main() -> std::process::ExitCode {
    // Behave like other Unix tools when stdout is a closed pipe (`dbperf ... | head`): end
    // quietly instead of panicking on the failed write.
    // SAFETY: restoring the default disposition of SIGPIPE before any thread starts.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    // Keep the C entry point sysbench scripts call through LuaJIT's ffi in the binary
    // (the build script exports it).
    std::hint::black_box(dbperf::workloads::lua::sb_counter_inc as extern "C" fn(_, _));
    dbperf::cli::main()
}
