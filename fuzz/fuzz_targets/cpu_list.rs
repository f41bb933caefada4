//! The CPU list and mask parsers and `PrimaryDomain::from_str` on arbitrary text: an error
//! with an offset inside the text, or a set that an independent reading agrees with and that
//! prints back to text parsing to the same set.
#![no_main]

use hybridland_policy::{
    CpuId, CpuListError, CpuSet, MAX_CPUS, PrimaryDomain, parse_cpu_list, parse_cpu_mask,
};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let lossy = String::from_utf8_lossy(data);
    let text: &str = &lossy;

    let list = parse_cpu_list(text);
    check_offset(text, &list);
    assert_eq!(list.ok(), reference_list(text), "parse_cpu_list({text:?})");
    if let Ok(set) = list {
        round_trip(&set);
    }

    let mask = parse_cpu_mask(text);
    check_offset(text, &mask);
    if let Ok(set) = mask {
        assert_eq!(parse_cpu_mask(&to_mask(&set)), Ok(set), "mask of {set}");
        if !set.is_empty() {
            round_trip(&set);
        }
    }

    match text.parse::<PrimaryDomain>() {
        Ok(PrimaryDomain::Cpus(set)) => {
            let trimmed = text.trim();
            let expect = if trimmed.starts_with("0x") || trimmed.starts_with("0X") {
                mask
            } else {
                list
            };
            assert_eq!(Ok(set), expect, "domain {text:?}");
            // A domain names a CPU (a mask of zeros is refused), and prints back to itself.
            assert!(!set.is_empty(), "domain {text:?} names no CPU");
            let shown = PrimaryDomain::Cpus(set).to_string();
            assert_eq!(shown.parse::<PrimaryDomain>(), Ok(PrimaryDomain::Cpus(set)));
        }
        Ok(named) => {
            assert!(matches!(text.trim(), "all" | "performance" | "powersave"));
            assert_eq!(named.to_string().parse::<PrimaryDomain>(), Ok(named));
        }
        Err(e) => assert!(!e.to_string().is_empty()),
    }
});

/// A non-empty set prints as a list that parses back to it.
fn round_trip(set: &CpuSet) {
    assert!(!set.is_empty(), "a list parsed to the empty set");
    let shown = set.to_string();
    assert_eq!(parse_cpu_list(&shown), Ok(*set), "list {shown:?}");
}

/// Byte offsets in errors point inside the text (or just past its end).
fn check_offset(text: &str, r: &Result<CpuSet, CpuListError>) {
    let at = match r {
        Err(
            CpuListError::BadNumber { at }
            | CpuListError::ReversedRange { at }
            | CpuListError::CpuTooLarge { at }
            | CpuListError::BadHexDigit { at },
        ) => *at,
        Err(e) => {
            assert!(!e.to_string().is_empty());
            return;
        }
        Ok(_) => return,
    };
    assert!(at <= text.len(), "offset {at} past the end of {text:?}");
    assert!(!r.unwrap_err().to_string().is_empty());
}

/// An independent reading of a CPU list: items split on commas, each a number or `a-b`,
/// surrounding whitespace allowed, every number plain ASCII digits below `MAX_CPUS`.
fn reference_list(text: &str) -> Option<CpuSet> {
    if text.trim().is_empty() {
        return None;
    }
    let mut set = CpuSet::EMPTY;
    for item in text.split(',') {
        let item = item.trim();
        let (lo, hi) = match item.find('-') {
            Some(i) => (&item[..i], &item[i + 1..]),
            None => (item, item),
        };
        let num = |s: &str| -> Option<usize> {
            if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            // Strip leading zeros by hand so long zero runs stay small.
            let digits = s.trim_start_matches('0');
            if digits.len() > 4 {
                return None;
            }
            let n = if digits.is_empty() {
                0
            } else {
                digits.parse::<usize>().ok()?
            };
            (n < MAX_CPUS).then_some(n)
        };
        let (lo, hi) = (num(lo)?, num(hi)?);
        if hi < lo {
            return None;
        }
        for c in lo..=hi {
            set.insert(CpuId(c as u16));
        }
    }
    Some(set)
}

/// The set as a hex mask, most significant word first, words comma-separated as the kernel
/// prints them.
fn to_mask(set: &CpuSet) -> String {
    let words = set.words();
    let top = words.iter().rposition(|&w| w != 0).unwrap_or(0);
    let mut parts = Vec::new();
    for w in (0..=top).rev() {
        parts.push(format!(
            "{:08x},{:08x}",
            words[w] >> 32,
            words[w] & 0xffff_ffff
        ));
    }
    format!("0x{}", parts.join(","))
}
