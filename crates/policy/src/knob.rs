//! A policy's own knobs: declared once ([`KnobSpec`]), set by name on every command line that
//! takes `--set`, handed to the policy when it is built ([`KnobValues`]) and on change
//! ([`Input::Knob`](crate::InputOf::Knob), [`PlacementPolicy::set_knob`](crate::PlacementPolicy::set_knob)).
//!
//! A value is an `i64` whatever the knob's kind: an integer is itself, on/off is 1 or 0, a
//! choice is the index of its name. So a knob change is two plain numbers (the knob's index in
//! the policy's list and the value), logged and replayed like any other input, and the crate
//! stays free of allocation.

/// Most knobs a policy declares.
pub const MAX_KNOBS: usize = 16;

/// What values a knob takes.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum KnobKind {
    /// An integer in `min..=max`.
    Int {
        /// The smallest value.
        min: i64,
        /// The largest value.
        max: i64,
    },
    /// `on` (1) or `off` (0).
    OnOff,
    /// One of these names; the value is its index.
    Choice(&'static [&'static str]),
}

/// One knob a policy declares.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct KnobSpec {
    /// The name `--set` takes: lower case, digits and `_`, unique among the policy's knobs.
    pub name: &'static str,
    /// Its values.
    pub kind: KnobKind,
    /// Its value when not set.
    pub default: i64,
    /// One line on what it does (`hybrid-sim policies` shows it).
    pub help: &'static str,
}

/// A knob value or declaration that cannot be used.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum KnobError {
    /// The value is outside the knob's range.
    OutOfRange {
        /// The knob.
        knob: &'static str,
        /// The value.
        value: i64,
    },
    /// The text is not one of the knob's values.
    BadText {
        /// The knob.
        knob: &'static str,
    },
    /// A policy declares more than [`MAX_KNOBS`] knobs.
    TooMany {
        /// How many.
        count: usize,
    },
    /// A declaration is wrong: an empty or repeated name, an empty range or choice, or a
    /// default outside the range.
    BadSpec {
        /// The knob.
        knob: &'static str,
    },
}

impl core::fmt::Display for KnobError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Self::OutOfRange { knob, value } => {
                write!(f, "knob `{knob}`: {value} is out of its range")
            }
            Self::BadText { knob } => write!(f, "knob `{knob}`: not one of its values"),
            Self::TooMany { count } => {
                write!(f, "{count} knobs declared, at most {MAX_KNOBS}")
            }
            Self::BadSpec { knob } => write!(
                f,
                "knob `{knob}` is declared wrong (empty or repeated name, empty range, or a default outside it)"
            ),
        }
    }
}

impl core::error::Error for KnobError {}

impl KnobSpec {
    /// An integer knob.
    pub const fn int(
        name: &'static str,
        min: i64,
        max: i64,
        default: i64,
        help: &'static str,
    ) -> Self {
        Self {
            name,
            kind: KnobKind::Int { min, max },
            default,
            help,
        }
    }

    /// An on/off knob.
    pub const fn on_off(name: &'static str, default: bool, help: &'static str) -> Self {
        Self {
            name,
            kind: KnobKind::OnOff,
            default: default as i64,
            help,
        }
    }

    /// A knob that takes one of `names`; `default` is an index into them.
    pub const fn choice(
        name: &'static str,
        names: &'static [&'static str],
        default: usize,
        help: &'static str,
    ) -> Self {
        Self {
            name,
            kind: KnobKind::Choice(names),
            default: default as i64,
            help,
        }
    }

    /// `value`, if the knob takes it.
    pub fn check(&self, value: i64) -> Result<i64, KnobError> {
        let ok = match self.kind {
            KnobKind::Int { min, max } => (min..=max).contains(&value),
            KnobKind::OnOff => value == 0 || value == 1,
            KnobKind::Choice(names) => usize::try_from(value).is_ok_and(|i| i < names.len()),
        };
        if ok {
            Ok(value)
        } else {
            Err(KnobError::OutOfRange {
                knob: self.name,
                value,
            })
        }
    }

    /// The value `text` names: a decimal integer, `on` or `off`, or a choice's name.
    pub fn parse(&self, text: &str) -> Result<i64, KnobError> {
        let value = match self.kind {
            KnobKind::Int { .. } => text.trim().parse::<i64>().ok(),
            KnobKind::OnOff => match text.trim() {
                "on" => Some(1),
                "off" => Some(0),
                _ => None,
            },
            KnobKind::Choice(names) => names
                .iter()
                .position(|n| *n == text.trim())
                .map(|i| i as i64),
        };
        self.check(value.ok_or(KnobError::BadText { knob: self.name })?)
    }

    /// `value` as `--set` takes it.
    pub fn show(&self, value: i64) -> KnobText {
        KnobText {
            kind: self.kind,
            value,
        }
    }

    /// The values it takes, for help texts: `0..=1024`, `on, off`, `a, b, c`.
    pub fn range(&self) -> KnobRange {
        KnobRange(self.kind)
    }
}

/// A knob's value as text ([`KnobSpec::show`]).
#[derive(Copy, Clone, Debug)]
pub struct KnobText {
    kind: KnobKind,
    value: i64,
}

impl core::fmt::Display for KnobText {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self.kind {
            KnobKind::OnOff => f.write_str(if self.value != 0 { "on" } else { "off" }),
            KnobKind::Choice(names) => {
                match usize::try_from(self.value).ok().and_then(|i| names.get(i)) {
                    Some(name) => f.write_str(name),
                    None => self.value.fmt(f),
                }
            }
            KnobKind::Int { .. } => self.value.fmt(f),
        }
    }
}

/// The values a knob takes, as text ([`KnobSpec::range`]).
#[derive(Copy, Clone, Debug)]
pub struct KnobRange(KnobKind);

impl core::fmt::Display for KnobRange {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self.0 {
            KnobKind::Int { min, max } => write!(f, "{min}..={max}"),
            KnobKind::OnOff => f.write_str("on, off"),
            KnobKind::Choice(names) => {
                for (i, name) in names.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    f.write_str(name)?;
                }
                Ok(())
            }
        }
    }
}

/// The index of the knob named `name` in `specs`.
pub fn knob_index(specs: &[KnobSpec], name: &str) -> Option<usize> {
    specs.iter().position(|s| s.name == name)
}

/// Checks a policy's declarations: at most [`MAX_KNOBS`], names non-empty and unique, each
/// range non-empty and its default inside it.
pub fn check_knobs(specs: &[KnobSpec]) -> Result<(), KnobError> {
    if specs.len() > MAX_KNOBS {
        return Err(KnobError::TooMany { count: specs.len() });
    }
    for (i, s) in specs.iter().enumerate() {
        let empty = match s.kind {
            KnobKind::Int { min, max } => min > max,
            KnobKind::OnOff => false,
            KnobKind::Choice(names) => names.is_empty(),
        };
        let repeated = specs[..i].iter().any(|o| o.name == s.name);
        if s.name.is_empty() || repeated || empty || s.check(s.default).is_err() {
            return Err(KnobError::BadSpec { knob: s.name });
        }
    }
    Ok(())
}

/// A policy's knob values, in the order of its [`KnobSpec`]s: what its build gets.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct KnobValues {
    values: [i64; MAX_KNOBS],
    len: usize,
}

impl KnobValues {
    /// No knobs.
    pub const NONE: Self = Self {
        values: [0; MAX_KNOBS],
        len: 0,
    };

    /// Every knob at its default, once the declarations pass [`check_knobs`].
    pub fn defaults(specs: &[KnobSpec]) -> Result<Self, KnobError> {
        check_knobs(specs)?;
        let mut v = Self::NONE;
        for (i, s) in specs.iter().enumerate() {
            v.values[i] = s.default;
        }
        v.len = specs.len();
        Ok(v)
    }

    /// Sets knob `index` of `specs` (the list these values were made for) to `value`.
    pub fn set(&mut self, specs: &[KnobSpec], index: usize, value: i64) -> Result<(), KnobError> {
        let Some(spec) = specs.get(index).filter(|_| index < self.len) else {
            return Err(KnobError::BadSpec { knob: "" });
        };
        self.values[index] = spec.check(value)?;
        Ok(())
    }

    /// Knob `index`'s value.
    pub fn get(&self, index: usize) -> Option<i64> {
        self.as_slice().get(index).copied()
    }

    /// The values, in declaration order.
    pub fn as_slice(&self) -> &[i64] {
        &self.values[..self.len]
    }
}

/// The name among `names` nearest to `name` by edit distance, when it is close enough to be
/// a misspelling (at most a third of the longer name's bytes differ). Names longer than 64
/// bytes are compared on their first 64.
pub fn nearest_name<'a>(name: &str, names: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let mut best: Option<(usize, &str)> = None;
    for candidate in names {
        let d = edit_distance(name.as_bytes(), candidate.as_bytes());
        let limit = name.len().max(candidate.len()).div_ceil(3);
        if d <= limit && best.is_none_or(|(b, _)| d < b) {
            best = Some((d, candidate));
        }
    }
    best.map(|(_, n)| n)
}

/// Levenshtein distance over the first 64 bytes of each.
fn edit_distance(a: &[u8], b: &[u8]) -> usize {
    const N: usize = 64;
    let a = &a[..a.len().min(N)];
    let b = &b[..b.len().min(N)];
    let mut row = [0usize; N + 1];
    for (j, r) in row.iter_mut().enumerate().take(b.len() + 1) {
        *r = j;
    }
    for (i, ca) in a.iter().enumerate() {
        let mut diag = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let up = row[j + 1];
            row[j + 1] = (diag + usize::from(ca != cb)).min(up + 1).min(row[j] + 1);
            diag = up;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod test {
    use super::*;
    use std::string::ToString;

    const SPECS: &[KnobSpec] = &[
        KnobSpec::int("heavy_util", 0, 1024, 256, "when a task counts as heavy"),
        KnobSpec::on_off("move_up", true, "move heavy tasks up"),
        KnobSpec::choice("order", &["little", "big"], 0, "which cores first"),
    ];

    #[test]
    fn values_parse_check_and_show_by_kind() {
        let v = KnobValues::defaults(SPECS).unwrap();
        assert_eq!(v.as_slice(), &[256, 1, 0]);
        assert_eq!(SPECS[0].parse("300"), Ok(300));
        assert_eq!(
            SPECS[0].parse("1025"),
            Err(KnobError::OutOfRange {
                knob: "heavy_util",
                value: 1025
            })
        );
        assert!(SPECS[0].parse("lots").is_err());
        assert_eq!(SPECS[1].parse("off"), Ok(0));
        assert!(SPECS[1].parse("2").is_err());
        assert_eq!(SPECS[2].parse("big"), Ok(1));
        assert!(SPECS[2].check(2).is_err());
        assert_eq!(SPECS[2].show(1).to_string(), "big");
        assert_eq!(SPECS[1].show(0).to_string(), "off");
        assert_eq!(SPECS[0].range().to_string(), "0..=1024");
        assert_eq!(SPECS[2].range().to_string(), "little, big");
        let mut v = v;
        v.set(SPECS, 0, 512).unwrap();
        assert!(v.set(SPECS, 0, -1).is_err());
        assert!(v.set(SPECS, 3, 0).is_err());
        assert_eq!(v.get(0), Some(512));
    }

    #[test]
    fn wrong_declarations_are_refused() {
        let dup = [SPECS[0], SPECS[0]];
        assert!(check_knobs(&dup).is_err());
        let out = [KnobSpec::int("x", 0, 10, 11, "")];
        assert!(KnobValues::defaults(&out).is_err());
        let empty = [KnobSpec::choice("x", &[], 0, "")];
        assert!(check_knobs(&empty).is_err());
        let many = [SPECS[0]; MAX_KNOBS + 1];
        assert_eq!(
            check_knobs(&many),
            Err(KnobError::TooMany {
                count: MAX_KNOBS + 1
            })
        );
    }

    #[test]
    fn the_nearest_name_is_a_likely_misspelling_or_none() {
        let names = ["heavy_util", "move_up", "cluster_balance"];
        assert_eq!(nearest_name("heavy_utl", names), Some("heavy_util"));
        assert_eq!(
            nearest_name("cluster_balnce", names),
            Some("cluster_balance")
        );
        assert_eq!(nearest_name("movup", names), Some("move_up"));
        assert_eq!(nearest_name("frobnicate", names), None);
        assert_eq!(edit_distance(b"kitten", b"sitting"), 3);
    }
}
