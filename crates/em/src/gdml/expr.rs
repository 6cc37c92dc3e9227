//! GDML's arithmetic expressions: numbers, names (constants, variables, quantities, units),
//! `+ − * /`, `^` (and `**`) for powers (right-associative, binding tighter than unary minus
//! as in CLHEP's evaluator: `-2^2 = -4`), parentheses and the functions sin, cos, tan, asin,
//! acos, atan, atan2, sinh, cosh, tanh, exp, log, log10, sqrt, pow, abs, fabs, min, max.
//!
//! Units are names with values in the internal system — mm = 1, rad = 1, MeV = 1, g = 1,
//! mole = 1 — so `"2*cm"` is 20 and a unit attribute such as `unit="g/cm3"` is itself an
//! expression (1e-3 g/mm³). A recursive-descent parser over the text; no allocation of an
//! expression tree.

use std::collections::HashMap;
use std::f64::consts::PI;

/// Names and their values.
#[derive(Clone, Debug)]
pub struct Scope {
    values: HashMap<String, f64>,
}

/// The unit and constant names every GDML file may use (CLHEP's names, internal units).
const BUILTIN: &[(&str, f64)] = &[
    ("pi", PI),
    ("twopi", 2.0 * PI),
    ("halfpi", 0.5 * PI),
    ("mm", 1.0),
    ("millimeter", 1.0),
    ("cm", 10.0),
    ("centimeter", 10.0),
    ("m", 1000.0),
    ("meter", 1000.0),
    ("km", 1e6),
    ("kilometer", 1e6),
    ("um", 1e-3),
    ("micrometer", 1e-3),
    ("nm", 1e-6),
    ("nanometer", 1e-6),
    ("mm2", 1.0),
    ("cm2", 100.0),
    ("m2", 1e6),
    ("mm3", 1.0),
    ("cm3", 1000.0),
    ("m3", 1e9),
    ("rad", 1.0),
    ("radian", 1.0),
    ("mrad", 1e-3),
    ("milliradian", 1e-3),
    ("deg", PI / 180.0),
    ("degree", PI / 180.0),
    ("eV", 1e-6),
    ("keV", 1e-3),
    ("MeV", 1.0),
    ("GeV", 1e3),
    ("TeV", 1e6),
    ("g", 1.0),
    ("gram", 1.0),
    ("mg", 1e-3),
    ("milligram", 1e-3),
    ("kg", 1e3),
    ("kilogram", 1e3),
    ("mole", 1.0),
    ("mol", 1.0),
    ("perCent", 0.01),
    ("percent", 0.01),
    ("perThousand", 0.001),
    ("perMillion", 1e-6),
];

impl Default for Scope {
    fn default() -> Scope {
        Scope {
            values: BUILTIN.iter().map(|&(k, v)| (k.to_string(), v)).collect(),
        }
    }
}

impl Scope {
    /// Define or redefine a name.
    pub fn set(&mut self, name: &str, v: f64) {
        self.values.insert(name.to_string(), v);
    }

    #[must_use]
    pub fn get(&self, name: &str) -> Option<f64> {
        self.values.get(name).copied()
    }

    /// Evaluate an expression; the error says what is wrong (the caller names the place).
    pub fn eval(&self, text: &str) -> Result<f64, String> {
        let mut p = Parser {
            s: text.as_bytes(),
            i: 0,
            scope: self,
            depth: 0,
        };
        let v = p.sum()?;
        p.skip_ws();
        if p.i != p.s.len() {
            return Err(format!("unexpected \"{}\"", &text[p.i..]));
        }
        if !v.is_finite() {
            return Err(format!("the value is not finite ({v})"));
        }
        Ok(v)
    }
}

struct Parser<'a> {
    s: &'a [u8],
    i: usize,
    scope: &'a Scope,
    depth: u32,
}

impl Parser<'_> {
    fn skip_ws(&mut self) {
        while self.i < self.s.len() && self.s[self.i].is_ascii_whitespace() {
            self.i += 1;
        }
    }

    fn peek(&mut self) -> Option<u8> {
        self.skip_ws();
        self.s.get(self.i).copied()
    }

    /// sum := product (('+' | '-') product)*
    fn sum(&mut self) -> Result<f64, String> {
        self.depth += 1;
        if self.depth > 200 {
            return Err("expression nested too deeply".into());
        }
        let mut v = self.product()?;
        while let Some(c @ (b'+' | b'-')) = self.peek() {
            self.i += 1;
            let r = self.product()?;
            v = if c == b'+' { v + r } else { v - r };
        }
        self.depth -= 1;
        Ok(v)
    }

    /// product := unary (('*' | '/') unary)*
    fn product(&mut self) -> Result<f64, String> {
        let mut v = self.unary()?;
        loop {
            match self.peek() {
                Some(b'*') if self.s.get(self.i + 1) != Some(&b'*') => {
                    self.i += 1;
                    v *= self.unary()?;
                }
                Some(b'/') => {
                    self.i += 1;
                    v /= self.unary()?;
                }
                _ => return Ok(v),
            }
        }
    }

    /// unary := ('-' | '+') unary | power
    fn unary(&mut self) -> Result<f64, String> {
        match self.peek() {
            Some(b'-') => {
                self.i += 1;
                Ok(-self.unary()?)
            }
            Some(b'+') => {
                self.i += 1;
                self.unary()
            }
            _ => self.power(),
        }
    }

    /// power := atom (('^' | '**') unary)?   (right-associative)
    fn power(&mut self) -> Result<f64, String> {
        let base = self.atom()?;
        match self.peek() {
            Some(b'^') => {
                self.i += 1;
                Ok(base.powf(self.unary()?))
            }
            Some(b'*') if self.s.get(self.i + 1) == Some(&b'*') => {
                self.i += 2;
                Ok(base.powf(self.unary()?))
            }
            _ => Ok(base),
        }
    }

    fn atom(&mut self) -> Result<f64, String> {
        match self.peek() {
            None => Err("it ends where a value was expected".to_string()),
            Some(b'(') => {
                self.i += 1;
                let v = self.sum()?;
                if self.peek() != Some(b')') {
                    return Err("missing ')'".to_string());
                }
                self.i += 1;
                Ok(v)
            }
            Some(c) if c.is_ascii_digit() || c == b'.' => self.number(),
            Some(c) if c.is_ascii_alphabetic() || c == b'_' => {
                let start = self.i;
                while self.i < self.s.len() && (self.s[self.i].is_ascii_alphanumeric() || self.s[self.i] == b'_') {
                    self.i += 1;
                }
                let name = std::str::from_utf8(&self.s[start..self.i]).unwrap_or("");
                if self.peek() == Some(b'(') {
                    self.i += 1;
                    let mut args = Vec::new();
                    if self.peek() != Some(b')') {
                        loop {
                            args.push(self.sum()?);
                            match self.peek() {
                                Some(b',') => self.i += 1,
                                Some(b')') => break,
                                _ => return Err(format!("expected ',' or ')' in the arguments of {name}()")),
                            }
                        }
                    }
                    self.i += 1;
                    return function(name, &args);
                }
                self.scope.get(name).ok_or_else(|| format!("unknown name '{name}'"))
            }
            Some(c) => Err(format!("unexpected '{}'", c as char)),
        }
    }

    fn number(&mut self) -> Result<f64, String> {
        let start = self.i;
        let s = self.s;
        let digits = |i: &mut usize| {
            while *i < s.len() && s[*i].is_ascii_digit() {
                *i += 1;
            }
        };
        digits(&mut self.i);
        if self.i < s.len() && s[self.i] == b'.' {
            self.i += 1;
            digits(&mut self.i);
        }
        if self.i < s.len() && (s[self.i] == b'e' || s[self.i] == b'E') {
            let save = self.i;
            self.i += 1;
            if self.i < s.len() && (s[self.i] == b'+' || s[self.i] == b'-') {
                self.i += 1;
            }
            let exp_start = self.i;
            digits(&mut self.i);
            if self.i == exp_start {
                self.i = save; // "2e" is 2 times the name e? Not a number exponent: leave it.
            }
        }
        let t = std::str::from_utf8(&s[start..self.i]).unwrap_or("");
        t.parse::<f64>().map_err(|_| format!("\"{t}\" is not a number"))
    }
}

fn function(name: &str, a: &[f64]) -> Result<f64, String> {
    let one = |f: fn(f64) -> f64| {
        if a.len() == 1 {
            Ok(f(a[0]))
        } else {
            Err(format!("{name}() takes 1 argument, found {}", a.len()))
        }
    };
    let two = |f: fn(f64, f64) -> f64| {
        if a.len() == 2 {
            Ok(f(a[0], a[1]))
        } else {
            Err(format!("{name}() takes 2 arguments, found {}", a.len()))
        }
    };
    match name {
        "sin" => one(f64::sin),
        "cos" => one(f64::cos),
        "tan" => one(f64::tan),
        "asin" => one(f64::asin),
        "acos" => one(f64::acos),
        "atan" => one(f64::atan),
        "sinh" => one(f64::sinh),
        "cosh" => one(f64::cosh),
        "tanh" => one(f64::tanh),
        "exp" => one(f64::exp),
        "log" => one(f64::ln),
        "log10" => one(f64::log10),
        "sqrt" => one(f64::sqrt),
        "abs" | "fabs" => one(f64::abs),
        "atan2" => two(f64::atan2),
        "pow" => two(f64::powf),
        "min" => two(f64::min),
        "max" => two(f64::max),
        _ => Err(format!("unknown function '{name}'")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arithmetic_units_and_functions() {
        let mut s = Scope::default();
        let e = |s: &Scope, t: &str| s.eval(t).unwrap();
        assert_eq!(e(&s, "1 + 2*3"), 7.0);
        assert_eq!(e(&s, "(1+2)*3"), 9.0);
        assert_eq!(e(&s, "2^3^2"), 512.0);
        assert_eq!(e(&s, "2**3"), 8.0);
        assert_eq!(e(&s, "-2^2"), -4.0);
        assert_eq!(e(&s, "8/4/2"), 1.0);
        assert_eq!(e(&s, "1.5e2"), 150.0);
        assert_eq!(e(&s, "2*cm"), 20.0);
        assert!((e(&s, "90*deg") - PI / 2.0).abs() < 1e-15);
        assert!((e(&s, "g/cm3") - 1e-3).abs() < 1e-18);
        assert_eq!(e(&s, "sqrt(16) + pow(2, 3) + max(1, 4)"), 16.0);
        assert!((e(&s, "atan2(1, 1)") - PI / 4.0).abs() < 1e-15);
        s.set("size", 5.0);
        assert_eq!(e(&s, "size*2 - 1"), 9.0);
        for bad in ["abc", "1 +", "(1", "2*", "sqrt(1, 2)", "1/0", "foo(1)", "1 2", ""] {
            assert!(s.eval(bad).is_err(), "{bad}");
        }
        assert!(s.eval("abc").unwrap_err().contains("unknown name 'abc'"));
        let deep = "(".repeat(1000) + "1" + &")".repeat(1000);
        assert!(s.eval(&deep).is_err());
    }
}
