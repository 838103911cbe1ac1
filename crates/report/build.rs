//! Obtains plotly.js's "basic" bundle (scatter and bar traces only: 1.0 MB, against 4.6 MB for
//! the whole of plotly.js), which the HTML reports inline so they stay self-contained and small.
//! It is not kept in this repository: it is npm's `plotly.js-basic-dist-min`, fetched once per
//! build directory with the system `curl`, checked against npm's sha512 integrity and unpacked
//! with the system `tar` into `OUT_DIR/plotly-basic.min.js` (read by `html/page.rs`).
//!
//! Offline: `DBPERF_PLOTLY_BASIC=/path/to/plotly-basic.min.js` (or the `.tgz` npm serves),
//! checked against the same version's hash. When neither works the file is left empty, the
//! reports fall back to the `plotly` crate's whole plotly.js, and the build says so.

use std::path::{Path, PathBuf};
use std::process::Command;

use base64::Engine;
use sha2::{Digest, Sha512};

/// The plotly.js version of the `plotly` crate (0.14.1), so figures mean the same to both.
const VERSION: &str = "3.0.1";
const TARBALL: &str = "https://registry.npmjs.org/plotly.js-basic-dist-min/-/plotly.js-basic-dist-min-3.0.1.tgz";
/// npm's `dist.integrity` of the tarball.
const TARBALL_SHA512: &str = "2DNfjn0Xv+IAk6ksaIm8AHSlKCxWQOx9f3v5JGvzFKPwEbJRsLIy4Up0cOPqO53kL4jrdw8LnUTrM9FAzvKMsQ==";
/// The bundle inside it, `package/plotly-basic.min.js` (1,032,507 bytes).
const MEMBER: &str = "package/plotly-basic.min.js";
const JS_SHA512: &str = "dssZ3PuWvYvnT4HAOjG7oTs96YtjbLEcKrDwXKcuywVp8AS0/1qOudS72qc4TqUabDwjl1w0EoI7rRWQUh45PA==";
const OVERRIDE: &str = "DBPERF_PLOTLY_BASIC";

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed={OVERRIDE}");
    let out_dir = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let target = out_dir.join("plotly-basic.min.js");
    let js = match std::env::var_os(OVERRIDE) {
        Some(path) => from_file(Path::new(&path), &out_dir),
        None => download(&out_dir),
    };
    match js {
        Ok(js) => std::fs::write(&target, js).expect("writing OUT_DIR/plotly-basic.min.js"),
        Err(why) => {
            std::fs::write(&target, "").expect("writing OUT_DIR/plotly-basic.min.js");
            println!(
                "cargo:warning=plotly.js basic bundle {VERSION} not obtained ({why}): HTML reports will \
                 inline the whole plotly.js and be about 4.7 MB instead of about 1.1 MB. To fix it, \
                 allow the build to reach {TARBALL}, or download that file (or its {MEMBER}) and \
                 build with {OVERRIDE}=/path/to/it"
            );
        }
    }
}

/// The bundle from the file the override names: the bundle itself or npm's tarball.
fn from_file(path: &Path, out_dir: &Path) -> Result<Vec<u8>, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("{OVERRIDE}={}: {e}", path.display()))?;
    if path.extension().is_some_and(|e| e == "tgz" || e == "gz") {
        check(&bytes, TARBALL_SHA512, &format!("{OVERRIDE}={}", path.display()))?;
        return unpack(path, out_dir);
    }
    check(&bytes, JS_SHA512, &format!("{OVERRIDE}={}", path.display()))?;
    Ok(bytes)
}

/// npm's tarball, fetched with `curl`, checked, unpacked.
fn download(out_dir: &Path) -> Result<Vec<u8>, String> {
    let tarball = out_dir.join(format!("plotly.js-basic-dist-min-{VERSION}.tgz"));
    let status = Command::new("curl")
        .args([
            "-fsSL",
            "--retry",
            "2",
            "--connect-timeout",
            "20",
            "--max-time",
            "300",
            "-o",
        ])
        .arg(&tarball)
        .arg(TARBALL)
        .status()
        .map_err(|e| format!("running curl: {e}"))?;
    if !status.success() {
        return Err(format!("curl {TARBALL}: {status}"));
    }
    let bytes = std::fs::read(&tarball).map_err(|e| format!("{}: {e}", tarball.display()))?;
    check(&bytes, TARBALL_SHA512, TARBALL)?;
    let js = unpack(&tarball, out_dir);
    let _ = std::fs::remove_file(&tarball);
    js
}

/// The bundle out of the tarball (system `tar`), checked again.
fn unpack(tarball: &Path, out_dir: &Path) -> Result<Vec<u8>, String> {
    let out = Command::new("tar")
        .arg("-xzOf")
        .arg(tarball)
        .arg(MEMBER)
        .current_dir(out_dir)
        .output()
        .map_err(|e| format!("running tar: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "tar -xzOf {} {MEMBER}: {}",
            tarball.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    check(&out.stdout, JS_SHA512, MEMBER)?;
    Ok(out.stdout)
}

fn check(bytes: &[u8], sha512: &str, what: &str) -> Result<(), String> {
    let got = base64::engine::general_purpose::STANDARD.encode(Sha512::digest(bytes));
    if got == sha512 {
        Ok(())
    } else {
        Err(format!(
            "{what}: sha512 {got}, expected {sha512} (plotly.js basic {VERSION})"
        ))
    }
}
