//! pgbench's expression language (`\set name expression`, `\if expression`): values, the
//! parser (integer and double literals, `:variables`, `+ - * / %`, comparisons, `AND OR
//! NOT`, `IS [NOT] NULL|TRUE|FALSE`, bitwise `& | # << >> ~`, `CASE`, functions) with
//! pgbench's precedence, and the evaluator with pgbench 15's semantics: strict types (a
//! boolean is no number, a number no boolean), NULL in gives NULL out, doubles follow IEEE
//! (`1.0/0` is Infinity), integers fail on overflow, and the errors say what pgbench says.
//! [`typed`] is the one rule turning a variable's text (`-D`, `\gset`) into a value.

use std::fmt;

use super::random::{self, Prng};
use super::Vars;

/// A variable's value.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// NULL.
    Null,
    /// A boolean.
    Bool(bool),
    /// A 64-bit integer.
    Int(i64),
    /// A double.
    Double(f64),
    /// Text (from `-D` or a query's result), typed by [`typed`] where an expression reads it.
    Str(String),
}

/// The value as pgbench writes it into SQL: `NULL`, `true`, integers, doubles as `%.15g`.
impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Null => f.write_str("NULL"),
            Value::Bool(b) => f.write_str(if *b { "true" } else { "false" }),
            Value::Int(i) => write!(f, "{i}"),
            Value::Double(d) => f.write_str(&format_g15(*d)),
            Value::Str(s) => f.write_str(s),
        }
    }
}

/// C's `%.15g` (pgbench prints doubles with `DBL_DIG` significant digits): `16`, `-0.125`,
/// `1e+30`, `8.50705917302346e+37`, `inf`, `nan`.
pub fn format_g15(d: f64) -> String {
    const P: i32 = 15;
    if d.is_nan() {
        return if d.is_sign_negative() { "-nan" } else { "nan" }.into();
    }
    if d.is_infinite() {
        return if d < 0.0 { "-inf" } else { "inf" }.into();
    }
    if d == 0.0 {
        return if d.is_sign_negative() { "-0" } else { "0" }.into();
    }
    let sci = format!("{:.*e}", (P - 1) as usize, d);
    let (mantissa, exp) = sci.split_once('e').expect("{:e} has an exponent");
    let exp: i32 = exp.parse().expect("{:e}'s exponent is a number");
    let trim = |s: &str| -> String {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s.to_string()
        }
    };
    if !(-4..P).contains(&exp) {
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{}e{sign}{:02}", trim(mantissa), exp.abs())
    } else {
        trim(&format!("{:.*}", (P - 1 - exp) as usize, d))
    }
}

/// C's `%f`, for messages that show a double as pgbench does.
fn format_f(d: f64) -> String {
    if d.is_nan() {
        "nan".into()
    } else if d.is_infinite() {
        if d < 0.0 { "-inf" } else { "inf" }.into()
    } else {
        format!("{d:.6}")
    }
}

/// pgbench's name of a value's type, in messages and `debug()`.
fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Int(_) => "int",
        Value::Double(_) => "double",
        Value::Str(_) => "string",
    }
}

/// The value of variable `name` holding `text`, as pgbench types it: `null` (any case) is
/// NULL; a prefix of `true` or `yes`, or `on`, is TRUE; a prefix of `false` or `no`, or
/// `off`/`of`, is FALSE; an optionally signed run of digits is an integer (and must fit);
/// anything else must read as a double.
pub fn typed(name: &str, text: &str) -> Result<Value, String> {
    let malformed = || format!("malformed variable \"{name}\" value: \"{text}\"");
    if text.is_empty() {
        return Err(malformed());
    }
    let lower = text.to_ascii_lowercase();
    let prefix_of = |word: &str| word.starts_with(&lower);
    if lower == "null" {
        return Ok(Value::Null);
    }
    if prefix_of("true") || prefix_of("yes") || lower == "on" {
        return Ok(Value::Bool(true));
    }
    if prefix_of("false") || prefix_of("no") || lower == "off" || lower == "of" {
        return Ok(Value::Bool(false));
    }
    let t = text.trim_start();
    let digits = t.strip_prefix(['+', '-']).unwrap_or(t);
    if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
        return t
            .strip_prefix('+')
            .unwrap_or(t)
            .parse::<i64>()
            .map(Value::Int)
            .map_err(|_| format!("value \"{text}\" is out of range for type bigint"));
    }
    match c_strtod(text) {
        Some(d) => Ok(Value::Double(d)),
        None => Err(malformed()),
    }
}

/// C's `strtod` over the whole text (leading spaces, `inf`, `nan`, hex aside), or None.
fn c_strtod(text: &str) -> Option<f64> {
    let t = text.trim_start();
    let lower = t.to_ascii_lowercase();
    let body = lower.strip_prefix(['+', '-']).unwrap_or(&lower);
    if matches!(body, "inf" | "infinity" | "nan") {
        return lower.parse::<f64>().ok();
    }
    if body.starts_with(|c: char| c.is_ascii_digit() || c == '.') {
        return t.parse::<f64>().ok();
    }
    None
}

impl Value {
    /// pgbench's `coerceToInt`: integers, and doubles rounded to the nearest (even) integer.
    fn int(&self) -> Result<i64, String> {
        match self {
            Value::Int(i) => Ok(*i),
            Value::Double(d) => {
                let r = d.round_ties_even();
                if r.is_nan() || !(r >= i64::MIN as f64 && r < -(i64::MIN as f64)) {
                    Err(format!("double to int overflow for {}", format_f(r)))
                } else {
                    Ok(r as i64)
                }
            }
            v => Err(format!("cannot coerce {} to int", type_name(v))),
        }
    }

    /// pgbench's `coerceToDouble`.
    fn double(&self) -> Result<f64, String> {
        match self {
            Value::Int(i) => Ok(*i as f64),
            Value::Double(d) => Ok(*d),
            v => Err(format!("cannot coerce {} to double", type_name(v))),
        }
    }

    /// pgbench's `coerceToBool`: only booleans are.
    fn boolean(&self) -> Result<bool, String> {
        match self {
            Value::Bool(b) => Ok(*b),
            v => Err(format!("cannot coerce {} to boolean", type_name(v))),
        }
    }

    /// The value as a condition (`\if`, `CASE WHEN`): NULL and zero are false.
    pub fn is_true(&self) -> bool {
        match self {
            Value::Null => false,
            Value::Bool(b) => *b,
            Value::Int(i) => *i != 0,
            Value::Double(d) => *d != 0.0,
            Value::Str(s) => !s.is_empty(),
        }
    }
}

/// A binary operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    Mod,
    Eq,
    Ne,
    Lt,
    Le,
    And,
    Or,
    BitAnd,
    BitOr,
    BitXor,
    Shl,
    Shr,
}

/// A function of the language.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Func {
    Abs,
    Debug,
    Double,
    Exp,
    Greatest,
    Hash,
    HashFnv1a,
    Int,
    Least,
    Ln,
    Mod,
    Permute,
    Pi,
    Pow,
    Random,
    RandomExponential,
    RandomGaussian,
    RandomZipfian,
    Sqrt,
}

/// Functions by name, with their (minimum, maximum) argument counts (`usize::MAX`: any).
const FUNCS: &[(&str, Func, usize, usize)] = &[
    ("abs", Func::Abs, 1, 1),
    ("debug", Func::Debug, 1, 1),
    ("double", Func::Double, 1, 1),
    ("exp", Func::Exp, 1, 1),
    ("greatest", Func::Greatest, 1, usize::MAX),
    ("hash", Func::Hash, 1, 2),
    ("hash_murmur2", Func::Hash, 1, 2),
    ("hash_fnv1a", Func::HashFnv1a, 1, 2),
    ("int", Func::Int, 1, 1),
    ("least", Func::Least, 1, usize::MAX),
    ("ln", Func::Ln, 1, 1),
    ("mod", Func::Mod, 2, 2),
    ("permute", Func::Permute, 2, 3),
    ("pi", Func::Pi, 0, 0),
    ("pow", Func::Pow, 2, 2),
    ("power", Func::Pow, 2, 2),
    ("random", Func::Random, 2, 2),
    ("random_exponential", Func::RandomExponential, 3, 3),
    ("random_gaussian", Func::RandomGaussian, 3, 3),
    ("random_zipfian", Func::RandomZipfian, 3, 3),
    ("sqrt", Func::Sqrt, 1, 1),
];

/// A parsed expression.
#[derive(Clone, Debug, PartialEq)]
pub enum Expr {
    /// A literal.
    Const(Value),
    /// A variable, by its slot in [`Vars`].
    Var(u32),
    /// `NOT x`
    Not(Box<Expr>),
    /// `x IS NULL`, `x IS TRUE`, `x IS FALSE` (the value is NULL or a boolean): the same
    /// type and value; `IS NOT` is the NOT of it.
    Is(Box<Expr>, Value),
    /// A binary operation (`a > b` is `b < a`, `-x` is `0 - x`, `~x` is `-1 # x`, as in
    /// pgbench, which evaluates operands in that order).
    Bin(BinOp, Box<Expr>, Box<Expr>),
    /// A function call.
    Call(Func, Vec<Expr>),
    /// `CASE WHEN c THEN v ... [ELSE e] END`.
    Case(Vec<(Expr, Expr)>, Option<Box<Expr>>),
}

/// A syntax error at a column (0-based, in characters) of the expression's text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SyntaxError {
    /// What is wrong.
    pub message: String,
    /// Where.
    pub column: usize,
}

impl SyntaxError {
    /// The message for the meta-command `word` (`set`, `if`, `elif`), worded as pgbench's:
    /// `syntax error in command "set": ...`, `unexpected function name (f) in command "set"`.
    pub fn in_command(&self, word: &str) -> String {
        match self.message.strip_prefix(SYNTAX) {
            Some(detail) => format!("syntax error in command \"{word}\": {detail}"),
            None => format!("{} in command \"{word}\"", self.message),
        }
    }
}

/// How a grammar error's message starts.
const SYNTAX: &str = "syntax error: ";

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Int(String),
    Double(f64),
    Word(String),
    Var(String),
    Op(&'static str),
    End,
}

const OPS: [&str; 20] = [
    "<<", ">>", "<=", ">=", "<>", "!=", "+", "-", "*", "/", "%", "(", ")", ",", "<", ">", "=", "&", "|", "#",
];

fn lex(text: &str) -> Result<Vec<(Tok, usize)>, SyntaxError> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let start = i;
        if c.is_whitespace() {
            i += 1;
            continue;
        }
        if c.is_ascii_digit() || (c == '.' && chars.get(i + 1).is_some_and(|d| d.is_ascii_digit())) {
            while i < chars.len() && chars[i].is_ascii_digit() {
                i += 1;
            }
            let mut double = false;
            if i < chars.len() && chars[i] == '.' {
                double = true;
                i += 1;
                while i < chars.len() && chars[i].is_ascii_digit() {
                    i += 1;
                }
            }
            if i < chars.len() && (chars[i] == 'e' || chars[i] == 'E') {
                let mut j = i + 1;
                if j < chars.len() && (chars[j] == '+' || chars[j] == '-') {
                    j += 1;
                }
                if j < chars.len() && chars[j].is_ascii_digit() {
                    double = true;
                    i = j;
                    while i < chars.len() && chars[i].is_ascii_digit() {
                        i += 1;
                    }
                }
            }
            let s: String = chars[start..i].iter().collect();
            if double {
                let d: f64 = s.parse().map_err(|_| SyntaxError {
                    message: format!("invalid number {s:?}"),
                    column: start,
                })?;
                if d.is_infinite() {
                    return Err(SyntaxError {
                        message: format!("double constant overflow ({s})"),
                        column: start,
                    });
                }
                out.push((Tok::Double(d), start));
            } else {
                out.push((Tok::Int(s), start));
            }
            continue;
        }
        if c.is_alphabetic() || c == '_' {
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            out.push((Tok::Word(chars[start..i].iter().collect()), start));
            continue;
        }
        if c == ':' {
            i += 1;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            if i == start + 1 {
                return Err(SyntaxError {
                    message: "a variable name must follow ':'".into(),
                    column: start,
                });
            }
            out.push((Tok::Var(chars[start + 1..i].iter().collect()), start));
            continue;
        }
        if c == '~' {
            out.push((Tok::Op("~"), start));
            i += 1;
            continue;
        }
        let rest: String = chars[i..chars.len().min(i + 2)].iter().collect();
        match OPS.iter().find(|op| rest.starts_with(**op)) {
            Some(op) => {
                out.push((Tok::Op(op), start));
                i += op.len();
            }
            None => {
                return Err(SyntaxError {
                    message: format!("unexpected character ({c})"),
                    column: start,
                })
            }
        }
    }
    out.push((Tok::End, chars.len()));
    Ok(out)
}

/// Parses `text`; variables get slots in `vars`.
pub fn parse(text: &str, vars: &mut Vars) -> Result<Expr, SyntaxError> {
    let toks = lex(text)?;
    let mut p = Parser { toks, at: 0, vars };
    let e = p.or()?;
    match p.peek() {
        Tok::End => Ok(e),
        _ => Err(p.error("unexpected text after the expression")),
    }
}

struct Parser<'v> {
    toks: Vec<(Tok, usize)>,
    at: usize,
    vars: &'v mut Vars,
}

impl Parser<'_> {
    fn peek(&self) -> &Tok {
        &self.toks[self.at].0
    }

    fn next(&mut self) -> Tok {
        let t = self.toks[self.at].0.clone();
        if self.at + 1 < self.toks.len() {
            self.at += 1;
        }
        t
    }

    fn error(&self, message: &str) -> SyntaxError {
        let found = match self.peek() {
            Tok::End => "the end".to_string(),
            Tok::Int(s) => s.clone(),
            Tok::Double(d) => d.to_string(),
            Tok::Word(w) => w.clone(),
            Tok::Var(v) => format!(":{v}"),
            Tok::Op(o) => o.to_string(),
        };
        SyntaxError {
            message: format!("{SYNTAX}{message} (at {found})"),
            column: self.toks[self.at].1,
        }
    }

    fn keyword(&mut self, k: &str) -> bool {
        if matches!(self.peek(), Tok::Word(w) if w.eq_ignore_ascii_case(k)) {
            self.next();
            true
        } else {
            false
        }
    }

    fn op(&mut self, o: &str) -> bool {
        if matches!(self.peek(), Tok::Op(x) if *x == o) {
            self.next();
            true
        } else {
            false
        }
    }

    fn or(&mut self) -> Result<Expr, SyntaxError> {
        let mut l = self.and()?;
        while self.keyword("or") {
            l = Expr::Bin(BinOp::Or, Box::new(l), Box::new(self.and()?));
        }
        Ok(l)
    }

    fn and(&mut self) -> Result<Expr, SyntaxError> {
        let mut l = self.not()?;
        while self.keyword("and") {
            l = Expr::Bin(BinOp::And, Box::new(l), Box::new(self.not()?));
        }
        Ok(l)
    }

    fn not(&mut self) -> Result<Expr, SyntaxError> {
        if self.keyword("not") {
            return Ok(Expr::Not(Box::new(self.not()?)));
        }
        self.is()
    }

    fn is(&mut self) -> Result<Expr, SyntaxError> {
        let e = self.cmp()?;
        if self.keyword("isnull") {
            return Ok(Expr::Is(Box::new(e), Value::Null));
        }
        if self.keyword("notnull") {
            return Ok(Expr::Not(Box::new(Expr::Is(Box::new(e), Value::Null))));
        }
        if self.keyword("is") {
            let not = self.keyword("not");
            let e = if self.keyword("null") {
                Expr::Is(Box::new(e), Value::Null)
            } else if self.keyword("true") {
                Expr::Is(Box::new(e), Value::Bool(true))
            } else if self.keyword("false") {
                Expr::Is(Box::new(e), Value::Bool(false))
            } else {
                return Err(self.error("expected NULL, TRUE or FALSE after IS"));
            };
            return Ok(if not { Expr::Not(Box::new(e)) } else { e });
        }
        Ok(e)
    }

    fn cmp(&mut self) -> Result<Expr, SyntaxError> {
        let l = self.bits()?;
        let swap = matches!(self.peek(), Tok::Op(">" | ">="));
        let op = match self.peek() {
            Tok::Op("=") => BinOp::Eq,
            Tok::Op("<>") | Tok::Op("!=") => BinOp::Ne,
            Tok::Op("<") => BinOp::Lt,
            Tok::Op("<=") => BinOp::Le,
            Tok::Op(">") => BinOp::Lt,
            Tok::Op(">=") => BinOp::Le,
            _ => return Ok(l),
        };
        self.next();
        let r = self.bits()?;
        if matches!(self.peek(), Tok::Op("=" | "<>" | "!=" | "<" | "<=" | ">" | ">=")) {
            return Err(self.error("comparisons do not chain; use AND or parentheses"));
        }
        let (l, r) = if swap { (r, l) } else { (l, r) };
        Ok(Expr::Bin(op, Box::new(l), Box::new(r)))
    }

    fn bits(&mut self) -> Result<Expr, SyntaxError> {
        let mut l = self.sum()?;
        loop {
            let op = match self.peek() {
                Tok::Op("&") => BinOp::BitAnd,
                Tok::Op("|") => BinOp::BitOr,
                Tok::Op("#") => BinOp::BitXor,
                Tok::Op("<<") => BinOp::Shl,
                Tok::Op(">>") => BinOp::Shr,
                _ => return Ok(l),
            };
            self.next();
            l = Expr::Bin(op, Box::new(l), Box::new(self.sum()?));
        }
    }

    fn sum(&mut self) -> Result<Expr, SyntaxError> {
        let mut l = self.product()?;
        loop {
            let op = match self.peek() {
                Tok::Op("+") => BinOp::Add,
                Tok::Op("-") => BinOp::Sub,
                _ => return Ok(l),
            };
            self.next();
            l = Expr::Bin(op, Box::new(l), Box::new(self.product()?));
        }
    }

    fn product(&mut self) -> Result<Expr, SyntaxError> {
        let mut l = self.unary()?;
        loop {
            let op = match self.peek() {
                Tok::Op("*") => BinOp::Mul,
                Tok::Op("/") => BinOp::Div,
                Tok::Op("%") => BinOp::Mod,
                _ => return Ok(l),
            };
            self.next();
            l = Expr::Bin(op, Box::new(l), Box::new(self.unary()?));
        }
    }

    fn unary(&mut self) -> Result<Expr, SyntaxError> {
        if self.op("+") {
            return self.unary();
        }
        if self.op("-") {
            // -9223372036854775808 is a literal, not the negation of one too large.
            if let Tok::Int(s) = self.peek() {
                if s.trim_start_matches('0') == "9223372036854775808" {
                    self.next();
                    return Ok(Expr::Const(Value::Int(i64::MIN)));
                }
            }
            let x = self.unary()?;
            return Ok(Expr::Bin(BinOp::Sub, Box::new(Expr::Const(Value::Int(0))), Box::new(x)));
        }
        if self.op("~") {
            // `~` binds as the bitwise operators do: looser than + and *.
            let x = self.sum()?;
            return Ok(Expr::Bin(
                BinOp::BitXor,
                Box::new(Expr::Const(Value::Int(-1))),
                Box::new(x),
            ));
        }
        self.primary()
    }

    fn primary(&mut self) -> Result<Expr, SyntaxError> {
        match self.peek().clone() {
            Tok::Int(s) => match s.parse::<i64>() {
                Ok(i) => {
                    self.next();
                    Ok(Expr::Const(Value::Int(i)))
                }
                Err(_) => Err(SyntaxError {
                    message: format!("bigint constant overflow ({s})"),
                    column: self.toks[self.at].1,
                }),
            },
            Tok::Double(d) => {
                self.next();
                Ok(Expr::Const(Value::Double(d)))
            }
            Tok::Var(v) => {
                self.next();
                Ok(Expr::Var(self.vars.slot(&v)))
            }
            Tok::Op("(") => {
                self.next();
                let e = self.or()?;
                if !self.op(")") {
                    return Err(self.error("expected ')'"));
                }
                Ok(e)
            }
            Tok::Word(w) => {
                let lower = w.to_ascii_lowercase();
                match lower.as_str() {
                    "true" | "false" => {
                        self.next();
                        Ok(Expr::Const(Value::Bool(lower == "true")))
                    }
                    "null" => {
                        self.next();
                        Ok(Expr::Const(Value::Null))
                    }
                    "case" => {
                        self.next();
                        self.case()
                    }
                    _ => self.call(&w),
                }
            }
            _ => Err(self.error("expected a value")),
        }
    }

    fn case(&mut self) -> Result<Expr, SyntaxError> {
        let mut arms = Vec::new();
        while self.keyword("when") {
            let c = self.or()?;
            if !self.keyword("then") {
                return Err(self.error("expected THEN"));
            }
            arms.push((c, self.or()?));
        }
        if arms.is_empty() {
            return Err(self.error("expected WHEN after CASE"));
        }
        let otherwise = if self.keyword("else") {
            Some(Box::new(self.or()?))
        } else {
            None
        };
        if !self.keyword("end") {
            return Err(self.error("expected END to close CASE"));
        }
        Ok(Expr::Case(arms, otherwise))
    }

    fn call(&mut self, written: &str) -> Result<Expr, SyntaxError> {
        let column = self.toks[self.at].1;
        let name = written.to_ascii_lowercase();
        let Some(&(_, f, min, max)) = FUNCS.iter().find(|(n, ..)| *n == name) else {
            return Err(SyntaxError {
                message: format!("unexpected function name ({written})"),
                column,
            });
        };
        self.next();
        if !self.op("(") {
            return Err(self.error(&format!("expected '(' after {name}")));
        }
        let mut args = Vec::new();
        if !self.op(")") {
            loop {
                args.push(self.or()?);
                if self.op(")") {
                    break;
                }
                if !self.op(",") {
                    return Err(self.error("expected ',' or ')'"));
                }
            }
        }
        if args.len() < min || args.len() > max {
            let message = if args.is_empty() && max == usize::MAX {
                format!("at least one argument expected ({name})")
            } else {
                let want = match (min, max) {
                    (a, b) if a == b => format!("{a}"),
                    (a, usize::MAX) => format!("at least {a}"),
                    (a, b) => format!("{a} or {b}"),
                };
                format!(
                    "unexpected number of arguments ({name}): it takes {want}, got {}",
                    args.len()
                )
            };
            return Err(SyntaxError { message, column });
        }
        Ok(Expr::Call(f, args))
    }
}

/// What an evaluation reads: the variables, the client's random state, and where it is
/// (for `debug()`'s `script=S,command=C`).
pub struct Env<'a> {
    /// Values by slot (`None`: never set).
    pub values: &'a [Option<Value>],
    /// Their names, for errors.
    pub vars: &'a Vars,
    /// The client's random numbers.
    pub rng: &'a mut Prng,
    /// The script's index in the run (0-based).
    pub script: usize,
    /// The command's number in its script (1-based, as pgbench counts).
    pub command: u32,
}

/// Most arguments a function takes (pgbench's `MAX_FARGS`).
pub const MAX_FARGS: usize = 16;

impl Env<'_> {
    fn var(&self, slot: u32) -> Result<Value, String> {
        match self.values.get(slot as usize) {
            Some(Some(Value::Str(s))) => typed(self.vars.name(slot), s),
            Some(Some(v)) => Ok(v.clone()),
            _ => Err(format!("undefined variable \"{}\"", self.vars.name(slot))),
        }
    }
}

fn int_op(op: BinOp, x: i64, y: i64) -> Result<Value, String> {
    let out = |r: Option<i64>, what: &str| r.map(Value::Int).ok_or_else(|| format!("bigint {what} out of range"));
    match op {
        BinOp::Add => out(x.checked_add(y), "add"),
        BinOp::Sub => out(x.checked_sub(y), "sub"),
        BinOp::Mul => out(x.checked_mul(y), "mul"),
        BinOp::Div | BinOp::Mod if y == 0 => Err("division by zero".into()),
        BinOp::Div => out(x.checked_div(y), "div"),
        BinOp::Mod => Ok(Value::Int(x.wrapping_rem(y))),
        BinOp::Eq => Ok(Value::Bool(x == y)),
        BinOp::Ne => Ok(Value::Bool(x != y)),
        BinOp::Lt => Ok(Value::Bool(x < y)),
        BinOp::Le => Ok(Value::Bool(x <= y)),
        BinOp::BitAnd => Ok(Value::Int(x & y)),
        BinOp::BitOr => Ok(Value::Int(x | y)),
        BinOp::BitXor => Ok(Value::Int(x ^ y)),
        // The shift count is taken modulo 64, as the x86-64 instruction pgbench compiles to.
        BinOp::Shl => Ok(Value::Int(x.wrapping_shl(y as u32))),
        BinOp::Shr => Ok(Value::Int(x.wrapping_shr(y as u32))),
        BinOp::And | BinOp::Or => unreachable!("AND and OR are lazy"),
    }
}

/// A binary operator on evaluated operands: doubles when either is a double (`%` and the
/// bitwise operators always take integers), else integers; booleans are neither.
fn binary(op: BinOp, a: &Value, b: &Value) -> Result<Value, String> {
    let arithmetic = matches!(
        op,
        BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Div | BinOp::Eq | BinOp::Ne | BinOp::Lt | BinOp::Le
    );
    if arithmetic && (matches!(a, Value::Double(_)) || matches!(b, Value::Double(_))) {
        let (x, y) = (a.double()?, b.double()?);
        return Ok(match op {
            BinOp::Add => Value::Double(x + y),
            BinOp::Sub => Value::Double(x - y),
            BinOp::Mul => Value::Double(x * y),
            BinOp::Div => Value::Double(x / y),
            BinOp::Eq => Value::Bool(x == y),
            BinOp::Ne => Value::Bool(x != y),
            BinOp::Lt => Value::Bool(x < y),
            _ => Value::Bool(x <= y),
        });
    }
    let x = a.int()?;
    int_op(op, x, b.int()?)
}

/// Evaluates `e`; errors are pgbench's words (the caller adds the file and line).
pub fn eval(e: &Expr, env: &mut Env<'_>) -> Result<Value, String> {
    match e {
        Expr::Const(v) => Ok(v.clone()),
        Expr::Var(slot) => env.var(*slot),
        Expr::Not(x) => match eval(x, env)? {
            Value::Null => Ok(Value::Null),
            v => Ok(Value::Bool(!v.boolean()?)),
        },
        Expr::Is(x, want) => Ok(Value::Bool(eval(x, env)? == *want)),
        Expr::Bin(op @ (BinOp::And | BinOp::Or), l, r) => {
            // NULL on the left is NULL without looking right; FALSE AND, TRUE OR decide.
            let a = eval(l, env)?;
            if a == Value::Null {
                return Ok(Value::Null);
            }
            if a.boolean()? == (*op == BinOp::Or) {
                return Ok(a);
            }
            match eval(r, env)? {
                Value::Null => Ok(Value::Null),
                b => Ok(Value::Bool(b.boolean()?)),
            }
        }
        Expr::Bin(op, l, r) => {
            let a = eval(l, env)?;
            let b = eval(r, env)?;
            if a == Value::Null || b == Value::Null {
                return Ok(Value::Null);
            }
            binary(*op, &a, &b)
        }
        Expr::Case(arms, otherwise) => {
            for (c, v) in arms {
                if eval(c, env)?.is_true() {
                    return eval(v, env);
                }
            }
            match otherwise {
                Some(e) => eval(e, env),
                None => Ok(Value::Null),
            }
        }
        Expr::Call(f, args) => call(*f, args, env),
    }
}

fn call(f: Func, args: &[Expr], env: &mut Env<'_>) -> Result<Value, String> {
    let mut vals = Vec::with_capacity(args.len().min(MAX_FARGS));
    for a in args.iter().take(MAX_FARGS) {
        vals.push(eval(a, env)?);
    }
    if args.len() > MAX_FARGS {
        return Err(format!("too many function arguments, maximum is {MAX_FARGS}"));
    }
    // The seed of hash and permute when none is given: :default_seed.
    let seeded = match f {
        Func::Hash | Func::HashFnv1a => vals.len() == 1,
        Func::Permute => vals.len() == 2,
        _ => false,
    };
    if seeded {
        let slot = env.vars.default_seed;
        vals.push(env.var(slot)?);
    }
    if f == Func::Debug {
        let v = vals.pop().expect("debug takes one argument, checked when parsed");
        let shown = match &v {
            Value::Null => "null".to_string(),
            Value::Bool(b) => format!("boolean {b}"),
            Value::Int(i) => format!("int {i}"),
            Value::Double(d) => format!("double {}", format_g15(*d)),
            Value::Str(s) => format!("string {s}"),
        };
        eprintln!("debug(script={},command={}): {shown}", env.script, env.command);
        return Ok(v);
    }
    if vals.contains(&Value::Null) {
        return Ok(Value::Null);
    }
    let v = &vals;
    Ok(match f {
        Func::Abs => match &v[0] {
            Value::Int(i) => Value::Int(i.wrapping_abs()),
            x => Value::Double(x.double()?.abs()),
        },
        Func::Debug => unreachable!("handled above"),
        Func::Double => Value::Double(v[0].double()?),
        Func::Int => Value::Int(v[0].int()?),
        Func::Exp => Value::Double(v[0].double()?.exp()),
        Func::Ln => Value::Double(v[0].double()?.ln()),
        Func::Sqrt => Value::Double(v[0].double()?.sqrt()),
        Func::Pi => Value::Double(std::f64::consts::PI),
        Func::Pow => Value::Double(v[0].double()?.powf(v[1].double()?)),
        Func::Greatest | Func::Least => {
            let least = f == Func::Least;
            if v.iter().any(|x| matches!(x, Value::Double(_))) {
                let mut best = v[0].double()?;
                for x in &v[1..] {
                    let d = x.double()?;
                    // C's Min/Max macros: keep the current one unless strictly beaten.
                    best = if least {
                        if best < d {
                            best
                        } else {
                            d
                        }
                    } else if best > d {
                        best
                    } else {
                        d
                    };
                }
                Value::Double(best)
            } else {
                let mut best = v[0].int()?;
                for x in &v[1..] {
                    let i = x.int()?;
                    best = if least { best.min(i) } else { best.max(i) };
                }
                Value::Int(best)
            }
        }
        Func::Hash | Func::HashFnv1a => {
            let (x, seed) = (v[0].int()?, v[1].int()?);
            Value::Int(if f == Func::Hash {
                random::murmur2(x, seed)
            } else {
                random::fnv1a(x, seed)
            })
        }
        Func::Mod => binary(BinOp::Mod, &v[0], &v[1])?,
        Func::Permute => {
            let (i, size, seed) = (v[0].int()?, v[1].int()?, v[2].int()?);
            if size <= 0 {
                return Err("permute size parameter must be greater than zero".into());
            }
            Value::Int(random::permute(i, size, seed))
        }
        Func::Random | Func::RandomExponential | Func::RandomGaussian | Func::RandomZipfian => {
            let (lb, ub) = (v[0].int()?, v[1].int()?);
            if lb > ub {
                return Err("empty range given to random".into());
            }
            if ub.checked_sub(lb).and_then(|d| d.checked_add(1)).is_none() {
                return Err("random range is too large".into());
            }
            let rng = &mut *env.rng;
            Value::Int(match f {
                Func::Random => random::uniform(rng, lb, ub),
                _ => {
                    let p = v[2].double()?;
                    match f {
                        Func::RandomGaussian if p < random::MIN_GAUSSIAN_PARAM => {
                            return Err(format!(
                                "gaussian parameter must be at least {} (not {})",
                                format_f(random::MIN_GAUSSIAN_PARAM),
                                format_f(p)
                            ))
                        }
                        Func::RandomGaussian => random::gaussian(rng, lb, ub, p),
                        Func::RandomZipfian if !(random::ZIPFIAN_PARAM.0..=random::ZIPFIAN_PARAM.1).contains(&p) => {
                            return Err(format!(
                                "zipfian parameter must be in range [{:.3}, {:.0}] (not {})",
                                random::ZIPFIAN_PARAM.0,
                                random::ZIPFIAN_PARAM.1,
                                format_f(p)
                            ))
                        }
                        Func::RandomZipfian => random::zipfian(rng, lb, ub, p),
                        _ if p <= 0.0 => {
                            return Err(format!(
                                "exponential parameter must be greater than zero (not {})",
                                format_f(p)
                            ))
                        }
                        _ => random::exponential(rng, lb, ub, p),
                    }
                }
            })
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Evaluates `text` with `:x = 7`, `:s = '12'`, `:n = NULL`, `:t = 't'` and
    /// default_seed 5432.
    fn run(text: &str) -> Result<Value, String> {
        let mut vars = Vars::default();
        let e = parse(text, &mut vars).map_err(|e| format!("syntax at {}: {}", e.column, e.message))?;
        let mut values = vec![None; vars.len()];
        values[vars.default_seed as usize] = Some(Value::Int(5432));
        for (name, v) in [
            ("x", Value::Int(7)),
            ("s", Value::Str("12".into())),
            ("n", Value::Null),
            ("t", Value::Str("t".into())),
            ("bla", Value::Str("bla".into())),
        ] {
            if let Some(slot) = vars.find(name) {
                values[slot as usize] = Some(v);
            }
        }
        let mut rng = Prng::seed(3);
        eval(
            &e,
            &mut Env {
                values: &values,
                vars: &vars,
                rng: &mut rng,
                script: 0,
                command: 1,
            },
        )
    }

    fn int(text: &str) -> i64 {
        match run(text) {
            Ok(Value::Int(i)) => i,
            other => panic!("{text}: {other:?}"),
        }
    }

    fn double(text: &str) -> f64 {
        match run(text) {
            Ok(Value::Double(d)) => d,
            other => panic!("{text}: {other:?}"),
        }
    }

    fn boolean(text: &str) -> bool {
        match run(text) {
            Ok(Value::Bool(b)) => b,
            other => panic!("{text}: {other:?}"),
        }
    }

    /// The values pgbench 15 prints for the expressions of its own test script
    /// (001_pgbench_with_server.pl, "pgbench expressions"), run with `-Dfoo=-10.1`.
    #[test]
    fn pgbench_test_expressions_give_pgbenchs_values() {
        assert_eq!(int("abs(-4)"), 4);
        assert_eq!(int("greatest(5, 4, 3, 2)"), 5);
        assert_eq!(int("11 + least(-5, -4, -3, -2)"), 6);
        assert_eq!(int("int(7.3)"), 7);
        assert_eq!(int("17 / (4|1) + ( 4 + (7 >> 2))"), 8);
        assert_eq!(int("- (3 * 4 - (-(~ 1) + -(~ 0))) / -1 + 3 % -1"), 9);
        assert_eq!(int("10 + (0 + 0 * 0 - 0 / 1)"), 10);
        assert_eq!(int("64 % (((2 + 1 * 2 + (1 # 2) | 4 * (2 & 11)) - (1 << 2)) + 2)"), 12);
        assert_eq!(format_g15(double("sqrt(+1.5 * 2.0) * abs(-0.8E1)")), "13.856406460551");
        assert_eq!(double("double(1 + 1) * (-75.0 / -10.1)"), 2.0 * (-75.0 / -10.1));
        assert_eq!(format_g15(double("greatest(4, 2, -1.17) * 4.0 * Ln(Exp(1.0))")), "16");
        assert_eq!(format_g15(double("least(-5.18, .0E0, 1.0/0) * -3.3")), "17.094");
        assert_eq!(format_g15(double("pow(-3,3)")), "-27");
        assert_eq!(format_g15(double("pow(2.0,10)")), "1024");
        assert_eq!(format_g15(double("pow(0,0)")), "1");
        assert_eq!(format_g15(double("pow(-2,-3)")), "-0.125");
        assert_eq!(format_g15(double("power(-5.0,-5.0)")), "-0.00032");
        assert_eq!(
            format_g15(double("pow(9223372036854775807, 2)")),
            "8.50705917302346e+37"
        );
        assert_eq!(format_g15(double("pow(10,30)")), "1e+30");
        assert!(!boolean("1.0 = 0.0 and 1.0 != 0.0"));
        assert!(boolean("0 = 1 Or 1.0 = 1"));
        assert_eq!(int("case when 0 < 1 then 32 else 0 end"), 32);
        assert_eq!(
            format_g15(double("case when false THEN -1 when 1 = 1 then 13 + 19 + 2.0 end")),
            "34"
        );
        assert_eq!(
            format_g15(double("CASE WHEN NOT FALSE THEN 3 * 12.3333334 END")),
            "37.0000002"
        );
        assert_eq!(int("case when false then 0 when 1-1 <> 0 then 1 else 38 end"), 38);
        assert_eq!(int("10 + mod(13 * 7 + 12, 13) - mod(-19 * 11 - 17, 19)"), 39);
        assert_eq!(run("NULL + NULL * exp(NULL)"), Ok(Value::Null));
        assert_eq!(run(":n + 1"), Ok(Value::Null));
        assert_eq!(run("NOT :n"), Ok(Value::Null));
        assert!(boolean(":n ISNULL AND NOT :n IS TRUE AND :n IS NOT FALSE"));
        assert!(!boolean(":n IS TRUE"));
        assert!(boolean(":n IS NULL AND :x IS NOT NULL AND :x NOTNULL"));
        assert!(boolean(
            "CASE WHEN 1 THEN TRUE END AND CASE WHEN 1.0 THEN TRUE END AND CASE WHEN :n THEN NULL ELSE TRUE END"
        ));
        assert_eq!(int("hash(10, 5432)"), -5817877081768721676);
        assert!(boolean("hash(10, 5432) = hash_murmur2(10, 5432)"));
        assert_eq!(int("hash_fnv1a(10, 5432)"), -7793829335365542153);
        assert!(boolean("hash(10) = hash(10, :default_seed)"));
        assert_eq!(int("-9223372036854775808"), i64::MIN);
        assert!(boolean("permute(0, 2, 5431) = 0 and permute(1, 2, 5431) = 1"));
        // Lazy evaluation: the branches not taken are not evaluated.
        assert_eq!(int("case when 0 = 0 or (1 / 0) < 0 then -1 else (1 / 0) end"), -1);
        assert_eq!(run("NULL AND 1 / 0 = 1"), Ok(Value::Null));
    }

    #[test]
    fn operators_bind_as_in_pgbench() {
        assert_eq!(int("1 + 2 * 3"), 7);
        assert_eq!(int("10 - 4 - 3"), 3);
        assert_eq!(int("-7 / 2"), -3);
        assert_eq!(int("-7 % 3"), -1);
        assert_eq!(int("1 | 2 + 4"), 7);
        assert_eq!(int("~1 + 2"), -4);
        assert_eq!(int("-16 >> 2"), -4);
        assert_eq!(int("1 << 64"), 1);
        assert_eq!(int(":s + 1"), 13);
        assert!(boolean(":t AND 2 > 1"));
        assert!(boolean("NOT 1 = 2 AND 1 <= 1"));
        assert_eq!(double("-0.0").to_bits(), 0.0f64.to_bits());
        assert_eq!(double("5 / 2.0"), 2.5);
        assert_eq!(int("5.5 % 2"), 0);
        assert_eq!(double("greatest(1, 2.5)"), 2.5);
    }

    /// What pgbench reports (001_pgbench_with_server.pl's error cases and the binary).
    #[test]
    fn errors_are_pgbenchs() {
        for (text, message) in [
            ("1 / 0", "division by zero"),
            ("1 % 0", "division by zero"),
            ("NOT 0.0", "cannot coerce double to boolean"),
            ("TRUE + 2", "cannot coerce boolean to int"),
            ("ln(TRUE)", "cannot coerce boolean to double"),
            ("random(FALSE, TRUE)", "cannot coerce boolean to int"),
            (
                "least(0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16)",
                "too many function arguments, maximum is 16",
            ),
            ("random(5,3)", "empty range given to random"),
            (
                "random(-9223372036854775808, 9223372036854775807)",
                "random range is too large",
            ),
            (
                "random_gaussian(0, 10, 1.0)",
                "gaussian parameter must be at least 2.000000 (not 1.000000)",
            ),
            (
                "random_exponential(0, 10, 0.0)",
                "exponential parameter must be greater than zero (not 0.000000)",
            ),
            (
                "random_zipfian(0, 10, 1)",
                "zipfian parameter must be in range [1.001, 1000] (not 1.000000)",
            ),
            (
                "int(1E32)",
                "double to int overflow for 100000000000000005366162204393472.000000",
            ),
            ("(1<<62) + (1<<62)", "bigint add out of range"),
            ("0 - (1<<62) - (1<<62) - (1<<62)", "bigint sub out of range"),
            ("2 * (1<<62)", "bigint mul out of range"),
            ("-9223372036854775808 / -1", "bigint div out of range"),
            (":bla + 1", "malformed variable \"bla\" value: \"bla\""),
            ("permute(0, 0)", "permute size parameter must be greater than zero"),
            (":nope + 1", "undefined variable \"nope\""),
        ] {
            assert_eq!(run(text).unwrap_err(), message, "{text}");
        }
        assert_eq!(format_g15(double("1.0 / 0")), "inf");
        assert_eq!(int("-9223372036854775808 % -1"), 0);
    }

    #[test]
    fn variable_text_is_typed_as_pgbench_types_it() {
        for (text, v) in [
            ("null", Value::Null),
            ("NULL", Value::Null),
            ("t", Value::Bool(true)),
            ("tr", Value::Bool(true)),
            ("y", Value::Bool(true)),
            ("on", Value::Bool(true)),
            ("false", Value::Bool(false)),
            ("of", Value::Bool(false)),
            ("n", Value::Bool(false)),
            ("+3", Value::Int(3)),
            (" -12", Value::Int(-12)),
            ("1.0", Value::Double(1.0)),
            ("-10.1", Value::Double(-10.1)),
            ("1e3", Value::Double(1000.0)),
        ] {
            assert_eq!(typed("v", text), Ok(v), "{text}");
        }
        assert_eq!(
            typed("b", "trueXXX").unwrap_err(),
            "malformed variable \"b\" value: \"trueXXX\""
        );
        assert_eq!(typed("o", "o").unwrap_err(), "malformed variable \"o\" value: \"o\"");
        assert!(typed("b", "99999999999999999999")
            .unwrap_err()
            .contains("out of range for type bigint"));
    }

    #[test]
    fn doubles_print_as_c_prints_them_with_15_digits() {
        for (d, s) in [
            (16.0, "16"),
            (-27.0, "-27"),
            (1e30, "1e+30"),
            (-0.00032, "-0.00032"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (123456789012345.0, "123456789012345"),
            (1234567890123456.0, "1.23456789012346e+15"),
            (1.0 / 3.0, "0.333333333333333"),
            (f64::INFINITY, "inf"),
            (f64::NEG_INFINITY, "-inf"),
        ] {
            assert_eq!(format_g15(d), s);
        }
        assert_eq!(Value::Double(-0.5421).to_string(), "-0.5421");
        assert_eq!(Value::Null.to_string(), "NULL");
    }

    #[test]
    fn syntax_errors_give_the_column() {
        let mut vars = Vars::default();
        let e = parse("1 + * 2", &mut vars).unwrap_err();
        assert_eq!(e.column, 4);
        assert!(e.message.starts_with("syntax error"), "{}", e.message);
        let e = parse("abs(1", &mut vars).unwrap_err();
        assert_eq!(e.column, 5);
        let e = parse("noSuchFunction()", &mut vars).unwrap_err();
        assert_eq!(
            (e.column, e.message.as_str()),
            (0, "unexpected function name (noSuchFunction)")
        );
        let e = parse("ln(1.0, 2.0)", &mut vars).unwrap_err();
        assert!(
            e.message.starts_with("unexpected number of arguments (ln"),
            "{}",
            e.message
        );
        let e = parse("greatest()", &mut vars).unwrap_err();
        assert_eq!(e.message, "at least one argument expected (greatest)");
        assert!(parse("1 < 2 < 3", &mut vars).is_err());
        assert_eq!(parse(";", &mut vars).unwrap_err().message, "unexpected character (;)");
        assert!(parse("CASE TRUE THEN 1 ELSE 0 END", &mut vars).is_err());
        assert!(parse("99999999999999999999", &mut vars).is_err());
        assert!(parse("1 2", &mut vars).is_err());
    }
}
