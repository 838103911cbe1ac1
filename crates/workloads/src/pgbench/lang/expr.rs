//! pgbench's expression language (`\set name expression`, `\if expression`): values, the
//! parser (integer and double literals, `:variables`, `+ - * / %`, comparisons, `AND OR
//! NOT`, `IS [NOT] NULL`, bitwise `& | # << >> ~`, `CASE`, functions) with pgbench's
//! precedence, and the evaluator with its errors (integer overflow, division by zero, an
//! unset variable).

use std::fmt;

use rand::rngs::SmallRng;

use super::random;
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
    /// Text (from `-D` or a query's result), read as a number where one is needed.
    Str(String),
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Null => Ok(()),
            Value::Bool(b) => f.write_str(if *b { "true" } else { "false" }),
            Value::Int(i) => write!(f, "{i}"),
            Value::Double(d) => write!(f, "{d:?}"),
            Value::Str(s) => f.write_str(s),
        }
    }
}

/// A number, once a value has been read as one.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Num {
    Int(i64),
    Double(f64),
}

impl Value {
    fn num(&self) -> Result<Num, String> {
        match self {
            Value::Int(i) => Ok(Num::Int(*i)),
            Value::Double(d) => Ok(Num::Double(*d)),
            Value::Bool(b) => Ok(Num::Int(*b as i64)),
            Value::Null => Err("cannot use NULL as a number".into()),
            Value::Str(s) => {
                let t = s.trim();
                if let Ok(i) = t.parse::<i64>() {
                    Ok(Num::Int(i))
                } else if let Ok(d) = t.parse::<f64>() {
                    Ok(Num::Double(d))
                } else {
                    Err(format!("malformed variable value {s:?}: not a number"))
                }
            }
        }
    }

    fn int(&self) -> Result<i64, String> {
        match self.num()? {
            Num::Int(i) => Ok(i),
            Num::Double(d) => {
                if d.is_nan() || d < i64::MIN as f64 || d >= i64::MAX as f64 {
                    Err(format!("double to int overflow for {d}"))
                } else {
                    Ok(d as i64)
                }
            }
        }
    }

    fn double(&self) -> Result<f64, String> {
        Ok(match self.num()? {
            Num::Int(i) => i as f64,
            Num::Double(d) => d,
        })
    }

    fn truth(&self) -> Result<Option<bool>, String> {
        match self {
            Value::Null => Ok(None),
            Value::Bool(b) => Ok(Some(*b)),
            Value::Str(s) => match s.trim().to_ascii_lowercase().as_str() {
                "t" | "true" | "on" | "yes" => Ok(Some(true)),
                "f" | "false" | "off" | "no" => Ok(Some(false)),
                _ => Ok(Some(self.double()? != 0.0)),
            },
            v => Ok(Some(v.double()? != 0.0)),
        }
    }

    /// The value as a condition (`\if`): NULL is false.
    pub fn is_true(&self) -> Result<bool, String> {
        Ok(self.truth()?.unwrap_or(false))
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
    Gt,
    Ge,
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
    /// `-x`
    Neg(Box<Expr>),
    /// `~x`
    BitNot(Box<Expr>),
    /// `NOT x`
    Not(Box<Expr>),
    /// `x IS NULL` (`true`) or `x IS NOT NULL` (`false`).
    IsNull(Box<Expr>, bool),
    /// A binary operation.
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
                let d = s.parse().map_err(|_| SyntaxError {
                    message: format!("invalid number {s:?}"),
                    column: start,
                })?;
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
                    message: format!("unexpected character {c:?}"),
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
            message: format!("{message} (at {found})"),
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
            return Ok(Expr::IsNull(Box::new(e), true));
        }
        if self.keyword("notnull") {
            return Ok(Expr::IsNull(Box::new(e), false));
        }
        if self.keyword("is") {
            let not = self.keyword("not");
            let e = if self.keyword("null") {
                Expr::IsNull(Box::new(e), true)
            } else if self.keyword("true") {
                Expr::Bin(BinOp::Eq, Box::new(e), Box::new(Expr::Const(Value::Bool(true))))
            } else if self.keyword("false") {
                Expr::Bin(BinOp::Eq, Box::new(e), Box::new(Expr::Const(Value::Bool(false))))
            } else {
                return Err(self.error("expected NULL, TRUE or FALSE after IS"));
            };
            return Ok(if not { Expr::Not(Box::new(e)) } else { e });
        }
        Ok(e)
    }

    fn cmp(&mut self) -> Result<Expr, SyntaxError> {
        let l = self.bits()?;
        let op = match self.peek() {
            Tok::Op("=") => BinOp::Eq,
            Tok::Op("<>") | Tok::Op("!=") => BinOp::Ne,
            Tok::Op("<") => BinOp::Lt,
            Tok::Op("<=") => BinOp::Le,
            Tok::Op(">") => BinOp::Gt,
            Tok::Op(">=") => BinOp::Ge,
            _ => return Ok(l),
        };
        self.next();
        let r = self.bits()?;
        if matches!(self.peek(), Tok::Op("=" | "<>" | "!=" | "<" | "<=" | ">" | ">=")) {
            return Err(self.error("comparisons do not chain; use AND or parentheses"));
        }
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
            return Ok(Expr::Neg(Box::new(self.unary()?)));
        }
        if self.op("~") {
            return Ok(Expr::BitNot(Box::new(self.unary()?)));
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
                Err(_) => Err(self.error("integer literal out of the bigint range")),
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
                    _ => self.call(&lower),
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

    fn call(&mut self, name: &str) -> Result<Expr, SyntaxError> {
        let column = self.toks[self.at].1;
        let Some(&(_, f, min, max)) = FUNCS.iter().find(|(n, ..)| *n == name) else {
            return Err(SyntaxError {
                message: format!("unknown function {name:?}"),
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
            let want = match (min, max) {
                (a, b) if a == b => format!("{a}"),
                (a, usize::MAX) => format!("at least {a}"),
                (a, b) => format!("{a} or {b}"),
            };
            return Err(SyntaxError {
                message: format!("{name} takes {want} argument(s), got {}", args.len()),
                column,
            });
        }
        Ok(Expr::Call(f, args))
    }
}

/// What an evaluation reads: the variables and the client's random state.
pub struct Env<'a> {
    /// Values by slot (`None`: never set).
    pub values: &'a [Option<Value>],
    /// Their names, for errors.
    pub vars: &'a Vars,
    /// The client's random numbers.
    pub rng: &'a mut SmallRng,
}

impl Env<'_> {
    fn default_seed(&self) -> Result<i64, String> {
        match self.values.get(self.vars.default_seed as usize) {
            Some(Some(v)) => v.int(),
            _ => Err("variable \"default_seed\" is not set".into()),
        }
    }
}

fn overflow() -> String {
    "bigint out of range".into()
}

fn arith(op: BinOp, a: Num, b: Num) -> Result<Value, String> {
    match (a, b) {
        (Num::Int(x), Num::Int(y)) => Ok(Value::Int(match op {
            BinOp::Add => x.checked_add(y).ok_or_else(overflow)?,
            BinOp::Sub => x.checked_sub(y).ok_or_else(overflow)?,
            BinOp::Mul => x.checked_mul(y).ok_or_else(overflow)?,
            BinOp::Div if y == 0 => return Err("division by zero".into()),
            BinOp::Div => x.checked_div(y).ok_or_else(overflow)?,
            BinOp::Mod if y == 0 => return Err("division by zero".into()),
            BinOp::Mod if y == -1 => 0,
            BinOp::Mod => x % y,
            _ => unreachable!("arith is called with arithmetic operators"),
        })),
        (a, b) => {
            let f = |n: Num| match n {
                Num::Int(i) => i as f64,
                Num::Double(d) => d,
            };
            let (x, y) = (f(a), f(b));
            Ok(Value::Double(match op {
                BinOp::Add => x + y,
                BinOp::Sub => x - y,
                BinOp::Mul => x * y,
                BinOp::Div if y == 0.0 => return Err("division by zero".into()),
                BinOp::Div => x / y,
                BinOp::Mod => return Err("% and mod() take integers".into()),
                _ => unreachable!("arith is called with arithmetic operators"),
            }))
        }
    }
}

fn compare(op: BinOp, a: &Value, b: &Value) -> Result<Value, String> {
    if matches!(a, Value::Null) || matches!(b, Value::Null) {
        return Ok(Value::Null);
    }
    let ord = match (a.num()?, b.num()?) {
        (Num::Int(x), Num::Int(y)) => x.cmp(&y),
        (x, y) => {
            let f = |n: Num| match n {
                Num::Int(i) => i as f64,
                Num::Double(d) => d,
            };
            f(x).partial_cmp(&f(y)).unwrap_or(std::cmp::Ordering::Equal)
        }
    };
    use std::cmp::Ordering::*;
    Ok(Value::Bool(match op {
        BinOp::Eq => ord == Equal,
        BinOp::Ne => ord != Equal,
        BinOp::Lt => ord == Less,
        BinOp::Le => ord != Greater,
        BinOp::Gt => ord == Greater,
        BinOp::Ge => ord != Less,
        _ => unreachable!("compare is called with comparisons"),
    }))
}

/// Evaluates `e`; errors say what went wrong (the caller adds the file and line).
pub fn eval(e: &Expr, env: &mut Env<'_>) -> Result<Value, String> {
    match e {
        Expr::Const(v) => Ok(v.clone()),
        Expr::Var(slot) => match env.values.get(*slot as usize) {
            Some(Some(v)) => Ok(v.clone()),
            _ => Err(format!("undefined variable \"{}\"", env.vars.name(*slot))),
        },
        Expr::Neg(x) => match eval(x, env)?.num()? {
            Num::Int(i) => i.checked_neg().map(Value::Int).ok_or_else(overflow),
            Num::Double(d) => Ok(Value::Double(-d)),
        },
        Expr::BitNot(x) => Ok(Value::Int(!eval(x, env)?.int()?)),
        Expr::Not(x) => Ok(match eval(x, env)?.truth()? {
            Some(b) => Value::Bool(!b),
            None => Value::Null,
        }),
        Expr::IsNull(x, want) => Ok(Value::Bool(matches!(eval(x, env)?, Value::Null) == *want)),
        Expr::Bin(op @ (BinOp::And | BinOp::Or), l, r) => {
            let a = eval(l, env)?.truth()?;
            // Short-circuit as SQL: FALSE AND x, TRUE OR x.
            match (op, a) {
                (BinOp::And, Some(false)) => return Ok(Value::Bool(false)),
                (BinOp::Or, Some(true)) => return Ok(Value::Bool(true)),
                _ => {}
            }
            let b = eval(r, env)?.truth()?;
            Ok(match b {
                // FALSE decides AND, TRUE decides OR, whatever the left side was.
                Some(x) if x == (*op == BinOp::Or) => Value::Bool(x),
                // Otherwise the left side (TRUE for AND, FALSE for OR) leaves it to the right.
                Some(x) if a.is_some() => Value::Bool(x),
                _ => Value::Null,
            })
        }
        Expr::Bin(op, l, r) => {
            let a = eval(l, env)?;
            let b = eval(r, env)?;
            match op {
                BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Div | BinOp::Mod => arith(*op, a.num()?, b.num()?),
                BinOp::Eq | BinOp::Ne | BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge => compare(*op, &a, &b),
                BinOp::BitAnd => Ok(Value::Int(a.int()? & b.int()?)),
                BinOp::BitOr => Ok(Value::Int(a.int()? | b.int()?)),
                BinOp::BitXor => Ok(Value::Int(a.int()? ^ b.int()?)),
                BinOp::Shl => Ok(Value::Int(shift(a.int()?, b.int()?, true))),
                BinOp::Shr => Ok(Value::Int(shift(a.int()?, b.int()?, false))),
                BinOp::And | BinOp::Or => unreachable!("handled above"),
            }
        }
        Expr::Case(arms, otherwise) => {
            for (c, v) in arms {
                if eval(c, env)?.is_true()? {
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

fn shift(a: i64, b: i64, left: bool) -> i64 {
    match (left, b) {
        (_, b) if !(0..64).contains(&b) => {
            if left || a >= 0 {
                0
            } else {
                -1
            }
        }
        (true, b) => a << b,
        (false, b) => a >> b,
    }
}

fn call(f: Func, args: &[Expr], env: &mut Env<'_>) -> Result<Value, String> {
    let arg = |i: usize, env: &mut Env<'_>| eval(&args[i], env);
    Ok(match f {
        Func::Abs => match arg(0, env)?.num()? {
            Num::Int(i) => Value::Int(i.checked_abs().ok_or_else(overflow)?),
            Num::Double(d) => Value::Double(d.abs()),
        },
        Func::Debug => {
            let v = arg(0, env)?;
            let kind = match &v {
                Value::Null => "null",
                Value::Bool(_) => "boolean",
                Value::Int(_) => "int",
                Value::Double(_) => "double",
                Value::Str(_) => "string",
            };
            eprintln!("debug: {kind} {v}");
            v
        }
        Func::Double => Value::Double(arg(0, env)?.double()?),
        Func::Int => Value::Int(arg(0, env)?.int()?),
        Func::Exp => Value::Double(arg(0, env)?.double()?.exp()),
        Func::Ln => Value::Double(arg(0, env)?.double()?.ln()),
        Func::Sqrt => Value::Double(arg(0, env)?.double()?.sqrt()),
        Func::Pi => Value::Double(std::f64::consts::PI),
        Func::Pow => {
            let x = arg(0, env)?.double()?;
            Value::Double(x.powf(arg(1, env)?.double()?))
        }
        Func::Greatest | Func::Least => {
            let mut best: Option<Num> = None;
            let mut any_double = false;
            for i in 0..args.len() {
                let n = arg(i, env)?.num()?;
                any_double |= matches!(n, Num::Double(_));
                let as_f = |n: Num| match n {
                    Num::Int(i) => i as f64,
                    Num::Double(d) => d,
                };
                best = Some(match best {
                    None => n,
                    Some(b) => {
                        let better = match (n, b) {
                            (Num::Int(x), Num::Int(y)) => (x > y) == (f == Func::Greatest) && x != y,
                            (x, y) => (as_f(x) > as_f(y)) == (f == Func::Greatest) && as_f(x) != as_f(y),
                        };
                        if better {
                            n
                        } else {
                            b
                        }
                    }
                });
            }
            match best.expect("at least one argument, checked when parsed") {
                Num::Int(i) if any_double => Value::Double(i as f64),
                Num::Int(i) => Value::Int(i),
                Num::Double(d) => Value::Double(d),
            }
        }
        Func::Hash | Func::HashFnv1a => {
            let v = arg(0, env)?.int()?;
            let seed = if args.len() > 1 {
                arg(1, env)?.int()?
            } else {
                env.default_seed()?
            };
            Value::Int(if f == Func::Hash {
                random::murmur2(v, seed)
            } else {
                random::fnv1a(v, seed)
            })
        }
        Func::Mod => arith(BinOp::Mod, Num::Int(arg(0, env)?.int()?), Num::Int(arg(1, env)?.int()?))?,
        Func::Permute => {
            let i = arg(0, env)?.int()?;
            let size = arg(1, env)?.int()?;
            let seed = if args.len() > 2 {
                arg(2, env)?.int()?
            } else {
                env.default_seed()?
            };
            Value::Int(random::permute(i, size, seed)?)
        }
        Func::Random => {
            let (lb, ub) = (arg(0, env)?.int()?, arg(1, env)?.int()?);
            Value::Int(random::uniform(env.rng, lb, ub)?)
        }
        Func::RandomExponential | Func::RandomGaussian | Func::RandomZipfian => {
            let (lb, ub) = (arg(0, env)?.int()?, arg(1, env)?.int()?);
            let p = arg(2, env)?.double()?;
            Value::Int(match f {
                Func::RandomExponential => random::exponential(env.rng, lb, ub, p)?,
                Func::RandomGaussian => random::gaussian(env.rng, lb, ub, p)?,
                _ => random::zipfian(env.rng, lb, ub, p)?,
            })
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    /// Evaluates `text` with `:x = 7`, `:s = '12'`, `:n = NULL` and default_seed 5432.
    fn run(text: &str) -> Result<Value, String> {
        let mut vars = Vars::default();
        let e = parse(text, &mut vars).map_err(|e| format!("syntax at {}: {}", e.column, e.message))?;
        let mut values = vec![None; vars.len()];
        values[vars.default_seed as usize] = Some(Value::Int(5432));
        for (name, v) in [("x", Value::Int(7)), ("s", Value::Str("12".into())), ("n", Value::Null)] {
            if let Some(slot) = vars.find(name) {
                values[slot as usize] = Some(v);
            }
        }
        let mut rng = SmallRng::seed_from_u64(3);
        eval(
            &e,
            &mut Env {
                values: &values,
                vars: &vars,
                rng: &mut rng,
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

    #[test]
    fn operators_bind_as_in_pgbench() {
        assert_eq!(int("1 + 2 * 3"), 7);
        assert_eq!(int("(1 + 2) * 3"), 9);
        assert_eq!(int("10 - 4 - 3"), 3);
        assert_eq!(int("-2 * -3"), 6);
        assert_eq!(int("7 / 2"), 3);
        assert_eq!(int("-7 / 2"), -3);
        assert_eq!(int("-7 % 3"), -1);
        assert_eq!(int(":x % 4 + 1"), 4);
        // Bitwise operators bind looser than + and -.
        assert_eq!(int("1 | 2 + 4"), 7);
        assert_eq!(int("1 << 2 + 1"), 8);
        assert_eq!(int("6 & 3"), 2);
        assert_eq!(int("6 # 3"), 5);
        assert_eq!(int("~0"), -1);
        assert_eq!(int("-16 >> 2"), -4);
        assert_eq!(double("1.5 * 2"), 3.0);
        assert_eq!(double("1e3 + .5"), 1000.5);
        assert_eq!(int(":s + 1"), 13);
        assert_eq!(int("-9223372036854775808"), i64::MIN);
        assert!(boolean("1 + 1 = 2 AND NOT 3 < 2"));
        assert!(boolean("1 = 2 OR 2 <> 3"));
        assert!(boolean("2 != 2 OR 1.5 >= 1"));
        assert!(boolean("NOT 1 = 2 AND 1 <= 1"));
        assert!(boolean(":n IS NULL"));
        assert!(boolean(":x IS NOT NULL"));
        assert!(boolean(":n ISNULL and :x notnull"));
        assert!(boolean("true is true"));
        assert_eq!(run("NULL AND TRUE"), Ok(Value::Null));
        assert_eq!(run("NULL AND FALSE"), Ok(Value::Bool(false)));
        assert_eq!(run("NULL OR TRUE"), Ok(Value::Bool(true)));
        assert_eq!(run(":n = 1"), Ok(Value::Null));
    }

    #[test]
    fn case_picks_the_first_true_arm() {
        assert_eq!(int("CASE WHEN :x > 5 THEN 1 WHEN :x > 0 THEN 2 ELSE 3 END"), 1);
        assert_eq!(int("case when :x > 50 then 1 when :x > 0 then 2 else 3 end"), 2);
        assert_eq!(run("CASE WHEN false THEN 1 END"), Ok(Value::Null));
        assert_eq!(int("1 + CASE WHEN :x = 7 THEN 10 ELSE 20 END * 2"), 21);
    }

    #[test]
    fn arithmetic_errors_are_named() {
        assert_eq!(run("1 / 0").unwrap_err(), "division by zero");
        assert_eq!(run("1 % 0").unwrap_err(), "division by zero");
        assert_eq!(run("1.0 / 0").unwrap_err(), "division by zero");
        assert_eq!(run("mod(5, 0)").unwrap_err(), "division by zero");
        assert_eq!(run("9223372036854775807 + 1").unwrap_err(), "bigint out of range");
        assert_eq!(run("-9223372036854775808 / -1").unwrap_err(), "bigint out of range");
        assert_eq!(int("-9223372036854775808 % -1"), 0);
        assert_eq!(run("4611686018427387904 * 2").unwrap_err(), "bigint out of range");
        assert_eq!(run("abs(-9223372036854775808)").unwrap_err(), "bigint out of range");
        assert_eq!(
            run("int(1e30)").unwrap_err(),
            "double to int overflow for 1000000000000000000000000000000"
        );
        assert_eq!(run(":nope + 1").unwrap_err(), "undefined variable \"nope\"");
        assert!(run(":n + 1").unwrap_err().contains("NULL"));
    }

    #[test]
    fn functions_give_known_values() {
        assert_eq!(int("abs(-17)"), 17);
        assert_eq!(double("abs(-17.5)"), 17.5);
        assert_eq!(int("debug(5)"), 5);
        assert_eq!(double("double(5 / 2)"), 2.0);
        assert_eq!(int("int(5.9)"), 5);
        assert_eq!(int("int(-5.9)"), -5);
        assert!((double("exp(1.0)") - std::f64::consts::E).abs() < 1e-12);
        assert!((double("ln(10.0)") - 10f64.ln()).abs() < 1e-12);
        assert_eq!(double("sqrt(2.0)"), 2f64.sqrt());
        assert_eq!(double("pi()"), std::f64::consts::PI);
        assert_eq!(double("pow(2.0, 10)"), 1024.0);
        assert_eq!(double("power(2, 0.5)"), 2f64.sqrt());
        assert_eq!(int("greatest(5, 4, 3, 2)"), 5);
        assert_eq!(int("least(5, 4, 3, 2)"), 2);
        assert_eq!(double("greatest(1, 2.5)"), 2.5);
        assert_eq!(double("least(1, 2.5)"), 1.0);
        assert_eq!(int("mod(54, 32)"), 22);
        assert_eq!(int("mod(-54, 32)"), -22);
        // The documented examples of hash, hash_murmur2 and hash_fnv1a.
        assert_eq!(int("hash(10, 5432)"), -5817877081768721676);
        assert_eq!(int("hash_murmur2(10, 5432)"), -5817877081768721676);
        assert_eq!(int("hash_fnv1a(10, 5432)"), -7793829335365542153);
        // Without a seed: :default_seed (5432 here).
        assert_eq!(int("hash(10)"), -5817877081768721676);
        assert_eq!(int("hash_fnv1a(10)"), -7793829335365542153);
        let p = int("permute(0, 4)");
        assert!((0..4).contains(&p));
        assert_eq!(int("permute(3, 4, 5432)"), random::permute(3, 4, 5432).unwrap());
        for _ in 0..5 {
            let r = int("random(1, 10)");
            assert!((1..=10).contains(&r));
        }
        assert!((1..=10).contains(&int("random_exponential(1, 10, 2.5)")));
        assert!((1..=10).contains(&int("random_gaussian(1, 10, 2.5)")));
        assert!((1..=10).contains(&int("random_zipfian(1, 10, 1.5)")));
        assert!(run("random_gaussian(1, 10, 1.5)").unwrap_err().contains("at least 2"));
        assert!(run("random(10, 1)").unwrap_err().contains("empty range"));
    }

    #[test]
    fn syntax_errors_give_the_column() {
        let mut vars = Vars::default();
        let e = parse("1 + * 2", &mut vars).unwrap_err();
        assert_eq!(e.column, 4);
        assert!(e.message.contains("expected a value"), "{}", e.message);
        let e = parse("abs(1", &mut vars).unwrap_err();
        assert_eq!(e.column, 5);
        let e = parse("nosuch(1)", &mut vars).unwrap_err();
        assert_eq!((e.column, e.message.as_str()), (0, "unknown function \"nosuch\""));
        let e = parse("random(1)", &mut vars).unwrap_err();
        assert!(e.message.contains("random takes 2 argument(s), got 1"), "{}", e.message);
        let e = parse("1 < 2 < 3", &mut vars).unwrap_err();
        assert!(e.message.contains("do not chain"));
        let e = parse("1 $ 2", &mut vars).unwrap_err();
        assert_eq!(e.column, 2);
        let e = parse("CASE WHEN 1 THEN 2", &mut vars).unwrap_err();
        assert!(e.message.contains("END"));
        let e = parse("99999999999999999999", &mut vars).unwrap_err();
        assert!(e.message.contains("bigint range"));
        assert!(parse("1 2", &mut vars)
            .unwrap_err()
            .message
            .contains("after the expression"));
    }
}
