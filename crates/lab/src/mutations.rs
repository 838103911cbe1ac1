//! Every example experiment, mutated at random (numbers and strings replaced by extreme or
//! malformed values, lines dropped or doubled, text cut short), fed to the parser and the
//! plan: each must end in an experiment or an error, never a panic.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};

use rand::rngs::SmallRng;
use rand::{RngExt, SeedableRng};

use super::plan::Totals;
use super::{Experiment, Plan};

const NUMBERS: &[&str] = &[
    "0",
    "-1",
    "1e30",
    "-1e30",
    "nan",
    "inf",
    "0.5",
    "4294967296",
    "1000000000",
    "18446744073709551615",
    "9223372036854775807",
    "100000",
    "\"lots\"",
];

const STRINGS: &[&str] = &[
    "",
    "1e30",
    " ",
    "lots",
    "6000000000000000h",
    "1e30s",
    "-5s",
    "0",
    "99999999999999999T",
    "0-99999",
    "shuffled",
    "mariadb-99",
    "a/b",
    "ON",
    "\\u0000",
];

fn examples() -> Vec<(PathBuf, String)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    let mut files: Vec<(PathBuf, String)> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .map(|p| {
            let text = std::fs::read_to_string(&p).unwrap();
            (p, text)
        })
        .collect();
    files.sort();
    assert!(files.len() >= 3, "examples not found under {}", dir.display());
    files
}

/// A byte range of the text.
type Span = (usize, usize);

/// Byte ranges of numbers (outside strings and comments) and of the insides of strings.
fn tokens(text: &str) -> (Vec<Span>, Vec<Span>) {
    let (mut numbers, mut strings) = (Vec::new(), Vec::new());
    let b = text.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'#' => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'"' => {
                let start = i + 1;
                i += 1;
                while i < b.len() && b[i] != b'"' && b[i] != b'\n' {
                    i += 1;
                }
                strings.push((start, i));
                i += 1;
            }
            c if c.is_ascii_digit() && (i == 0 || !b[i - 1].is_ascii_alphanumeric() && b[i - 1] != b'_') => {
                let start = i;
                while i < b.len() && (b[i].is_ascii_digit() || b[i] == b'.') {
                    i += 1;
                }
                numbers.push((start, i));
            }
            _ => i += 1,
        }
    }
    (numbers, strings)
}

fn mutate(text: &str, rng: &mut SmallRng) -> String {
    let (numbers, strings) = tokens(text);
    let replace = |(a, b): Span, with: &str| format!("{}{with}{}", &text[..a], &text[b..]);
    match rng.random_range(0..12) {
        // A string, quotes and all, becomes a number (`duration = "60s"` → `duration = 1e30`).
        10 | 11 if !strings.is_empty() => {
            let (a, b) = strings[rng.random_range(0..strings.len())];
            replace(
                (a - 1, (b + 1).min(text.len())),
                NUMBERS[rng.random_range(0..NUMBERS.len())],
            )
        }
        0..=3 if !numbers.is_empty() => replace(
            numbers[rng.random_range(0..numbers.len())],
            NUMBERS[rng.random_range(0..NUMBERS.len())],
        ),
        4..=6 if !strings.is_empty() => replace(
            strings[rng.random_range(0..strings.len())],
            STRINGS[rng.random_range(0..STRINGS.len())],
        ),
        7 => {
            let lines: Vec<&str> = text.lines().collect();
            let drop = rng.random_range(0..lines.len());
            lines
                .iter()
                .enumerate()
                .filter(|(i, _)| *i != drop)
                .map(|(_, l)| *l)
                .collect::<Vec<_>>()
                .join("\n")
        }
        8 => {
            let lines: Vec<&str> = text.lines().collect();
            let twice = rng.random_range(0..lines.len());
            let mut out: Vec<&str> = lines.clone();
            out.insert(twice, lines[twice]);
            out.join("\n")
        }
        _ => {
            let mut cut = rng.random_range(0..text.len());
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
            text[..cut].to_owned()
        }
    }
}

#[test]
fn mutated_examples_never_panic() {
    let files = examples();
    let mut rng = SmallRng::seed_from_u64(20_261_125);
    let (mut parsed, mut refused) = (0, 0);
    for round in 0..400 {
        let (path, original) = &files[round % files.len()];
        // One to three mutations on top of each other.
        let mut text = original.clone();
        for _ in 0..rng.random_range(1..=3) {
            text = mutate(&text, &mut rng);
        }
        let outcome = catch_unwind(AssertUnwindSafe(|| match Experiment::parse(&text, path) {
            Ok(e) => {
                let totals = Totals::of(&e);
                let plan = Plan::new(e.clone());
                assert_eq!(plan.points() as u64, totals.runs);
                let _ = plan.render();
                let _ = Plan::new(e.quick()).render();
                true
            }
            Err(err) => {
                assert!(err.to_string().starts_with(&path.display().to_string()), "{err}");
                false
            }
        }));
        match outcome {
            Ok(true) => parsed += 1,
            Ok(false) => refused += 1,
            Err(_) => panic!("round {round}: {} mutated to\n{text}\npanicked", path.display()),
        }
    }
    // The mutations must both break files and leave some valid.
    assert!(parsed > 20 && refused > 100, "parsed {parsed}, refused {refused}");
}
