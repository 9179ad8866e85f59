//! A bench's targets, each printed with its measured value and a verdict, and the bench's exit
//! code: shared by every bench so they all judge and report the same way. Each bench uses a
//! subset, hence the allow.
#![allow(dead_code)]

use std::time::Instant;

pub struct Check {
    pub name: String,
    pub value: f64,
    pub unit: &'static str,
    pub target: f64,
    pub lower_is_better: bool,
}

impl Check {
    fn new(
        name: impl Into<String>,
        value: f64,
        unit: &'static str,
        target: f64,
        lower: bool,
    ) -> Check {
        Check {
            name: name.into(),
            value,
            unit,
            target,
            lower_is_better: lower,
        }
    }

    /// A target the value must not exceed.
    pub fn at_most(name: impl Into<String>, value: f64, unit: &'static str, target: f64) -> Check {
        Check::new(name, value, unit, target, true)
    }

    /// A target the value must reach.
    pub fn at_least(name: impl Into<String>, value: f64, unit: &'static str, target: f64) -> Check {
        Check::new(name, value, unit, target, false)
    }

    pub fn ok(&self) -> bool {
        if self.lower_is_better {
            self.value <= self.target
        } else {
            self.value >= self.target
        }
    }

    /// A value the bench cannot have measured: not a number, or a time, ratio or rate that is
    /// not positive (sizes, shares and memory growth may be zero or less).
    fn broken(&self) -> bool {
        !self.value.is_finite()
            || (matches!(self.unit, "ms" | "s" | "µs" | "x" | "/s") && self.value <= 0.0)
    }
}

/// Print every check (PASS/FAIL at full size; "smoke" at smoke sizes, where a time never
/// fails), then what broke, and exit 1 when a target was missed or a measurement broke.
pub fn report(
    bench: &str,
    checks: &[Check],
    mut broken: Vec<String>,
    full: bool,
    started: Instant,
) {
    let mut failed = 0;
    for c in checks {
        let verdict = if !full {
            "smoke"
        } else if c.ok() {
            "PASS"
        } else {
            failed += 1;
            "FAIL"
        };
        println!(
            "{verdict:>5}  {:<52} {:>12.3} {:<3} (target {} {})",
            c.name,
            c.value,
            c.unit,
            if c.lower_is_better { "≤" } else { "≥" },
            c.target
        );
        if c.broken() {
            broken.push(format!("{}: {}", c.name, c.value));
        }
    }
    for b in &broken {
        println!("BROKEN {b}");
    }
    println!("took {:?}", started.elapsed());
    let failed = failed + broken.len();
    println!(
        "{bench}: {} passed, {failed} failed",
        checks.len().saturating_sub(failed)
    );
    if failed > 0 {
        std::process::exit(1);
    }
}
