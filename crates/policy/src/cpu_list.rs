//! Parsers for the two ways people write CPU sets: lists (`0-5,12`) and hex masks (`0xff000`).

use crate::cpu_set::{CpuId, CpuSet, MAX_CPUS};
use core::fmt;

/// Why a CPU list or mask did not parse. `at` is the byte offset of the offending text.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum CpuListError {
    /// Nothing to parse.
    Empty,
    /// Something other than a decimal number where one was expected.
    BadNumber {
        /// Byte offset.
        at: usize,
    },
    /// A range whose end is below its start (`5-3`).
    ReversedRange {
        /// Byte offset of the range.
        at: usize,
    },
    /// A CPU at or beyond [`MAX_CPUS`].
    CpuTooLarge {
        /// Byte offset.
        at: usize,
    },
    /// A character that is not a hex digit (or a `,` group separator) in a mask.
    BadHexDigit {
        /// Byte offset.
        at: usize,
    },
    /// A mask with bits set at or beyond [`MAX_CPUS`].
    MaskTooWide,
}

impl fmt::Display for CpuListError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Self::Empty => f.write_str("empty CPU list"),
            Self::BadNumber { at } => write!(f, "expected a CPU number at byte {at}"),
            Self::ReversedRange { at } => write!(f, "range at byte {at} ends before it starts"),
            Self::CpuTooLarge { at } => {
                write!(f, "CPU number at byte {at} is not below {MAX_CPUS}")
            }
            Self::BadHexDigit { at } => write!(f, "expected a hex digit at byte {at}"),
            Self::MaskTooWide => write!(f, "mask sets CPUs at or beyond {MAX_CPUS}"),
        }
    }
}

impl core::error::Error for CpuListError {}

/// Parses a kernel-style CPU list: comma-separated numbers and inclusive ranges, e.g.
/// `0-5,12` (whitespace around items is allowed, as is a trailing newline from sysfs).
///
/// ```
/// let set = hybridland_policy::parse_cpu_list("0-2,12").unwrap();
/// assert_eq!(set.to_string(), "0-2,12");
/// ```
pub fn parse_cpu_list(text: &str) -> Result<CpuSet, CpuListError> {
    let mut set = CpuSet::EMPTY;
    if text.trim().is_empty() {
        return Err(CpuListError::Empty);
    }
    let mut offset = 0;
    for item in text.split(',') {
        let start = offset + (item.len() - item.trim_start().len());
        offset += item.len() + 1;
        let item = item.trim();
        let (lo, hi) = match item.split_once('-') {
            Some((a, b)) => {
                let lo = number(a, start)?;
                let hi = number(b, start + a.len() + 1)?;
                if hi < lo {
                    return Err(CpuListError::ReversedRange { at: start });
                }
                (lo, hi)
            }
            None => {
                let n = number(item, start)?;
                (n, n)
            }
        };
        for cpu in lo..=hi {
            set.insert(CpuId(cpu));
        }
    }
    Ok(set)
}

fn number(text: &str, at: usize) -> Result<u16, CpuListError> {
    // The offset names the first byte that is not a digit, so `0\n\0` points at the `\n`.
    if let Some(bad) = text.bytes().position(|b| !b.is_ascii_digit()) {
        return Err(CpuListError::BadNumber { at: at + bad });
    }
    if text.is_empty() {
        return Err(CpuListError::BadNumber { at });
    }
    match text.parse::<u32>() {
        Ok(n) if (n as usize) < MAX_CPUS => Ok(n as u16),
        _ => Err(CpuListError::CpuTooLarge { at }),
    }
}

/// Parses a hex CPU mask of any length, bit N being CPU N: `0xff000`, `ff000`, or the
/// kernel's comma-grouped form `ffffffff,00000000`.
///
/// ```
/// let set = hybridland_policy::parse_cpu_mask("0xff000").unwrap();
/// assert_eq!(set.to_string(), "12-19");
/// ```
pub fn parse_cpu_mask(text: &str) -> Result<CpuSet, CpuListError> {
    let trimmed = text.trim();
    let lead = text.len() - text.trim_start().len();
    let (digits, base) = match trimmed
        .strip_prefix("0x")
        .or_else(|| trimmed.strip_prefix("0X"))
    {
        Some(rest) => (rest, lead + 2),
        None => (trimmed, lead),
    };
    if digits.bytes().all(|b| b == b',') {
        return Err(CpuListError::Empty);
    }
    let mut set = CpuSet::EMPTY;
    let mut bit = 0usize;
    // By character, so a bad non-ASCII character is named by its first byte (an offset a
    // caller can slice at), not its last.
    for (i, c) in digits.char_indices().rev() {
        if c == ',' {
            continue;
        }
        let Some(nibble) = c.to_digit(16) else {
            return Err(CpuListError::BadHexDigit { at: base + i });
        };
        for k in 0..4 {
            if nibble & (1 << k) != 0 {
                if bit + k >= MAX_CPUS {
                    return Err(CpuListError::MaskTooWide);
                }
                set.insert(CpuId((bit + k) as u16));
            }
        }
        bit += 4;
    }
    Ok(set)
}

/// A CPU set as a CPU list (`0-3,6`), the empty set as an empty string.
#[cfg(feature = "serde")]
mod serde_impls {
    use super::{CpuSet, parse_cpu_list};
    use core::fmt;
    use serde::de::{self, Deserializer, Visitor};
    use serde::ser::Serializer;

    /// Writes the set's CPU list without allocating.
    struct List<'a>(&'a CpuSet);

    impl fmt::Display for List<'_> {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            if self.0.is_empty() {
                Ok(())
            } else {
                self.0.fmt(f)
            }
        }
    }

    impl serde::Serialize for CpuSet {
        fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            s.collect_str(&List(self))
        }
    }

    impl<'de> serde::Deserialize<'de> for CpuSet {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            struct ListVisitor;
            impl Visitor<'_> for ListVisitor {
                type Value = CpuSet;
                fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                    f.write_str("a CPU list such as \"0-3,6\"")
                }
                fn visit_str<E: de::Error>(self, text: &str) -> Result<CpuSet, E> {
                    if text.trim().is_empty() {
                        return Ok(CpuSet::EMPTY);
                    }
                    parse_cpu_list(text).map_err(E::custom)
                }
            }
            d.deserialize_str(ListVisitor)
        }
    }
}

#[cfg(test)]
mod test {
    extern crate std;
    use super::*;
    use std::string::{String, ToString};

    #[test]
    fn lists() {
        assert_eq!(parse_cpu_list("0-5,12").unwrap().count(), 7);
        assert_eq!(parse_cpu_list(" 3 , 1-2\n").unwrap().count(), 3);
        assert_eq!(parse_cpu_list("1023").unwrap().first(), Some(CpuId(1023)));
        assert_eq!(parse_cpu_list(""), Err(CpuListError::Empty));
        assert_eq!(
            parse_cpu_list("1,,2"),
            Err(CpuListError::BadNumber { at: 2 })
        );
        assert_eq!(
            parse_cpu_list("0-5,9-3"),
            Err(CpuListError::ReversedRange { at: 4 })
        );
        assert_eq!(
            parse_cpu_list("1024"),
            Err(CpuListError::CpuTooLarge { at: 0 })
        );
        assert_eq!(
            parse_cpu_list("99999999999"),
            Err(CpuListError::CpuTooLarge { at: 0 })
        );
        assert_eq!(
            parse_cpu_list("1-x"),
            Err(CpuListError::BadNumber { at: 2 })
        );
        assert_eq!(parse_cpu_list("-1"), Err(CpuListError::BadNumber { at: 0 }));
        // The offending byte, not the start of its item: the `\n` after `0`, the `x` of `12x`.
        assert_eq!(
            parse_cpu_list("0\n\0"),
            Err(CpuListError::BadNumber { at: 1 })
        );
        assert_eq!(
            parse_cpu_list("3,12x"),
            Err(CpuListError::BadNumber { at: 4 })
        );
    }

    #[test]
    fn masks() {
        assert_eq!(parse_cpu_mask("0x00fff").unwrap().to_string(), "0-11");
        assert_eq!(parse_cpu_mask("ff000").unwrap().to_string(), "12-19");
        assert_eq!(parse_cpu_mask("1,00000000").unwrap().to_string(), "32");
        assert_eq!(parse_cpu_mask("0x"), Err(CpuListError::Empty));
        assert_eq!(
            parse_cpu_mask("0xfg"),
            Err(CpuListError::BadHexDigit { at: 3 })
        );
        // A non-ASCII character is named by its first byte.
        assert_eq!(
            parse_cpu_mask("0xf\u{1f900}f"),
            Err(CpuListError::BadHexDigit { at: 3 })
        );
        let wide = String::from("1") + &"0".repeat(256);
        assert_eq!(parse_cpu_mask(&wide), Err(CpuListError::MaskTooWide));
        // Leading zeros beyond the capacity are harmless.
        let padded = "0".repeat(300) + "1";
        assert_eq!(parse_cpu_mask(&padded).unwrap().to_string(), "0");
    }

    proptest::proptest! {
        /// Any text, mostly near the grammar so both outcomes are common: a list that parses
        /// is what its canonical form parses to, a mask that parses is what its bits written
        /// back as hex parse to, and an error points inside the input at what is wrong.
        #[test]
        fn results_round_trip_and_errors_point_into_the_input(
            s in "\\PC{0,40}|[0-9,\\- ]{0,40}|(0x)?[0-9a-fA-F, ]{0,80}"
        ) {
            match parse_cpu_list(&s) {
                Ok(set) => {
                    proptest::prop_assert!(!set.is_empty());
                    proptest::prop_assert!(s.bytes().all(|b| b.is_ascii_digit()
                        || b"-,".contains(&b) || b.is_ascii_whitespace()));
                    proptest::prop_assert_eq!(parse_cpu_list(&set.to_string()), Ok(set));
                }
                Err(e) => check_error_position(&s, e, false)?,
            }
            match parse_cpu_mask(&s) {
                Ok(set) => proptest::prop_assert_eq!(parse_cpu_mask(&hex(&set)), Ok(set)),
                Err(e) => check_error_position(&s, e, true)?,
            }
        }

        #[test]
        fn list_round_trips(ids in proptest::collection::vec(0u16..1024, 1..40)) {
            let set: CpuSet = ids.iter().map(|&i| CpuId(i)).collect();
            proptest::prop_assert_eq!(parse_cpu_list(&set.to_string()).unwrap(), set);
        }
    }

    /// `set` as a hex mask, most significant digit first, written independently of the parser.
    fn hex(set: &CpuSet) -> String {
        let mut digits = String::from("0x");
        for nibble in (0..MAX_CPUS / 4).rev() {
            let v = (0..4).fold(0u32, |v, k| {
                v | (u32::from(set.contains(CpuId((nibble * 4 + k) as u16))) << k)
            });
            digits.push(char::from_digit(v, 16).unwrap());
        }
        digits
    }

    /// The error names a byte offset inside `s` (or its end, for a missing number) on a
    /// character boundary, and the character there is one the error is about.
    fn check_error_position(
        s: &str,
        e: CpuListError,
        mask: bool,
    ) -> Result<(), proptest::test_runner::TestCaseError> {
        let digit_at = |at: usize| s[at..].starts_with(|c: char| c.is_ascii_digit());
        match e {
            CpuListError::Empty => {
                let rest = s.trim();
                let rest = if mask {
                    rest.strip_prefix("0x")
                        .or_else(|| rest.strip_prefix("0X"))
                        .unwrap_or(rest)
                } else {
                    rest
                };
                let only_commas = rest.bytes().all(|b| b == b',');
                proptest::prop_assert!(only_commas && (mask || rest.is_empty()), "{e} for {s:?}");
            }
            CpuListError::MaskTooWide => proptest::prop_assert!(mask),
            CpuListError::BadNumber { at }
            | CpuListError::ReversedRange { at }
            | CpuListError::CpuTooLarge { at }
            | CpuListError::BadHexDigit { at } => {
                proptest::prop_assert!(at <= s.len() && s.is_char_boundary(at), "{e} for {s:?}");
                let ok = match e {
                    CpuListError::BadNumber { .. } => !mask && !digit_at(at),
                    CpuListError::BadHexDigit { .. } => {
                        mask && at < s.len()
                            && !s[at..].starts_with(|c: char| c.is_ascii_hexdigit() || c == ',')
                    }
                    _ => !mask && digit_at(at),
                };
                proptest::prop_assert!(ok, "{e} for {s:?}");
            }
        }
        Ok(())
    }
}
