//! Build script: exports `sb_counter_inc` from the `dbperf` binary's dynamic symbol table, so a
//! sysbench Lua script's `ffi.C.sb_counter_inc(...)` finds it, as it does under sysbench.

fn main() {
    println!("cargo:rustc-link-arg-bins=-Wl,--export-dynamic-symbol=sb_counter_inc");
    println!("cargo:rerun-if-changed=build.rs");
}
