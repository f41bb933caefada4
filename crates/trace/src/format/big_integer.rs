//! serde_json reads an integer literal too large for `u64` (2^64 and up) as a float, so its
//! type error says "floating point `1.8446744073709552e+19`" about what the file wrote as an
//! integer. This finds the literal the error points at and says what was written.

/// The message with a float type error rewritten as an out-of-range integer when the text at
/// `line`:`column` (1-based, where serde_json's column is the literal's last character) is an
/// integer literal.
pub(super) fn reword(message: &str, text: &str, line: usize, column: usize) -> String {
    const FLOAT: &str = "invalid type: floating point `";
    let Some(rest) = message.strip_prefix(FLOAT) else {
        return message.to_owned();
    };
    let Some(literal) = integer_ending_at(text, line, column) else {
        return message.to_owned();
    };
    // "invalid type: floating point `X`, expected u64" -> "integer `N` is out of range, expected u64"
    let tail = rest.find('`').map_or("", |i| &rest[i + 1..]);
    format!("integer `{literal}` is out of range{tail}")
}

fn integer_ending_at(text: &str, line: usize, column: usize) -> Option<&str> {
    let row = text.lines().nth(line.checked_sub(1)?)?;
    let upto = row.get(..column)?;
    let start = upto
        .rfind(|c: char| !(c.is_ascii_digit() || c == '-'))
        .map_or(0, |i| i + 1);
    // The digits after a decimal point or an exponent belong to a float literal.
    if upto[..start].ends_with(['.', 'e', 'E', '+']) {
        return None;
    }
    let literal = &upto[start..];
    let digits = literal.strip_prefix('-').unwrap_or(literal);
    (!digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())).then_some(literal)
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn two_to_the_64_is_an_integer_out_of_range() {
        let text = r#"{"seed": 18446744073709551616}"#;
        let msg = "invalid type: floating point `1.8446744073709552e+19`, expected u64";
        assert_eq!(
            reword(msg, text, 1, 29),
            "integer `18446744073709551616` is out of range, expected u64"
        );
    }

    #[test]
    fn a_float_written_as_a_float_keeps_its_message() {
        let text = r#"{"seed": 1.5}"#;
        let msg = "invalid type: floating point `1.5`, expected u64";
        assert_eq!(reword(msg, text, 1, 12), msg);
    }
}
