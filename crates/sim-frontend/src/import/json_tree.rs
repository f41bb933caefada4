//! A JSON document read with its object keys in file order and repeated keys kept.
//!
//! rt-app files depend on both: the events of a phase run in the order they are written, and
//! rt-app's `workgen` accepts a key written twice (`"run": 10, "sleep": 10, "run": 10`) and
//! numbers the copies itself. serde_json's own `Value` sorts keys and keeps only the last of a
//! repeated one, and its `preserve_order` feature would change every map in the workspace.

use core::fmt;
use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};

/// One JSON value.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Node {
    Null,
    Bool(bool),
    /// An integer that fits i128 (every u64 and i64 does).
    Int(i128),
    Float(f64),
    Str(String),
    Arr(Vec<Self>),
    /// Members in file order, repeated keys included.
    Obj(Vec<(String, Self)>),
}

impl Node {
    /// What kind of value this is, for error messages.
    pub(crate) fn kind(&self) -> &'static str {
        match self {
            Self::Null => "null",
            Self::Bool(_) => "a boolean",
            Self::Int(_) => "an integer",
            Self::Float(_) => "a fractional number",
            Self::Str(_) => "a string",
            Self::Arr(_) => "an array",
            Self::Obj(_) => "an object",
        }
    }

    /// The first member named `key`, when this is an object.
    pub(crate) fn get(&self, key: &str) -> Option<&Self> {
        match self {
            Self::Obj(members) => members.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }
}

impl<'de> Deserialize<'de> for Node {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(NodeVisitor)
    }
}

struct NodeVisitor;

impl<'de> Visitor<'de> for NodeVisitor {
    type Value = Node;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_unit<E>(self) -> Result<Node, E> {
        Ok(Node::Null)
    }

    fn visit_bool<E>(self, v: bool) -> Result<Node, E> {
        Ok(Node::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Node, E> {
        Ok(Node::Int(i128::from(v)))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Node, E> {
        Ok(Node::Int(i128::from(v)))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Node, E> {
        Ok(Node::Float(v))
    }

    fn visit_str<E>(self, v: &str) -> Result<Node, E> {
        Ok(Node::Str(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<Node, E> {
        Ok(Node::Str(v))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Node, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(Node::Arr(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Node, A::Error> {
        let mut members = Vec::new();
        while let Some((k, v)) = map.next_entry::<String, Node>()? {
            members.push((k, v));
        }
        Ok(Node::Obj(members))
    }
}

/// `//` and `/* */` comments blanked out (rt-app's parser, json-c, accepts them, and published
/// rt-app files use them), newlines kept so the parser's line and column still point into the
/// file as written.
pub(crate) fn strip_comments(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    let mut in_string = false;
    while i < bytes.len() {
        let b = bytes[i];
        if in_string {
            out.push(b);
            if b == b'\\' && i + 1 < bytes.len() {
                out.push(bytes[i + 1]);
                i += 2;
                continue;
            }
            if b == b'"' {
                in_string = false;
            }
            i += 1;
            continue;
        }
        match (b, bytes.get(i + 1)) {
            (b'"', _) => {
                in_string = true;
                out.push(b);
                i += 1;
            }
            (b'/', Some(b'/')) => {
                while i < bytes.len() && bytes[i] != b'\n' {
                    out.push(b' ');
                    i += 1;
                }
            }
            (b'/', Some(b'*')) => {
                out.extend_from_slice(b"  ");
                i += 2;
                while i < bytes.len() && !(bytes[i] == b'*' && bytes.get(i + 1) == Some(&b'/')) {
                    out.push(if bytes[i] == b'\n' { b'\n' } else { b' ' });
                    i += 1;
                }
                if i < bytes.len() {
                    out.extend_from_slice(b"  ");
                    i += 2;
                }
            }
            _ => {
                out.push(b);
                i += 1;
            }
        }
    }
    // Only ASCII bytes were replaced, and only outside strings, so the text stays UTF-8; a
    // multi-byte character inside a comment became one space per byte.
    String::from_utf8(out).unwrap_or_default()
}

/// What rt-app's parser (json-c, not strict) and its `workgen` accept beyond JSON, turned
/// into JSON: comments blanked out ([`strip_comments`]), a trailing comma before `}` or `]`
/// blanked out, and a bare string where an object member belongs (`"suspend",`, which
/// `workgen` used to complete with the thread's name) given the value `null`. Line numbers
/// stay those of the file as written.
pub(crate) fn lenient(text: &str) -> String {
    let clean = strip_comments(text);
    let bytes = clean.as_bytes();
    let mut out = Vec::with_capacity(bytes.len() + 16);
    // Open containers: b'{' or b'['; and, for the innermost object, whether a key comes next.
    let mut stack: Vec<u8> = Vec::new();
    let mut expect_key = false;
    let mut i = 0;
    let next_solid = |from: usize| {
        let mut j = from;
        while j < bytes.len() && bytes[j].is_ascii_whitespace() {
            j += 1;
        }
        (j, bytes.get(j).copied())
    };
    while i < bytes.len() {
        let b = bytes[i];
        match b {
            b'"' => {
                let start = i;
                i += 1;
                while i < bytes.len() && bytes[i] != b'"' {
                    if bytes[i] == b'\\' {
                        i += 1;
                    }
                    i += 1;
                }
                i = (i + 1).min(bytes.len());
                out.extend_from_slice(&bytes[start..i]);
                if expect_key && stack.last() == Some(&b'{') {
                    expect_key = false;
                    let (_, after) = next_solid(i);
                    if matches!(after, Some(b',' | b'}')) {
                        out.extend_from_slice(b": null");
                    }
                }
                continue;
            }
            b'{' => {
                stack.push(b'{');
                expect_key = true;
            }
            b'[' => {
                stack.push(b'[');
                expect_key = false;
            }
            b'}' | b']' => {
                stack.pop();
                expect_key = false;
            }
            b',' => {
                let (_, after) = next_solid(i + 1);
                if matches!(after, Some(b'}' | b']')) {
                    out.push(b' ');
                    i += 1;
                    continue;
                }
                expect_key = stack.last() == Some(&b'{');
            }
            _ => {}
        }
        out.push(b);
        i += 1;
    }
    // Only ASCII was inserted or replaced, outside strings: still UTF-8.
    String::from_utf8(out).unwrap_or_default()
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn keeps_order_and_repeated_keys() {
        let n: Node = serde_json::from_str(r#"{"sleep": 1, "run": 2, "sleep": 3}"#).unwrap();
        let Node::Obj(m) = n else { panic!() };
        let keys: Vec<&str> = m.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["sleep", "run", "sleep"]);
        assert_eq!(m[2].1, Node::Int(3));
    }

    #[test]
    fn comments_blank_out_but_lines_stay() {
        let text = "{ // a comment\n \"a\": \"//not\", /* multi\n line */ \"b\": 1 }";
        let s = strip_comments(text);
        assert_eq!(s.lines().count(), text.lines().count());
        let n: Node = serde_json::from_str(&s).unwrap();
        assert_eq!(n.get("a"), Some(&Node::Str("//not".into())));
        assert_eq!(n.get("b"), Some(&Node::Int(1)));
    }

    #[test]
    fn lenient_takes_trailing_commas_and_bare_members() {
        let text = "{\n \"t\": {\"suspend\",\n \"run\": 5, \"a\": [1, 2,],\n \"s\": \"x,}\",\n \"resume\" },\n}";
        let s = lenient(text);
        assert_eq!(s.lines().count(), text.lines().count());
        let n: Node = serde_json::from_str(&s).unwrap_or_else(|e| panic!("{e}: {s}"));
        let t = n.get("t").unwrap();
        let Node::Obj(m) = t else { panic!() };
        let keys: Vec<&str> = m.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["suspend", "run", "a", "s", "resume"]);
        assert_eq!(t.get("suspend"), Some(&Node::Null));
        assert_eq!(
            t.get("a"),
            Some(&Node::Arr(vec![Node::Int(1), Node::Int(2)]))
        );
        assert_eq!(t.get("s"), Some(&Node::Str("x,}".into())));
        // Strict JSON passes through unchanged.
        let strict = "{\"a\": [1, {\"b\": \"c\"}], \"d\": null}";
        assert_eq!(lenient(strict), strict);
    }
}
