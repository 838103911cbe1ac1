//! The `dbperf` binary: wiring only; see the library's `cli` module.

fn main() -> std::process::ExitCode {
    dbperf::cli::main()
}
