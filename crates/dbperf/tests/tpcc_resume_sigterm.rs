//! A `tpcc prepare` stopped by SIGTERM and resumed at once: the server is still rolling back
//! the stopped prepare's warehouses when the resumed one inserts the same keys, and InnoDB
//! picks some of its units as deadlock victims (error 1213). The resumed prepare loads such a
//! unit again and finishes, and the data holds every consistency condition.

use std::process::Stdio;
use std::time::Duration;

mod common;
use common::{dbperf, run_ok, sandbox};

#[test]
fn a_prepare_resumed_right_after_sigterm_loads_every_warehouse() {
    let sb = sandbox();
    let url = sb.url();
    let prepare = || {
        let mut c = dbperf();
        c.args(["tpcc", "prepare", "--warehouses", "6", "--threads", "6"])
            .env("DBPERF_TARGET", &url);
        c
    };
    for (i, after) in [2200u64, 3500].into_iter().enumerate() {
        if i > 0 {
            run_ok(dbperf().args(["tpcc", "cleanup", "--force"]).env("DBPERF_TARGET", &url));
        }
        let child = prepare().stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
        std::thread::sleep(Duration::from_millis(after));
        // SAFETY: kill has no memory effects; the child is ours.
        unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
        child.wait_with_output().unwrap();
        let out = prepare().output().unwrap();
        assert!(
            out.status.success(),
            "the prepare resumed after SIGTERM at {after} ms failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let check = run_ok(
            dbperf()
                .args(["tpcc", "check", "--warehouses", "6"])
                .env("DBPERF_TARGET", &url),
        );
        let text = String::from_utf8_lossy(&check.stdout);
        assert!(text.contains("All conditions hold"), "{text}");
    }
}
